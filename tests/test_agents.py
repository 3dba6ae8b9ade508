"""Scripted agents: the registry, the observation reader and the seat table against the engine, the
search's rollouts replayed on the engine, legal play in every variant, determinism, and the heuristic's and
search's choices on set-up layouts."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.actions import CALL, ROTATE, WAIT
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
    MAX_DECK,
    ME,
    NEVER,
    PRIO_NERTZ_EMPTY,
    S_LAKE,
    S_NCOUNT,
    S_NERTZ,
    S_NPLAYED,
    S_NTOP,
    S_SCOUNT,
    S_STOCK,
    S_WASTE,
    S_WCOUNT,
    S_WLEN,
    S_WORK,
    S_WPLAYED,
    S_WTOP,
    STATE_SIZE,
    UNKNOWN,
    apply_view,
    heuristic_priorities,
    hidden_cards,
    load_seat,
    own_moves,
    read_state,
    rollout,
    seat_tables,
    store_seat,
)
from nertz_env.agents.scripted import table_tools
from nertz_env.cards import to_text
from nertz_env.engine.rules import observe_table, step_block
from nertz_env.engine.state import C_MAXTICKS, C_STALL
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
    with pytest.raises(AgentSpecError, match=r"unknown agent 'heurstic'.*greedy, heuristic, ppo, random, scratch, search"):
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


# ---------------------------------------------------------------- the observation reader and the seat table
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


_NOT_OWN_MOVES = (WAIT, CALL, ROTATE)


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_seat_table__the_engine_masks_the_read_view_as_the_env_does(rules: dict[str, Any]) -> None:
    """The view read from a seat's observation, loaded into a seat table, gets the env's own mask from the
    engine's ``compute_mask`` (the lake rebuilt from its tops, the redeals, the piles are all it needs), and
    reads back unchanged."""
    env = nertz_env.parallel_env(**{**rules, "max_ticks": rules.get("max_ticks", 150)})
    tools = table_tools(env.config)
    table = seat_tables(env.config, 1)
    out = np.zeros(tools.n_actions, dtype=np.int64)
    my_turn = env.obs_layout.slices["status"].start + 3  # turn_based: 0 while another seat moves
    checked = 0

    def check(obs: dict[str, Any], _acts: dict[str, int]) -> None:
        nonlocal checked
        for o in obs.values():
            s = state_of(o["observation"], env.config)
            back = np.full_like(s, 99)
            w = env.config.work_piles
            back[S_WLEN + w : S_WORK] = 0  # (slots beyond the config's work piles: 0 and -1 in a view)
            back[S_WORK + 13 * w : S_LAKE] = -1
            load_seat(s, table, 0, ME)
            store_seat(table, 0, ME, back)
            back[S_NPLAYED : S_WPLAYED + 1] = 0  # the played counters are apply_view's
            for base, count in ((S_STOCK, S_SCOUNT), (S_WASTE, S_WCOUNT), (S_NERTZ, S_NCOUNT)):
                back[base + s[count] : base + MAX_DECK if base != S_NERTZ else base + 13] = 0
            assert back.tolist() == s.tolist()
            if o["observation"][my_turn] < 0.5:  # the seat table has no turns
                continue
            n = own_moves(s, table, 0, ME, out)
            want = [int(a) for a in np.flatnonzero(o["action_mask"]) if tools.columns[0, a] not in _NOT_OWN_MOVES]
            assert sorted(out[:n].tolist()) == want
            checked += 1

    play(env, ["random", "heuristic"], seed=2, hook=check)
    assert checked > 20


@pytest.mark.parametrize("rules", [{}, {"jokers": 2, "allow_tuck": True}, {"allow_rotate": True}], ids=variant_id)
def test_apply_view__predicts_the_next_observation_in_turn_based_play(rules: dict[str, Any]) -> None:
    """With turns, only one seat moves per tick, so the engine's move on the seat's view (the search's
    prediction of its own move) must equal the next observation (except the cards a move turns up, which the
    view does not know)."""
    env = nertz_env.parallel_env(num_players=2, turn_based=True, **rules)
    table = seat_tables(env.config, 1)
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
            if not env.agents or infos["player_0"]["round_end"]:
                break
            if obs["player_0"]["observation"][stalls] != stalls_before:
                continue
            for n, action in acts.items():
                if tools_kind(env, action) in (WAIT, CALL):
                    continue
                predicted = before[n].copy()
                apply_view(predicted, action, table, 0, ME)
                actual = state_of(obs[n]["observation"], env.config)
                for slot in (S_NTOP, S_WTOP):
                    if predicted[slot] == UNKNOWN:
                        predicted[slot] = actual[slot]
                name = env.actions.name(action)
                assert predicted[S_WLEN:S_STOCK].tolist() == actual[S_WLEN:S_STOCK].tolist(), name
                assert predicted[:5].tolist() == actual[:5].tolist(), name
                compared += 1
    assert compared > 30


def tools_kind(env: nertz_env.NertzParallelEnv, action: int) -> int:
    return int(table_tools(env.config).columns[0, action])


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


@pytest.mark.parametrize(
    "rules",
    [{}, {"jokers": 2, "allow_tuck": True}, {"draw": 1, "max_redeals": 1}, {"num_players": 2, "turn_based": True}],
    ids=variant_id,
)
def test_rollouts__are_legal_engine_ticks(rules: dict[str, Any]) -> None:
    """A rollout (the heuristic playing on the engine's per-seat rules) replayed tick by tick through the
    engine's own ``step_block`` from the same table: the engine flags none of its actions illegal, and the
    seat ends with the rollout's layout. (The other players' simulated lake plays are off here: a replay
    cannot make them; with them, a move can only lose its lake slot, as in a real tick.)"""
    env = nertz_env.parallel_env(num_players=rules.pop("num_players", 4), **rules)
    config = env.config
    tools = table_tools(config)
    params, columns = tools.params, tools.columns
    replays = compared = 0
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        agents = [make_agent("heuristic") for _ in range(config.num_players)]
        for s, a in enumerate(agents):
            a.reset(config, s, seed)
        for _ in range(3 + 7 * seed):  # a few positions into the round
            acts = {n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"]) for s, n in enumerate(env.agents)}
            obs, *_ = env.step(acts)
        view = state_of(obs["player_0"]["observation"], config)
        true = env._state  # the seat's hidden cards, as the engine has them
        for base, count, pile in ((S_STOCK, S_SCOUNT, true.stock), (S_WASTE, S_WCOUNT, true.waste), (S_NERTZ, S_NCOUNT, true.nertz)):
            view[base : base + view[count]] = pile[0, 0, : view[count]]
        rollout_table = seat_tables(config, 3)
        load_seat(view, rollout_table, 2, ME)
        rollout_table.rng[2] = seed
        replay = seat_tables(config, 1)
        replay.cfg[C_STALL] = replay.cfg[C_MAXTICKS] = 10**6  # no stall rule, no round end but the Nertz pile's
        load_seat(view, replay, 0, ME)
        replay.nertz_len[0, 1:] = 1  # the other seats only wait, but an empty Nertz pile would end the round
        replay.nertz[0, 1:, 0] = 12
        observe_table(replay, 0)
        trace = np.zeros(40, np.int64)
        value = np.array([2.0, 1.0])
        rollout(rollout_table, 2, ME, np.zeros(STATE_SIZE, np.int64), params, columns, tools.reverse_run, 40, 2,
                0.9, value, 0.0, np.zeros(tools.n_actions, np.int64), trace)
        actions = np.zeros((1, config.num_players), np.int64)
        played = trace[trace > 0]
        for a in played:
            actions[0, 0] = a
            step_block(replay, actions, False, 0, 1)
            assert replay.illegal[0, 0] == 0, env.actions.name(int(a))
            assert replay.applied[0, 0] == a
            replays += 1
            if replay.round_end[0]:  # the Nertz pile emptied: the engine ends the round, a rollout plays on
                break
        else:
            for name in ("nertz_len", "stock_len", "waste_len", "work_len", "redeals"):
                assert np.array_equal(getattr(replay, name)[0, 0], getattr(rollout_table, name)[2, 0]), name
            for name in ("lake_tops", "lake_n"):
                assert np.array_equal(getattr(replay, name)[0], getattr(rollout_table, name)[2]), name
            assert np.array_equal(replay.work[0, 0], rollout_table.work[2, 0])
            for name, count in (("nertz", "nertz_len"), ("stock", "stock_len"), ("waste", "waste_len")):
                n = getattr(replay, count)[0, 0]
                assert np.array_equal(getattr(replay, name)[0, 0, :n], getattr(rollout_table, name)[2, 0, :n]), name
            compared += 1
    assert replays > 20 and compared >= 2


def test_search__same_seed_same_decisions_and_values() -> None:
    """Two runs of the same seeded game with seeded search players make the same decisions from the same
    rollout values; another agent seed changes them."""

    class Recording(SearchAgent):
        def __init__(self) -> None:
            super().__init__()
            self.log: list[tuple[tuple[int, ...], list[float] | None]] = []

        def _values(self, s: np.ndarray, cands: list[int]) -> np.ndarray | None:
            values = super()._values(s, cands)
            self.log.append((tuple(cands), None if values is None else values.tolist()))
            return values

    def run(offset: int) -> tuple[list[dict[str, int]], list[Any]]:
        env = nertz_env.parallel_env(num_players=4)
        agents = [Recording() for _ in range(4)]
        obs, _ = env.reset(seed=11)
        for s, a in enumerate(agents):
            a.reset(env.config, s, s + offset)
        moves = []
        while env.agents:
            acts = {n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"]) for s, n in enumerate(env.agents)}
            moves.append(acts)
            obs, *_ = env.step(acts)
        return moves, [a.log for a in agents]

    first, again, other = run(0), run(0), run(100)
    assert sum(len(log) for log in first[1]) > 20
    assert first == again
    assert first[1] != other[1]


def test_agents_rules__are_the_engines() -> None:
    """The agents' kernels move cards with the engine's functions and keep no rules of their own."""
    from nertz_env.agents import kernels
    from nertz_env.engine import rules as engine_rules

    shared = ("apply_action", "compute_mask", "stall_seat", "lake_add", "lake_find", "lake_takes", "joker_rank",
              "can_stack", "exposed_value", "rng_next", "rng_below")
    for name in shared:
        assert getattr(kernels, name) is getattr(engine_rules, name), name
    for name in ("apply_move", "apply_flip", "model_moves", "model_mask", "joker_lake_card", "_rand", "_below",
                 "_stall", "can_flip", "_still_legal", "_pop", "_place", "_to_lake"):
        assert not hasattr(kernels, name), name


# ---------------------------------------------------------------- legal play, determinism, style
@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_scripted_agents__play_only_legal_actions(rules: dict[str, Any]) -> None:
    """``illegal_action="raise"`` makes the env fail on any masked-out action."""
    env = nertz_env.parallel_env(
        illegal_action="raise", **{**rules, "max_ticks": rules.get("max_ticks", 150)}
    )
    for seed in range(2):
        infos = play(env, list(LADDER), seed=seed)
        assert next(iter(infos.values()))["round_end"]


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


@pytest.mark.parametrize("rules", [{}, {"rounds": 2, "num_players": 3}, {"turn_based": True, "num_players": 3}])
@pytest.mark.parametrize("k", [1, 2])
def test_move_memory__rebuilds_the_last_moves_slice_at_a_table_without_it(rules: dict[str, Any], k: int) -> None:
    """A policy trained with last_moves=k plays at tables without the option: its own record of its moves
    (MoveMemory) gives, after every tick of random games, the very observation the engine writes with it on."""
    from nertz_env.agents.policy import MoveMemory

    with_moves = nertz_env.parallel_env(last_moves=k, **rules)
    without = nertz_env.parallel_env(**rules)
    seen, plain = with_moves.reset(seed=3)[0], without.reset(seed=3)[0]
    memory = {a: MoveMemory(without.config, k) for a in without.agents}
    rng = np.random.default_rng(0)
    while without.agents:
        actions = {}
        for a in without.agents:
            assert np.array_equal(memory[a].observe(plain[a]["observation"]), seen[a]["observation"])
            assert nertz_env.decode(seen[a]["observation"], with_moves.config)["last_moves"] == memory[a].moves
            legal = np.flatnonzero(plain[a]["action_mask"])
            actions[a] = int(rng.choice(legal)) if rng.random() < 0.9 else 0
            memory[a].remember(actions[a])
        seen, plain = with_moves.step(actions)[0], without.step(actions)[0]
