"""experiments/headroom.py's measuring sticks: the oracle reads the engine's hidden cards consistently with what the
observation shows, fills every slot of its model, and both oracles play only legal moves."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.agents.kernels import S_NCOUNT, S_NERTZ, S_SCOUNT, S_STOCK, S_WASTE, S_WCOUNT, UNKNOWN
from test_agents import play

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPT = ROOT / "experiments" / "headroom.py"  # a lab script: not in the sdist


@pytest.fixture(scope="module")
def headroom() -> ModuleType:
    if not SCRIPT.is_file():
        pytest.skip("experiments/ is not in the sdist")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_headroom", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _play(headroom: ModuleType, candidate: Any, seed: int, ticks: int) -> int:
    """Up to ``ticks`` ticks of ``candidate`` against heuristic: legal moves, nothing unknown in its model."""
    env = nertz_env.parallel_env(num_players=4, illegal_action="raise")
    candidate.attach(env)

    def known(_obs: Any, _acts: Any) -> None:
        s = candidate._state
        for base, n in ((S_STOCK, S_SCOUNT), (S_WASTE, S_WCOUNT), (S_NERTZ, S_NCOUNT)):
            assert not np.any(s[base : base + s[n]] == UNKNOWN)

    moves, _ = play(env, [candidate, "heuristic", "heuristic", "heuristic"], seed, known, seed, ticks)
    return len(moves)


def test_oracle_search_sees_every_own_card_and_plays_legally(headroom: ModuleType) -> None:
    assert _play(headroom, headroom.OracleSearch(rollouts=4), seed=3, ticks=100) > 20


def test_oracle_reveal_refuses_a_table_that_does_not_match_the_observation(headroom: ModuleType) -> None:
    env = nertz_env.parallel_env(num_players=4)
    oracle = headroom.OracleSearch(rollouts=4)
    oracle.attach(env)
    obs, _ = env.reset(seed=1)
    oracle.reset(env.config, 0, 0)
    other = nertz_env.parallel_env(num_players=4)
    other.reset(seed=2)
    oracle.attach(other)  # another deal: its cards do not match seat 0's observation
    with pytest.raises(AssertionError, match="differ from the engine"):
        oracle.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])


@pytest.mark.long  # its compile alone takes minutes on a loaded 2-core machine
def test_oracle_beam_plays_legally(headroom: ModuleType) -> None:
    assert _play(headroom, headroom.OracleBeam(width=4, depth=3), seed=5, ticks=25) > 20


def test_headroom_rejects_unknown_rows(headroom: ModuleType) -> None:
    with pytest.raises(SystemExit):
        headroom.main(["--rows", "copy,nonsense", "--deals", "2"])
