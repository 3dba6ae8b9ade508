"""Per-agent statistics of a tournament: score, win, nertz_out, lake, match_win (with intervals over
deals), per table and paired differences for agents that sat together, and openskill ratings. See
docs/guides/evaluation.md.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from nertz_env.config import NertzConfig
from nertz_env.eval.stats import Estimate, mean_ci
from nertz_env.eval.tournament import GameRecord, Results

METRICS = ("score", "win", "nertz_out", "lake", "match_win")
RATES = frozenset({"win", "nertz_out", "match_win"})
"""The metrics that are shares in [0, 1]: their intervals are clipped to [0, 1] (see eval/stats.py)."""


@dataclass
class Rating:
    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        """The conservative skill ``mu - 3 sigma``."""
        return self.mu - 3.0 * self.sigma

    def to_dict(self) -> dict[str, float]:
        return {"mu": self.mu, "sigma": self.sigma, "ordinal": self.ordinal}


def table_name(lineup: int) -> str:
    """``"T1"`` for lineup 0: the name of a table in reports."""
    return f"T{lineup + 1}"


@dataclass
class TableAgent:
    """One agent's statistics at one table (lineup): its seats there, over the deals."""

    label: str
    games: int
    deals: int
    metrics: dict[str, Estimate]
    per_deal: dict[str, dict[int, float]]
    scores: list[float] = field(default_factory=list)  # per-game mean round score, for plots

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "games": self.games,
            "deals": self.deals,
            **{m: e.to_dict() for m, e in self.metrics.items()},
        }


@dataclass(kw_only=True)
class AgentSummary(TableAgent):
    """One agent's statistics over every table it sat at, with its rating."""

    spec: str
    rating: Rating
    illegal: int
    tables: list[int] = field(default_factory=list)  # the lineups (tables) the means are over
    play: str = ""  # a trained policy: "most probable" (its argmax) or "sampled"; "" for other agents

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.spec,
            "play": self.play,
            "tables": [table_name(t) for t in self.tables],
            "games": self.games,
            "deals": self.deals,
            "illegal_actions": self.illegal,
            **{m: e.to_dict() for m, e in self.metrics.items()},
            "rating": self.rating.to_dict(),
        }


@dataclass
class TableSummary:
    """One table (lineup) of the tournament: who sat there and each agent's statistics there."""

    lineup: int
    seats: list[str]  # agent label per seat, before rotation
    agents: list[TableAgent]

    @property
    def name(self) -> str:
        return table_name(self.lineup)

    @property
    def description(self) -> str:
        """``"ppo, 3×search"``: the agents at the table in seat order, repeats counted."""
        counts = Counter(self.seats)  # in seat order
        return ", ".join(label if c == 1 else f"{c}×{label}" for label, c in counts.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.name,
            "lineup": self.lineup,
            "seats": list(self.seats),
            "agents": [a.to_dict() for a in self.agents],
        }


@dataclass
class Difference:
    """``a``'s score minus ``b``'s, paired per deal at the tables where both sat."""

    a: str
    b: str
    tables: list[int]
    estimate: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "tables": [table_name(t) for t in self.tables],
            **self.estimate.to_dict(),
        }


@dataclass
class Summary:
    """Per-agent statistics (over the tables each agent sat at), per-table statistics, and the paired score
    differences of the agents that sat together: ``pairs`` once each, ``differences`` in both orders."""

    agents: list[AgentSummary]
    match: bool
    differences: dict[tuple[str, str], Estimate]
    tables: list[TableSummary] = field(default_factory=list)
    pairs: list[Difference] = field(default_factory=list)

    def by_label(self, label: str) -> AgentSummary:
        """The summary of the agent with this label (``KeyError`` when none has it)."""
        return {a.label: a for a in self.agents}[label]

    def difference(self, a: str, b: str) -> Estimate:
        """``a`` minus ``b`` at the tables where both sat; ``KeyError`` naming the problem if they never met."""
        try:
            return self.differences[(a, b)]
        except KeyError:
            raise KeyError(f"{a!r} and {b!r} never sat at the same table: no paired difference") from None

    def to_dict(self) -> dict[str, Any]:
        """Every table of the summary as a JSON-ready dict."""
        return {
            "agents": [a.to_dict() for a in self.agents],
            "tables": [t.to_dict() for t in self.tables],
            "match": self.match,
            "score_differences": [p.to_dict() for p in self.pairs],
        }


def _team_totals(scores: list[int], team: list[int]) -> dict[int, int]:
    """Each team's total of the seats' ``scores`` (the teams in seat order)."""
    return {g: sum(v for v, t in zip(scores, team, strict=True) if t == g) for g in dict.fromkeys(team)}


def _shares(totals: dict[int, int], team: list[int]) -> list[float]:
    """Each seat's share of a win split between the teams of the highest total."""
    best = max(totals.values())
    winners = [g for g, v in totals.items() if v == best]
    return [1.0 / len(winners) if t in winners else 0.0 for t in team]


def match_win_shares(game: GameRecord, team: list[int], target: int | None) -> list[float]:
    """Share of the match won by each seat, by the engine's rule."""
    totals = _team_totals(game.match_scores, team)
    crossing = [g for g, v in totals.items() if target is not None and v >= target]
    if crossing and not game.truncated:  # the best last round among the teams that crossed the target
        last = _team_totals(game.scores[-1] if game.scores else [0] * len(team), team)
        return _shares({g: last[g] for g in crossing}, team)
    return _shares(totals, team)


def _rate(results: Results, team: list[int], match: bool) -> list[Rating]:
    from openskill.models import PlackettLuce  # the eval extra (nertz-eval imports it at start)
    from scipy.stats import rankdata

    model = PlackettLuce()
    ratings = [model.rating() for _ in results.labels]
    teams = [[s for s, t in enumerate(team) if t == k] for k in sorted(set(team))]  # the seats of each team
    for g in results.games:
        if not g.scores:
            continue
        seat_scores = g.match_scores if match else g.scores[-1]
        team_scores = [sum(seat_scores[s] for s in seats) for seats in teams]
        rated = model.rate(
            [[ratings[g.seats[s]] for s in seats] for seats in teams],
            ranks=[float(r) for r in rankdata([-x for x in team_scores], method="min")],  # ties share a rank
        )
        moves: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for seats, new in zip(teams, rated, strict=True):
            for s, r in zip(seats, new, strict=True):
                moves[g.seats[s]].append((r.mu, r.sigma))
        for k, mv in moves.items():
            old = ratings[k]
            mu = old.mu + sum(m - old.mu for m, _ in mv) / len(mv)
            sigma = sum(sg for _, sg in mv) / len(mv)
            ratings[k] = model.rating(mu=mu, sigma=sigma)
    return [Rating(float(r.mu), float(r.sigma)) for r in ratings]


def summarize(results: Results) -> Summary:
    """Statistics of a tournament's results (docs/guides/evaluation.md)."""
    cfg = results.config
    team = list(NertzConfig.from_dict(cfg).team_of)
    match = cfg.get("target_score") is not None or cfg.get("rounds") is not None
    metrics = METRICS if match else METRICS[:-1]
    n = len(results.labels)
    # sums[(agent, lineup)][metric][deal], counts[(agent, lineup)][deal]: seat-games of the agent at a table
    sums: dict[tuple[int, int], dict[str, dict[int, float]]] = defaultdict(
        lambda: {m: defaultdict(float) for m in metrics}
    )
    counts: dict[tuple[int, int], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    illegal = [0] * n
    per_game_scores: dict[tuple[int, int], list[float]] = defaultdict(list)
    for g in results.games:
        rounds = len(g.scores)
        if rounds == 0:
            continue
        wins = [_shares(_team_totals(r, team), team) for r in g.scores]
        mwin = match_win_shares(g, team, cfg.get("target_score")) if match else None
        for s, k in enumerate(g.seats):
            values = {
                "score": sum(r[s] for r in g.scores) / rounds,
                "win": sum(w[s] for w in wins) / rounds,
                "nertz_out": sum(1.0 for r in g.nertz_left if r[s] == 0) / rounds,
                "lake": sum(r[s] for r in g.lake) / rounds,
            }
            if mwin is not None:
                values["match_win"] = mwin[s]
            key = (k, g.lineup)
            for m in metrics:
                sums[key][m][g.deal] += values[m]
            counts[key][g.deal] += 1
            illegal[k] += g.illegal[s]
            per_game_scores[key].append(values["score"])
    ratings = _rate(results, team, match)

    def stats(k: int, keys: list[tuple[int, int]]) -> dict[str, Any]:
        """Agent ``k``'s statistics over its seats at the (agent, lineup) ``keys``: TableAgent's fields."""
        deals = sorted({d for key in keys for d in counts[key]})
        per_deal = {
            m: {d: sum(sums[key][m][d] for key in keys) / sum(counts[key][d] for key in keys) for d in deals}
            for m in metrics
        }
        return {
            "label": results.labels[k],
            "games": sum(sum(counts[key].values()) for key in keys),
            "deals": len(deals),
            "metrics": {m: mean_ci(list(per_deal[m].values()), bounds=(0.0, 1.0) if m in RATES else None)
                        for m in metrics},
            "per_deal": per_deal,
            "scores": [x for key in keys for x in per_game_scores[key]],
        }

    keys_of = [[key for key in sorted(counts) if key[0] == k] for k in range(n)]
    agents = [AgentSummary(**stats(k, keys), spec=results.agents[k], rating=ratings[k], illegal=illegal[k],
                           tables=[li for _, li in keys],
                           play=results.play[k] if k < len(results.play) else "")
              for k, keys in enumerate(keys_of)]
    at = {(k, li): TableAgent(**stats(k, [(k, li)] if (k, li) in counts else []))
          for li, lineup in enumerate(results.lineups) for k in dict.fromkeys(lineup)}
    tables = [TableSummary(lineup=li, seats=[results.labels[k] for k in lineup],
                           agents=[at[(k, li)] for k in dict.fromkeys(lineup)])
              for li, lineup in enumerate(results.lineups)]
    differences: dict[tuple[str, str], Estimate] = {}
    pairs: list[Difference] = []
    for i, j in itertools.permutations(range(n), 2):
        shared = [li for li, lu in enumerate(results.lineups) if i in lu and j in lu]
        if not shared:
            continue  # never at the same table: no paired difference
        diffs: dict[int, list[float]] = defaultdict(list)
        for li in shared:
            a_deal = at[(i, li)].per_deal["score"]
            b_deal = at[(j, li)].per_deal["score"]
            for d in sorted(set(a_deal) & set(b_deal)):
                diffs[d].append(a_deal[d] - b_deal[d])
        est = mean_ci([sum(v) / len(v) for _, v in sorted(diffs.items())])
        differences[(results.labels[i], results.labels[j])] = est
        if i < j:
            pairs.append(Difference(results.labels[i], results.labels[j], shared, est))
    return Summary(agents=agents, match=match, differences=differences, tables=tables, pairs=pairs)


def ladder_check(summary: Summary, order: list[str]) -> list[tuple[str, str, Estimate, bool]]:
    """For each adjacent pair of ``order`` (weakest first): the score difference (upper minus lower) over
    the deals both played, and whether its 95% interval lies above zero."""
    diffs = [(lower, upper, summary.difference(upper, lower)) for lower, upper in itertools.pairwise(order)]
    return [(lower, upper, e, e.n >= 2 and e.low > 0.0) for lower, upper, e in diffs]
