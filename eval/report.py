"""Reports of a tournament: a text table, and the files :func:`save` writes (results.json, summary.csv,
tables.csv, differences.csv, games.csv, scores.png, differences.png, ratings.png). See docs/guides/evaluation.md.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterable
from typing import Any

from nertz_env.eval.stats import Estimate
from nertz_env.eval.summary import RATES, Summary, ladder_check, table_name
from nertz_env.eval.tournament import Results

__all__ = ["differences_table", "plot", "plot_data", "save", "table"]

_HEADERS = {
    "score": "score/round",
    "win": "win %",
    "nertz_out": "Nertz-out %",
    "lake": "lake/round",
    "match_win": "match win %",
}


def _format_rows(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns separated by two spaces; the first ``left`` columns (names) left-aligned, numbers right."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i < left else c.rjust(widths[i]) for i, c in enumerate(r))

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def _metric_cells(metrics: dict[str, Estimate], names: list[str]) -> list[str]:
    """Each metric's text: rates in percent with one decimal, the others with two."""
    return [metrics[m].text(1, 100.0) if m in RATES else metrics[m].text(2) for m in names]


def tables_text(names: list[int]) -> str:
    """``"T1-T4"`` for a run of tables, else ``"T1,T3"``."""
    if not names:
        return "-"
    if len(names) > 2 and names == list(range(names[0], names[-1] + 1)):
        return f"{table_name(names[0])}-{table_name(names[-1])}"
    return ",".join(table_name(t) for t in names)


def table(results: Results, summary: Summary) -> str:
    """The text ``nertz-eval`` prints: a header line, the tables and each agent's means at each when there are
    several, each agent's means ± 95% over deals, and a footnote (docs/guides/evaluation.md)."""
    metrics = [m for m in _HEADERS if m in summary.agents[0].metrics] if summary.agents else []
    rules = ", ".join(f"{k}={v}" for k, v in sorted(results.rules.items())) or "default rules"
    head = (
        f"{results.mode.replace('_', '-')}: {results.num_players} players, {len(results.deals_done)} deals "
        f"x {len(results.games) // max(1, len(results.deals_done))} games each (seat rotations), seed "
        f"{results.seed}, {rules}"
    )
    if results.interrupted:
        planned = results.deals_planned or len(results.deal_seeds)
        head += f"  [interrupted: {len(results.deals_done)} of {planned} deals]"
    lines = [head]
    words = {"most probable": "most probable action", "sampled": "sampled from the policy"}
    play = [f"{label}: {words.get(how, how)}" for label, how in zip(results.labels, results.play, strict=False) if how]
    if play:  # how each trained policy picked its actions
        lines.append("policies play: " + "; ".join(play))
    several = len(summary.tables) > 1
    if several:
        lines += ["tables (every table plays every deal):",
                  *(f"  {t.name}  {t.description}" for t in summary.tables),
                  "", "per table (means ± 95% over deals, of the agent's seats at that table only):"]
        header = ["table", "agent", "games", *(_HEADERS[m] for m in metrics)]
        rows = [[t.name, a.label, str(a.games), *_metric_cells(a.metrics, metrics)]
                for t in summary.tables for a in t.agents]  # in seat order: a gauntlet candidate first
        lines += [_format_rows(header, rows, left=2), "",
                  "per agent, over all the tables it sat at (agents at different tables are not comparable "
                  "here;\ncompare them through the paired differences below):"]
    header = ["agent", *(["tables"] if several else []), "games", *(_HEADERS[m] for m in metrics)]
    header.append("rating mu ± 2σ")
    by_score = sorted(summary.agents, key=lambda x: -x.metrics["score"].mean if x.metrics["score"].n else 0.0)
    rows = [[a.label, *([tables_text(a.tables)] if several else []), str(a.games),
             *_metric_cells(a.metrics, metrics), f"{a.rating.mu:.1f} ± {2 * a.rating.sigma:.1f}"]
            for a in by_score]
    lines.append(_format_rows(header, rows))
    illegal = sum(a.illegal for a in summary.agents)
    foot = "± is the 95% interval over deals (a deal's duplicate set is one sample)."
    if illegal:
        foot += f"  Illegal actions (played as waits): {illegal}."
    metric_sets = [a.metrics for a in summary.agents] + [ta.metrics for t in summary.tables for ta in t.agents]
    if any(e.clipped for metrics_of in metric_sets for e in metrics_of.values()):
        foot += "\n[low, high] is a rate's 95% interval cut at 0% or 100% (so not symmetric about the mean)."
    lines.append(foot)
    return "\n".join(lines)


def differences_table(summary: Summary, order: list[str] | None = None) -> str:
    """Paired score differences (per deal, 95% interval) for adjacent agents of ``order``, or for every pair
    of agents that sat at the same table (a gauntlet: the candidate minus each table's opponents), each
    paired at the tables where both sat. Pairs that never met get no row."""
    if order is not None:
        rows = [[f"{upper} - {lower}", e.text(2), str(e.n), "yes" if ok else "NO"]
                for lower, upper, e, ok in ladder_check(summary, order)]
        return _format_rows(["score difference", "mean ± 95%", "deals", "above 0"], rows)
    rows = [[tables_text(p.tables), f"{p.a} - {p.b}", p.estimate.text(2), str(p.estimate.n),
             "yes" if p.estimate.excludes_zero() else "no"] for p in summary.pairs]
    title = "paired score differences at the same table (per deal, then over deals):"
    if not rows:
        return title + " none (no two agents sat at the same table)"
    header = ["table", "score difference", "mean ± 95%", "deals", "excludes 0"]
    return title + "\n" + _format_rows(header, rows, left=2)


def _csv_value(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6g}"


def _csv_estimates(estimates: list[Estimate]) -> list[str]:
    """Per estimate: mean, t half-width, interval low and high (empty without an interval)."""
    return [_csv_value(e.to_dict()[k]) for e in estimates for k in ("mean", "ci95", "low", "high")]


def save(results: Results, summary: Summary, out_dir: str, plots: bool = True) -> list[str]:
    """Write the files listed in the module docstring into ``out_dir`` (created if needed); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, "results.json")]
    with open(paths[0], "w", encoding="utf-8") as f:
        json.dump({**results.to_dict(), "summary": summary.to_dict()}, f, indent=1)

    def write(name: str, header: list[str], rows: Iterable[list[Any]]) -> None:
        paths.append(os.path.join(out_dir, name))
        with open(paths[-1], "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    metrics = list(summary.agents[0].metrics) if summary.agents else []
    columns = [f"{m}_{x}" for m in metrics for x in ("mean", "ci95", "low", "high")]
    write("summary.csv", ["agent", "spec", "play", "tables", "games", "deals", *columns, "rating_mu", "rating_sigma",
                          "rating_ordinal", "illegal_actions"],
          ([a.label, a.spec, a.play, " ".join(table_name(t) for t in a.tables), a.games, a.deals,
            *_csv_estimates([a.metrics[m] for m in metrics]),
            *(_csv_value(x) for x in (a.rating.mu, a.rating.sigma, a.rating.ordinal)), a.illegal]
           for a in summary.agents))
    play = dict(zip(results.labels, results.play, strict=False))
    write("tables.csv", ["table", "lineup", "seats", "agent", "play", "games", "deals", *columns],
          ([t.name, t.lineup, " ".join(t.seats), ta.label, play.get(ta.label, ""), ta.games, ta.deals,
            *_csv_estimates([ta.metrics[m] for m in metrics])] for t in summary.tables for ta in t.agents))
    write("differences.csv", ["a", "b", "tables", "deals", "mean", "ci95", "low", "high"],
          ([p.a, p.b, " ".join(table_name(t) for t in p.tables), p.estimate.n, *_csv_estimates([p.estimate])]
           for p in summary.pairs))
    write("games.csv", ["deal", "deal_seed", "lineup", "rotation", "seat", "agent", "rounds", "score", "lake",
                        "nertz_left", "match_score", "ticks", "round_end", "illegal_actions"],
          ([g.deal, results.deal_seeds[g.deal], g.lineup, g.rotation, s, results.labels[k], len(g.scores),
            sum(r[s] for r in g.scores), sum(r[s] for r in g.lake), sum(r[s] for r in g.nertz_left),
            g.match_scores[s], g.ticks, "/".join(g.ends), g.illegal[s]]
           for g in results.games for s, k in enumerate(g.seats)))
    if plots and summary.agents:
        paths += plot(summary, out_dir)
    return paths


def plot_data(summary: Summary) -> dict[str, list[dict[str, Any]]]:
    """What the plots draw: ``scores`` (one series per agent, or per table and agent when the tournament has
    several tables: the per-game mean round scores, their mean and 95% half-width over deals),
    and the rows of ``differences`` (per pair of :attr:`Summary.pairs`, ``"a - b"`` and its tables: the mean and
    95% half-width over deals) and ``ratings`` (per agent: mu as the mean, 2 sigma as the half-width)."""
    several = len(summary.tables) > 1
    series = ([(f"{t.name} {ta.label}", ta) for t in summary.tables for ta in t.agents] if several
              else [(a.label, a) for a in summary.agents])
    scores = [{"label": label, "scores": list(x.scores), "mean": x.metrics["score"].mean,
               "ci95": x.metrics["score"].half_width} for label, x in series]
    differences = [{"label": f"{p.a} - {p.b} ({tables_text(p.tables)})", "mean": p.estimate.mean,
                    "half_width": p.estimate.half_width} for p in summary.pairs]
    ratings = [{"label": a.label, "mean": a.rating.mu, "half_width": 2 * a.rating.sigma} for a in summary.agents]
    return {"scores": scores, "differences": differences, "ratings": ratings}


def plot(summary: Summary, out_dir: str) -> list[str]:
    """``scores.png``, ``differences.png`` (one row per pair, the mean and its 95% interval, a line at zero; when
    two agents met) and ``ratings.png`` of :func:`plot_data` (matplotlib with the Agg backend, imported here
    only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def saved(fig: Any, name: str) -> str:
        fig.tight_layout()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    data = plot_data(summary)
    series = data["scores"]
    labels = [x["label"] for x in series]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(labels)), 4.0))
    ax.violinplot([x["scores"] or [0.0] for x in series], showmeans=True)
    means = [x["mean"] for x in series]
    hws = [0.0 if math.isnan(x["ci95"]) else x["ci95"] for x in series]
    ax.errorbar(
        range(1, len(labels) + 1), means, yerr=hws, fmt="o", color="black", capsize=4, label="mean ± 95%"
    )
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20)
    ax.set_ylabel("mean round score per game")
    ax.set_title("Score distributions" + (" per table" if len(summary.tables) > 1 else ""))
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.legend(loc="best")
    paths = [saved(fig, "scores.png")]

    def rows(name: str, title: str, items: list[dict[str, Any]], xlabel: str, zero: bool) -> None:
        """One row per item: its mean and, either side, its half-width."""
        fig, ax = plt.subplots(figsize=(7.0, 1.5 + 0.4 * len(items)))
        hws = [0.0 if math.isnan(x["half_width"]) else x["half_width"] for x in items]
        ax.errorbar([x["mean"] for x in items], range(len(items)), xerr=hws, fmt="o", capsize=4)
        if zero:
            ax.axvline(0.0, color="grey", lw=1)
        ax.set_yticks(range(len(items)), [x["label"] for x in items])
        ax.invert_yaxis()
        ax.set(xlabel=xlabel, title=title)
        paths.append(saved(fig, name))

    if data["differences"]:
        rows("differences.png", "Paired differences", data["differences"],
             "a - b: score per round, paired by deal (mean ± 95%)", zero=True)
    rows("ratings.png", "Ratings", data["ratings"], "openskill Plackett-Luce mu ± 2σ", zero=False)
    return paths
