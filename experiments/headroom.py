"""How far above ``search`` can a player get? The scale of the training bar, measured.

Issue 5's bar asks a trained policy for +3 points a round against three ``search`` players (4 players). This
benchmark puts that number on a scale: what playing faster is worth, and how far above ``search`` the
strongest players we can build reach, including two that cheat.

Every row seats a candidate against three copies of an opponent, four players, on duplicate deals with the
four seat rotations (the harness's deal and agent seeds, lineup 0), and reports the candidate's score per
round minus the mean of the other three seats, with its 95% interval over deals (a deal's four games are one
sample), and how often the candidate emptied its Nertz pile first.

Rows (``--rows`` picks some by name):

- ``copy``: an identical copy of ``search`` (the control; its expected value is 0).
- ``tempo_05``/``_10``/``_20``: ``search`` against ``search`` players that sit out 5, 10 or 20% of the ticks
  (``wait_prob``): what being that much faster is worth.
- ``rollouts_128``, ``wide``: ``search`` with 4x the rollouts; with 10 candidates and a 40-tick horizon.
- ``oracle``, ``oracle_wide``: ``search`` that sees its own hidden cards (the order of its stock and waste,
  its Nertz pile below the top), read from the engine each tick: perfect knowledge of the own layout, an upper
  bound on what any memory or inference about the own cards can add. Not a legal player: a measuring stick.
- ``oracle_beam``: a beam search over the own moves (width 256, 30 ticks, every own card known) that
  ignores the other players; it falls back to the heuristic when no plan gains points.
- ``heuristic``, ``ppo``: the rung below ``search`` and the shipped model, for scale.

Run: ``python experiments/headroom.py [--deals 400] [--seed 3] [--workers 2] [--rows copy,oracle]``. Prints a table
and writes ``bench/out/headroom.json``. 400 deals of every row take about 40 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from multiprocessing import Pool
from typing import Any

import numpy as np
from numba import njit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))

import nertz_env
from common import print_table, save
from nertz_env.agents import make_agent
from nertz_env.agents.kernels import (
    ME,
    PRIO_NERTZ_LAKE,
    S_LPLAYED,
    S_NCOUNT,
    S_NERTZ,
    S_NPLAYED,
    S_NTOP,
    S_SCOUNT,
    S_STOCK,
    S_WASTE,
    S_WCOUNT,
    S_WTOP,
    apply_view,
    own_moves,
    pick_best,
)
from nertz_env.agents.search import SearchAgent
from nertz_env.eval.tournament import agent_seed, deal_seed, play_game

PLAYERS = 4


class OracleSearch(SearchAgent):
    """``search`` that reads its own hidden cards from the engine every tick (a measuring stick, not a
    player: it sees what the observation hides). Call :meth:`attach` with the table's env before playing."""

    env: Any = None

    def attach(self, env: Any) -> None:
        self.env = env

    def _reveal(self, s: np.ndarray) -> None:
        """Write the true stock, waste and Nertz pile of the seat into the state (checked against what the
        observation shows)."""
        t, p = self.env._state, self.seat
        sl, wl, nl = int(t.stock_len[0, p]), int(t.waste_len[0, p]), int(t.nertz_len[0, p])
        if (s[S_SCOUNT], s[S_WCOUNT], s[S_NCOUNT]) != (sl, wl, nl):
            raise AssertionError("the observation's pile counts differ from the engine's")
        s[S_STOCK : S_STOCK + sl] = t.stock[0, p, :sl]
        s[S_WASTE : S_WASTE + wl] = t.waste[0, p, :wl]
        s[S_NERTZ : S_NERTZ + nl] = t.nertz[0, p, :nl]
        if (nl and s[S_NTOP] != s[S_NERTZ + nl - 1]) or (wl and s[S_WTOP] != s[S_WASTE + wl - 1]):
            raise AssertionError("the observation's tops differ from the engine's")

    def _remember(self, observation: np.ndarray, s: np.ndarray) -> None:
        super()._remember(observation, s)
        self._reveal(s)


@njit
def _state_hash(s):
    h = np.uint64(1469598103934665603)
    for k in range(s.shape[0]):
        h = (h ^ np.uint64(s[k] + 7)) * np.uint64(1099511628211)
    return h


@njit
def _gain(child, parent, value):
    """Points a move earned: ``value[0]`` per card that left the Nertz pile, ``value[1]`` per own lake card."""
    return value[0] * (child[S_NPLAYED] - parent[S_NPLAYED]) + value[1] * (child[S_LPLAYED] - parent[S_LPLAYED])


@njit
def beam_plan(root, seat, width, depth, gamma, value):
    """The first move of the best own-move sequence found by a beam search of ``width`` states over ``depth``
    ticks (flips included, states seen before skipped), scored by the discounted points of ``_gain`` (ties
    broken by the state's hash); the lake only changes by the seat's own plays. The moves and their legality
    are the engine's, on the seat table ``seat`` (``agents.kernels.own_moves`` and ``apply_view``). Returns
    (move, score); move -1 when nothing was found."""
    size = root.shape[0]
    beam = np.empty((width, size), np.int64)
    bscore = np.zeros(width)
    bfirst = np.full(width, -1, np.int64)
    cap = width * 64
    cand = np.empty((cap, size), np.int64)
    cscore = np.empty(cap)
    cfirst = np.empty(cap, np.int64)
    moves = np.empty(seat.mask.shape[2], np.int64)
    here = np.int64(0)  # (a literal 0 would compile the engine's code once more)
    tsize = 1 << 18
    table = np.zeros(tsize, np.uint64)
    beam[0] = root
    nb = 1
    best_score, best_first = -1.0, -1
    f = 1.0
    for d in range(depth):
        nc = 0
        for b in range(nb):
            s = beam[b]
            m = own_moves(s, seat, here, ME, moves)
            for k in range(m):
                if nc >= cap:
                    break
                c = cand[nc]
                c[:] = s
                apply_view(c, moves[k], seat, here, ME)
                h = _state_hash(c)
                i = np.int64(h % np.uint64(tsize))
                seen = False
                while table[i] != 0:
                    if table[i] == h:
                        seen = True
                        break
                    i = np.int64((i + 1) % tsize)
                if seen:
                    continue
                table[i] = h
                cscore[nc] = (
                    bscore[b] + f * _gain(c, s, value) + 1e-6 * np.float64(h % np.uint64(1000003)) / 1000003.0
                )
                cfirst[nc] = moves[k] if d == 0 else bfirst[b]
                nc += 1
        if nc == 0:
            break
        order = np.argsort(-cscore[:nc])
        nb = min(width, nc)
        for j in range(nb):
            beam[j] = cand[order[j]]
            bscore[j] = cscore[order[j]]
            bfirst[j] = cfirst[order[j]]
        if bscore[0] > best_score + 1e-9:
            best_score, best_first = bscore[0], bfirst[0]
        f *= gamma
    return best_first, best_score


class OracleBeam(OracleSearch):
    """Every own card known, a beam search of the own moves instead of rollouts (the other players ignored);
    the heuristic's choice when it is a Nertz card to the lake or when no plan gains points."""

    def __init__(self, width: int = 256, depth: int = 30, gamma: float = 0.95) -> None:
        super().__init__()
        self.width, self.depth, self.beam_gamma = width, depth, gamma

    def _choose(self, s: np.ndarray, action_mask: np.ndarray) -> int:
        best = int(pick_best(self._prio, action_mask, self.rng.random()))
        if self._prio[best] >= PRIO_NERTZ_LAKE:
            return best
        move, score = beam_plan(
            s.copy(),
            self._work[0],
            self.width,
            self.depth,
            self.beam_gamma,
            self._value,
        )
        return int(move) if move >= 0 and score > 0 and action_mask[move] else best


def _make(spec: str) -> Any:
    if spec == "oracle":
        return OracleSearch()
    if spec == "oracle_wide":
        return OracleSearch(candidates=10, horizon=40)
    if spec == "oracle_beam":
        return OracleBeam()
    return make_agent(spec)


#: name -> (candidate, opponent)
ROWS: dict[str, tuple[str, str]] = {
    "copy": ("search", "search"),
    "tempo_05": ("search", "search:wait_prob=0.05"),
    "tempo_10": ("search", "search:wait_prob=0.1"),
    "tempo_20": ("search", "search:wait_prob=0.2"),
    "rollouts_128": ("search:rollouts=128", "search"),
    "wide": ("search:candidates=10,horizon=40", "search"),
    "oracle": ("oracle", "search"),
    "oracle_wide": ("oracle_wide", "search"),
    "oracle_beam": ("oracle_beam", "search"),
    "heuristic": ("heuristic", "search"),
    "ppo": ("ppo", "search"),
}


def play_deal(job: tuple[str, str, int, int]) -> tuple[float, float]:
    """One deal, the candidate at each seat in turn: (candidate minus the others' mean, share of the four
    games in which the candidate emptied its Nertz pile)."""
    cand, opp, seed, deal = job
    env = nertz_env.parallel_env(num_players=PLAYERS)
    diffs, outs = [], 0
    for rot in range(PLAYERS):
        agents = [_make(cand) if s == rot else _make(opp) for s in range(PLAYERS)]
        for a in agents:
            if isinstance(a, OracleSearch):
                a.attach(env)
        seeds = [agent_seed(seed, deal, 0, rot, s) for s in range(PLAYERS)]
        record = play_game(env, agents, deal_seed(seed, deal), seeds)
        total = np.sum(record.scores, axis=0)  # one round under the default rules; a match sums them
        diffs.append(total[rot] - (total.sum() - total[rot]) / (PLAYERS - 1))
        outs += int(record.nertz_left[-1][rot] == 0)
    return float(np.mean(diffs)), outs / PLAYERS


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deals", type=int, default=400)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    args = ap.parse_args(argv)
    names = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in names if r not in ROWS]
    if unknown or not names:
        ap.error(f"unknown row(s) {unknown}; choose from {', '.join(ROWS)}")
    if args.deals < 2 or args.workers < 1:
        ap.error("--deals must be >= 2 and --workers >= 1")
    results = []
    table = []
    with Pool(args.workers, initializer=_init_worker) as pool:
        for name in names:
            cand, opp = ROWS[name]
            t0 = time.perf_counter()
            out = pool.map(play_deal, [(cand, opp, args.seed, d) for d in range(args.deals)], chunksize=4)
            seconds = time.perf_counter() - t0
            diffs = [o[0] for o in out]
            mean, ci = statistics.mean(diffs), 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs))
            nertz_out = 100 * statistics.mean(o[1] for o in out)
            results.append(
                {
                    "row": name,
                    "candidate": cand,
                    "opponent": opp,
                    "mean": mean,
                    "ci95": ci,
                    "nertz_out_pct": nertz_out,
                    "deals": len(diffs),
                    "seconds": seconds,
                }
            )
            table.append(
                [
                    name,
                    f"`{cand}`",
                    f"`{opp}`",
                    f"{mean:+.2f} ± {ci:.2f}",
                    f"{nertz_out:.1f}",
                    f"{seconds:.0f}",
                ]
            )
            print(f"{name}: {mean:+.2f} ± {ci:.2f} ({seconds:.0f} s)", flush=True)
    text = print_table(
        f"Headroom above search: 4 players, {args.deals} duplicate deals x 4 rotations, seed {args.seed}",
        ["row", "candidate", "3 opponents", "candidate - others (pts/round)", "Nertz-out %", "s"],
        table,
    )
    payload = {"deals": args.deals, "seed": args.seed, "rows": results, "table": text}
    save("headroom", payload)
    return payload


if __name__ == "__main__":
    main()
