"""Every figure a tournament prints or saves, recomputed from its per-game records (games.csv).

A gauntlet plays one table per opponent; a mean over all of the candidate's games mixes those tables, and a
difference between agents is only meaningful at the table where both sat. These tests build small
tournaments of scripted agents, recompute every statistic independently from ``games.csv`` (grouped by
table, agent and deal), and check the printed text, ``results.json``, ``summary.csv``, ``tables.csv``,
``differences.csv`` and the plots' data against it, and that no pair that never met gets a difference.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openskill", reason="needs the eval extra: pip install '.[eval]'")

from nertz_env.eval.cli import main
from nertz_env.eval.report import plot_data
from nertz_env.eval.stats import mean_ci
from nertz_env.eval.summary import summarize
from nertz_env.eval.tournament import Results


def _mean_ci(values: list[float], metric: str = "score") -> tuple[float, float]:
    e = mean_ci(values, bounds=None if metric == "score" else (0.0, 1.0))  # a rate stays in [0, 1]
    return e.mean, e.half_width


class Recomputed:
    """Statistics recomputed from games.csv rows alone (independent of eval/summary.py)."""

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
        """Every pair of agents that sat together: its tables, the mean and half-width of the per-deal
        differences (averaged over the shared tables), and the number of deals."""
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


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


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
        rows.append(_cells(ln))
    return rows


def _run(tmp_path: Path, argv: list[str], capsys: Any) -> tuple[str, Path]:
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
    return rec


def test_gauntlet__every_figure_is_per_table_and_matches_the_game_records(
    tmp_path: Path, capsys: Any
) -> None:
    text, out = _run(
        tmp_path,
        ["gauntlet", "heuristic", "random", "greedy", "--players", "3", "--deals", "3", "--seed", "1"],
        capsys,
    )
    rec = _check_everything(text, out, "gauntlet")
    # one candidate-minus-opponents row per table, and none for the opponents that never met
    pairs = json.loads((out / "results.json").read_text())["summary"]["score_differences"]
    assert [(d["a"], d["b"], d["tables"]) for d in pairs] == [
        ("heuristic", "random", ["T1"]),
        ("heuristic", "greedy", ["T2"]),
    ]
    assert "random - greedy" not in text and "greedy - random" not in text
    # the mixing the fix removes: the candidate's all-tables mean differs from its mean at either table
    overall = rec.overall("score", "heuristic")[0]
    assert not math.isclose(overall, rec.at_table("score", 0, "heuristic")[0])
    assert (out / "scores.png").read_bytes()[:4] == b"\x89PNG"


def test_round_robin__pairs_are_paired_at_the_tables_where_both_sat(tmp_path: Path, capsys: Any) -> None:
    # 4 agents at 3 seats: 4 tables, every pair meets at 2 of them
    text, out = _run(
        tmp_path,
        [
            "round-robin",
            "random",
            "greedy",
            "heuristic",
            "heuristic:wait_prob=0.3",
            "--players",
            "3",
            "--deals",
            "2",
        ],
        capsys,
    )
    rec = _check_everything(text, out, "round_robin")
    assert all(len(shared) == 2 for shared, *_ in rec.pairs().values())


def test_single_table__per_agent_table_and_all_pairs(tmp_path: Path, capsys: Any) -> None:
    text, out = _run(tmp_path, ["round-robin", "random", "greedy", "--players", "2", "--deals", "3"], capsys)
    _check_everything(text, out, "round_robin")
    assert "per table" not in text
