"""Per-agent statistics of a tournament: scores, wins, Nertz-outs, lake cards, match wins, ratings.

Metrics, each first averaged within a game over its rounds, then over the agent's seats of one deal (see
:mod:`nertz_env.eval.stats` for why the deal is the sample), then over deals with a 95% interval:

* ``score``: the round score (own cards in the lake, minus the Nertz penalty, plus bonuses).
* ``win``: share of rounds won: the highest round score (with ``teams``, the highest team score) wins;
  ``k`` tied winners get ``1/k`` each.
* ``nertz_out``: share of rounds in which the agent emptied its Nertz pile.
* ``lake``: own cards played to the lake per round.
* ``match_win`` (only when the rules play a match, ``target_score`` or ``rounds``): share of matches won, by
  the engine's rule (over the target, the higher last-round score; otherwise the higher total).

Ratings: openskill's Plackett-Luce model, updated game by game in a fixed order (deal, lineup, rotation)
with the ranks of the game's scores (the match total in a match; team totals with ``teams``, each team
rated as an openskill team). When one agent holds several seats of a game, each seat is rated from the
agent's rating and the agent moves by the mean of its seats' updates.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from openskill.models import PlackettLuce

from nertz_env.config import NertzConfig
from nertz_env.eval.stats import Estimate, mean_ci, paired_difference, ranks_from_scores
from nertz_env.eval.tournament import GameRecord, Results

METRICS = ("score", "win", "nertz_out", "lake", "match_win")


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


@dataclass
class AgentSummary:
    label: str
    spec: str
    games: int
    deals: int
    metrics: dict[str, Estimate]
    per_deal: dict[str, dict[int, float]]
    rating: Rating
    illegal: int
    scores: list[float] = field(default_factory=list)  # per-game mean round score, for plots

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "spec": self.spec,
            "games": self.games,
            "deals": self.deals,
            "illegal_actions": self.illegal,
            **{m: e.to_dict() for m, e in self.metrics.items()},
            "rating": self.rating.to_dict(),
        }


@dataclass
class Summary:
    agents: list[AgentSummary]
    match: bool
    differences: dict[tuple[str, str], Estimate]

    def by_label(self, label: str) -> AgentSummary:
        for a in self.agents:
            if a.label == label:
                return a
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": [a.to_dict() for a in self.agents],
            "match": self.match,
            "score_differences": [{"a": a, "b": b, **e.to_dict()} for (a, b), e in self.differences.items()],
        }


def _team_of(config: dict[str, Any]) -> list[int]:
    return list(NertzConfig.from_dict(config).team_of)


def _win_shares(scores: list[int], team: list[int]) -> list[float]:
    totals: dict[int, int] = defaultdict(int)
    for s, v in enumerate(scores):
        totals[team[s]] += v
    best = max(totals.values())
    winners = [g for g, v in totals.items() if v == best]
    return [1.0 / len(winners) if team[s] in winners else 0.0 for s in range(len(scores))]


def match_win_shares(game: GameRecord, team: list[int], target: int | None) -> list[float]:
    """Share of the match won by each seat (see the module doc)."""
    totals: dict[int, int] = defaultdict(int)
    last: dict[int, int] = defaultdict(int)
    for s, v in enumerate(game.match_scores):
        totals[team[s]] += v
        if game.scores:
            last[team[s]] += game.scores[-1][s]
    crossing = [g for g, v in totals.items() if target is not None and v >= target]
    if crossing and not game.truncated:
        best = max(last[g] for g in crossing)
        winners = [g for g in crossing if last[g] == best]
    else:
        best = max(totals.values())
        winners = [g for g, v in totals.items() if v == best]
    return [1.0 / len(winners) if team[s] in winners else 0.0 for s in range(len(game.match_scores))]


def _rate(results: Results, team: list[int], match: bool) -> list[Rating]:
    model = PlackettLuce()
    n = len(results.labels)
    ratings = [model.rating() for _ in range(n)]
    for g in results.games:
        if not g.scores:
            continue
        seat_scores = g.match_scores if match else g.scores[-1]
        teams: dict[int, list[int]] = defaultdict(list)
        for s in range(len(g.seats)):
            teams[team[s]].append(s)
        order = sorted(teams)
        team_scores = [sum(seat_scores[s] for s in teams[t]) for t in order]
        rated = model.rate(
            [[ratings[g.seats[s]] for s in teams[t]] for t in order],
            ranks=[float(r) for r in ranks_from_scores(team_scores)],
        )
        moves: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for t_i, t in enumerate(order):
            for m_i, s in enumerate(teams[t]):
                moves[g.seats[s]].append((rated[t_i][m_i].mu, rated[t_i][m_i].sigma))
        for k, mv in moves.items():
            old = ratings[k]
            mu = old.mu + sum(m - old.mu for m, _ in mv) / len(mv)
            sigma = sum(sg for _, sg in mv) / len(mv)
            ratings[k] = model.rating(mu=mu, sigma=sigma)
    return [Rating(float(r.mu), float(r.sigma)) for r in ratings]


def summarize(results: Results) -> Summary:
    """Statistics of a tournament's results (see the module doc)."""
    cfg = results.config
    team = _team_of(cfg)
    match = cfg.get("target_score") is not None or cfg.get("rounds") is not None
    metrics = METRICS if match else METRICS[:-1]
    n = len(results.labels)
    sums: list[dict[str, dict[int, float]]] = [{m: defaultdict(float) for m in metrics} for _ in range(n)]
    counts: list[dict[int, int]] = [defaultdict(int) for _ in range(n)]
    games = [0] * n
    illegal = [0] * n
    per_game_scores: list[list[float]] = [[] for _ in range(n)]
    for g in results.games:
        rounds = len(g.scores)
        if rounds == 0:
            continue
        wins = [_win_shares(r, team) for r in g.scores]
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
            for m in metrics:
                sums[k][m][g.deal] += values[m]
            counts[k][g.deal] += 1
            games[k] += 1
            illegal[k] += g.illegal[s]
            per_game_scores[k].append(values["score"])
    ratings = _rate(results, team, match)
    agents = []
    for k in range(n):
        per_deal = {m: {d: sums[k][m][d] / counts[k][d] for d in counts[k]} for m in metrics}
        agents.append(
            AgentSummary(
                label=results.labels[k],
                spec=results.agents[k],
                games=games[k],
                deals=len(counts[k]),
                metrics={m: mean_ci([per_deal[m][d] for d in sorted(per_deal[m])]) for m in metrics},
                per_deal=per_deal,
                rating=ratings[k],
                illegal=illegal[k],
                scores=per_game_scores[k],
            )
        )
    differences = {}
    for a in agents:
        for b in agents:
            if a is not b:
                differences[(a.label, b.label)] = paired_difference(a.per_deal["score"], b.per_deal["score"])
    return Summary(agents=agents, match=match, differences=differences)


def ladder_check(summary: Summary, order: list[str]) -> list[tuple[str, str, Estimate, bool]]:
    """For each adjacent pair of ``order`` (weakest first): the score difference (upper minus lower) over
    the deals both played, and whether its 95% interval lies above zero."""
    out = []
    for lower, upper in itertools.pairwise(order):
        e = summary.differences[(upper, lower)]
        out.append((lower, upper, e, e.n >= 2 and e.low > 0.0))
    return out
