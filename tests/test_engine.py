"""The engine itself: the compiled rules against the same source run as plain Python, and the generator."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nertz_env
from nertz_env.engine import rules
from variants import VARIANTS, variant_id

ROLLOUT = """
import json, sys, warnings
import numpy as np
import nertz_env
warnings.simplefilter("ignore")  # uint64 wrap-around warnings of plain-Python numpy scalars
env = nertz_env.parallel_env(jokers=1, allow_tuck=True, allow_rotate=True, num_players=3, stall_ticks=20)
obs, _ = env.reset(seed=3)
rng = np.random.default_rng(0)
snaps = []
for _ in range(int(sys.argv[1])):
    obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()})
    if not env.agents:
        obs, _ = env.reset()
    snaps.append(env.snapshot())
print(json.dumps(snaps))
"""


def _rollout(disable_jit: bool, ticks: int) -> list:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1" if disable_jit else "0"}
    out = subprocess.run(
        [sys.executable, "-c", ROLLOUT, str(ticks)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_compiled_rules__equal_the_same_rules_run_as_plain_python() -> None:
    compiled = _rollout(False, 250)
    plain = _rollout(True, 250)
    assert len(compiled) == 250
    for tick, (a, b) in enumerate(zip(compiled, plain, strict=True)):
        assert a == b, f"diverged at tick {tick}"


def test_table_generator__is_uniform_and_seed_dependent() -> None:
    state = np.zeros(2, dtype=np.uint64)
    rules.seed_table(state, 0, 1)
    rules.seed_table(state, 1, 2)
    assert state[0] != state[1]
    draws = np.array([rules.rng_below(state, 0, 6) for _ in range(60_000)])
    counts = np.bincount(draws, minlength=6)
    assert counts.min() > 9_500 and counts.max() < 10_500  # about 10,000 each; 5 sigma is about 500


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_incremental_observations__equal_a_full_rewrite_after_every_tick(variant: dict) -> None:
    """A tick rewrites only the parts of each view its moves touched (rules.observe_changes); after every tick
    of random games, with some unmasked actions mixed in, the observations and masks equal those written
    from scratch (rules.observe_table): the fast path against the simple one."""
    tables = 24
    venv = nertz_env.vector_env(tables, copy=False, **{**variant, "stall_ticks": 12})
    venv.reset(seed=5)
    S = venv._state
    rng = np.random.default_rng(0)
    rounds_ended = 0
    for tick in range(300):
        actions = venv.sample_actions().copy()
        wild = rng.random(actions.shape) < 0.1  # unmasked actions: flagged waits that change nothing
        actions[wild] = rng.integers(0, venv.actions.n, size=int(wild.sum()))
        venv.step(actions)
        rounds_ended += int((S.round_end > 0).sum())
        fast_obs, fast_mask = S.obs.copy(), S.mask.copy()
        for t in range(tables):
            rules.observe_table(S, t)
        for t, p in zip(*np.nonzero((fast_obs != S.obs).any(-1) | (fast_mask != S.mask).any(-1)), strict=True):
            bad_obs = np.flatnonzero(fast_obs[t, p] != S.obs[t, p]).tolist()
            bad_mask = np.flatnonzero(fast_mask[t, p] != S.mask[t, p]).tolist()
            raise AssertionError(f"tick {tick}, table {t}, seat {p}: obs {bad_obs}, mask {bad_mask} differ")
    assert rounds_ended > 0  # the games crossed round ends and stall rules too


@pytest.mark.parametrize(
    ("rules", "digest"),
    [
        ({}, "ab58a3e614f81ee1"),
        ({"num_players": 3, "rounds": 2}, "77245a24a086e990"),
        ({"jokers": 1, "allow_tuck": True, "allow_rotate": True, "turn_based": True}, "0d7d0bfe3b01683f"),
    ],
)
def test_observations__are_pinned_when_last_moves_is_off(rules: dict, digest: str) -> None:
    """Every observation and mask of a seeded random game, hashed: the digests were taken before the
    last_moves option existed, so with it off (the default) observations stay bit-identical."""
    env = nertz_env.parallel_env(**rules)
    obs, _ = env.reset(seed=11)
    h = hashlib.sha256()
    rng = np.random.default_rng(5)
    while env.agents:
        actions = {}
        for a in env.agents:
            h.update(obs[a]["observation"].tobytes())
            h.update(obs[a]["action_mask"].tobytes())
            actions[a] = int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
        obs, *_ = env.step(actions)
    assert h.hexdigest()[:16] == digest
