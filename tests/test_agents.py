"""Scripted agents: the registry, the observation reader and layout model against the engine, legal play in
every variant, determinism, and the heuristic's and search's choices on set-up layouts."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.actions import CALL, FLIP, ROTATE, WAIT
from nertz_env.agents import (
    LADDER,
    AgentSpecError,
    HeuristicAgent,
    SearchAgent,
    known_agents,
    make_agent,
    register_loader,
)
from nertz_env.agents import registry as registry_module
from nertz_env.agents.kernels import (
    NEVER,
    PRIO_NERTZ_EMPTY,
    S_LAKE,
    S_NTOP,
    S_SCOUNT,
    S_STOCK,
    S_WASTE,
    S_WCOUNT,
    S_WLEN,
    S_WORK,
    S_WTOP,
    STATE_SIZE,
    UNKNOWN,
    apply_move,
    heuristic_priorities,
    hidden_cards,
    model_moves,
    read_state,
)
from nertz_env.agents.scripted import table_tools
from nertz_env.cards import to_text
from variants import VARIANTS, variant_id


def state_of(obs: np.ndarray, config: nertz_env.NertzConfig) -> np.ndarray:
    s = np.zeros(STATE_SIZE, dtype=np.int64)
    read_state(obs, table_tools(config).params, s)
    return s


def play(env: nertz_env.NertzParallelEnv, specs: list[str], seed: int, hook: Any = None) -> dict[str, Any]:
    """One episode with the agents ``specs`` (cycled over the seats); returns the last infos."""
    agents = [make_agent(specs[s % len(specs)]) for s in range(env.config.num_players)]
    obs, _ = env.reset(seed=seed)
    for s, a in enumerate(agents):
        a.reset(env.config, s, seed * 100 + s)
    infos: dict[str, Any] = {}
    while env.agents:
        acts = {
            n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"]) for s, n in enumerate(env.agents)
        }
        if hook is not None:
            hook(obs, acts)
        obs, _, _, _, infos = env.step(acts)
    return infos


# ---------------------------------------------------------------- registry
def test_make_agent__builds_every_ladder_rung_by_name() -> None:
    for name in LADDER:
        agent = make_agent(name)
        assert agent.name == name
        assert isinstance(agent, nertz_env.agents.Agent)
    assert set(LADDER) <= set(known_agents())


def test_make_agent__parses_parameters_and_names_the_agent_by_its_spec() -> None:
    agent = make_agent("heuristic:wait_prob=0.25,waste=always")
    assert isinstance(agent, HeuristicAgent)
    assert agent.wait_prob == 0.25 and agent.waste == "always"
    assert agent.name == "heuristic:wait_prob=0.25,waste=always"
    search = make_agent("search:rollouts=8,gamma=0.8,memory=false")
    assert isinstance(search, SearchAgent) and search.rollouts == 8 and not search.memory


def test_make_agent__unknown_name_lists_the_known_agents() -> None:
    with pytest.raises(AgentSpecError, match=r"unknown agent 'heurstic'.*greedy, heuristic, ppo, random, search"):
        make_agent("heurstic")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("heuristic:speed=2", "has no parameter speed; it takes wait_prob"),
        ("heuristic:wait_prob=fast", "not a valid float"),
        ("heuristic:wait_prob=1.5", r"wait_prob must be in \[0, 1\]"),
        ("heuristic:waste", "key=value"),
        ("random:wait_prob=0.1", "takes no parameters"),
        ("", "non-empty string"),
    ],
)
def test_make_agent__bad_parameters_say_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec)


def test_make_agent__missing_checkpoint_names_the_path(tmp_path: Any) -> None:
    path = str(tmp_path / "nope" / "model.zip")
    with pytest.raises(FileNotFoundError, match=r"checkpoint file not found: .*nope/model\.zip"):
        make_agent(path)


def test_register_loader__loads_checkpoints_by_suffix_with_parameters(
    tmp_path: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(registry_module, "_LOADERS", {})
    path = tmp_path / "policy.ckpt"
    path.write_text("weights")
    seen: dict[str, str] = {}

    def loader(p: str, **params: str) -> Any:
        seen.update(path=p, **params)
        return make_agent("random")

    with pytest.raises(AgentSpecError, match="no loader for checkpoint"):
        make_agent(str(path))
    register_loader(".ckpt", loader)
    agent = make_agent(f"{path}:deterministic=true")
    assert agent.name == "random"
    assert seen == {"path": str(path), "deterministic": "true"}


LOAD_WITHOUT_TRAIN = """
import sys
import numpy as np
import nertz_env.agents
from nertz_env.agents.registry import shipped_models
heavy = sorted(m for m in ("nertz_env.train", "torch", "stable_baselines3", "sb3_contrib") if m in sys.modules)
agent = nertz_env.agents.make_agent(shipped_models()["ppo"] + ":deterministic=true")
config = nertz_env.make_config(num_players=4)
agent.reset(config, seat=0, seed=1)
env = nertz_env.parallel_env(num_players=4)
obs, _ = env.reset(seed=3)
a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
print(heavy, type(agent).__module__, bool(obs["player_0"]["action_mask"][a]), "nertz_env.train" in sys.modules)
"""


def test_make_agent__loads_a_zip_without_the_training_package() -> None:
    # Loading a trained policy belongs to the agents: importing them imports neither the training package nor
    # torch, and a zip loads (torch and SB3 imported then) without nertz_env.train registering anything.
    pytest.importorskip("sb3_contrib")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_TRAIN], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["[]", "nertz_env.agents.policy", "True", "False"]


def test_train_package__registers_nothing_and_old_paths_reexport() -> None:
    pytest.importorskip("sb3_contrib")
    before = dict(registry_module._LOADERS), list(registry_module._PATH_LOADERS)
    import nertz_env.agents.meta as meta
    import nertz_env.agents.policy as policy
    import nertz_env.train
    import nertz_env.train.meta as old_meta
    import nertz_env.train.policy_agent as old_policy

    assert (dict(registry_module._LOADERS), list(registry_module._PATH_LOADERS)) == before
    assert old_policy.PolicyAgent is policy.PolicyAgent is nertz_env.train.PolicyAgent
    assert old_policy.load_policy_agent is policy.load_policy_agent
    assert old_meta.read_meta is meta.read_meta and old_meta.CheckpointError is meta.CheckpointError


# ---------------------------------------------------------------- the observation reader and the layout model
@pytest.mark.parametrize("rules", [{}, {"jokers": 2}, {"num_players": 8, "work_piles": 6}], ids=variant_id)
def test_read_state__matches_decode(rules: dict[str, Any]) -> None:
    env = nertz_env.parallel_env(**rules)
    checked = 0

    def check(obs: dict[str, Any], _acts: dict[str, int]) -> None:
        nonlocal checked
        for o in obs.values():
            d = nertz_env.decode(o["observation"], env.config)
            s = state_of(o["observation"], env.config)
            work = [
                [to_text(s[S_WORK + 13 * j + k]) for k in range(s[S_WLEN + j])] for j in range(len(d["work"]))
            ]
            assert work == d["work"]
            assert (to_text(s[S_NTOP]) if s[S_NTOP] >= 0 else None) == d["nertz_top"]
            assert (to_text(s[S_WTOP]) if s[S_WTOP] >= 0 else None) == d["waste_top"]
            assert {to_text(c): int(s[S_LAKE + c]) for c in range(52) if s[S_LAKE + c]} == d["lake_tops"]
            checked += 1

    play(env, ["heuristic", "random"], seed=1, hook=check)
    assert checked > 50


_NOT_MODELLED = (WAIT, FLIP, CALL, ROTATE)


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_model_moves__equal_the_engine_mask(rules: dict[str, Any]) -> None:
    env = nertz_env.parallel_env(**{**rules, "max_ticks": rules.get("max_ticks", 150)})
    tools = table_tools(env.config)
    out = np.zeros(tools.n_actions, dtype=np.int64)

    my_turn = env.obs_layout.slices["status"].start + 3  # turn_based: 0 while another seat moves

    def check(obs: dict[str, Any], _acts: dict[str, int]) -> None:
        for o in obs.values():
            if o["observation"][my_turn] < 0.5:
                continue
            n = model_moves(state_of(o["observation"], env.config), tools.params, out)
            want = {
                int(a) for a in np.flatnonzero(o["action_mask"]) if tools.columns[0, a] not in _NOT_MODELLED
            }
            assert sorted(out[:n].tolist()) == sorted(want)

    play(env, ["random", "heuristic"], seed=2, hook=check)


@pytest.mark.parametrize("rules", [{}, {"jokers": 2, "allow_tuck": True}], ids=variant_id)
def test_apply_move__agrees_with_the_engine_in_turn_based_play(rules: dict[str, Any]) -> None:
    """With turns, only one seat moves per tick, so the model's prediction must equal the next observation
    (except the cards a move turns up, which the model leaves unknown)."""
    env = nertz_env.parallel_env(num_players=2, turn_based=True, **rules)
    tools = table_tools(env.config)
    stalls = env.obs_layout.slices["status"].start + 2  # the stall rule moves the waste under the stock
    compared = 0
    for seed in range(3):
        agents = [make_agent("heuristic"), make_agent("random")]
        obs, _ = env.reset(seed=seed)
        for s, a in enumerate(agents):
            a.reset(env.config, s, seed)
        while env.agents:
            acts = {
                n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                for s, n in enumerate(env.agents)
            }
            before = {n: state_of(obs[n]["observation"], env.config) for n in env.agents}
            stalls_before = obs["player_0"]["observation"][stalls]
            obs, _, _, _, infos = env.step(acts)
            if not env.agents or "round_end" in infos["player_0"]:
                break
            if obs["player_0"]["observation"][stalls] != stalls_before:
                continue
            for n, action in acts.items():
                predicted = before[n].copy()
                if not apply_move(predicted, action, tools.columns, tools.params):
                    continue
                actual = state_of(obs[n]["observation"], env.config)
                for slot in (S_NTOP, S_WTOP):
                    if predicted[slot] == UNKNOWN:
                        predicted[slot] = actual[slot]
                name = env.actions.name(action)
                assert predicted[S_WLEN:S_STOCK].tolist() == actual[S_WLEN:S_STOCK].tolist(), name
                assert predicted[:5].tolist() == actual[:5].tolist(), name
                compared += 1
    assert compared > 30


@pytest.mark.parametrize(
    "rules",
    [
        {},
        {"draw": 1},
        {"recycle": "shuffle"},
        {"stall_ticks": 6},
        {"allow_rotate": True, "jokers": 1},
        {"target_score": 30, "num_players": 2},
    ],
    ids=variant_id,
)
def test_search_memory__never_contradicts_the_true_stock_and_waste(rules: dict[str, Any]) -> None:
    """What the search agent remembers of its stock and waste (a card or UNKNOWN per slot) matches the
    engine's piles, and it does come to know cards it cannot see in the observation."""
    env = nertz_env.parallel_env(num_players=rules.pop("num_players", 3), **rules)
    agents = [SearchAgent() for _ in range(env.config.num_players)]
    cards = np.zeros(64, dtype=np.int64)
    known = 0
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        for s, a in enumerate(agents):
            a.reset(env.config, s, seed)
        while env.agents:
            snap = env.snapshot()
            acts = {
                n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                for s, n in enumerate(env.agents)
            }
            for s, agent in enumerate(agents):
                st = agent._state
                me = snap["players"][s]
                true_stock, true_waste = me["stock"], me["waste"]
                assert (st[S_SCOUNT], st[S_WCOUNT]) == (len(true_stock), len(true_waste))
                hidden = me["nertz"][:-1]
                for base, pile in ((S_STOCK, true_stock), (S_WASTE, true_waste)):
                    for k, card in enumerate(pile):
                        if st[base + k] != UNKNOWN:
                            assert to_text(st[base + k]) == card
                            known += 1
                        else:
                            hidden.append(card)
                # the cards it cannot place are exactly the hidden ones (it counted its own lake cards right)
                n = hidden_cards(st, table_tools(env.config).params, agent._lake_own, cards)
                assert sorted(to_text(c) for c in cards[:n]) == sorted(hidden)
            obs, *_ = env.step(acts)
    assert known > 1000


# ---------------------------------------------------------------- legal play, determinism, style
@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_scripted_agents__play_only_legal_actions(rules: dict[str, Any]) -> None:
    """``illegal_action="raise"`` makes the env fail on any masked-out action."""
    env = nertz_env.parallel_env(
        illegal_action="raise", **{**rules, "max_ticks": rules.get("max_ticks", 150)}
    )
    for seed in range(2):
        infos = play(env, list(LADDER), seed=seed)
        assert "round_end" in next(iter(infos.values()))


def test_agents__same_seed_same_game_different_seed_different_choices() -> None:
    def actions(agent_seed_offset: int) -> list[dict[str, int]]:
        env = nertz_env.parallel_env(num_players=3)
        agents = [make_agent(s) for s in ("random", "greedy", "search")]
        obs, _ = env.reset(seed=5)
        for s, a in enumerate(agents):
            a.reset(env.config, s, s + agent_seed_offset)
        out = []
        while env.agents:
            acts = {
                n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                for s, n in enumerate(env.agents)
            }
            out.append(acts)
            obs, *_ = env.step(acts)
        return out

    assert actions(0) == actions(0)
    assert actions(0) != actions(1000)


def test_wait_prob__one_always_waits_and_zero_never_does() -> None:
    env = nertz_env.parallel_env()
    obs, _ = env.reset(seed=0)
    o = obs["player_0"]
    for name in ("greedy", "heuristic", "search"):
        lazy = make_agent(f"{name}:wait_prob=1")
        lazy.reset(env.config, 0, 1)
        assert all(lazy.act(o["observation"], o["action_mask"]) == 0 for _ in range(20))
        busy = make_agent(name)
        busy.reset(env.config, 0, 1)
        assert busy.act(o["observation"], o["action_mask"]) != 0  # flip at least is legal at the deal


def test_agent__act_before_reset_says_so() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        make_agent("heuristic").act(np.zeros(10, np.float32), np.ones(3, np.int8))


# ---------------------------------------------------------------- choices on set-up layouts
def arranged(env: nertz_env.NertzParallelEnv, nertz_top: str, work: list[list[str]]) -> dict[str, Any]:
    """Player 0 of a fresh deal rearranged: ``nertz_top`` on its Nertz pile, ``work`` as its work piles, the
    rest of its deck in the Nertz pile and the stock; the waste empty."""
    env.reset(seed=0)
    snap = copy.deepcopy(env.snapshot())
    me = snap["players"][0]
    deck = me["nertz"] + [c for pile in me["work"] for c in pile] + me["stock"] + me["waste"]
    used = {nertz_top, *(c for pile in work for c in pile)}
    rest = [c for c in deck if c not in used]
    n = env.config.nertz_size
    me["nertz"] = [*rest[: n - 1], nertz_top]
    me["work"] = work
    me["stock"] = rest[n - 1 :]
    me["waste"] = []
    return snap


SCENARIOS = [
    # (Nertz top, work piles, the choice): an ace on the Nertz pile goes to the lake first, before a work ace
    ("AC", [["9S"], ["AH"], ["KH"], ["3C"]], "lake:nertz"),
    # the Nertz top fits on a work pile
    ("7H", [["9D"], ["8S"], ["KH"], ["3C"]], "to_work:nertz>1"),
    # ... and goes onto the stack rather than into the empty pile, which stays free
    ("7H", [["8S"], [], ["KH"], ["3C"]], "to_work:nertz>0"),
    # nothing takes the king: move the whole 8H pile onto 9S to empty a pile for it
    ("KD", [["9S"], ["8H"], ["5C"], ["3D"]], "run:work1>0x1"),
]


@pytest.mark.parametrize("agent_name", ["heuristic", "search"])
@pytest.mark.parametrize(("nertz_top", "work", "choice"), SCENARIOS)
def test_choice__on_set_up_layouts(
    agent_name: str, nertz_top: str, work: list[list[str]], choice: str
) -> None:
    env = nertz_env.parallel_env()
    obs, _ = env.reset(options={"snapshot": arranged(env, nertz_top, work)})
    agent = make_agent(agent_name)
    agent.reset(env.config, 0, 0)
    o = obs["player_0"]
    assert env.actions.name(agent.act(o["observation"], o["action_mask"])) == choice


def test_heuristic__never_moves_a_whole_pile_onto_an_empty_pile() -> None:
    env = nertz_env.parallel_env()
    obs, _ = env.reset(options={"snapshot": arranged(env, "KD", [["9S"], ["8H"], [], ["3D"]])})
    o = obs["player_0"]
    tools = table_tools(env.config)
    prio = np.zeros(tools.n_actions, dtype=np.int64)
    s = state_of(o["observation"], env.config)
    heuristic_priorities(s, o["action_mask"], tools.params, tools.columns, 2, -1, prio)
    whole_to_empty = env.actions.lookup("run:work0>2x1")
    assert o["action_mask"][whole_to_empty] == 1
    assert prio[whole_to_empty] == NEVER
    assert prio[env.actions.lookup("to_work:nertz>2")] == PRIO_NERTZ_EMPTY
