"""Random masked rollouts over more than 1,000 games, 2 to 8 players and every variant.

After every tick: all cards of every deck are accounted for, every mask allows at least the wait, no legal
action is flagged illegal, every observation lies in its declared [0, 1] box. At every episode end: each
seat's rewards add up to its score, and the round ended by a Nertz call, the stall rule or max_ticks.
"""

from __future__ import annotations

import numpy as np
import pytest

import nertz_env
from conftest import card_counts, expected_counts
from variants import VARIANTS, variant_id

TABLES = 64  # 18 variants x 64 tables, each table plays at least one full episode: > 1,000 games


def rollout_and_check(rules: dict, tables: int, seed: int, max_steps: int = 20_000) -> int:
    venv = nertz_env.vector_env(tables, copy=False, **rules)
    venv.reset(seed=seed)
    cfg = venv.config
    S = venv._state
    team = np.array(cfg.team_of)
    want = expected_counts(cfg.jokers)
    returns = np.zeros((tables, cfg.num_players))
    finished = np.zeros(tables, dtype=np.int64)
    for _ in range(max_steps):
        actions = venv.sample_actions()
        obs, rew, term, trunc, info = venv.step(actions)
        assert (card_counts(S) == want).all(), "a card was lost or duplicated"
        assert (obs["action_mask"].sum(axis=-1) >= 1).all()
        assert obs["observation"].min() >= 0.0 and obs["observation"].max() <= 1.0, "outside the declared Box"
        assert not info["illegal"].any(), "a masked-legal action was flagged illegal"
        returns[~info["autoreset"]] += rew[~info["autoreset"]]
        ended = term[:, 0] | trunc[:, 0]
        for t in np.flatnonzero(ended):
            assert info["round_end"][t] in (1, 2, 3)
            score = S.match_score[t].astype(np.int64)
            team_score = np.array([score[team == team[p]].sum() for p in range(cfg.num_players)])
            np.testing.assert_array_equal(returns[t], team_score)
            if cfg.rounds is None and cfg.target_score is None and cfg.teams is False:
                np.testing.assert_array_equal(info["score"][t], score)
            returns[t] = 0
            finished[t] += 1
        if (finished >= 1).all():
            return int(finished.sum())
    raise AssertionError(f"{(finished == 0).sum()} tables never finished an episode in {max_steps} ticks")


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_random_rollouts__keep_every_invariant(rules: dict) -> None:
    games = rollout_and_check(rules, TABLES, seed=1234)
    assert games >= TABLES


def test_random_rollouts__single_table_batch() -> None:
    assert rollout_and_check({}, 1, seed=7) >= 1


@pytest.mark.long
def test_random_rollouts__large_batch_of_1024_tables() -> None:
    """About 12 s on 2 cores, so in CI's long-tests phase; the batches above stay in the README's command."""
    assert rollout_and_check({}, 1024, seed=99) >= 1024
