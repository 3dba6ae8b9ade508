"""The engine itself: the compiled rules against the same source run as plain Python, and the generator."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from nertz_env.engine import rules

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
