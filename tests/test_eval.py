"""Evaluation (nertz_env.eval): statistics, lineups, rotation and duplicate deals, workers, ratings, every
figure recomputed from the game records, ``nertz-eval`` (refusals, Ctrl-C, huge inputs), outside models,
``nertz-demo``, the ladder's order. Clusters: test_cluster.py."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import pickle
import re
import signal
import subprocess
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openskill", reason="needs the eval extra: pip install '.[eval]'")

from openskill.models import PlackettLuce

import nertz_env
import nertz_env.eval.cli as cli
from nertz_env.agents import LADDER, make_agent
from nertz_env.agents.meta import CheckpointError
from nertz_env.agents.policy import load_policy
from nertz_env.agents.registry import load_policy_agent, record_rules
from nertz_env.eval import (
    Results,
    ladder_check,
    mean_ci,
    paired_difference,
    run_tournament,
    summarize,
    tournament,
)
from nertz_env.eval.cli import build_parser, main
from nertz_env.eval.demo import main as demo_main
from nertz_env.eval.report import plot_data
from nertz_env.eval.tournament import (
    GameRecord,
    deal_seed,
    gauntlet_lineups,
    plan_tournament,
    play_tournament,
    round_robin_lineups,
    seatings,
)
from nertz_env.single import NertzSingleAgentEnv
from procs import ctrl_c_at, signal_when

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- statistics
def test_mean_ci__known_samples() -> None:
    e = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert e.mean == 3.0 and e.n == 5
    assert e.sd == pytest.approx(math.sqrt(2.5))
    assert e.half_width == pytest.approx(2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert mean_ci([7.0]).mean == 7.0 and math.isnan(mean_ci([7.0]).half_width)


def test_mean_ci__a_rate_interval_stays_in_0_1_and_prints_as_a_range_when_cut() -> None:
    e = mean_ci([1.0] * 38 + [0.0] * 2, bounds=(0.0, 1.0))
    t = mean_ci([1.0] * 38 + [0.0] * 2)
    assert e.half_width == t.half_width and t.high > 1.0  # the t interval itself passes 100%
    assert e.low == pytest.approx(t.low) and e.high == 1.0 and e.clipped
    assert e.text(1, 100.0) == f"{e.mean * 100:.1f} [{t.low * 100:.1f}, 100.0]"
    assert e.to_dict()["high"] == 1.0 and e.to_dict()["ci95"] == pytest.approx(t.half_width)
    # cut at 100% with few deals, the interval reaches at least the Clopper-Pearson limit of n of n
    few = mean_ci([1.0, 1.0, 0.75], bounds=(0.0, 1.0))
    assert few.high == 1.0 and few.low == pytest.approx(0.025 ** (1 / 3))
    assert few.low < mean_ci([1.0, 1.0, 0.75]).low
    inside = mean_ci([0.4, 0.5, 0.6], bounds=(0.0, 1.0))
    assert not inside.clipped and inside.text(1, 100.0) == f"50.0 ± {inside.half_width * 100:.1f}"
    both = mean_ci([0.0, 1.0, 0.5], bounds=(0.0, 1.0))
    assert (both.low, both.high) == (0.0, 1.0)


def test_mean_ci__a_rate_at_a_bound_on_every_deal_is_not_certain() -> None:
    # random's win share was 0 on every deal: the t interval had width 0 and printed "0.0 ± 0.0", a certainty
    # 40 deals cannot give; the interval is the Clopper-Pearson one of 0 in 40 (95%: up to 1 - 0.025^(1/40))
    zero = mean_ci([0.0] * 40, bounds=(0.0, 1.0))
    assert (zero.low, zero.mean) == (0.0, 0.0) and zero.high == pytest.approx(1 - 0.025 ** (1 / 40))
    assert zero.text(1, 100.0) == "0.0 [0.0, 8.8]"
    one = mean_ci([1.0] * 40, bounds=(0.0, 1.0))
    assert one.high == 1.0 and one.low == pytest.approx(0.025 ** (1 / 40)) and one.text(1, 100.0) == "100.0 [91.2, 100.0]"
    assert mean_ci([0.0] * 40).text() == "0.00 ± 0.00"  # not a rate: a score that never moved has no spread
    # one deal off the bound must not narrow the interval 14-fold: cut at 0, it reaches at least the same limit
    near = mean_ci([0.0] * 39 + [1 / 12], bounds=(0.0, 1.0))
    assert near.low == 0.0 and near.high == pytest.approx(1 - 0.025 ** (1 / 40))
    wide = mean_ci([0.0] * 20 + [1.0] * 20, bounds=(0.0, 1.0))  # far from a bound: the t interval, untouched
    assert wide.half_width == pytest.approx(mean_ci([0.0] * 20 + [1.0] * 20).half_width)
    assert not mean_ci([0.0] * 40, bounds=(0.0, 1.0)).excludes_zero()


def test_paired_difference__uses_only_common_deals_and_cancels_the_deal_effect() -> None:
    a = {0: 10.0, 1: 20.0, 2: 30.0, 3: 99.0}
    b = {0: 9.0, 1: 19.0, 2: 28.0}
    e = paired_difference(a, b)
    assert e.n == 3 and e.mean == pytest.approx(4.0 / 3.0)
    assert e.half_width < 2.0  # the unpaired spread (about 10) would give a far wider interval


def constructed_results(
    scores_by_deal: dict[int, list[list[int]]], rules: dict[str, Any] | None = None
) -> Results:
    """Two agents, 2 seats: per deal a list of games (the seats' scores), agent 0 at seat 0 in even games."""
    config = nertz_env.make_config(num_players=2, **(rules or {}))
    games = []
    for deal, game_scores in scores_by_deal.items():
        for r, sc in enumerate(game_scores):
            seats = [0, 1] if r % 2 == 0 else [1, 0]
            games.append(GameRecord(
                deal=deal, lineup=0, rotation=r, seats=seats, scores=[sc], lake=[[max(x, 0) for x in sc]],
                nertz_left=[[0 if x >= 10 else 3 for x in sc]], ends=["nertz"], match_scores=list(sc), ticks=10,
                truncated=False, illegal=[0, 0], deal_hash=f"h{deal}",
            ))
    return Results(
        agents=["a", "b"], labels=["a", "b"], num_players=2, rules=rules or {}, config=config.to_dict(),
        mode="round_robin", seed=0, deal_seeds=list(scores_by_deal), lineups=[[0, 1]], games=games,
        deals_done=sorted(scores_by_deal),
    )


def test_summarize__the_deal_is_the_sample_with_known_means_and_intervals() -> None:
    # deal d: agent a scores (a0, a1) over its two seats, agent b the rest
    res = constructed_results({0: [[10, 4], [6, 12]], 1: [[20, 0], [2, 16]], 2: [[3, 3], [1, 11]]})
    s = summarize(res)
    a, b = s.by_label("a"), s.by_label("b")
    # per-deal means of a: (10+12)/2=11, (20+16)/2=18, (3+11)/2=7; of b: (4+6)/2=5, (0+2)/2=1, (3+1)/2=2
    assert a.per_deal["score"] == {0: 11.0, 1: 18.0, 2: 7.0}
    assert a.metrics["score"].mean == pytest.approx(12.0)
    assert a.metrics["score"].half_width == pytest.approx(mean_ci([11.0, 18.0, 7.0]).half_width)
    assert b.metrics["score"].mean == pytest.approx(8.0 / 3.0)
    d = s.differences[("a", "b")]
    assert d.mean == pytest.approx(12.0 - 8.0 / 3.0)
    assert d.half_width == pytest.approx(mean_ci([6.0, 17.0, 5.0]).half_width)
    # wins: a wins 5 of 6 games outright, the 3-3 tie is split
    assert a.metrics["win"].mean == pytest.approx((1.0 + 1.0 + 0.75) / 3.0)
    assert a.metrics["win"].mean + b.metrics["win"].mean == pytest.approx(1.0)
    # Nertz-out: a's round scores are >= 10 in 4 of 6 games (the constructed rule), deal by deal 1, 1, 0.5
    assert a.metrics["nertz_out"].mean == pytest.approx(2.5 / 3.0)
    assert a.games == 6 and a.deals == 3
    assert "match_win" not in a.metrics


def test_summarize__ratings_are_openskill_plackett_luce_game_by_game() -> None:
    res = constructed_results({0: [[10, 4], [6, 12]]})
    s = summarize(res)
    model = PlackettLuce()
    ra, rb = model.rating(), model.rating()
    [[ra], [rb]] = model.rate([[ra], [rb]], ranks=[1.0, 2.0])  # game 1: a (seat 0) 10 beats b 4
    [[rb], [ra]] = model.rate([[rb], [ra]], ranks=[2.0, 1.0])  # game 2: b (seat 0) 6 loses to a 12
    assert s.by_label("a").rating.mu == pytest.approx(ra.mu)
    assert s.by_label("b").rating.sigma == pytest.approx(rb.sigma)


def test_summarize__match_wins_follow_the_engine_rule() -> None:
    res = constructed_results({0: [[60, 55], [10, 20]]}, rules={"target_score": 50})
    s = summarize(res)
    # game 1: a (60) and b (55) both cross 50, the higher last-round score wins: a; game 2: no one crosses
    # 50 (a, at seat 1, has 20 against b's 10), so the higher total wins: a again
    assert s.match
    assert s.by_label("a").metrics["match_win"].mean == pytest.approx(1.0)


def test_summarize__team_wins_use_team_totals() -> None:
    config = nertz_env.make_config(num_players=4, teams=True)
    g = GameRecord(
        deal=0, lineup=0, rotation=0, seats=[0, 1, 0, 1], scores=[[10, 9, -5, 9]], lake=[[10, 9, 0, 9]],
        nertz_left=[[0, 1, 5, 1]], ends=["nertz"], match_scores=[10, 9, -5, 9], ticks=5, truncated=False,
        illegal=[0] * 4, deal_hash="h",
    )
    res = Results(
        agents=["a", "b"], labels=["a", "b"], num_players=4, rules={"teams": True}, config=config.to_dict(),
        mode="round_robin", seed=0, deal_seeds=[0], lineups=[[0, 1, 0, 1]], games=[g], deals_done=[0],
    )
    s = summarize(res)
    assert s.by_label("b").metrics["win"].mean == 1.0  # team b (seats 1, 3) totals 18 against 5
    assert s.by_label("a").metrics["score"].mean == pytest.approx(2.5)


# ---------------------------------------------------------------- lineups, rotation, duplicate deals
def test_seatings__every_agent_plays_every_seat_once() -> None:
    rot = seatings((0, 1, 2, 3))
    assert len(rot) == 4
    for seat in range(4):
        assert sorted(r[seat] for r in rot) == [0, 1, 2, 3]
    assert seatings((0, 1, 0, 1)) == [(0, 1, 0, 1), (1, 0, 1, 0)]  # repeats are played once


def test_lineups__round_robin_and_gauntlet() -> None:
    assert round_robin_lineups(4, 4) == [(0, 1, 2, 3)]
    assert len(round_robin_lineups(5, 4)) == 5
    assert round_robin_lineups(2, 4) == [(0, 1, 0, 1)]
    assert gauntlet_lineups(3, 4) == [(0, 1, 1, 1), (0, 2, 2, 2)]
    with pytest.raises(ValueError, match="opponent"):
        gauntlet_lineups(1, 4)


def test_deal_seed__is_stable_and_independent_of_the_number_of_deals() -> None:
    assert [deal_seed(7, i) for i in range(3)] == [deal_seed(7, i) for i in range(5)][:3]
    assert len({deal_seed(7, i) for i in range(100)}) == 100
    assert deal_seed(7, 0) != deal_seed(8, 0)


def test_duplicate_deals__every_rotation_replays_the_identical_deal() -> None:
    res = run_tournament(["random", "greedy", "heuristic"], num_players=3, deals=3, seed=4)
    assert len(res.games) == 9
    for d in range(3):
        hashes = {g.deal_hash for g in res.games if g.deal == d}
        assert len(hashes) == 1  # the env's snapshot at reset (cards and generator state) is the same
        assert sorted(tuple(g.seats) for g in res.games if g.deal == d) == sorted(seatings((0, 1, 2)))
    assert len({g.deal_hash for g in res.games}) == 3
    # and the recorded hash is the snapshot of a fresh env reset with the deal's seed
    env = nertz_env.parallel_env(num_players=3)
    env.reset(seed=res.deal_seeds[1])
    fresh = hashlib.sha1(json.dumps(env.snapshot(), sort_keys=True).encode()).hexdigest()[:16]
    assert fresh == next(g.deal_hash for g in res.games if g.deal == 1)


def test_run_tournament__same_results_with_one_or_two_workers() -> None:
    kwargs: dict[str, Any] = {"num_players": 2, "deals": 6, "seed": 3, "rules": {"draw": 1}}
    one = run_tournament(["heuristic", "greedy:wait_prob=0.1"], workers=1, **kwargs)
    two = run_tournament(["heuristic", "greedy:wait_prob=0.1"], workers=2, **kwargs)
    assert [g.to_dict() for g in one.games] == [g.to_dict() for g in two.games]
    assert summarize(one).to_dict() == summarize(two).to_dict()


def test_run_tournament__workers_from_a_script_without_the_main_guard_end_in_one_error_not_a_hang(tmp_path: Path) -> None:
    """A spawned worker re-imports the script, whose top level fails: one error, not a pool that hangs."""
    (tmp_path / "mine.py").write_text("from nertz_env.eval import run_tournament\n"
                                      "run_tournament(['random', 'greedy'], num_players=2, deals=40, workers=2)\n")
    out = subprocess.run([sys.executable, "mine.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "__main__" in out.stderr.splitlines()[-1], out.stderr[-2000:]


def test_run_tournament__match_to_a_target_score_records_every_round() -> None:
    res = run_tournament(["heuristic", "greedy"], num_players=2, deals=2, seed=0, rules={"target_score": 30})
    s = summarize(res)
    assert s.match
    assert any(len(g.scores) > 1 for g in res.games)
    for g in res.games:
        assert [sum(r[s] for r in g.scores) for s in range(2)] == g.match_scores
    wins = s.by_label("heuristic").metrics["match_win"].mean + s.by_label("greedy").metrics["match_win"].mean
    assert wins == pytest.approx(1.0)


# ---------------------------------------------------------------- every figure recomputed from games.csv
def _mean_ci(values: list[float], metric: str = "score") -> tuple[float, float]:
    e = mean_ci(values, bounds=None if metric == "score" else (0.0, 1.0))  # a rate stays in [0, 1]
    return e.mean, e.half_width


class Recomputed:
    """Statistics from games.csv rows alone (not eval/summary.py): a difference between agents counts only
    the tables where both sat."""

    def __init__(self, rows: list[dict[str, str]]) -> None:
        # per game: the seats' (agent, score per round); games are (deal, lineup, rotation)
        games: dict[tuple[int, int, int], list[tuple[str, float, int]]] = defaultdict(list)
        for r in rows:
            key = (int(r["deal"]), int(r["lineup"]), int(r["rotation"]))
            rounds = int(r["rounds"])
            games[key].append((r["agent"], int(r["score"]) / rounds, int(r["nertz_left"])))
        self.tables: dict[int, set[str]] = defaultdict(set)
        # values[(metric, lineup, agent)][deal] = list of seat values
        values: dict[tuple[str, int, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.game_scores: dict[tuple[int, str], list[float]] = defaultdict(list)
        for (deal, lineup, _), seats in sorted(games.items()):
            best = max(s for _, s, _ in seats)
            winners = sum(1 for _, s, _ in seats if s == best)
            for agent, score, left in seats:
                self.tables[lineup].add(agent)
                values[("score", lineup, agent)][deal].append(score)
                values[("win", lineup, agent)][deal].append((1.0 / winners) if score == best else 0.0)
                values[("nertz_out", lineup, agent)][deal].append(1.0 if left == 0 else 0.0)
                self.game_scores[(lineup, agent)].append(score)
        self.values = values

    def per_deal(self, metric: str, agent: str, lineups: list[int]) -> dict[int, float]:
        pooled: dict[int, list[float]] = defaultdict(list)
        for li in lineups:
            for d, xs in self.values.get((metric, li, agent), {}).items():
                pooled[d] += xs
        return {d: sum(xs) / len(xs) for d, xs in sorted(pooled.items())}

    def at_table(self, metric: str, lineup: int, agent: str) -> tuple[float, float]:
        return _mean_ci(list(self.per_deal(metric, agent, [lineup]).values()), metric)

    def tables_of(self, agent: str) -> list[int]:
        return sorted(li for li, agents in self.tables.items() if agent in agents)

    def overall(self, metric: str, agent: str) -> tuple[float, float]:
        return _mean_ci(list(self.per_deal(metric, agent, self.tables_of(agent)).values()), metric)

    def pairs(self) -> dict[tuple[str, str], tuple[list[int], float, float, int]]:
        """Each pair that met: its tables, the mean and half-width of its per-deal differences, its deals."""
        agents = sorted({a for s in self.tables.values() for a in s})
        out = {}
        for a in agents:
            for b in agents:
                shared = [li for li, s in self.tables.items() if a in s and b in s and a != b]
                if not shared:
                    continue
                per: dict[int, list[float]] = defaultdict(list)
                for li in sorted(shared):
                    xa, xb = self.per_deal("score", a, [li]), self.per_deal("score", b, [li])
                    for d in sorted(set(xa) & set(xb)):
                        per[d].append(xa[d] - xb[d])
                diffs = [sum(v) / len(v) for _, v in sorted(per.items())]
                out[(a, b)] = (sorted(shared), *_mean_ci(diffs), len(diffs))
        return out


def _pm(mean: float, hw: float, digits: int = 2, scale: float = 1.0) -> str:
    return f"{mean * scale:.{digits}f} ± {hw * scale:.{digits}f}"


def _rate_bounds(mean: float, hw: float) -> tuple[float, float]:
    """A rate's 95% interval: the t interval cut to [0, 1]."""
    return max(0.0, mean - hw), min(1.0, mean + hw)


def _rate(mean: float, hw: float) -> str:
    """A rate as printed: ``m ± h`` in percent, or ``m [low, high]`` when the interval was cut at 0 or 100%."""
    low, high = _rate_bounds(mean, hw)
    if low == mean - hw and high == mean + hw:
        return _pm(mean, hw, digits=1, scale=100.0)
    return f"{mean * 100:.1f} [{low * 100:.1f}, {high * 100:.1f}]"


def _check_rate_interval(metric: str, m: float, hw: float, js: dict[str, Any], row: dict[str, str]) -> None:
    """JSON and CSV give the interval; a rate's stays inside [0, 1]."""
    low, high = _rate_bounds(m, hw) if metric != "score" else (m - hw, m + hw)
    assert js["low"] == pytest.approx(low, abs=1e-12) and js["high"] == pytest.approx(high, abs=1e-12)
    assert float(row[f"{metric}_low"]) == pytest.approx(low, rel=1e-5, abs=1e-5)
    assert float(row[f"{metric}_high"]) == pytest.approx(high, rel=1e-5, abs=1e-5)
    if metric != "score":
        assert 0.0 <= js["low"] <= js["high"] <= 1.0


def _section(text: str, title_start: str) -> list[list[str]]:
    """The data rows of the table printed after the line starting with ``title_start``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title_start))
    while not lines[start].startswith("---"):
        start += 1
    rows = []
    for ln in lines[start + 1 :]:
        if not ln.strip() or ln.startswith("±") or ln.startswith("("):
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return rows


def _played(tmp_path: Path, argv: list[str], capsys: Any) -> tuple[str, Path]:
    out = tmp_path / "out"
    assert main([*argv, "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    return capsys.readouterr().out, out


def _check_everything(text: str, out: Path, mode: str) -> Recomputed:
    with open(out / "games.csv", newline="") as f:
        rec = Recomputed(list(csv.DictReader(f)))
    data = json.loads((out / "results.json").read_text())
    summary = data["summary"]
    lineups = sorted(rec.tables)
    assert [t["table"] for t in summary["tables"]] == [f"T{li + 1}" for li in lineups]

    # --- per table: text, JSON, tables.csv
    several = len(lineups) > 1
    if several:
        printed = {(r[0], r[1]): r for r in _section(text, "per table")}
        assert set(printed) == {(f"T{li + 1}", a) for li in lineups for a in rec.tables[li]}
    with open(out / "tables.csv", newline="") as f:
        table_rows = {(r["table"], r["agent"]): r for r in csv.DictReader(f)}
    assert set(table_rows) == {(f"T{li + 1}", a) for li in lineups for a in rec.tables[li]}
    for t in summary["tables"]:
        li = t["lineup"]
        assert {a["label"] for a in t["agents"]} == rec.tables[li]
        for a in t["agents"]:
            for metric in ("score", "win", "nertz_out"):
                m, hw = rec.at_table(metric, li, a["label"])
                assert a[metric]["mean"] == pytest.approx(m, abs=1e-12), (t["table"], a["label"], metric)
                assert a[metric]["ci95"] == pytest.approx(hw, abs=1e-12)
                row = table_rows[(t["table"], a["label"])]
                assert float(row[f"{metric}_mean"]) == pytest.approx(m, rel=1e-5, abs=1e-5)
                assert float(row[f"{metric}_ci95"]) == pytest.approx(hw, rel=1e-5, abs=1e-5)
                _check_rate_interval(metric, m, hw, a[metric], row)
            if several:
                cells = printed[(t["table"], a["label"])]
                assert cells[3] == _pm(*rec.at_table("score", li, a["label"]))
                assert cells[4] == _rate(*rec.at_table("win", li, a["label"]))
                assert cells[5] == _rate(*rec.at_table("nertz_out", li, a["label"]))

    # --- per agent: text, JSON, summary.csv (each over exactly the tables the agent sat at)
    agents = sorted({a for s in rec.tables.values() for a in s})
    printed_agents = {r[0]: r for r in _section(text, "per agent" if several else mode.replace("_", "-"))}
    assert set(printed_agents) == set(agents)
    with open(out / "summary.csv", newline="") as f:
        summary_rows = {r["agent"]: r for r in csv.DictReader(f)}
    for a in summary["agents"]:
        label = a["label"]
        assert a["tables"] == [f"T{li + 1}" for li in rec.tables_of(label)]
        assert summary_rows[label]["tables"] == " ".join(a["tables"])
        for metric in ("score", "win", "nertz_out"):
            m, hw = rec.overall(metric, label)
            assert a[metric]["mean"] == pytest.approx(m, abs=1e-12)
            assert a[metric]["ci95"] == pytest.approx(hw, abs=1e-12)
            assert float(summary_rows[label][f"{metric}_mean"]) == pytest.approx(m, rel=1e-5, abs=1e-5)
            _check_rate_interval(metric, m, hw, a[metric], summary_rows[label])
        cells = printed_agents[label]
        offset = 1 if several else 0
        if several:
            names = [f"T{li + 1}" for li in rec.tables_of(label)]
            assert cells[1] in (",".join(names), f"{names[0]}-{names[-1]}")
        assert cells[2 + offset] == _pm(*rec.overall("score", label))
        assert cells[3 + offset] == _rate(*rec.overall("win", label))
        assert cells[4 + offset] == _rate(*rec.overall("nertz_out", label))

    # --- differences: only pairs that met, each at its tables; text, JSON, differences.csv
    pairs = rec.pairs()
    reported = {(d["a"], d["b"]): d for d in summary["score_differences"]}
    assert {frozenset(k) for k in reported} == {frozenset(k) for k in pairs}
    assert len(reported) == len(pairs) // 2
    printed_diffs = {r[1]: r for r in _section(text, "paired score differences")}
    assert len(printed_diffs) == len(reported)
    with open(out / "differences.csv", newline="") as f:
        diff_rows = {(r["a"], r["b"]): r for r in csv.DictReader(f)}
    assert set(diff_rows) == set(reported)
    for (a, b), d in reported.items():
        shared, m, hw, n = pairs[(a, b)]
        assert d["tables"] == [f"T{li + 1}" for li in shared]
        assert d["mean"] == pytest.approx(m, abs=1e-12) and d["n"] == n
        assert d["ci95"] == pytest.approx(hw, abs=1e-12)
        assert float(diff_rows[(a, b)]["mean"]) == pytest.approx(m, rel=1e-5, abs=1e-5)
        assert float(diff_rows[(a, b)]["ci95"]) == pytest.approx(hw, rel=1e-5, abs=1e-5)
        assert diff_rows[(a, b)]["tables"] == " ".join(d["tables"])
        cells = printed_diffs[f"{a} - {b}"]
        assert cells[2] == _pm(m, hw) and cells[3] == str(n)

    # --- the plots' data, from the saved results alone
    again = summarize(Results.from_dict(data))
    series = plot_data(again)["scores"]
    if several:
        want = {f"T{li + 1} {a}": rec.game_scores[(li, a)] for li in lineups for a in rec.tables[li]}
    else:
        want = {a: rec.game_scores[(lineups[0], a)] for a in agents}
    assert {s["label"] for s in series} == set(want)
    for s in series:
        assert sorted(s["scores"]) == pytest.approx(sorted(want[s["label"]]))
        per_table = s["label"].split(" ")
        if several:
            li, label = int(per_table[0][1:]) - 1, per_table[1]
            assert s["mean"] == pytest.approx(rec.at_table("score", li, label)[0])
    drawn = {d["label"]: d for d in plot_data(again)["differences"]}  # differences.png: a row per pair
    assert len(drawn) == len(reported)
    for (a, b), d in reported.items():
        row = drawn[f"{a} - {b} ({printed_diffs[f'{a} - {b}'][0]})"]
        assert row["mean"] == pytest.approx(d["mean"]) and row["half_width"] == pytest.approx(d["ci95"])
    return rec


def test_gauntlet__every_figure_is_per_table_and_matches_the_game_records(tmp_path: Path, capsys: Any) -> None:
    argv = ["gauntlet", "heuristic", "random", "greedy", "--players", "3", "--deals", "3", "--seed", "1"]
    text, out = _played(tmp_path, argv, capsys)
    rec = _check_everything(text, out, "gauntlet")
    # one candidate-minus-opponents row per table, and none for the opponents that never met
    pairs = json.loads((out / "results.json").read_text())["summary"]["score_differences"]
    assert [(d["a"], d["b"], d["tables"]) for d in pairs] == [("heuristic", "random", ["T1"]),
                                                               ("heuristic", "greedy", ["T2"])]
    assert "random - greedy" not in text and "greedy - random" not in text
    # the candidate's all-tables mean differs from its mean at either table: the tables are not mixed
    assert not math.isclose(rec.overall("score", "heuristic")[0], rec.at_table("score", 0, "heuristic")[0])
    assert (out / "scores.png").read_bytes()[:4] == b"\x89PNG"
    games = json.loads((out / "results.json").read_text())["games"]  # the candidate meets each in every seat
    assert len(games) == 3 * 2 * 3
    assert all(sorted(g["seats"].index(0) for g in games if (g["lineup"], g["deal"]) == (li, d)) == [0, 1, 2]
               for li in (0, 1) for d in range(3))


def test_round_robin__pairs_are_paired_at_the_tables_where_both_sat(tmp_path: Path, capsys: Any) -> None:
    # 4 agents at 3 seats: 4 tables, every pair meets at 2 of them
    argv = ["round-robin", "random", "greedy", "heuristic", "heuristic:wait_prob=0.3", "--players", "3", "--deals", "2"]
    rec = _check_everything(*_played(tmp_path, argv, capsys), "round_robin")
    assert all(len(shared) == 2 for shared, *_ in rec.pairs().values())


def test_single_table__per_agent_table_and_all_pairs_and_the_saved_results_load_back(tmp_path: Path, capsys: Any) -> None:
    text, out = _played(tmp_path, ["round-robin", "random", "greedy", "--players", "2", "--deals", "3"], capsys)
    _check_everything(text, out, "round_robin")
    assert "per table" not in text
    assert sorted(os.listdir(out)) == ["differences.csv", "differences.png", "games.csv", "ratings.png", "results.json",
                                       "scores.png", "summary.csv", "table.txt", "tables.csv"]
    data = json.loads((out / "results.json").read_text())
    assert summarize(Results.from_dict(data)).to_dict() == data["summary"]
# ---------------------------------------------------------------- nertz-eval: refusals, one line and exit 2
def _fails(argv: list[str], message: str, capsys: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    extra = [] if "--no-save" in argv or "--out" in argv else ["--out", str(out)]
    assert main([*argv, *extra, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


RR = ["round-robin", "random", "greedy"]
REFUSED = [
    (["round-robin", "random", "nobody"],
     "unknown agent 'nobody'; known agents: best, expert, greedy, heuristic, ppo, ppo_imitation, random, scratch, search"),
    (["round-robin", "random", "missing/model.zip"], "checkpoint file not found: missing/model.zip"),
    ([*RR, "--players", "9"], "num_players=9 is not allowed"),
    (["round-robin", "random", "--rule", "nonsense=1"], "unknown option"),
    (["ladder", "--deal-seeds", "1,x"], "--deal-seeds takes"),
    # agents that cannot play at the table, named with the table they were trained for
    (["gauntlet", "ppo", "heuristic", "--players", "2"], "num_players: policy 'ppo' has 4, the table has 2; observation size"),
    (["gauntlet", "ppo", "heuristic", "--rule", "draw=1"],
     "rules.draw: policy 'ppo' has 3, the table has 1; for the table it was trained for: drop --rule draw=1"),
    (["gauntlet", "scratch", "heuristic", "--rule", "draw=1"],  # trained with last_moves, which the table may lack
     "scratch.json): rules.draw: policy 'scratch' has 3, the table has 1; for the table it was trained for: drop "
     "--rule draw=1, add --rule last_moves=1"),
    (["gauntlet", "best", "heuristic", "--players", "2", "--no-save"], "--players 4"),
    (["gauntlet", "{bad}", "random", "--players", "2", "--no-save"], "bad.zip"),  # a zip that is not a policy
    (["gauntlet", "{run}", "random"], "nertz-train run folder, not an agent: play its policy with"),
    # flags that could not take effect
    ([*RR, "--deals", "3", "--deal-seeds", "1,2"], "--deals 3 would be ignored"),
    ([*RR, "--deal-seeds", "4,5,4"], "--deal-seeds repeats 4"),
    ([*RR, "--deal-seeds", "1,2,"], "--deal-seeds takes comma-separated non-negative integers, got '1,2,'"),
    ([*RR, "--deal-seeds", f"1,{2**64}"], "deal seeds must be a non-empty list of integers from 0 to 2**64 - 1"),
    ([*RR, "--deals", "1", "--workers", "2"], "pass --workers 1"),
    ([*RR, "--deals", "1000", "--workers", "3"], "--workers 3 is more than the 2 CPU(s) this process can use"),
    ([*RR, "--deals", "1000", "--workers", "1000000000000"], "pass --workers 2 or fewer"),
    ([*RR, "--target-score", "50", "--rule", "target_score=100"], "--target-score and --rule target_score"),
    ([*RR, "--no-save", "--out", "somewhere"], "--out has no effect with --no-save"),
    ([*RR, "--no-save", "--no-plots"], "--no-plots has no effect with --no-save"),
    (["round-robin", "random", "--deals", "2", "--no-rotate"], "--no-rotate has no effect"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_cli__bad_input_exits_2_with_one_clear_line_before_any_deal(
    argv: list[str], message: str, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(cli, "usable_cpus", lambda: 2)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("hello.txt", "not a model")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)  # a nertz-train run folder
    (tmp_path / "run" / "policy.zip").write_bytes(bad.read_bytes())
    _fails([a.format(bad=bad, run=tmp_path / "run") for a in argv], message, capsys, tmp_path)


@pytest.mark.parametrize("command", [RR, ["gauntlet", "heuristic", "random"], ["ladder"]])
def test_cli__an_out_folder_that_cannot_be_written_is_refused_before_any_deal(
    command: list[str], tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    def play(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a deal was played before --out was checked")

    monkeypatch.setattr(cli, "play_tournament", play)
    monkeypatch.chdir(tmp_path)
    Path("q1.py").write_text("print('mine')\n")
    cases = [("q1.py", "--out q1.py: a file of that name exists"), ("q1.py/results", "q1.py is a file, not a folder")]
    if os.path.isdir("/proc/self"):  # Linux: a folder nothing can be created in, even by root
        cases.append(("/proc/self/nertz/out", "cannot create a folder in /proc/self"))
    for out, message in cases:
        _fails([*command, "--players", "2", "--deals", "2", "--out", out], message, capsys, tmp_path)
    assert Path("q1.py").read_text() == "print('mine')\n"
    assert sorted(os.listdir(tmp_path)) == ["q1.py"]  # nothing left behind, not even the probe


# ---------------------------------------------------------------- nertz-eval: what it prints and saves
def test_cli__round_robin_prints_the_table_and_saves_only_when_the_run_is_taken(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "a" / "b"
    argv = ["round-robin", "heuristic", "greedy", "--players", "2", "--deals", "3", "--workers", "1",
            "--no-progress", "--no-plots", "--out", str(out)]
    assert main([*argv, "--rule", "draw=4"]) == 2  # refused after --out was checked: no folder made
    assert os.listdir(tmp_path) == []
    capsys.readouterr()
    assert main([*argv, "--rule", "draw=1"]) == 0
    printed = capsys.readouterr()
    assert re.search(r"heuristic\s+6\s+-?\d+\.\d\d ± \d+\.\d\d", printed.out) and "draw=1" in printed.out
    saved = next(x for x in printed.err.splitlines() if x.startswith("saved: "))
    assert sorted(os.path.basename(p) for p in saved[len("saved: "):].split(", ")) == sorted(os.listdir(out))
    assert sorted(os.listdir(out)) == ["differences.csv", "games.csv", "results.json", "summary.csv", "table.txt",
                                       "tables.csv"]


def test_cli__default_workers_never_exceed_the_deals_and_every_subcommand_saves_under_eval_out(capsys: Any) -> None:
    for deals in (["--deals", "1"], ["--deal-seeds", "7"]):
        assert main([*RR, "--players", "2", *deals, "--no-save"]) == 0
        assert capsys.readouterr().out.rstrip().endswith("1 worker(s))")
    # one documented place for nertz-eval's files, relative to where it runs
    for command in (RR, ["gauntlet", "random", "greedy"], ["ladder"]):
        assert build_parser().parse_args(command).default_out == f"eval_out/{command[0]}"


# ---------------------------------------------------------------- a huge --deals, and Ctrl-C
def _no_seeds_up_front(monkeypatch: Any) -> None:
    """Fail at once if every deal's seed is built before the first deal (``--deals 10000000000``)."""
    real, calls = tournament.deal_seed, [0]

    def counted(seed: int, deal: int) -> int:
        calls[0] += 1
        assert calls[0] <= 1000, "the deal seeds were built up front"
        return real(seed, deal)

    monkeypatch.setattr(tournament, "deal_seed", counted)


def _ctrl_c_at_deal(monkeypatch: Any, stop: int) -> None:
    """Ctrl-C when deal ``stop`` would start (deals ``0 .. stop-1`` finished; one process plays them in order)."""
    ctrl_c_at(monkeypatch, tournament.Player, "play_deal", stop + 1, sigint=False)


def test_plan_tournament__a_huge_number_of_deals_computes_each_seed_when_dealt(monkeypatch: Any) -> None:
    _no_seeds_up_front(monkeypatch)
    plan = plan_tournament(["random", "greedy"], num_players=2, deals=10**10, seed=3).plan
    assert plan.deals == 10**10 and plan.env_seed(10**10 - 1) == deal_seed(3, 10**10 - 1)
    assert pickle.loads(pickle.dumps(plan)) == plan  # as the worker processes and Ray tasks get it


def test_cli__a_huge_deals_starts_at_once_and_ctrl_c_saves_the_finished_deals(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    _no_seeds_up_front(monkeypatch)
    _ctrl_c_at_deal(monkeypatch, 3)
    out = tmp_path / "out"
    argv = [*RR, "--players", "2", "--deals", "10000000000", "--workers", "1"]
    assert main([*argv, "--out", str(out), "--no-plots", "--no-progress"]) == 130
    assert "interrupted; kept 3 finished deal(s)" in capsys.readouterr().err
    data = json.loads((out / "results.json").read_text())
    assert data["deals_done"] == [0, 1, 2] and data["deals_planned"] == 10**10 and data["interrupted"]
    assert data["deal_seeds"] == [deal_seed(0, i) for i in range(3)]  # only the seeds of deals played
    assert "[interrupted: 3 of 10000000000 deals]" in (out / "table.txt").read_text()


@pytest.mark.parametrize(
    ("installed", "sig", "returncode"),
    [
        # a terminal's Ctrl-C reaches the workers too (they ignore it); the in-process test above is its quick form
        pytest.param(False, signal.SIGINT, 130, marks=pytest.mark.long),
        (True, signal.SIGTERM, -signal.SIGINT),  # `kill PID` on the installed command: saved the same, ends as Ctrl-C
    ],
)
@pytest.mark.skipif(os.name != "posix", reason="signals a child process and reads its end by signal (preexec_fn, negative exit codes): POSIX")
def test_cli__ctrl_c_keeps_and_saves_the_finished_deals(
    tmp_path: Any, installed: bool, sig: int, returncode: int
) -> None:
    """A long round robin in two workers, sent ``sig`` once its progress bar shows 3 deals done."""
    command = ([os.path.join(os.path.dirname(sys.executable), "nertz-eval")] if installed
               else [sys.executable, "-m", "nertz_env.eval.cli"])
    argv = [*command, "round-robin", "heuristic", "random", "--players", "2", "--deals", "100000",
            "--workers", "2", "--out", str(tmp_path / "out"), "--no-plots"]
    code, text = signal_when(argv, lambda err: any(int(n) >= 3 for n in re.findall(r"\| *(\d+)/100000", err)),
                             sig, 90, watch="stderr")
    assert code == returncode, text[-2000:]
    assert "Traceback" not in text
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["interrupted"] is True
    assert 3 <= len(data["deals_done"]) < 100000
    assert {g["deal"] for g in data["games"]} == set(data["deals_done"])
    assert all(len([g for g in data["games"] if g["deal"] == d]) == 2 for d in data["deals_done"])
    assert "interrupted" in (tmp_path / "out" / "table.txt").read_text()


# ---------------------------------------------------------------- a model trained outside nertz-train
@pytest.fixture(scope="module")
def outside_model(tmp_path_factory: Any) -> Path:
    """A MaskablePPO trained briefly and saved by SB3 itself: no nertz-env record inside or beside it."""
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    import torch
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    env = NertzSingleAgentEnv(num_players=2, rules={"draw": 1}, opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, verbose=0)
    model.learn(256)
    path = tmp_path_factory.mktemp("outside") / "outside.zip"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert "nertz_meta.json" not in zf.namelist()
    assert not path.with_suffix(".json").exists()
    return path


def test_outside_model__plays_in_nertz_eval_at_the_table_given_by_flags_and_no_other(
    outside_model: Path, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "out"
    argv = ["gauntlet", str(outside_model), "random", "--players", "2", "--rule", "draw=1", "--deals", "2"]
    assert main([*argv, "--workers", "1", "--no-progress", "--no-plots", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "has no nertz-env record: assumed trained for this table's rules" in captured.err
    assert f"{outside_model} - random" in captured.out
    games = json.loads((out / "results.json").read_text())["games"]
    assert len(games) == 2 * 2 and all(sum(g["illegal"]) == 0 for g in games)
    # and refused at a table of other spaces
    _fails([*argv[:3], "--players", "3", "--deals", "1", "--no-save"], "its spaces (observation", capsys,
           tmp_path / "refused")


def test_outside_model__one_call_each(outside_model: Path, tmp_path: Path) -> None:
    table = nertz_env.make_config(num_players=2, draw=1)
    # make_agent: plays at a table of matching spaces, and only there
    agent = make_agent(f"{outside_model}:deterministic=true")
    with pytest.raises(ValueError, match="no nertz-env record"):
        agent.reset(nertz_env.make_config(num_players=3), 0, 0)
    agent.reset(table, 0, 0)
    env = nertz_env.parallel_env(num_players=2, draw=1)
    obs, _ = env.reset(seed=3)
    a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
    assert obs["player_0"]["action_mask"][a] == 1
    with pytest.raises(CheckpointError, match="no nertz-env record"):  # training's init_from needs the record
        load_policy(str(outside_model))
    # load_policy_agent with the rules it was trained for: refuses any other table, even of equal spaces
    pinned = load_policy_agent(str(outside_model), config=table)
    pinned.reset(table, 1, 0)
    with pytest.raises(ValueError, match=r"rules\.draw"):
        pinned.reset(nertz_env.make_config(num_players=2, draw=3), 0, 0)
    with pytest.raises(ValueError, match="spaces"):
        load_policy_agent(str(outside_model), config=nertz_env.make_config(num_players=4))
    # record_rules: the zip becomes a nertz-env checkpoint (record inside and beside it)
    copy = tmp_path / "copy.zip"
    copy.write_bytes(outside_model.read_bytes())
    record = record_rules(str(copy), table)
    assert record["num_players"] == 2 and record["rules"]["draw"] == 1
    assert json.loads(copy.with_suffix(".json").read_text()) == record
    with pytest.raises(ValueError, match=r"rules\.draw"):
        make_agent(str(copy)).reset(nertz_env.make_config(num_players=2, draw=3), 0, 0)
    with pytest.raises(ValueError, match=r"num_players: policy .* has 2, the table has 3"):
        record_rules(str(copy), nertz_env.make_config(num_players=3))
    fresh = tmp_path / "fresh.zip"
    fresh.write_bytes(outside_model.read_bytes())
    with pytest.raises(ValueError, match="spaces"):
        record_rules(str(fresh), nertz_env.make_config(num_players=3))
    assert not fresh.with_suffix(".json").exists()


# ---------------------------------------------------------------- threads
@pytest.fixture
def torch_at_two_threads() -> Iterator[Any]:
    """torch, set to two threads for the test (as a user's process may have it), and put back after."""
    torch = pytest.importorskip("torch", reason="needs the train extra: pip install '.[train]'")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield torch
    torch.set_num_threads(before)


def test_workers__each_runs_torch_in_one_thread(torch_at_two_threads: Any, monkeypatch: Any) -> None:
    """A worker's set-up caps torch at one thread, loaded now or later (through OMP_NUM_THREADS)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, "")  # (restored after the test)
        monkeypatch.delenv(var)
    monkeypatch.setattr(tournament.signal, "signal", lambda *args: None)  # the worker's SIGINT handler
    tournament._worker_player(plan_tournament(["heuristic", "random"], num_players=2, deals=1).plan)
    assert torch_at_two_threads.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"


def test_play_tournament__one_torch_thread_while_playing_then_restored(torch_at_two_threads: Any) -> None:
    seen = []
    policy = make_agent("ppo")
    act = policy.act

    def spying_act(obs: Any, mask: Any) -> int:
        seen.append(torch_at_two_threads.get_num_threads())
        return act(obs, mask)

    policy.act = spying_act  # type: ignore[method-assign]
    t = plan_tournament(["ppo", "heuristic"], num_players=4, deals=1, mode="gauntlet",
                        agent_factory=lambda spec: policy if spec == "ppo" else make_agent(spec))
    play_tournament(t, workers=1)
    assert seen and set(seen) == {1}
    assert torch_at_two_threads.get_num_threads() == 2


# ---------------------------------------------------------------- without the train extra, and nertz-demo
def test_demo__shows_the_table_its_help_promises_and_the_ladder(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        demo_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a 4-player table after 25 ticks of greedy play" in text and "one rendered tick" not in text
    assert demo_main(["--deals", "1", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "A 4-player table after 25 ticks of greedy play" in out and "search - heuristic" in out
    assert "nertz-eval ladder --deals 1200 --seed 0" in out  # the README's ladder command


@pytest.mark.parametrize(("stop", "said"), [(1, "nertz-demo: interrupted; the tables above cover the 1 of 5 deal(s) finished"),
                                             (0, "nertz-demo: interrupted before any of the 5 deal(s) finished")])
def test_demo__ctrl_c_shows_the_finished_deals_and_never_an_empty_table(
    stop: int, said: str, capsys: Any, monkeypatch: Any
) -> None:
    _ctrl_c_at_deal(monkeypatch, stop)
    assert demo_main(["--deals", "5"]) == 130
    captured = capsys.readouterr()
    assert ("[interrupted: 1 of 5 deals]" in captured.out) == (stop == 1)
    assert ("agent " in captured.out) == ("search - heuristic" in captured.out) == (stop == 1)  # never a table of dashes
    assert captured.err.strip().splitlines()[-1] == said


# ---------------------------------------------------------------- the ladder
def test_ladder__lower_rungs_in_order_on_a_few_deals() -> None:
    res = run_tournament(list(LADDER[:3]), num_players=3, deals=12, seed=0)
    checks = ladder_check(summarize(res), list(LADDER[:3]))
    assert all(ok for *_, ok in checks), checks


@pytest.mark.long
def test_ladder__every_rung_beats_the_one_below_with_95_percent_confidence() -> None:
    """The ladder's order in CI's small form (about 30 s): the lower rungs at the ladder's table over 100
    deals, search against three heuristic seats (the table that measures it with the least noise) over 400
    deals, which detect its edge with probability 0.98 or more by experiments/engine_port.md's spreads."""
    rr = summarize(run_tournament(list(LADDER), num_players=4, deals=100, seed=0, workers=2))
    checks = ladder_check(rr, list(LADDER[:3]))
    assert all(ok for *_, ok in checks), [(lo, up, e.text()) for lo, up, e, _ in checks]
    top = summarize(run_tournament(["search", "heuristic"], num_players=4, deals=400, seed=0, workers=2,
                                   mode="gauntlet"))
    e = top.difference("search", "heuristic")
    assert e.n == 400 and e.low > 0.0, e.text()


@pytest.mark.bench
def test_ladder__the_readme_command_confirms_every_rung() -> None:
    """The README's ladder table as its command plays it (``nertz-eval ladder --deals 1200 --seed 0``, about
    80 s on 2 cores): 1,200 deals detect search's edge over heuristic with probability about 0.99 (400 deals:
    about 0.74)."""
    res = run_tournament(list(LADDER), num_players=4, deals=1200, seed=0, workers=2)
    checks = ladder_check(summarize(res), list(LADDER))
    assert all(ok for *_, ok in checks), [(lo, up, e.text()) for lo, up, e, _ in checks]
