"""The environment's API: the PettingZoo parallel and AEC forms, bad input, snapshots, infos, ``state()``, copies
and pickles of every env form, the Gymnasium ids and wrappers, and the render modes."""

from __future__ import annotations

import copy
import functools
import json
import pickle
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import gymnasium.wrappers.vector as W
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import nertz_env
from nertz_env import infos as schema
from nertz_env.actions import action_table
from nertz_env.cards import JOKER, from_text
from nertz_env.config import OPTION_NAMES, Rules
from nertz_env.global_state import state_layout
from nertz_env.render import draw
from nertz_env.snapshot import SnapshotError, round_so_far
from nertz_env.train import NertzSingleAgentEnv
from test_rules import build
from variants import VARIANTS, variant_id

API = Path(__file__).resolve().parent.parent / "docs" / "env" / "api.md"


def legal_choice(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def random_legal(env: nertz_env.NertzParallelEnv, rng: np.random.Generator) -> dict[str, int]:
    return {a: legal_choice(env.action_mask(a), rng) for a in env.agents}


# ---------------------------------------------------------------------------------------------- every env form
# Short rounds of a two-round match: a few dozen steps cross round ends and the episode's end.
RULES = {"num_players": 3, "max_ticks": 8, "rounds": 2}
TRAIN_RULES = {"max_ticks": 8, "rounds": 2}
MIXED = {"random": 1.0, "greedy": 1.0}  # the training forms' opponents


def _sb3_vec() -> Any:
    pytest.importorskip("stable_baselines3")
    from nertz_env.train import NertzVecEnv

    return NertzVecEnv(num_tables=2, num_players=3, rules=TRAIN_RULES, learners_per_table=1,
                       opponents=MIXED, seed=9, opponent_threads=2)


def _step_parallel(env: Any, rng: np.random.Generator) -> Any:
    return env.step(random_legal(env, rng)) if env.agents else env.reset()  # no seed: the generator goes on


def _step_aec(env: Any, rng: np.random.Generator) -> Any:
    if not env.agents:
        return env.reset()
    out = (env.agent_selection, *env.last())
    obs, _, term, trunc, _ = out[1:]
    env.step(None if term or trunc else legal_choice(obs["action_mask"], rng))
    return out


def _step_single(env: Any, rng: np.random.Generator) -> Any:
    out = env.step(legal_choice(env.action_masks(), rng))
    return (*out, *env.reset()) if out[2] or out[3] else out  # unseeded: seat, deal and opponents from its generator


# form -> (make, one step with random legal actions: what it returned)
FORMS: dict[str, tuple[Callable[[], Any], Callable[[Any, np.random.Generator], Any]]] = {
    "parallel_env": (lambda: nertz_env.parallel_env(**RULES), _step_parallel),
    "env": (lambda: nertz_env.env(**RULES), _step_aec),
    "raw_env": (lambda: nertz_env.raw_env(**RULES), _step_aec),
    "vector_env": (lambda: nertz_env.vector_env(2, **RULES), lambda env, rng: env.step(env.sample_actions())),
    "agent_vector_env": (
        lambda: nertz_env.agent_vector_env(2, **RULES),
        lambda env, rng: env.step(np.array([legal_choice(m, rng) for m in env.action_masks()])),
    ),
    "NertzSingleAgentEnv": (lambda: NertzSingleAgentEnv(num_players=3, rules=TRAIN_RULES, opponents=MIXED),
                            _step_single),
    "NertzVecEnv": (
        _sb3_vec,
        lambda env, rng: (*env.step(np.array([legal_choice(m, rng) for m in env.action_masks()])), env.action_masks()),
    ),
}


def _reset(env: Any, seed: int = 0, **kw: Any) -> Any:
    if type(env).__name__ == "NertzVecEnv":
        return env.reset()  # SB3's VecEnv.reset takes no arguments; the seed is the constructor's
    return env.reset(seed=seed, **kw)


def assert_same_play(a: Any, b: Any, step: Callable[[Any, np.random.Generator], Any], steps: int) -> None:
    """``a`` plays ``steps`` steps, then ``b`` the same steps with the same random choices: every return equal."""
    runs = []
    for e in (a, b):
        rng = np.random.default_rng(2)
        runs.append([copy.deepcopy(step(e, rng)) for _ in range(steps)])  # (an env may reuse its arrays)
    np.testing.assert_equal(runs[0], runs[1])


def _wait_step(env: Any) -> None:
    """Every seat waits (action 0), in each form's action shape."""
    name = type(env).__name__
    if name == "NertzParallelEnv":
        env.step({a: 0 for a in env.possible_agents})
    elif name in ("NertzVectorEnv", "NertzAgentVectorEnv", "NertzVecEnv"):
        env.step(np.zeros(env.action_space.shape, dtype=np.int64))
    else:
        env.step(0)


# (cloudpickle, how Ray and SuperSuit ship envs, pickles these importable classes as pickle does)
COPIES: dict[str, Callable[[Any], Any]] = {
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    "deepcopy": copy.deepcopy,
}


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("form", FORMS)
def test_copy__continues_exactly_and_independently_mid_episode(form: str, how: str) -> None:
    """The original plays on (round and episode ends, unseeded resets), then the copy: the same returns. Not
    interleaved: a copy sharing a buffer with the original would start where the original stopped."""
    make, step = FORMS[form]
    env = make()
    _reset(env, 11)
    rng = np.random.default_rng(1)
    for _ in range(7):
        step(env, rng)
    assert_same_play(env, COPIES[how](env), step, 60)


@pytest.mark.parametrize("form", FORMS)
def test_lifecycle__unknown_reset_options_warn_every_time_and_step_and_reset_after_close_raise(form: str) -> None:
    make, step = FORMS[form]
    env = make()
    for _ in range(2):
        with pytest.warns(UserWarning, match=r"ignores unknown option\(s\) \['xxx") as caught:
            if form == "NertzVecEnv":
                env.set_options({LONG: 1})
                env.reset()
            else:
                env.reset(seed=0, options={LONG: 1})
        assert len(str(caught[0].message)) < 400  # the name cut
    step(env, np.random.default_rng(0))  # and the env is usable
    env.close()
    env.close()  # closing twice is harmless
    with pytest.raises(ClosedEnvironmentError, match=r"step\(\) after close\(\)"):
        _wait_step(env)
    with pytest.raises(ClosedEnvironmentError, match=r"reset\(\) after close\(\)"):
        _reset(env)


# ---------------------------------------------------------------------------------------------- infos
_PY = {"bool": bool, "int": int, "float": float, "str": str, "dict": dict}


def check_info(info: dict[str, Any], keys: tuple[schema.InfoKey, ...], n_act: int, penalty: int = 2) -> bool:
    """One seat's infos hold exactly the schema's keys with their types, every PettingZoo value a number or a
    numeric array (TorchRL makes a tensor of each), and a round's score is its breakdown. True at a round end."""
    assert set(info) == {k.name for k in keys}, sorted(info)
    for k in keys:
        v = info[k.name]
        if k.kind == "array":
            assert isinstance(v, np.ndarray) and v.dtype == np.int8 and v.shape == (n_act,), k.name
        else:
            assert type(v) is _PY[k.kind], (k.name, type(v))
        if keys is not schema.SINGLE:  # (the single-agent view, not a PettingZoo env, names its opponents)
            assert np.asarray(v).dtype.kind in "biuf", (k.name, v)
    s = schema.score_of(info)
    if not info["round_end"]:  # "none yet": every round field 0
        assert set(s.values()) == {0} and info["team_score"] == 0
    else:
        assert info["round_end"] in range(1, len(schema.ROUND_END_NAMES))
        assert s["lake"] + s["nertz_penalty"] + s["bonus"] + s["false_calls"] == s["total"]
        assert s["nertz_penalty"] == -penalty * s["nertz_left"] and 0 <= s["nertz_left"] <= 13
    return bool(info["round_end"])


def check_batched(info: dict[str, Any], keys: tuple[schema.InfoKey, ...], dims: dict[str, int], mask: np.ndarray) -> bool:
    assert set(info) == {k.name for k in keys}, sorted(info)
    for k in keys:
        v = info[k.name]
        assert isinstance(v, np.ndarray) and v.dtype.name == k.kind, (k.name, v.dtype)
        assert v.shape == tuple(dims[s] for s in k.shape), (k.name, v.shape)
    assert info["action_mask"] is mask  # the very array, no copy
    return bool((info["round_end"] > 0).any())


@pytest.mark.parametrize("obs_key", ["observation", None], ids=["dict", "bare"])
def test_infos__parallel_env_every_key_on_every_step_a_missing_agent_included(obs_key: str | None) -> None:
    env = nertz_env.parallel_env(obs_key=obs_key, nertz_penalty=3, **RULES)
    keys = schema.PER_AGENT if obs_key else schema.PER_AGENT_BARE
    rng = np.random.default_rng(0)
    ends = 0
    for episode in range(2):
        obs, infos = env.reset(seed=episode)
        assert set(infos) == set(env.agents)
        for i in infos.values():
            check_info(i, keys, env.actions.n, penalty=3)
        while env.agents:
            if obs_key is None:
                assert isinstance(obs["player_0"], np.ndarray) and obs["player_0"].shape == (env.obs_layout.size,)
            acts = random_legal(env, rng)
            acts.pop("player_2")  # a missing agent: the key is there on every step anyway
            obs, _, _, _, infos = env.step(acts)
            ended = [check_info(i, keys, env.actions.n, penalty=3) for i in infos.values()]
            ends += ended[0]
            assert infos["player_2"]["missing_action"] and infos["player_2"]["action"] == 0 and not infos["player_0"]["missing_action"]
    assert ends == 4  # every round ended at max_ticks at the latest, and each end was seen


def test_infos__aec_single_agent_and_vector_forms_every_key_at_reset_and_every_step() -> None:
    rng = np.random.default_rng(0)
    aec = nertz_env.env(**RULES)
    aec.reset(seed=0)
    for _ in aec.agent_iter():
        check_info(aec.last()[-1], schema.PER_AGENT, aec.unwrapped.actions.n)
        _step_aec(aec, rng)
    single = NertzSingleAgentEnv(num_players=3, rules={"max_ticks": 8}, opponents=["random"])
    _, info = single.reset(seed=0)
    check_info(info, schema.SINGLE, single.action_space.n)
    np.testing.assert_array_equal(info["action_mask"], single.action_masks())
    term = trunc = False
    while not (term or trunc):
        _, _, term, trunc, info = single.step(legal_choice(single.action_masks(), rng))
        check_info(info, schema.SINGLE, single.action_space.n)
    assert info["max_ticks"] is True  # the round was cut off
    ends = 0
    for form, keys, dims in (("vector_env", schema.VECTOR, {"T": 2, "P": 3}), ("agent_vector_env", schema.AGENT_VECTOR, {"N": 6})):
        make, step = FORMS[form]
        env = make()
        dims["A"] = aec.unwrapped.actions.n
        obs, info = env.reset(seed=0)
        check_batched(info, keys, dims, obs["action_mask"])
        for _ in range(20):
            obs, _, _, _, info = step(env, rng)
            ends += check_batched(info, keys, dims, obs["action_mask"])
            if form == "agent_vector_env":
                np.testing.assert_array_equal(info["_score"], info["round_end"] > 0)
    assert ends >= 2


# ---------------------------------------------------------------------------------------------- the parallel form
def test_same_seed__same_game_and_a_reset_without_seed_continues_the_seeds_sequence() -> None:
    a, b = nertz_env.parallel_env(max_ticks=60), nertz_env.parallel_env(max_ticks=60)
    for e in (a, b):
        e.reset(seed=11)
    assert_same_play(a, b, _step_parallel, 150)
    assert a.snapshot() == b.snapshot()
    for e in (a, b):
        e.reset(seed=4)
        e.reset()
    assert a.snapshot() == b.snapshot()
    a.reset(seed=5)
    a.reset()
    assert a.snapshot()["players"] != b.snapshot()["players"]


def test_illegal_action__is_a_flagged_wait_by_default_and_raises_before_any_change_in_raise_mode() -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    before = env.snapshot()
    illegal = int(np.flatnonzero(env.action_mask("player_0") == 0)[0])
    acts = {"player_0": illegal, "player_1": 10_000, "player_2": -3, "player_3": np.int64(0)}  # numpy ints too
    *_, infos = env.step(acts)
    assert [i["illegal"] for i in infos.values()] == [True, True, True, False]
    assert all(i["action"] == 0 for i in infos.values())
    after = env.snapshot()
    assert after["players"] == before["players"] and after["lake"] == before["lake"]
    *_, infos = env.step({a: np.array(1) for a in env.agents})  # and 0-d integer arrays
    assert not any(i["illegal"] for i in infos.values())
    strict = nertz_env.parallel_env(illegal_action="raise")
    strict.reset(seed=0)
    before = strict.snapshot()
    with pytest.raises(ValueError, match="not legal"):
        strict.step({**{a: 0 for a in strict.agents}, "player_0": illegal})
    with pytest.raises(ValueError, match="no action given"):
        strict.step({"player_0": 1})
    assert strict.snapshot() == before


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"player_0": "flip"}, "player_0"),
        ({"player_0": 1.5}, "player_0"),
        ({"player_0": [1, 2]}, "player_0"),
        ({"player_0": object()}, "player_0"),
        ({"player_9": 0}, "unknown agent 'player_9'"),
    ],
)
def test_bad_action__is_refused_naming_the_agent(actions: dict, match: str) -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=match):
        env.step({**{a: 0 for a in env.agents}, **actions} if "player_0" in actions else actions)


@pytest.mark.parametrize(("form", "bad"), [("NertzSingleAgentEnv", 1.5), ("NertzSingleAgentEnv", True),
                                           ("NertzSingleAgentEnv", "0"), ("NertzSingleAgentEnv", np.array([0, 1])),
                                           ("NertzVecEnv", np.array([1.5, 1.5])), ("NertzVecEnv", np.array([0]))])
def test_bad_action__the_training_forms_refuse_it_and_play_on(form: str, bad: object) -> None:
    """Not read as action 1, 1 or 0, nor one action broadcast to every learner."""
    make, step = FORMS[form]
    env = make()
    _reset(env)
    with pytest.raises(ValueError, match="action"):
        env.step(bad)
    step(env, np.random.default_rng(0))


def test_bad_seed__the_sb3_vector_env_refuses_it_at_reset() -> None:
    env = _sb3_vec()
    env.seed(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        env.reset()


@pytest.mark.parametrize(("illegal_action", "bad"), [("noop", 1.5), ("noop", "flip"), ("raise", 10_000), ("raise", -1),
                                                   pytest.param("raise", 10**5000, id="raise-5000-digits")])
def test_aec_bad_action__raises_at_its_own_step_and_changes_nothing(illegal_action: str, bad: object) -> None:
    env = nertz_env.env(num_players=2, illegal_action=illegal_action)
    env.reset(seed=0)
    before = env.unwrapped.snapshot()
    with pytest.raises(ValueError, match="player_0"):
        env.step(bad)
    assert env.agent_selection == "player_0" and env.unwrapped.snapshot() == before
    env.step(1)
    env.step(1)  # the tick runs with the good actions
    assert [env.infos[a]["illegal"] for a in env.agents] == [False, False] and env.unwrapped.tick == 1


def test_max_cycles__is_the_tick_bound_of_a_one_round_episode_in_every_pettingzoo_form() -> None:
    for make in (nertz_env.parallel_env, nertz_env.env, nertz_env.raw_env):
        assert make(max_cycles=3, num_players=2).unwrapped.config.max_ticks == 3
    env = nertz_env.parallel_env(max_cycles=5)
    env.reset(seed=0)
    steps = 0
    while env.agents:
        _, _, terms, truncs, _ = env.step({a: 0 for a in env.agents})
        steps += 1
    assert steps == 5 and all(truncs.values()) and not any(terms.values())
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step({"player_0": 0})


def test_rules_keywords__reach_the_table_in_every_factory_and_an_unknown_one_is_refused() -> None:
    assert set(Rules.__annotations__) | {"num_players"} == set(OPTION_NAMES)
    e = nertz_env.parallel_env(num_players=3, draw=1, teams=False, jokers=2, max_cycles=50)
    assert (e.config.num_players, e.config.draw, e.config.jokers, e.config.max_ticks) == (3, 1, 2, 50)
    v = nertz_env.vector_env(2, 5, work_piles=6, copy=False)
    assert (v.num_envs, v.config.num_players, v.config.work_piles, v.copy) == (2, 5, 6, False)
    a = nertz_env.agent_vector_env(2, num_players=2, recycle="shuffle")
    assert (a.num_envs, a.config.recycle) == (4, "shuffle")
    aec = nertz_env.env(nertz_size=9, illegal_action="raise")
    assert aec.unwrapped.config.nertz_size == 9 and aec.unwrapped.illegal_action == "raise"
    for make in (nertz_env.parallel_env, nertz_env.env, lambda **k: nertz_env.vector_env(1, **k),
                 lambda **k: nertz_env.agent_vector_env(1, **k)):
        with pytest.raises(ValueError, match=r"unknown option\(s\) \['drwa'\]; the options are"):
            make(drwa=1)


def test_rules_keywords__the_single_agent_and_sb3_vector_envs_take_them_or_a_rules_dict_not_both() -> None:
    pytest.importorskip("sb3_contrib", reason="needs the train extra")
    from nertz_env.train import NertzVecEnv

    env = NertzSingleAgentEnv(num_players=2, draw=1, opponents=["random"])
    assert (env.config.draw, env.config.num_players) == (1, 2)
    assert NertzSingleAgentEnv(2, {"draw": 1}).config == env.config
    venv = NertzVecEnv(1, 2, draw=1)
    assert venv.config == env.config
    venv.close()
    for make in (NertzSingleAgentEnv, lambda *a, **k: NertzVecEnv(1, *a, **k)):
        with pytest.raises(ValueError, match=r"not both"):
            make(2, rules={"draw": 1}, jokers=2)
    with pytest.raises(ValueError, match=r"unknown option"):
        NertzSingleAgentEnv(2, drawn=1)


BAD_OPTIONS = [
    ({"num_players": 9}, "num_players=9 is not allowed: num_players must be an integer from 2 to 8"),
    ({"draw": 1.0}, "draw"),
    ({"recycle": "riffle"}, "recycle"),
    ({"teams": [[0, 1], [1, 2, 3]]}, "teams"),
    ({"teams": [[0, 1], "23"]}, "list of seat lists"),
    ({"teams": True, "num_players": 2}, "teams=True .* at least 4"),
    ({"teams": [[0, 1, 2, 3]]}, "teams=.* at least two teams"),
    ({"allow_tuck": 1}, "allow_tuck"),
    ({"target_score": 50, "rounds": 3}, "exclusive"),
    ({"max_cycles": 3, "max_ticks": 4}, "not both"),
    ({"max_cycles": 3, "rounds": 2}, "several rounds"),
    ({"max_cycles": 0}, "max_cycles"),
    ({"render_mode": "video"}, "render_mode"),
    ({"illegal_action": "ignore"}, "illegal_action"),
]
LONG = "x" * 100_000
REFUSED = [(functools.partial(nertz_env.parallel_env, **rules), match) for rules, match in BAD_OPTIONS] + [
    (lambda: nertz_env.parallel_env().reset(options={"snapshot": nertz_env.parallel_env(draw=1).snapshot()}),
     "draw=1 in the snapshot but 3 here"),
    (lambda: nertz_env.agent_vector_env(1, obs_format="box"), "obs_format must be 'dict' or 'array'"),
    # a long value is cut
    (lambda: nertz_env.parallel_env(render_mode=LONG), "render_mode"),
    (lambda: nertz_env.parallel_env(illegal_action=LONG), "illegal_action"),
    (lambda: nertz_env.parallel_env(obs_key=LONG), "obs_key"),
    (lambda: nertz_env.parallel_env(max_cycles=LONG), "max_cycles"),
    (lambda: nertz_env.vector_env(LONG), ""),
    (lambda: nertz_env.vector_env(2).snapshot(10**4000), "table must be"),  # past Python's int-to-text limit
    (lambda: nertz_env.agent_vector_env(1, obs_format=LONG), "obs_format"),
    (lambda: nertz_env.action_table(nertz_env.make_config()).lookup(LONG), ""),
    (lambda: nertz_env.action_table(nertz_env.make_config()).name(10**4000), ""),
    (lambda: (lambda e: (e.reset(seed=0), e.step({LONG: 0})))(nertz_env.parallel_env()), ""),
]


@pytest.mark.parametrize(("call", "match"), REFUSED, ids=range(len(REFUSED)))
def test_bad_argument__one_line_value_error_naming_it_and_cutting_a_long_value(call: Callable[[], Any],
                                                                                match: str) -> None:
    with pytest.raises(ValueError, match=match or None) as e:
        call()
    assert len(str(e.value)) < 400 and "\n" not in str(e.value), str(e.value)[:400]


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True, 2**64, np.array(5)])
def test_bad_seed__value_error(seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        nertz_env.parallel_env().reset(seed=seed)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- snapshots, decode
@pytest.mark.parametrize("rules", VARIANTS[::3], ids=variant_id)
def test_snapshot__round_trips_through_json_and_continues_identically(rules: dict) -> None:
    env = nertz_env.parallel_env(**rules)
    env.reset(seed=21)
    rng = np.random.default_rng(1)
    for _ in range(40):
        _step_parallel(env, rng)
    snap = json.loads(json.dumps(env.snapshot()))
    assert snap["format"] == "nertz-snapshot/1"
    twin = nertz_env.parallel_env(**rules)
    twin.reset(options={"snapshot": snap})
    assert twin.snapshot() == env.snapshot()
    assert_same_play(env, twin, _step_parallel, 150)
    assert env.snapshot() == twin.snapshot()


def test_decode__reads_back_the_visible_layout_and_round_so_far_the_running_score() -> None:
    env = nertz_env.parallel_env(jokers=2, nertz_penalty=3)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(3)
    for _ in range(60):
        obs, *_ = env.step(random_legal(env, rng))
    snap = env.snapshot()
    for p, agent in enumerate(env.agents):
        d = nertz_env.decode(obs[agent]["observation"], env.config)
        mine = snap["players"][p]
        assert d["nertz_count"] == len(mine["nertz"])
        assert d["nertz_top"] == (mine["nertz"][-1] if mine["nertz"] else None)
        assert d["waste_top"] == (mine["waste"][-1] if mine["waste"] else None)
        assert d["stock_count"] == len(mine["stock"])
        assert d["work"] == mine["work"]
        assert d["opponents"][0]["nertz_count"] == len(snap["players"][(p + 1) % 4]["nertz"])
    state = env._state
    assert round_so_far(snap) == [int(state.lake_played[0, p]) - 3 * int(state.nertz_len[0, p]) for p in range(4)]
    assert state.lake_played.any()


def test_observation__lake_tops_stay_in_bounds_when_jokers_top_foundations_too() -> None:
    """Three foundations topped by an AC (two decks' and a joker): the observation stays in its Box."""
    env = build({"num_players": 2, "jokers": 1}, lake=[[["AC", 0]], [["AC", 1]], [["*AC", 0]]])
    obs, _ = env.reset(options={"snapshot": env.snapshot()})
    assert all(env.observation_space(a).contains(obs[a]) for a in env.agents)
    assert nertz_env.decode(obs["player_0"]["observation"], env.config)["lake_tops"]["AC"] == 3


def test_describe_action__names_every_index() -> None:
    table = action_table(nertz_env.make_config(allow_tuck=True, jokers=1, call_mode="manual", allow_rotate=True))
    assert len({table.describe(i) for i in range(table.n)}) == table.n
    assert nertz_env.describe_action(0) == "wait a tick"
    with pytest.raises(ValueError, match="action index"):
        nertz_env.describe_action(10_000)


# ---------------------------------------------------------------------------------------------- state()
def piles_from_state(state: np.ndarray, config: nertz_env.NertzConfig) -> list[dict[str, list[int]]]:
    """Per seat, each location's cards bottom to top (card indices of the deck), read back from the state."""
    layout = state_layout(config)
    cards = layout.cards(state)
    out = []
    for p in range(config.num_players):
        seat: dict[str, list[int]] = {}
        for k, loc in enumerate(layout.locations):
            here = np.flatnonzero(cards[p, :, k] == 1.0)
            seat[loc] = [int(c) for c in here[np.argsort(-cards[p, here, -1], kind="stable")]]
        out.append(seat)
    return out


def card_index(text: str) -> int:
    """A snapshot card's index in its deck, jokers as 52 (the two joker slots are interchangeable)."""
    return JOKER if text.startswith("*") else from_text(text)


@pytest.mark.parametrize("rules", [{}, {"num_players": 2, "jokers": 2, "work_piles": 5}, {"num_players": 3, "jokers": 1, "draw": 1}])
def test_state__holds_every_cards_exact_position(rules: dict) -> None:
    env = nertz_env.parallel_env(**rules)
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    cfg = env.config
    assert env.state_space.shape == (state_layout(cfg).size,)
    while env.agents and env.snapshot()["tick"] < 120:
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        np.testing.assert_array_equal(state_layout(cfg).cards(state)[..., :-1].sum(-1), 1.0)  # every card once
        snap = env.snapshot()
        got = piles_from_state(state, cfg)
        for p, pl in enumerate(snap["players"]):
            for loc in ("nertz", "stock", "waste"):
                assert [min(c, 52) for c in got[p][loc]] == [card_index(c) for c in pl[loc]], (p, loc)
            for j, pile in enumerate(pl["work"]):
                assert [min(c, 52) for c in got[p][f"work_{j}"]] == [card_index(c) for c in pile]
        assert sum(len(got[p]["lake"]) for p in range(cfg.num_players)) == sum(len(f) for f in snap["lake"])
        env.step(random_legal(env, rng))


def test_state__changes_with_hidden_cards_that_no_observation_shows() -> None:
    """Reordering a seat's hidden cards changes no observation or mask, only its card depths in the state."""
    env = nertz_env.parallel_env(draw=1)
    obs, _ = env.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(40):  # some cards in the wastes
        obs, *_ = env.step(random_legal(env, rng))
    snap = env.snapshot()
    pl = snap["players"][1]
    assert len(pl["waste"]) > 2 and len(pl["stock"]) > 2 and len(pl["nertz"]) > 2
    pl["stock"] = pl["stock"][::-1]
    pl["nertz"] = pl["nertz"][:-1][::-1] + pl["nertz"][-1:]
    pl["waste"] = pl["waste"][:-1][::-1] + pl["waste"][-1:]
    other = nertz_env.parallel_env(draw=1)
    obs2, _ = other.reset(options={"snapshot": snap})
    for agent in obs:
        np.testing.assert_array_equal(obs[agent]["observation"], obs2[agent]["observation"])
        np.testing.assert_array_equal(obs[agent]["action_mask"], obs2[agent]["action_mask"])
    before, after = env.state(), other.state()
    layout = state_layout(env.config)
    changed = np.flatnonzero(before != after)
    cards = layout.slices["cards"]
    seat_width = env.config.deck_size * layout.card_width
    assert changed.size and changed.min() >= cards.start + seat_width and changed.max() < cards.start + 2 * seat_width
    assert all((i - cards.start) % layout.card_width == layout.card_width - 1 for i in changed)


def test_memory__reordering_the_cards_a_seat_cannot_place_changes_no_observation() -> None:
    """With memory, the cards a seat cannot place (unseen, or seen before a shuffled redeal) may lie in any
    order: every observation stays as it was."""
    env = nertz_env.parallel_env(memory=True, recycle="shuffle", draw=1)
    obs, _ = env.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(150):
        obs, *_ = env.step(random_legal(env, rng))
    snap = env.snapshot()
    moved = Counter()
    for pl in snap["players"]:
        slots = [("nertz", k, 0) for k in range(len(pl["nertz"]) - 1)]
        slots += [(pile, k, m) for pile in ("stock", "waste") for k, m in enumerate(pl["memory"][pile]) if m < 2]
        for flag in (0, 1):
            group = [(pile, k) for pile, k, m in slots if m == flag]
            cards = [pl[pile][k] for pile, k in group][::-1]
            for (pile, k), c in zip(group, cards, strict=True):
                moved[flag] += pl[pile][k] != c
                pl[pile][k] = c
    assert moved[0] > 20 and moved[1] > 5, moved  # some seat saw cards before a shuffled redeal
    other = nertz_env.parallel_env(memory=True, recycle="shuffle", draw=1)
    obs2, _ = other.reset(options={"snapshot": snap})
    for agent in obs:
        np.testing.assert_array_equal(obs[agent]["observation"], obs2[agent]["observation"])
    bad = copy.deepcopy(snap)
    bad["players"][0]["memory"]["stock"].append(2)
    with pytest.raises(SnapshotError, match=r"players\[0\]\.memory\.stock must list one of 0 \(never seen\)"):
        other.reset(options={"snapshot": bad})


def test_memory__every_env_form_takes_the_option() -> None:
    """memory=True reaches the table in every env form: four slices of one value per own card."""
    pytest.importorskip("stable_baselines3")
    from nertz_env.train import NertzVecEnv

    size = nertz_env.obs_layout(nertz_env.make_config()).size + 4 * 52
    spaces = [
        nertz_env.parallel_env(memory=True).observation_space("player_0")["observation"],
        nertz_env.env(memory=True).observation_space("player_0")["observation"],
        nertz_env.agent_vector_env(1, memory=True).single_observation_space["observation"],
        gymnasium.make_vec("nertz_env/NertzAgents-v0", num_envs=4, memory=True).single_observation_space["observation"],
        gymnasium.make("nertz_env/Nertz-v0", memory=True, opponents=["random"]).observation_space,
        NertzVecEnv(1, 4, memory=True, opponents=["random"]).observation_space,
    ]
    assert [s.shape for s in spaces] == [(size,)] * 6
    assert nertz_env.vector_env(1, memory=True).single_observation_space["observation"].shape == (4, size)


def test_state__of_a_batch_is_each_tables_parallel_env_state_and_aec_passes_it_through() -> None:
    venv = nertz_env.vector_env(3, num_players=3, jokers=1)
    envs = nertz_env.agent_vector_env(3, num_players=3, jokers=1)
    venv.reset(seed=5)
    envs.reset(seed=5)
    for _ in range(30):
        acts = venv.sample_actions()
        venv.step(acts)
        envs.step(acts.reshape(-1))
    state = venv.state()
    assert state.shape == venv.state_space.shape == (3, state_layout(venv.config).size)
    assert venv.single_state_space.shape == state.shape[1:]
    np.testing.assert_array_equal(envs.state(), state)
    assert envs.state()[envs.env_table].shape == (9, state.shape[1])
    table = nertz_env.parallel_env(num_players=3, jokers=1)
    for t in range(3):  # (test_vector.py: a batch's table plays as parallel_env does)
        table.reset(options={"snapshot": venv.snapshot(t)})
        np.testing.assert_array_equal(state[t], table.state())
    aec, par = nertz_env.env(), nertz_env.parallel_env()
    aec.reset(seed=2)
    par.reset(seed=2)
    np.testing.assert_array_equal(aec.state(), par.state())
    assert aec.state_space == par.state_space


# ---------------------------------------------------------------------------------------------- Gymnasium
def test_gym_make__the_single_agent_view_and_make_vec_the_per_agent_env_with_rules_as_keywords() -> None:
    env = gymnasium.make("nertz_env/Nertz-v0", num_players=3, draw=1, jokers=1, opponents=["random"])
    assert env.spec is not None and env.spec.id == "nertz_env/Nertz-v0"
    cfg = env.unwrapped.config
    assert (cfg.num_players, cfg.draw, cfg.jokers) == (3, 1, 1)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    _, reward, term, trunc, _ = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert isinstance(reward, float) and not (term or trunc)
    sync = gymnasium.make_vec("nertz_env/Nertz-v0", num_envs=2, num_players=2, opponents=["random"])
    assert sync.reset(seed=0)[0].shape == (2, sync.single_observation_space.shape[0])
    sync.close()
    envs = gymnasium.make_vec("nertz_env/NertzAgents-v0", num_envs=6, num_players=3, draw=1)
    assert envs.num_envs == 6 and envs.unwrapped.num_tables == 2 and envs.unwrapped.config.draw == 1
    _, infos = envs.reset(seed=0)
    envs.step(np.array([np.flatnonzero(m)[0] for m in infos["action_mask"]]))
    with pytest.raises(ValueError, match="multiple of num_players=4"):
        gymnasium.make_vec("nertz_env/NertzAgents-v0", num_envs=6)
    with pytest.raises(gymnasium.error.Error):
        gymnasium.make("nertz_env/NertzAgents-v0")  # no single-env form


def test_gym_wrappers__one_that_needs_a_box_runs_on_the_array_form_across_the_autoreset() -> None:
    """``obs_format="array"``: the mask in the infos (test_clients.py: a wrapper that reads the endings)."""
    env = W.NormalizeObservation(nertz_env.agent_vector_env(2, num_players=2, max_ticks=20,
                                                            obs_format="array"))
    _, info = env.reset(seed=0)
    for _ in range(25):
        *_, info = env.step(np.array([int(np.flatnonzero(m)[0]) for m in info["action_mask"]]))
        np.testing.assert_array_equal(env.unwrapped.action_masks(), np.asarray(info["action_mask"]).astype(bool))
    assert env.observation_space.shape == (4, env.unwrapped.single_observation_space.shape[0])
    env.close()


# ---------------------------------------------------------------------------------------------- rendering
def test_render__ansi_shows_every_seat_and_the_lake_and_takes_the_mode_rllib_passes() -> None:
    """RLlib calls ``render(self.render_mode)`` (its own mode, often None) on the parallel and AEC forms."""
    env = nertz_env.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "Lake" in text and all(f"player_{p}" in text for p in range(4))
    assert env.render(None) == text and env.render("ansi") == text
    quiet = nertz_env.parallel_env()
    quiet.reset(seed=0)
    assert quiet.render("ansi") == text  # an explicit mode renders even without a render_mode
    aec = nertz_env.env(render_mode="ansi")
    aec.reset(seed=0)
    assert aec.render(None) == aec.render("ansi") == aec.render() == text


def test_render__without_the_render_extra_rgb_array_is_not_declared_and_refused_in_one_line() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["resvg_py"] = None  # a plain install, simulated
        sys.modules["PIL"] = None
        import nertz_env
        from pettingzoo.test import render_test
        assert nertz_env.parallel_env(num_players=2).metadata["render_modes"] == ["ansi", "human"]
        assert nertz_env.vector_env(1).metadata["render_modes"] == ["ansi", "human"]
        render_test(lambda render_mode=None: nertz_env.env(render_mode=render_mode, num_players=2))
        try:
            nertz_env.parallel_env(render_mode="rgb_array")
        except ValueError as e:
            print(e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == draw.rgb_extra_message()  # after render_test's human frames
