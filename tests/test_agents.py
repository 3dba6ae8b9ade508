"""Agents: the registry, the scripted ladder (its observation reader and seat tables against the engine, the
search's rollouts replayed on the engine, legal play in every variant, determinism, choices on set-up layouts),
the learned networks' numpy forward pass against torch. The privileged critic: test_train.py."""

from __future__ import annotations

import copy
import functools
import itertools
import os
import pickle
import shutil
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
from nertz_env.agents import kernels as K
from nertz_env.agents import policy as policy_module
from nertz_env.agents import registry as registry_module
from nertz_env.agents.forward import NumpyActor, UnsupportedNetwork, arrays_path
from nertz_env.agents.meta import make_meta, read_meta
from nertz_env.agents.policy import (
    OwnMemory,
    PolicyAgent,
    load_policy,
    load_policy_agent,
    numpy_actor,
    policy_probabilities,
)
from nertz_env.agents.registry import shipped_models
from nertz_env.agents.scripted import table_tools
from nertz_env.cards import to_text
from nertz_env.engine.rules import observe_table, step_block
from nertz_env.engine.state import C_MAXTICKS, C_STALL
from test_rules import DECK, build
from variants import VARIANTS, variant_id

PPO = shipped_models()["ppo_imitation"]  # the flat network


def state_of(obs: np.ndarray, config: nertz_env.NertzConfig) -> np.ndarray:
    s = np.zeros(K.STATE_SIZE, dtype=np.int64)
    K.read_state(obs, table_tools(config).params, s)
    return s


def play(env: nertz_env.NertzParallelEnv, specs: list[Any], seed: int, hook: Any = None,
         agent_seed: int | None = None, ticks: int | None = None) -> tuple[list[dict[str, int]], dict]:
    """One episode of ``specs`` (names or agents, cycled over the seats), or its first ``ticks`` ticks: its
    ticks' actions, last infos."""
    agents = [make_agent(x) if isinstance(x, str) else x for x in (specs[s % len(specs)] for s in range(env.config.num_players))]
    obs, _ = env.reset(seed=seed)
    for s, a in enumerate(agents):
        a.reset(env.config, s, (seed * 100 if agent_seed is None else agent_seed) + s)
    moves, infos = [], {}
    while env.agents and (ticks is None or len(moves) < ticks):
        acts = {n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"]) for s, n in enumerate(env.agents)}
        if hook is not None:
            hook(obs, acts)
        moves.append(acts)
        obs, _, _, _, infos = env.step(acts)
    return moves, infos


# ---------------------------------------------------------------- registry
def test_make_agent__builds_every_ladder_rung_by_name_and_parses_parameters() -> None:
    for name in LADDER:
        agent = make_agent(name)
        assert agent.name == name and isinstance(agent, nertz_env.agents.Agent)
    assert set(LADDER) <= set(known_agents())
    agent = make_agent("heuristic:wait_prob=0.25,waste=always")
    assert isinstance(agent, HeuristicAgent) and agent.wait_prob == 0.25 and agent.waste == "always"
    assert agent.name == "heuristic:wait_prob=0.25,waste=always"
    search = make_agent("search:rollouts=8,gamma=0.8,memory=false")
    assert isinstance(search, SearchAgent) and search.rollouts == 8 and not search.memory


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("heurstic", r"unknown agent 'heurstic'.*greedy, heuristic, ppo, ppo_imitation, random, scratch, search"),
        ("heuristic:speed=2", "has no parameter speed; it takes wait_prob"),
        ("heuristic:wait_prob=fast", "not a valid float"),
        ("heuristic:wait_prob=1.5", r"wait_prob must be in \[0, 1\]"),
        ("heuristic:waste", "key=value"),
        ("random:wait_prob=0.1", "takes no parameters"),
        ("", "non-empty string"),
    ],
)
def test_make_agent__a_bad_spec_says_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec)


def test_make_agent__missing_checkpoint_names_the_path_and_loaders_go_by_suffix(tmp_path: Any, monkeypatch: Any) -> None:
    with pytest.raises(FileNotFoundError, match=r"checkpoint file not found: .*nope/model\.zip"):
        make_agent(str(tmp_path / "nope" / "model.zip"))
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
    assert make_agent(f"{path}:deterministic=true").name == "random"
    assert seen == {"path": str(path), "deterministic": "true"}


def test_shipped_models__a_policy_in_the_models_folder_plays_by_name_deterministically(
    tmp_path: Any, monkeypatch: Any
) -> None:
    pytest.importorskip("torch")  # sampled play
    for suffix in (".zip", ".json", ".npz"):  # a policy file, its record and its array file
        shutil.copy(PPO.replace(".zip", suffix), tmp_path / f"tiny{suffix}")
    monkeypatch.setattr(policy_module, "MODELS_DIR", str(tmp_path))
    assert "tiny" in known_agents()
    agent = make_agent("tiny")
    assert agent.name == "tiny" and agent.deterministic
    assert not make_agent("tiny:deterministic=false").deterministic


def test_train_package__registers_nothing_and_old_paths_reexport() -> None:
    pytest.importorskip("sb3_contrib")
    before = dict(registry_module._LOADERS)
    import nertz_env.agents.meta as meta
    import nertz_env.agents.policy as policy
    import nertz_env.train
    import nertz_env.train.meta as old_meta
    import nertz_env.train.policy_agent as old_policy

    assert dict(registry_module._LOADERS) == before
    assert old_policy.PolicyAgent is policy.PolicyAgent is nertz_env.train.PolicyAgent
    assert old_policy.load_policy_agent is policy.load_policy_agent
    assert old_meta.read_meta is meta.read_meta and old_meta.CheckpointError is meta.CheckpointError


# ---------------------------------------------------------------- the observation reader and the seat table
_NOT_OWN_MOVES = (WAIT, CALL, ROTATE)


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_seat_table__the_engine_masks_the_read_view_as_the_env_does(rules: dict[str, Any]) -> None:
    """A view read from an observation, in a seat table, gets the env's mask and reads back unchanged."""
    env = nertz_env.parallel_env(**{**rules, "max_ticks": min(rules.get("max_ticks", 80), 120)})
    tools = table_tools(env.config)
    table = K.seat_tables(env.config, 1)
    out = np.zeros(tools.n_actions, dtype=np.int64)
    my_turn = env.obs_layout.slices["status"].start + 3  # turn_based: 0 while another seat moves
    checked = 0

    def check(obs: dict[str, Any], _acts: dict[str, int]) -> None:
        nonlocal checked
        for o in obs.values():
            s = state_of(o["observation"], env.config)
            d = nertz_env.decode(o["observation"], env.config)  # the reader reads what decode does
            assert [[to_text(s[K.S_WORK + 13 * j + k]) for k in range(s[K.S_WLEN + j])] for j in range(len(d["work"]))] == d["work"]
            assert (to_text(s[K.S_NTOP]) if s[K.S_NTOP] >= 0 else None) == d["nertz_top"]
            assert (to_text(s[K.S_WTOP]) if s[K.S_WTOP] >= 0 else None) == d["waste_top"]
            assert {to_text(c): int(s[K.S_LAKE + c]) for c in range(52) if s[K.S_LAKE + c]} == d["lake_tops"]
            back = np.full_like(s, 99)
            w = env.config.work_piles
            back[K.S_WLEN + w : K.S_WORK] = 0  # (slots beyond the config's work piles: 0 and -1 in a view)
            back[K.S_WORK + 13 * w : K.S_LAKE] = -1
            K.load_seat(s, table, 0, K.ME)
            K.store_seat(table, 0, K.ME, back)
            back[K.S_NPLAYED : K.S_LPLAYED + 1] = 0  # the played counters are apply_view's
            for base, count in ((K.S_STOCK, K.S_SCOUNT), (K.S_WASTE, K.S_WCOUNT), (K.S_NERTZ, K.S_NCOUNT)):
                back[base + s[count] : base + K.MAX_DECK if base != K.S_NERTZ else base + 13] = 0
            assert back.tolist() == s.tolist()
            if o["observation"][my_turn] < 0.5:  # the seat table has no turns
                continue
            n = K.own_moves(s, table, 0, K.ME, out)
            want = [int(a) for a in np.flatnonzero(o["action_mask"]) if tools.columns[0, a] not in _NOT_OWN_MOVES]
            assert sorted(out[:n].tolist()) == want
            checked += 1

    play(env, ["random", "heuristic"], seed=2, hook=check)
    assert checked > 20


@pytest.mark.parametrize("rules", [{}, {"jokers": 2, "allow_tuck": True}, {"allow_rotate": True}], ids=variant_id)
def test_apply_view__predicts_the_next_observation_in_turn_based_play(rules: dict[str, Any]) -> None:
    """With turns, the engine's move on a seat's view (the search's prediction) is the next observation."""
    env = nertz_env.parallel_env(num_players=2, turn_based=True, max_ticks=200, **rules)
    table = K.seat_tables(env.config, 1)
    stalls = env.obs_layout.slices["status"].start + 2  # the stall rule moves the waste under the stock
    compared, pending = 0, None  # the stall counter and the predicted views of the tick before

    def check(obs: dict[str, Any], acts: dict[str, int]) -> None:
        nonlocal compared, pending
        stall = obs["player_0"]["observation"][stalls]
        if pending and pending[0] == stall:
            for n, (action, predicted) in pending[1].items():
                actual = state_of(obs[n]["observation"], env.config)
                for slot in (K.S_NTOP, K.S_WTOP):
                    if predicted[slot] == K.UNKNOWN:
                        predicted[slot] = actual[slot]
                name = env.actions.name(action)
                assert predicted[K.S_WLEN:K.S_STOCK].tolist() == actual[K.S_WLEN:K.S_STOCK].tolist(), name
                assert predicted[:5].tolist() == actual[:5].tolist(), name
                compared += 1
        pending = (stall, {n: (a, state_of(obs[n]["observation"], env.config)) for n, a in acts.items()
                           if table_tools(env.config).columns[0, a] not in (WAIT, CALL)})
        for action, view in pending[1].values():
            K.apply_view(view, action, table, 0, K.ME)

    for seed in range(2):
        pending = None
        play(env, ["heuristic", "random"], seed, hook=check)
    assert compared > 100


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
    """The search's memory of its stock and waste matches the engine's piles and knows unseen cards."""
    env = nertz_env.parallel_env(num_players=rules.pop("num_players", 3), max_ticks=150, **rules)
    agents = [SearchAgent(rollouts=0) for _ in range(env.config.num_players)]  # the memory without rollouts
    cards = np.zeros(64, dtype=np.int64)
    known = 0

    def check(_obs: dict[str, Any], _acts: dict[str, int]) -> None:  # the agents have acted on this table
        nonlocal known
        snap = env.snapshot()
        for s, agent in enumerate(agents):
            st, me = agent._state, snap["players"][s]
            true_stock, true_waste = me["stock"], me["waste"]
            assert (st[K.S_SCOUNT], st[K.S_WCOUNT]) == (len(true_stock), len(true_waste))
            hidden = me["nertz"][:-1]
            for base, pile in ((K.S_STOCK, true_stock), (K.S_WASTE, true_waste)):
                for k, card in enumerate(pile):
                    if st[base + k] != K.UNKNOWN:
                        assert to_text(st[base + k]) == card
                        known += 1
                    else:
                        hidden.append(card)
            # the cards it cannot place are exactly the hidden ones (it counted its own lake cards right)
            n = K.hidden_cards(st, table_tools(env.config).params, agent._seat.lake_own, cards)
            assert sorted(to_text(c) for c in cards[:n]) == sorted(hidden)

    for seed in range(2):
        play(env, agents, seed, hook=check, agent_seed=seed)
    assert known > 1000


@pytest.mark.parametrize(
    "rules",
    [{}, {"jokers": 2, "allow_tuck": True}, {"draw": 1, "max_redeals": 1}, {"num_players": 2, "turn_based": True}],
    ids=variant_id,
)
def test_rollouts__are_legal_engine_ticks(rules: dict[str, Any]) -> None:
    """A rollout replayed through the engine's ``step_block`` from the same table: no action illegal, the same
    layout at the end. (The other seats' simulated lake plays are off: a replay cannot make them.)"""
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
        first = agents[0].act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
        view = state_of(obs["player_0"]["observation"], config)
        true = env._state  # the seat's hidden cards, as the engine has them: none left to deal at random
        for base, count, pile in ((K.S_STOCK, K.S_SCOUNT, true.stock), (K.S_WASTE, K.S_WCOUNT, true.waste), (K.S_NERTZ, K.S_NCOUNT, true.nertz)):
            view[base : base + view[count]] = pile[0, 0, : view[count]]
        work = K.rollout_workspace(config)
        trace = np.zeros(40, np.int64)  # the rollout's actions after the candidate
        K.rollout_values(view, np.array([first]), 1, params, columns, tools.reverse_run, np.zeros(64, np.int64), 0, 1,
                         40, 2, 0.9, np.array([2.0, 1.0]), 0.0, np.uint64(seed), np.zeros(1), *work[:3], trace)
        rollout_table = work[0]  # table 2: the rollout's end
        replay = K.seat_tables(config, 1)
        replay.cfg[C_STALL] = replay.cfg[C_MAXTICKS] = 10**6  # no stall rule, no round end but the Nertz pile's
        K.load_seat(view, replay, 0, K.ME)
        replay.nertz_len[0, 1:] = 1  # the other seats only wait, but an empty Nertz pile would end the round
        replay.nertz[0, 1:, 0] = 12
        observe_table(replay, 0)
        actions = np.zeros((1, config.num_players), np.int64)
        for a in [first, *trace[trace > 0]]:
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


# ---------------------------------------------------------------- legal play, determinism, style
@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_scripted_agents__play_only_legal_actions(rules: dict[str, Any]) -> None:
    """``illegal_action="raise"`` makes the env fail on any masked-out action."""
    env = nertz_env.parallel_env(illegal_action="raise", **{**rules, "max_ticks": rules.get("max_ticks", 150)})
    _, infos = play(env, list(LADDER), seed=0)
    assert next(iter(infos.values()))["round_end"]


def test_agents__same_seed_same_decisions_and_search_values_another_seed_other_ones() -> None:
    """The same seeds give the same moves from the same rollout values; other agent seeds change them."""

    class Recording(SearchAgent):
        def __init__(self) -> None:
            super().__init__()
            self.log: list[tuple[tuple[int, ...], list[float] | None]] = []

        def _values(self, s: np.ndarray, cands: list[int]) -> np.ndarray | None:
            values = super()._values(s, cands)
            self.log.append((tuple(cands), None if values is None else values.tolist()))
            return values

    def run(offset: int) -> tuple[list[dict[str, int]], list[Any]]:
        agents = [make_agent("random"), make_agent("greedy"), Recording(), Recording()]
        moves, _ = play(nertz_env.parallel_env(num_players=4), agents, seed=11, agent_seed=offset)
        return moves, [a.log for a in agents[2:]]

    first, again, other = run(0), run(0), run(100)
    assert sum(len(log) for log in first[1]) > 20
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]


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
def arranged(nertz_top: str, work: list[list[str]]) -> tuple[nertz_env.NertzParallelEnv, dict[str, Any]]:
    """A table where seat 0 has ``nertz_top`` on a Nertz pile of 13 and ``work`` as work piles; its view."""
    under = [c for c in DECK if c not in {nertz_top, *(c for pile in work for c in pile)}][:12]
    env = build({}, {0: {"nertz": [*under, nertz_top], "work": work}})
    obs, _ = env.reset(options={"snapshot": env.snapshot()})
    return env, obs["player_0"]


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
    env, o = arranged(nertz_top, work)
    agent = make_agent(agent_name)
    agent.reset(env.config, 0, 0)
    assert env.actions.name(agent.act(o["observation"], o["action_mask"])) == choice


def test_heuristic__never_moves_a_whole_pile_onto_an_empty_pile() -> None:
    env, o = arranged("KD", [["9S"], ["8H"], [], ["3D"]])
    tools = table_tools(env.config)
    prio = np.zeros(tools.n_actions, dtype=np.int64)
    s = state_of(o["observation"], env.config)
    K.heuristic_priorities(s, o["action_mask"], tools.params, tools.columns, 2, -1, prio)
    whole_to_empty = env.actions.lookup("run:work0>2x1")
    assert o["action_mask"][whole_to_empty] == 1
    assert prio[whole_to_empty] == K.NEVER
    assert prio[env.actions.lookup("to_work:nertz>2")] == K.PRIO_NERTZ_EMPTY


@pytest.mark.parametrize(
    "rules",
    [
        {"last_moves": 1},
        {"memory": True, "last_moves": 2, "rounds": 2, "num_players": 3},
        {"memory": True, "draw": 1, "stall_ticks": 6},
        {"memory": True, "recycle": "shuffle", "jokers": 2},
        {"memory": True, "allow_rotate": True, "jokers": 1, "draw": 2},
        {"memory": True, "last_moves": 2, "turn_based": True, "num_players": 3},
    ],
    ids=variant_id,
)
def test_own_memory__rebuilds_the_observation_options_at_a_table_without_them(rules: dict[str, Any]) -> None:
    """OwnMemory gives a policy trained with memory and last_moves, at a table without them, the observation
    the engine writes with them (and back), pickled mid-game or not."""
    on = nertz_env.parallel_env(max_ticks=150, **rules)
    off = nertz_env.parallel_env(max_ticks=150, **{k: v for k, v in rules.items() if k not in ("memory", "last_moves")})
    known = 0
    for seed in range(2):
        seen, plain = on.reset(seed=seed)[0], off.reset(seed=seed)[0]
        memory = {a: OwnMemory(off.config, on.config) for a in off.agents}
        back = {a: OwnMemory(on.config, off.config) for a in off.agents}  # a policy trained without them
        rng = np.random.default_rng(seed)
        while off.agents:
            if off.tick == 30:
                memory = pickle.loads(pickle.dumps(memory))
            actions = {}
            for a in off.agents:
                assert np.array_equal(memory[a].observe(plain[a]["observation"]), seen[a]["observation"])
                assert np.array_equal(back[a].observe(seen[a]["observation"]), plain[a]["observation"])
                if on.config.memory:
                    d = nertz_env.decode(seen[a]["observation"], on.config)["memory"]
                    known += sum(c is not None for c in d["stock"] + d["waste"])
                legal = np.flatnonzero(plain[a]["action_mask"])
                actions[a] = int(rng.choice(legal)) if rng.random() < 0.9 else 0
                memory[a].remember(actions[a])
                back[a].remember(actions[a])
            seen, plain = on.step(actions)[0], off.step(actions)[0]
    assert known > 500 or not on.config.memory


def test_policy_agent__trained_with_memory_plays_at_a_table_without_it_as_at_one_with_it(tmp_path: Any) -> None:
    """A network trained with memory chooses the same every tick at tables with the option and without."""
    pytest.importorskip("torch")
    import gymnasium
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from nertz_env.train.trainer import save_policy

    on, off = nertz_env.parallel_env(memory=True, max_ticks=200), nertz_env.parallel_env(max_ticks=200)
    size, n = on.obs_layout.size, on.actions.n
    kwargs = {"net_arch": [32]}
    net = MaskableActorCriticPolicy(gymnasium.spaces.Box(0, 1, (size,)), gymnasium.spaces.Discrete(n), lambda _: 0.0,
                                    **kwargs)
    path = str(tmp_path / "memory.zip")
    save_policy(net, kwargs, path, make_meta(on.config, mode="test"))
    players = [make_agent(path), make_agent(path)]
    (seen, _), (plain, _) = on.reset(seed=4), off.reset(seed=4)
    for agent, env in zip(players, (on, off), strict=True):
        agent.reset(env.config, 0, 0)
    assert players[0].memory is None and players[1].memory.seat is not None
    rng = np.random.default_rng(4)
    while off.agents:
        mine = [players[0].act(seen["player_0"]["observation"], seen["player_0"]["action_mask"]),
                players[1].act(plain["player_0"]["observation"], plain["player_0"]["action_mask"])]
        assert mine[0] == mine[1]
        acts = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in plain.items()} | {"player_0": mine[0]}
        seen, plain = on.step(acts)[0], off.step(acts)[0]


# ---------------------------------------------------------------- the learned networks' numpy forward pass
NO_TORCH = """
import sys
import nertz_env
import nertz_env.agents
heavy = sorted(m for m in ("nertz_env.train", "torch", "stable_baselines3", "sb3_contrib") if m in sys.modules)
from nertz_env.agents import make_agent
env = nertz_env.parallel_env(num_players=4)
agents = [make_agent(s) for s in ("ppo", "heuristic", "heuristic", "ppo:deterministic=true")]
obs, _ = env.reset(seed=1)
for s, a in enumerate(agents):
    a.reset(env.config, s, s)
n = 0
while env.agents:
    obs, *_ = env.step({k: agents[s].act(obs[k]["observation"], obs[k]["action_mask"]) for s, k in enumerate(env.agents)})
    n += 1
assert n > 10
print(heavy, type(agents[0]).__module__, sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "stable_baselines3", "sb3_contrib", "nertz_env.train")))
"""


def test_ppo__loads_and_plays_through_make_agent_without_torch_or_the_training_package() -> None:
    r = subprocess.run([sys.executable, "-c", NO_TORCH], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["[]", "nertz_env.agents.policy", "[]"], r.stdout


@functools.cache
def _observations(specs: tuple[str, ...] = ("ppo", "heuristic"), agent_seed: int | None = None,
                  **rules: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation and mask of a game of ``specs`` at a 4-seat table of ``rules`` (shared: do not
    change them)."""
    env = nertz_env.parallel_env(num_players=4, **rules)
    obs_l, mask_l = [], []

    def keep(obs: dict[str, Any], _acts: dict[str, int]) -> None:
        for o in obs.values():
            obs_l.append(o["observation"])
            mask_l.append(o["action_mask"].astype(bool))

    play(env, list(specs), seed=3, hook=keep, agent_seed=agent_seed)
    return np.asarray(obs_l, dtype=np.float32), np.asarray(mask_l)


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("hidden", [[], [64], [96, 64, 32]])
def test_numpy_forward__the_compiled_first_choice_equals_the_dense_layers(activation: str, hidden: list[int]) -> None:
    """The one-call kernel equals argmax of the dense logits for any depth, activation, mask and observation
    dtype or stride; a wrong shape raises instead of reading past the arrays."""
    rng = np.random.default_rng(len(hidden) * 2 + (activation == "tanh"))
    dims = [40, *hidden]
    actor = NumpyActor([rng.normal(size=(a, b)).astype(np.float32) for a, b in itertools.pairwise(dims)],
                       [rng.normal(size=b).astype(np.float32) for b in dims[1:]],
                       rng.normal(size=(dims[-1], 12)).astype(np.float32), rng.normal(size=12).astype(np.float32),
                       activation)
    for k in range(200):
        x = rng.normal(size=40).astype(np.float32)
        if k % 2:
            x[rng.random(40) < 0.8] = 0.0  # sparse, as the observations are
        m = rng.random(12) < 0.3
        m[rng.integers(12)] = True
        want = int(np.argmax(np.where(m, actor.logits(x), -np.inf)))
        wide = np.zeros(80, np.float32)
        wide[::2] = x
        for xx, mm in ((x, m.astype(np.int8)), (x, m), (x.astype(np.float64), m.astype(np.int64)), (wide[::2], m)):
            assert actor.first_choice(xx, mm) == want
    for x, m in ((np.zeros(39, np.float32), np.ones(12, np.int8)), (np.zeros(40, np.float32), np.ones(11, np.int8)),
                 (np.zeros(40, np.float32), np.ones(1, np.int8)), (np.zeros((2, 40), np.float32), np.ones(12, bool))):
        with pytest.raises(ValueError, match="first_choice takes one observation"):
            actor.first_choice(x, m)  # never a broadcast mask (every action legal) nor a read past the arrays


def test_numpy_forward__layers_that_do_not_fit_are_refused() -> None:
    """The compiled call has no bounds checks: layers that only broadcast in numpy are refused at build."""
    w1, w2 = np.zeros((40, 8), np.float32), np.zeros((8, 6), np.float32)
    b1, b2 = np.zeros(8, np.float32), np.zeros(6, np.float32)
    wo, bo = np.zeros((6, 12), np.float32), np.zeros(12, np.float32)
    NumpyActor([w1, w2], [b1, b2], wo, bo)
    for weights, biases, w_out, b_out in [
        ([w1, w2], [np.zeros(1, np.float32), b2], wo, bo),  # a bias that broadcasts
        ([w1, w2], [b1, b2], wo, np.zeros(1, np.float32)),
        ([w1, np.zeros((7, 6), np.float32)], [b1, b2], wo, bo),
        ([w1, w2], [b1, b2], np.zeros((5, 12), np.float32), bo),
        ([w1, w2], [b1], wo, bo),
    ]:
        with pytest.raises(UnsupportedNetwork):
            NumpyActor(weights, biases, w_out, b_out)


def plays_through_nertz_eval_and_nertz_play(spec: str, tmp_path: Any, capsys: Any) -> list[Any]:
    """A gauntlet of ``spec`` against heuristic, then 40 ticks of a nertz-play table where its three seats
    move; returns the table's bots."""
    from nertz_env.eval.cli import main as nertz_eval
    from nertz_env.play import cli as play_cli

    assert nertz_eval(["gauntlet", spec, "heuristic", "--players", "4", "--deals", "1", "--seed", "3", "--no-save",
                       "--no-progress"]) == 0
    assert "heuristic" in capsys.readouterr().out
    built = play_cli._build(play_cli.build_parser().parse_args(
        ["--opponent", spec, "--players", "4", "--step", "--seed", "4", "--replay-dir", str(tmp_path)]))
    game = play_cli.make_table_server(built, seat=0, step=True).game
    moved = 0
    for _ in range(40):
        if game.done:
            break
        result = game.tick(None)  # the person waits; the three bot seats play
        moved += sum(1 for m in result.moves if m.seat != 0 and m.applied != 0 and not m.illegal)
    game.close()
    assert moved > 0
    return list(game.bots.values())


@pytest.mark.parametrize("name", ["ppo", "scratch"])
def test_shipped_network__plays_through_nertz_eval_and_nertz_play(name: str, tmp_path: Any, capsys: Any) -> None:
    """Each shipped network by name, in numpy: a gauntlet and three seats of a nertz-play table."""
    bots = plays_through_nertz_eval_and_nertz_play(name, tmp_path, capsys)
    assert all(bot.actor is not None for bot in bots)  # the numpy forward


def _save(policy: Any, path: str, kwargs: dict[str, Any] | None = None) -> None:
    """Save ``policy`` as a policy file with ppo's record (writes the array file beside it when numpy can run it)."""
    import torch

    from nertz_env.train.trainer import save_policy

    kwargs = kwargs or {"net_arch": {"pi": [256, 256], "vf": [256, 256]}, "activation_fn": torch.nn.ReLU}
    save_policy(policy, kwargs, path, read_meta(PPO))


def test_numpy_forward__same_choices_as_torch_on_game_and_random_observations_exact_ties_to_the_lowest() -> None:
    torch = pytest.importorskip("torch")
    obs, masks = _observations()
    rng = np.random.default_rng(0)  # and random inputs with random legal sets, off the game's manifold
    r_masks = rng.random((5000, masks.shape[1])) < 0.1
    r_masks[:, 0] = True
    obs = np.concatenate([obs, rng.random((5000, obs.shape[1]), dtype=np.float32)])
    masks = np.concatenate([masks, r_masks])
    assert len(obs) > 5000  # as docs/guides/learned-agents.md says
    policy, _ = load_policy(PPO)
    actor = NumpyActor.load(PPO)  # agents/models/ppo.npz: the same arrays as torch's network
    assert all(a.dtype == np.float32 and np.array_equal(a, b)
               for a, b in zip([*actor.weights, actor.w_out], [*NumpyActor.from_policy(policy).weights,
                                                               policy.action_net.weight.detach().numpy().T], strict=True))
    want = policy_probabilities(policy, obs, masks)
    assert [actor.first_choice(o, m) for o, m in zip(obs, masks, strict=True)] == np.argmax(want, axis=1).tolist()
    np.testing.assert_allclose(actor.probabilities(obs[0], masks[0]), want[0], atol=1e-5)
    policy = copy.deepcopy(policy)  # (load_policy's result is cached: never change it)
    with torch.no_grad():  # actions 40 and 7 tie, well above every other action: both take the lower index
        policy.action_net.weight[40] = policy.action_net.weight[7]
        policy.action_net.bias[7] += 1e4
        policy.action_net.bias[40] = policy.action_net.bias[7]
    tied = NumpyActor.from_policy(policy)
    masks[:, 7] = masks[:, 40] = True
    assert (np.argmax(policy_probabilities(policy, obs[:50], masks[:50]), axis=1) == 7).all()
    assert all(tied.first_choice(o, m) == 7 for o, m in zip(obs[:50], masks[:50], strict=True))
    masks[:, 7] = False  # alone at the top, the other one is chosen
    assert tied.first_choice(obs[0], masks[0]) == 40


def test_array_file__written_beside_each_saved_policy_read_once_with_torch_when_missing_never_stale(tmp_path: Any) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    shipped = NumpyActor.load(PPO)
    old = str(tmp_path / "old.zip")  # a zip saved before the array files: read once with torch, which writes one
    shutil.copy(PPO, old)
    with pytest.raises(UnsupportedNetwork, match="no array file"):
        NumpyActor.load(old)
    assert numpy_actor(old).activation == shipped.activation and os.path.isfile(arrays_path(old))
    assert all(np.array_equal(a, b) for a, b in zip(NumpyActor.load(old).weights, shipped.weights, strict=True))
    policy = copy.deepcopy(load_policy(PPO)[0])
    with torch.no_grad():  # saved again with other weights: the array file follows; a stale one is not read
        policy.action_net.bias += 1.0
    _save(policy, old)
    assert np.array_equal(NumpyActor.load(old).b_out, shipped.b_out + 1.0)
    agent = load_policy_agent(old, deterministic=True)
    assert agent.actor is not None
    shutil.copy(PPO, old)
    with pytest.raises(UnsupportedNetwork, match="other weights"):
        NumpyActor.load(old)
    # what numpy cannot run gets no array file, and the agent falls back to torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from nertz_env.train.imitate import build_policy

    config = nertz_env.make_config(num_players=4)
    small, kwargs = build_policy(config, [32])
    kwargs["activation_fn"] = torch.nn.LeakyReLU
    leaky = MaskableActorCriticPolicy(small.observation_space, small.action_space, lambda _: 1e-3, **kwargs)
    path = str(tmp_path / "leaky.zip")
    _save(leaky, path, kwargs)
    with pytest.raises(UnsupportedNetwork, match="ReLU or Tanh"):
        NumpyActor.from_policy(leaky)
    with pytest.raises(UnsupportedNetwork, match="no array file"):
        NumpyActor.load(path)
    agent = load_policy_agent(path, deterministic=True)
    assert agent.actor is None
    obs, masks = _observations()
    agent.reset(config, 0, 0)
    assert masks[0, agent.act(obs[0], masks[0].astype(np.int8))]


def test_policy_agent__sampled_play_and_pickling_still_reach_torch() -> None:
    pytest.importorskip("torch")
    agent = make_agent("ppo_imitation")
    assert isinstance(agent, PolicyAgent) and agent.actor is not None and agent._policy is None
    obs, masks = _observations()
    sampled = make_agent("ppo_imitation:deterministic=false")
    assert sampled.actor is None  # draws from torch's probabilities
    sampled.reset(nertz_env.make_config(num_players=4), 0, 0)
    assert masks[0, sampled.act(obs[0], masks[0].astype(np.int8))]
    back = pickle.loads(pickle.dumps(agent))
    assert back.actor is not None and back._policy is None
    pairs = list(zip(obs[:50], masks[:50].astype(np.int8), strict=True))
    assert [back.act(o, m) for o, m in pairs] == [agent.act(o, m) for o, m in pairs]
    assert agent.policy is not None  # torch on demand (training's opponent pools batch through it)
