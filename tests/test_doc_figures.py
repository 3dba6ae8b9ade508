"""The figures README.md and the docs pages quote, each against its one source: a results file (recomputed from raw
records where it holds them) or the code. To change one, rerun what made its results file and copy the new value."""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import re
import statistics
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

import nertz_env

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
README = (ROOT / "README.md").read_text()


def _page(name: str) -> str:
    return (ROOT / "docs" / name).read_text()


# ---------------------------------------------------------------- the ladder (experiments/ladder)
LADDER = ROOT / "experiments" / "ladder"


def _ladder_recomputed() -> str:
    """The ladder's table and differences as today's nertz-eval prints them from the recorded games.csv.gz."""
    pytest.importorskip("openskill", reason="needs the eval extra: pip install '.[eval]'")
    from nertz_env.eval.report import differences_table, table
    from nertz_env.eval.summary import summarize
    from nertz_env.eval.tournament import GameRecord, Results

    agents = ["random", "greedy", "heuristic", "search"]
    seats_of: dict[tuple[int, int, int], list[dict[str, str]]] = defaultdict(list)
    with gzip.open(LADDER / "games.csv.gz", "rt") as f:
        for row in csv.DictReader(f):
            seats_of[(int(row["deal"]), int(row["lineup"]), int(row["rotation"]))].append(row)
    games, seeds = [], {}
    for (deal, lineup, rotation), rows in sorted(seats_of.items()):
        rows.sort(key=lambda r: int(r["seat"]))
        assert {r["rounds"] for r in rows} == {"1"}
        seeds[deal] = int(rows[0]["deal_seed"])
        games.append(GameRecord(
            deal=deal, lineup=lineup, rotation=rotation, seats=[agents.index(r["agent"]) for r in rows],
            scores=[[int(r["score"]) for r in rows]], lake=[[int(r["lake"]) for r in rows]],
            nertz_left=[[int(r["nertz_left"]) for r in rows]], ends=[rows[0]["round_end"]],
            match_scores=[int(r["match_score"]) for r in rows], ticks=int(rows[0]["ticks"]),
            truncated=rows[0]["round_end"] == "truncated", illegal=[int(r["illegal_actions"]) for r in rows],
            deal_hash="",
        ))
    results = Results(
        agents=agents, labels=agents, num_players=4, rules={}, mode="round_robin", seed=0,
        config=nertz_env.make_config(num_players=4).to_dict(), deal_seeds=[seeds[d] for d in sorted(seeds)],
        lineups=[[0, 1, 2, 3]], games=games, deals_done=sorted(seeds),
    )
    summary = summarize(results)
    return table(results, summary) + "\n\n" + differences_table(summary, agents)


def test_ladder_file__is_what_nertz_eval_prints_today_from_its_games() -> None:
    """table.txt (which the evaluation page includes) equals today's table for its recorded games."""
    recorded = (LADDER / "table.txt").read_text()
    expected = _ladder_recomputed()
    assert expected in recorded, f"experiments/ladder/table.txt should hold:\n{expected}"


def _ladder_rows() -> dict[str, list[str]]:
    rows = {}
    for line in (LADDER / "table.txt").read_text().splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] in ("random", "greedy", "heuristic", "search") and len(cells) == 7:
            rows[cells[0]] = cells
        m = re.match(r"(\w+) - (\w+)\s+([-+]?[\d.]+ ± [\d.]+)\s+\d+\s+yes", line)
        if m:
            rows[f"{m.group(1)} - {m.group(2)}"] = [m.group(3)]
    return rows


def test_readme_ladder_table__matches_the_ladder_file() -> None:
    rows = _ladder_rows()
    order = ["search", "heuristic", "greedy", "random"]
    for upper, lower in zip(order, [*order[1:], None], strict=True):
        score, win = rows[upper][2], rows[upper][3]
        diff = "" if lower is None else "+" + rows[f"{upper} - {lower}"][0].lstrip("+")
        line = f"| `{upper}` | {score} | {win} | {diff} |"
        assert line.replace("|  |", "| |") in README, f"README's ladder row should read: {line}"
    elapsed = re.search(r"\(([\d.]+) s, (\d+) worker", (LADDER / "table.txt").read_text())
    assert elapsed, "table.txt has no timing line"
    assert f"{round(float(elapsed.group(1)))} s with {elapsed.group(2)} workers" in README


# ---------------------------------------------------------------- memory: the code is the source
def test_memory_figures__are_what_bytes_per_table_returns() -> None:
    per_table = nertz_env.vector_env(num_tables=2, num_players=4).bytes_per_table()
    total_mb = f"{per_table * 1024 / 1e6:.1f} MB"
    assert f"Memory: {per_table:,} bytes a 4-player table" in README
    assert f"1,024 tables: {total_mb}" in README
    vector = _page("guides/vector-envs.md")
    assert f"Memory: {per_table:,} bytes per table of 4 players" in vector
    assert f"1,024 tables take {total_mb}" in vector


# ---------------------------------------------------------------- compile time (bench/results/bench_compile.json)
def _compile_medians() -> dict[str, dict[str, float]]:
    """Per commit of the recorded run, the measured checkout's first: the medians of its cold and warm runs."""
    runs = json.loads((RESULTS / "bench_compile.json").read_text())["runs"]
    out = {}
    for commit, run in runs.items():
        def med(kind: str, key: str, run: dict = run) -> float:
            return statistics.median(m[key] for m in run[kind])
        out[commit] = {
            "cold": med("cold", "first_step_s"), "warm": med("warm", "first_step_s"),
            "heuristic": med("cold", "heuristic_s"), "search": med("cold", "search_s"),
        }
    return out


def test_cold_start_figures__match_bench_compile_results() -> None:
    data = json.loads((RESULTS / "bench_compile.json").read_text())
    medians = _compile_medians()
    (this_commit, this), (before_commit, before) = medians.items()
    assert f"First environment on an empty compile cache: {this['cold']:.1f} s" in README
    perf = _page("guides/performance.md")
    for name, m in ((f"this release ({this_commit})", this), (f"the commit before ({before_commit})", before)):
        row = f"| {name} | **{m['cold']:.1f}** | {m['warm']:.1f} | {m['heuristic']:.1f} | {m['search']:.1f} |"
        assert row.replace("**", "") in perf.replace("**", ""), f"performance.md should have the row {row}"
    assert data["command"] in perf and data["when"][:16] in perf


def test_first_compile__happens_when_the_env_is_made() -> None:
    """In a fresh process ``parallel_env(...)`` compiles the step; ``reset()`` and ``step()`` compile nothing more."""
    code = textwrap.dedent(
        """
        import json, sys
        import nertz_env
        from nertz_env.engine import rules
        from numba.core.registry import CPUDispatcher
        mods = [m for n, m in sys.modules.items() if n.startswith("nertz_env.engine")]
        def compiled():
            return sum(len(d.overloads) for m in mods for d in vars(m).values() if isinstance(d, CPUDispatcher))
        before = len(rules.step_block.overloads)
        env = nertz_env.parallel_env(num_players=4)
        after_make = compiled()
        env.reset(seed=0)
        env.step({a: 0 for a in env.agents})
        print(json.dumps([before, len(rules.step_block.overloads), after_make, compiled()]))
        """
    )
    env = {**os.environ, "PYTHONPATH": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd="/", env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    before, step_after_make, after_make, after_step = json.loads(out.stdout.splitlines()[-1])
    assert before == 0 and step_after_make == 1 and after_step == after_make


# ---------------------------------------------------------------- the training guide's resume example
def test_resume_example__names_a_checkpoint_its_run_writes() -> None:
    """The checkpoint the guide resumes from is one its ``--config long_run`` run writes (whole rollouts)."""
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    from nertz_env.train.config import TrainConfig, read_config_file, resolve_config_path

    guide = _page("guides/training-sb3.md")
    m = re.search(r"--config (\w+) --run-dir (\S+)", guide)
    resume = re.search(r"--resume (\S+)/checkpoints/step_(\d+)\.zip", guide)
    assert m and resume and resume.group(1) == m.group(2), "the resume line continues the run shown above it"
    cfg = TrainConfig.from_dict(read_config_file(resolve_config_path(m.group(1))))
    rollout = cfg.rollout_size
    every = cfg.checkpoint_every
    written = [math.ceil(k * every / rollout) * rollout for k in range(1, cfg.total_timesteps // every + 1)]
    assert int(resume.group(2)) in written, f"that run writes step_{written[0]:012d}.zip, step_{written[1]:012d}.zip, ..."


# ---------------------------------------------------------------- the from-scratch bar (experiments/learning)
def test_learning_page__the_bar_figure_is_its_games_recomputed() -> None:
    """The learning page's `scratch` minus `heuristic` figure: the mean over deals of the bar run's per-deal difference."""
    mine: dict[int, list[float]] = defaultdict(list)
    theirs: dict[int, list[float]] = defaultdict(list)
    path = ROOT / "experiments" / "learning" / "records" / "bar_scratch_seed13" / "games.csv.gz"
    with gzip.open(path, "rt") as f:
        for r in csv.DictReader(f):
            (mine if r["agent"] == "scratch" else theirs)[int(r["deal"])].append(float(r["score"]))
    diffs = [statistics.fmean(mine[d]) - statistics.fmean(theirs[d]) for d in sorted(mine)]
    half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
    assert len(diffs) == 2000
    assert f"**{statistics.fmean(diffs):+.2f} ± {half:.2f}**" in _page("guides/learning.md")
