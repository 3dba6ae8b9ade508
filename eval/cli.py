"""``nertz-eval``: tournaments from the command line (``nertz-eval ladder --deals 1200 --seed 0``).

Bad input prints one line and exits 2 before any deal; Ctrl-C saves the deals finished so far and exits 130.
See docs/guides/evaluation.md and docs/guides/cluster.md (``--address``).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openskill  # noqa: F401  (the eval extra, for the ratings: a missing one is refused before any deal)

from nertz_env.agents import LADDER, AgentSpecError, known_agents
from nertz_env.agents.registry import IncompatibleAgentError
from nertz_env.cli import EXIT_INTERRUPTED, Parser, UsageError, add_rule_flag, advice, at_least, refuse
from nertz_env.eval.report import differences_table, save, table
from nertz_env.eval.summary import ladder_check, summarize
from nertz_env.eval.tournament import plan_tournament, play_tournament
from nertz_env.threads import usable_cpus

# the ladder's deals: enough to confirm search over heuristic with high probability (experiments/engine_port.md)
LADDER_DEALS = 1200


def _rules(args: argparse.Namespace) -> dict[str, Any]:
    rules: dict[str, Any] = dict(args.rule or {})
    if args.target_score is not None:
        if "target_score" in rules:
            raise UsageError(
                "--target-score and --rule target_score=... say the same thing; give one of them"
            )
        rules["target_score"] = args.target_score
    return rules


def _deal_seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:  # "1,,2" and "1,2," too: a seed left out by mistake, not one to skip
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        seeds = [-1]
    if min(seeds) < 0:
        raise UsageError(f"--deal-seeds takes comma-separated non-negative integers, got {text!r}")
    repeated = sorted(s for s, n in collections.Counter(seeds).items() if n > 1)
    if repeated:
        raise UsageError(
            f"--deal-seeds repeats {', '.join(map(str, repeated))}: a repeated deal would count twice "
            "as if it were an independent sample; give each seed once"
        )
    return seeds


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="nertz-eval",
        description="Tournaments of Nertz agents with duplicate deals and seat rotation.",
        epilog=f"Known agents: {', '.join(known_agents())}; or a checkpoint path (e.g. runs/model.zip).",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, default_out: str, default_deals: int) -> None:
        p.set_defaults(default_out=default_out, default_deals=default_deals)
        p.add_argument("--players", type=int, default=4, help="seats at the table, 2 to 8 (default 4)")
        p.add_argument(
            "--deals",
            type=at_least(1),
            help=f"deals, at least 1 (default {default_deals}); any number starts at once, and Ctrl-C saves the "
            "deals finished",
        )
        p.add_argument(
            "--seed", type=at_least(0), default=0, help="tournament seed: deal and agent seeds (default 0)"
        )
        p.add_argument("--deal-seeds", help="explicit env seeds, comma-separated (instead of --deals)")
        add_rule_flag(p)
        p.add_argument("--target-score", type=int, help="play matches to this score (rule target_score)")
        p.add_argument(
            "--workers",
            type=at_least(1),
            help=f"processes, at most one per deal and one per CPU ({usable_cpus()} here; default "
            f"{min(2, usable_cpus())}, or the deals if fewer)",
        )
        p.add_argument(
            "--address",
            metavar="ADDR",
            help="play the deals on a Ray cluster: auto (the cluster this machine belongs to) or a head's "
            "host:port (ray start --head printed it); instead of --workers",
        )
        p.add_argument("--no-rotate", action="store_true", help="play each lineup in one seating only")
        p.add_argument("--out", help=f"output directory (default {default_out})")
        p.add_argument("--no-save", action="store_true", help="print only; write no files")
        p.add_argument("--no-plots", action="store_true", help="write JSON and CSV but no PNG")
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        p.add_argument(
            "--replays", metavar="DIR", help="record every game in DIR, one nertz-replay/1 file each (nertz-replay)"
        )

    rr = sub.add_parser("round-robin", help="every agent against every other, duplicate deals")
    rr.add_argument("agents", nargs="+", help="agent specs")
    common(rr, "eval_out/round-robin", 100)
    ga = sub.add_parser("gauntlet", help="a candidate against a table of each opponent in turn")
    ga.add_argument("candidate", help="agent spec of the candidate")
    ga.add_argument("opponents", nargs="+", help="agent specs of the opponents")
    common(ga, "eval_out/gauntlet", 100)
    la = sub.add_parser("ladder", help=f"the baseline ladder ({', '.join(LADDER)}) at one table")
    common(la, "eval_out/ladder", LADDER_DEALS)
    la.set_defaults(agents=list(LADDER))
    la.add_argument("--check", action="store_true", help="exit 1 unless every rung beats the one below")
    return parser


def _check_flags(args: argparse.Namespace, seeds: list[int] | None) -> tuple[int, int]:
    """The deal count and workers, refusing flags that could not take effect."""
    if seeds is not None and args.deals is not None:
        raise UsageError(
            f"--deal-seeds gives the deals ({len(seeds)}), so --deals {args.deals} would be ignored; give one of them"
        )
    deals = len(seeds) if seeds is not None else (args.deals or args.default_deals)  # --deals is at least 1
    if args.workers is not None and args.address is not None:
        raise UsageError(
            f"--workers {args.workers} has no effect with --address: the deals run on every free CPU of the "
            "Ray cluster; drop one of them"
        )
    workers = args.workers if args.workers is not None else min(2, usable_cpus(), deals)
    if args.workers is not None:
        cpus = usable_cpus()
        if args.workers > cpus:  # each is a spawned process: more than the CPUs only share them
            raise UsageError(
                f"--workers {args.workers} is more than the {cpus} CPU(s) this process can use: each worker is "
                f"a process that loads the agents and plays on a CPU of its own, so more only share the same "
                f"CPUs; pass --workers {cpus} or fewer"
            )
        if args.workers > deals:
            raise UsageError(
                f"--workers {args.workers} with {deals} deal(s): work is split by deal, so at most "
                f"{deals} worker(s) can play; pass --workers {deals} or more deals"
            )
    given = [flag for flag, on in (("--out", args.out is not None), ("--no-plots", args.no_plots)) if on]
    if args.no_save and given:
        raise UsageError(f"{given[0]} has no effect with --no-save (nothing is written); drop one of them")
    return deals, workers


def check_out_dir(path: str, flag: str = "--out") -> None:
    """Refuse an ``--out`` no folder can be made at (docs/guides/evaluation.md), creating nothing: a probe
    folder is made where the first missing folder would go, and removed at once."""
    where = os.path.abspath(path)
    probe = where
    while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        if probe == where:
            raise UsageError(f"{flag} {path}: a file of that name exists; {flag} names a folder for the results")
        raise UsageError(f"{flag} {path}: {probe} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".nertz-eval-probe-", dir=probe))
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot create a folder in {probe} ({e.strerror or e})") from None


def _run(args: argparse.Namespace) -> int:
    rules = _rules(args)
    seeds = _deal_seeds(args.deal_seeds)
    deals, workers = _check_flags(args, seeds)
    out_dir = args.out if args.out is not None else args.default_out
    if not args.no_save:
        check_out_dir(out_dir)
    gauntlet = args.command == "gauntlet"
    specs = [args.candidate, *args.opponents] if gauntlet else list(args.agents)
    try:
        tournament = plan_tournament(
            specs,
            num_players=args.players,
            deals=deals,
            seed=args.seed,
            rules=rules,
            mode="gauntlet" if gauntlet else "round_robin",
            deal_seeds=seeds,
            rotate=not args.no_rotate,
            replays=args.replays,
        )
    except IncompatibleAgentError as e:
        raise UsageError(advice(e, rules)) from None
    except (AgentSpecError, FileNotFoundError, ValueError, ImportError) as e:  # ImportError: an extra missing
        raise UsageError(str(e)) from None
    if args.no_rotate and all(len(s) == 1 for s in tournament.plan.seatings):
        raise UsageError(
            "--no-rotate has no effect: every lineup here has a single seating (one agent at every seat); drop it"
        )
    for note in tournament.notes:
        print(f"nertz-eval: note: {note}", file=sys.stderr)
    cluster = None
    if args.address is not None:
        from nertz_env.eval.cluster import ClusterError, prepare

        try:
            cluster = prepare(args.address, tournament.plan)
        except ClusterError as e:
            raise UsageError(str(e)) from None
        print(f"nertz-eval: playing on the {cluster.describe()}", file=sys.stderr)
    try:
        results = play_tournament(tournament, workers=workers, progress=not args.no_progress, cluster=cluster)
        return _report(args, results, out_dir, cluster)  # saved before the cluster is left
    finally:
        if cluster is not None:
            cluster.close()


def _report(args: argparse.Namespace, results: Any, out_dir: str, cluster: Any) -> int:
    if not results.games:
        if results.failure is not None:
            print(f"nertz-eval: error: {results.failure}; no deal finished, nothing to save", file=sys.stderr)
            return 1
        print("nertz-eval: interrupted before any deal finished; nothing to save", file=sys.stderr)
        return EXIT_INTERRUPTED
    summary = summarize(results)
    text = [table(results, summary)]
    verdict_ok = True
    if args.command == "ladder":
        checks = ladder_check(summary, list(LADDER))
        verdict_ok = all(ok for *_, ok in checks)
        deals_flag = f"--deal-seeds {args.deal_seeds}" if args.deal_seeds else f"--deals {results.deals_planned}"
        text += [
            "",
            differences_table(summary, list(LADDER)),
            "ladder order " + ("confirmed" if verdict_ok else "NOT confirmed") + " at 95% confidence",
            f"command: nertz-eval ladder {deals_flag} --seed {args.seed} --players {args.players}",
        ]
    elif len(summary.agents) > 1:
        text += ["", differences_table(summary)]
    where = cluster.describe() if cluster is not None else f"{results.workers} worker(s)"
    text.append(f"({results.elapsed:.1f} s, {where})")
    out = "\n".join(text)
    print(out)
    if not args.no_save:
        paths = save(results, summary, out_dir, plots=not args.no_plots)
        table_path = os.path.join(out_dir, "table.txt")
        Path(table_path).write_text(out + "\n", encoding="utf-8")
        print(f"saved: {', '.join([*paths, table_path])}", file=sys.stderr)
    if results.failure is not None:
        print(
            f"nertz-eval: error: {results.failure}; kept {len(results.deals_done)} finished deal(s)",
            file=sys.stderr,
        )
        return 1
    if results.interrupted:
        print(f"nertz-eval: interrupted; kept {len(results.deals_done)} finished deal(s)", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.command == "ladder" and args.check and not verdict_ok:
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nertz-eval``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except UsageError as e:
        return refuse("nertz-eval", e)


if __name__ == "__main__":
    sys.exit(main())
