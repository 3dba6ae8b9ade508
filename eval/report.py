"""Reports of a tournament: a plain-text table, JSON, CSV and PNG plots (matplotlib, Agg backend).

Files written by :func:`save` into one directory::

    results.json    the tournament (agents, rules, seeds, every game) and its summary
    summary.csv     one row per agent: every metric's mean and 95% half-width, the rating
    games.csv       one row per seat of every game (deal, lineup, rotation, seat, agent, scores)
    scores.png      distribution of each agent's per-game mean round score
    ratings.png     openskill ratings, mu with a +-2 sigma interval
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any

from nertz_env.eval.summary import Summary, ladder_check
from nertz_env.eval.tournament import Results

_HEADERS = {
    "score": "score/round",
    "win": "win %",
    "nertz_out": "Nertz-out %",
    "lake": "lake/round",
    "match_win": "match win %",
}
_PERCENT = {"win", "nertz_out", "match_win"}


def _format_rows(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def table(results: Results, summary: Summary) -> str:
    """The per-agent table (means ± 95% half-widths over deals), with a header line on the tournament."""
    metrics = [m for m in _HEADERS if m in summary.agents[0].metrics] if summary.agents else []
    header = ["agent", "games", *(_HEADERS[m] for m in metrics), "rating mu ± 2σ"]
    rows = []
    for a in sorted(summary.agents, key=lambda x: -x.metrics["score"].mean if x.metrics["score"].n else 0.0):
        cells = [a.label, str(a.games)]
        for m in metrics:
            scale = 100.0 if m in _PERCENT else 1.0
            cells.append(a.metrics[m].text(1 if scale == 100.0 else 2, scale))
        cells.append(f"{a.rating.mu:.1f} ± {2 * a.rating.sigma:.1f}")
        rows.append(cells)
    rules = ", ".join(f"{k}={v}" for k, v in sorted(results.rules.items())) or "default rules"
    head = (
        f"{results.mode.replace('_', '-')}: {results.num_players} players, {len(results.deals_done)} deals "
        f"x {len(results.games) // max(1, len(results.deals_done))} games each (seat rotations), seed "
        f"{results.seed}, {rules}"
    )
    if results.interrupted:
        head += f"  [interrupted: {len(results.deals_done)} of {len(results.deal_seeds)} deals]"
    illegal = sum(a.illegal for a in summary.agents)
    foot = "± is the 95% interval over deals (a deal's duplicate set is one sample)."
    if illegal:
        foot += f"  Illegal actions (played as waits): {illegal}."
    return "\n".join([head, _format_rows(header, rows), foot])


def differences_table(summary: Summary, order: list[str] | None = None) -> str:
    """Paired score differences (per deal, 95% interval) for adjacent agents of ``order`` or for all pairs."""
    rows = []
    if order is not None:
        for lower, upper, e, ok in ladder_check(summary, order):
            rows.append([f"{upper} - {lower}", e.text(2), str(e.n), "yes" if ok else "NO"])
        return _format_rows(["score difference", "mean ± 95%", "deals", "above 0"], rows)
    labels = [a.label for a in summary.agents]
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            e = summary.differences[(a, b)]
            rows.append([f"{a} - {b}", e.text(2), str(e.n), "yes" if e.excludes_zero() else "no"])
    return _format_rows(["score difference", "mean ± 95%", "deals", "excludes 0"], rows)


def to_json(results: Results, summary: Summary) -> dict[str, Any]:
    d = results.to_dict()
    d["summary"] = summary.to_dict()
    return d


def _csv_value(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.6g}"


def save(results: Results, summary: Summary, out_dir: str, plots: bool = True) -> list[str]:
    """Write the files listed in the module doc into ``out_dir`` (created if needed); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    path = os.path.join(out_dir, "results.json")
    with open(path, "w") as f:
        json.dump(to_json(results, summary), f, indent=1)
    paths.append(path)
    metrics = list(summary.agents[0].metrics) if summary.agents else []
    path = os.path.join(out_dir, "summary.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["agent", "spec", "games", "deals"]
            + [f"{m}_{x}" for m in metrics for x in ("mean", "ci95")]
            + ["rating_mu", "rating_sigma", "rating_ordinal", "illegal_actions"]
        )
        for a in summary.agents:
            row = [a.label, a.spec, str(a.games), str(a.deals)]
            for m in metrics:
                e = a.metrics[m]
                row += [_csv_value(e.mean), _csv_value(e.half_width)]
            row += [
                _csv_value(a.rating.mu),
                _csv_value(a.rating.sigma),
                _csv_value(a.rating.ordinal),
                str(a.illegal),
            ]
            w.writerow(row)
    paths.append(path)
    path = os.path.join(out_dir, "games.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "deal",
                "deal_seed",
                "lineup",
                "rotation",
                "seat",
                "agent",
                "rounds",
                "score",
                "lake",
                "nertz_left",
                "match_score",
                "ticks",
                "round_end",
                "illegal_actions",
            ]
        )
        for g in results.games:
            for s, k in enumerate(g.seats):
                w.writerow(
                    [
                        g.deal,
                        results.deal_seeds[g.deal],
                        g.lineup,
                        g.rotation,
                        s,
                        results.labels[k],
                        len(g.scores),
                        sum(r[s] for r in g.scores),
                        sum(r[s] for r in g.lake),
                        sum(r[s] for r in g.nertz_left),
                        g.match_scores[s],
                        g.ticks,
                        "/".join(g.ends),
                        g.illegal[s],
                    ]
                )
    paths.append(path)
    if plots and summary.agents:
        paths += plot(summary, out_dir)
    return paths


def plot(summary: Summary, out_dir: str) -> list[str]:
    """``scores.png`` and ``ratings.png`` (matplotlib with the Agg backend, imported here only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [a.label for a in summary.agents]
    paths = []
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(labels)), 4.0))
    ax.violinplot([a.scores or [0.0] for a in summary.agents], showmeans=True)
    means = [a.metrics["score"].mean for a in summary.agents]
    hws = [
        0.0 if math.isnan(a.metrics["score"].half_width) else a.metrics["score"].half_width
        for a in summary.agents
    ]
    ax.errorbar(
        range(1, len(labels) + 1), means, yerr=hws, fmt="o", color="black", capsize=4, label="mean ± 95%"
    )
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20)
    ax.set_ylabel("mean round score per game")
    ax.set_title("Score distributions")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.legend(loc="best")
    fig.tight_layout()
    path = os.path.join(out_dir, "scores.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(labels)), 4.0))
    mus = [a.rating.mu for a in summary.agents]
    ax.errorbar(
        range(len(labels)), mus, yerr=[2 * a.rating.sigma for a in summary.agents], fmt="o", capsize=4
    )
    ax.set_xticks(range(len(labels)), labels, rotation=20)
    ax.set_ylabel("openskill Plackett-Luce mu ± 2σ")
    ax.set_title("Ratings")
    fig.tight_layout()
    path = os.path.join(out_dir, "ratings.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
    return paths
