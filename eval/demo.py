"""``nertz-demo``: a 4-player table after 25 ticks of greedy play (as ``render_mode="ansi"`` prints it), then
the scripted ladder in a short tournament.

It is ``nertz-eval ladder`` on fewer deals. See the README.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from nertz_env.agents import LADDER
from nertz_env.cli import EXIT_INTERRUPTED, Parser, at_least
from nertz_env.eval.cli import LADDER_DEALS  # needs the eval extra: commands.run says so in one line
from nertz_env.eval.report import differences_table, table
from nertz_env.eval.summary import ladder_check, summarize
from nertz_env.eval.tournament import run_tournament


def _show_a_table(seed: int) -> None:
    import nertz_env

    env = nertz_env.parallel_env(num_players=4, render_mode="ansi")
    obs, _ = env.reset(seed=seed)
    lake_actions = [i for i in range(env.actions.n) if env.actions.name(i).startswith("lake:")]
    for _ in range(25):  # a few ticks of greedy play, so the lake is not empty
        masks = {n: obs[n]["action_mask"] for n in env.agents}
        actions = {n: next((a for a in lake_actions if m[a]), 1 if m[1] else 0) for n, m in masks.items()}
        obs, *_ = env.step(actions)
    print(env.render())
    env.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nertz-demo``; returns the exit code."""
    parser = Parser(prog="nertz-demo", description=__doc__)
    parser.add_argument("--deals", type=at_least(1), default=40,
                        help="deals in the tournament, at least 1 (default 40); any number starts at once, and "
                        "Ctrl-C shows the deals finished")
    parser.add_argument("--seed", type=at_least(0, 2**64 - 1), default=0,
                        help="seed of the table's deal and of the tournament, a non-negative integer (default 0)")
    args = parser.parse_args(argv)
    print("A 4-player table after 25 ticks of greedy play (render_mode='ansi'):\n")
    _show_a_table(args.seed)
    print(f"\nThe scripted ladder, {args.deals} duplicate deals of 4 players (every seat rotation):\n")
    results = run_tournament(list(LADDER), num_players=4, deals=args.deals, seed=args.seed)
    if results.interrupted and not results.deals_done:  # as nertz-eval: no table of zeros and dashes
        print(f"nertz-demo: interrupted before any of the {args.deals} deal(s) finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    summary = summarize(results)
    print(table(results, summary))
    print()
    print(differences_table(summary, list(LADDER)))
    print(f"({results.elapsed:.1f} s)")
    if not all(ok for *_, ok in ladder_check(summary, list(LADDER))):
        print(f"Too few deals to confirm every rung: search's edge over heuristic, about a point a round, takes "
              f"about {LADDER_DEALS:,} deals to confirm.")
    print(f"The README's table: nertz-eval ladder --deals {LADDER_DEALS} --seed 0")
    if results.interrupted:
        print(f"nertz-demo: interrupted; the tables above cover the {len(results.deals_done)} of {args.deals} "
              "deal(s) finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
