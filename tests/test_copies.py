"""Copies of every environment: pickle and deepcopy give an independent table that continues exactly as the
original, mid-episode, generators included.

Each test plays the original a few steps, copies it, then plays the ORIGINAL on for a stretch (through episode
ends and unseeded resets, so the rules' and the agents' generators are exercised) and records everything it
returns; then it plays the COPY over the same stretch with the same actions and compares. Running the two one
after the other (not interleaved) also proves independence: a copy that shared a buffer with the original
would start from where the original stopped.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import cloudpickle
import numpy as np
import pytest

import nertz_env
from nertz_env.agent_vector import agent_vector_env

COPIES: dict[str, Callable[[Any], Any]] = {
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    "deepcopy": copy.deepcopy,
    "cloudpickle": lambda env: cloudpickle.loads(cloudpickle.dumps(env)),  # how Ray and SuperSuit ship envs
}
RULES = {"num_players": 3, "max_ticks": 25}  # short rounds: the stretch crosses several episode ends


def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def _flat(x: Any) -> list:
    """Everything in a step's return, as a list of plain values and arrays (dict keys sorted)."""
    if isinstance(x, dict):
        return [v for k in sorted(x, key=str) for v in [k, *_flat(x[k])]]
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    if isinstance(x, np.ndarray):
        return [x.copy()]
    return [x]


def _assert_same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f"item {i}")
        else:
            assert x == y, f"item {i}: {x!r} != {y!r}"


def _check(make: Callable[[], Any], warmup: Callable[[Any], Any], play: Callable[[Any, Any], list], how: str) -> None:
    env = make()
    last = warmup(env)
    twin = COPIES[how](env)
    assert twin is not env
    first = play(env, last)
    second = play(twin, last)
    _assert_same(first, second)


# ---------------------------------------------------------------- parallel_env and the AEC forms
def _parallel_warmup(env: Any) -> Any:
    obs, _ = env.reset(seed=11)
    rng = np.random.default_rng(1)
    for _ in range(7):
        obs, *_ = env.step({a: _legal(o["action_mask"], rng) for a, o in obs.items()})
    return obs


def _parallel_play(env: Any, obs: Any) -> list:
    rng = np.random.default_rng(2)
    out: list = []
    for _ in range(80):
        if not env.agents:
            obs, info = env.reset()  # no seed: the table's own generator continues
            out += _flat(obs) + _flat(info)
            continue
        step = env.step({a: _legal(o["action_mask"], rng) for a, o in obs.items()})
        obs = step[0]
        out += _flat(step)
    return out


@pytest.mark.parametrize("how", COPIES)
def test_parallel_env__copy_continues_exactly_and_independently(how: str) -> None:
    _check(lambda: nertz_env.parallel_env(**RULES), _parallel_warmup, _parallel_play, how)


@pytest.mark.parametrize("how", COPIES)
def test_parallel_env__copy_of_a_fresh_env_plays_the_same_seeded_game(how: str) -> None:
    def warmup(env: Any) -> Any:
        return None

    def play(env: Any, _: Any) -> list:
        obs, _info = env.reset(seed=5)
        return _flat(obs) + _parallel_play(env, obs)

    _check(lambda: nertz_env.parallel_env(**RULES), warmup, play, how)


def test_parallel_env__copy_reads_its_own_buffers() -> None:
    """The bug a plain deepcopy had: the copy's output views pointed at detached arrays."""
    env = nertz_env.parallel_env(**RULES)
    env.reset(seed=0)
    twin = copy.deepcopy(env)
    assert np.shares_memory(twin._rows.obs, twin._state.obs)
    assert not np.shares_memory(twin._state.obs, env._state.obs)


def _aec_warmup(env: Any) -> Any:
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(20):
        obs, *_ = env.last()
        env.step(_legal(obs["action_mask"], rng))
    return None


def _aec_play(env: Any, _: Any) -> list:
    rng = np.random.default_rng(2)
    out: list = []
    for _ in range(150):
        if not env.agents:
            env.reset()  # no seed: the table's own generator continues
            out.append("reset")
            continue
        agent = env.agent_selection
        obs, rew, term, trunc, info = env.last()
        out += [agent, *_flat((obs, rew, term, trunc, info))]
        if term or trunc:
            env.step(None)
        else:
            env.step(_legal(obs["action_mask"], rng))
    return out


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("make", [nertz_env.env, nertz_env.raw_env], ids=["env", "raw_env"])
def test_aec_env__copy_continues_exactly(make: Callable[..., Any], how: str) -> None:
    _check(lambda: make(**RULES), _aec_warmup, _aec_play, how)


# ---------------------------------------------------------------- vector_env and the per-agent view
@pytest.mark.parametrize("how", COPIES)
def test_vector_env__copy_continues_exactly(how: str) -> None:
    def warmup(env: Any) -> Any:
        env.reset(seed=4)
        for _ in range(9):
            env.step(env.sample_actions())

    def play(env: Any, _: Any) -> list:
        out: list = []
        for _ in range(60):
            out += _flat(env.step(env.sample_actions()))
        return out

    _check(lambda: nertz_env.vector_env(3, **RULES), warmup, play, how)


@pytest.mark.parametrize("how", COPIES)
def test_agent_vector_env__copy_continues_exactly(how: str) -> None:
    def warmup(env: Any) -> Any:
        obs, _ = env.reset(seed=6)
        rng = np.random.default_rng(1)
        for _ in range(9):
            obs, *_ = env.step(np.array([_legal(m, rng) for m in obs["action_mask"]]))
        return obs

    def play(env: Any, obs: Any) -> list:
        rng = np.random.default_rng(2)
        out: list = []
        for _ in range(60):
            step = env.step(np.array([_legal(m, rng) for m in obs["action_mask"]]))
            obs = step[0]
            out += _flat(step)
        return out

    _check(lambda: agent_vector_env(2, **RULES), warmup, play, how)


# ---------------------------------------------------------------- the training views
def _single_warmup(env: Any) -> Any:
    env.reset(seed=8)
    rng = np.random.default_rng(1)
    for _ in range(6):
        env.step(_legal(env.action_masks(), rng))


def _single_play(env: Any, _: Any) -> list:
    rng = np.random.default_rng(2)
    out: list = []
    for _ in range(70):
        step = env.step(_legal(env.action_masks(), rng))
        out += _flat(step)
        if step[2] or step[3]:
            out += _flat(env.reset())  # unseeded: the env's generator picks seat, deal and opponents
    return out


@pytest.mark.parametrize("how", COPIES)
def test_single_agent_env__copy_continues_exactly_with_its_opponents(how: str) -> None:
    from nertz_env.train import NertzSingleAgentEnv

    rules = {k: v for k, v in RULES.items() if k != "num_players"}
    _check(
        lambda: NertzSingleAgentEnv(num_players=3, rules=rules, opponents={"random": 1.0, "greedy": 1.0}),
        _single_warmup,
        _single_play,
        how,
    )


@pytest.mark.parametrize("how", COPIES)
def test_sb3_vec_env__copy_continues_exactly_with_its_opponents(how: str) -> None:
    from nertz_env.train import NertzVecEnv

    rules = {k: v for k, v in RULES.items() if k != "num_players"}

    def make() -> Any:
        return NertzVecEnv(
            num_tables=2, num_players=3, rules=rules, learners_per_table=1,
            opponents={"random": 1.0, "greedy": 1.0}, seed=9, opponent_threads=2,
        )

    def warmup(env: Any) -> Any:
        env.reset()
        rng = np.random.default_rng(1)
        for _ in range(6):  # opponent_threads=2: the thread pool now exists and must not be copied
            env.step(np.array([_legal(m, rng) for m in env.action_masks()]))

    def play(env: Any, _: Any) -> list:
        rng = np.random.default_rng(2)
        out: list = []
        for _ in range(70):
            obs, rew, dones, infos = env.step(np.array([_legal(m, rng) for m in env.action_masks()]))
            out += _flat((obs, rew, dones, infos, env.action_masks()))
        return out

    _check(make, warmup, play, how)
