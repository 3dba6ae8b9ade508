"""Tournament deals per second: locally (``--workers 1`` and ``2``) and on a simulated two-node Ray cluster
(``nertz-eval --address``), the same tournament each time.

The cluster is ``ray.cluster_utils.Cluster`` on loopback: a head and a second node of one CPU each, so it has
the machine's two cores as a two-machine cluster of one core each would. Each row plays the same deals; the
records of every row are checked equal to the first row's (a cluster run must play the same games). Times:

* play: wall time of the deals (what ``nertz-eval`` prints), and deals/s from it;
* start: (one warm-up deal first compiles numba's kernels in this process, outside every time) for the cluster, joining it, shipping checkpoints and every node's check (agents built, numba's
  cache loaded in a fresh worker) before the first deal; for local workers, nothing (workers start inside
  the play time, as nertz-eval does).

Run: ``python bench/bench_cluster.py [--deals 24 --players 2 --agents heuristic,search]``. Prints a Markdown
table and writes ``bench/results/bench_cluster.json`` and ``.md``. The machine is shared: compare rows of one
run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import load_average, print_table

RESULTS = Path(__file__).resolve().parent / "results"


def _records(results: Any) -> list[dict[str, Any]]:
    return [g.to_dict() for g in results.games]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=24)
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--agents", default="heuristic,search", help="gauntlet: candidate,opponent[,opponent..]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cluster", action="store_true", help="local rows only")
    args = parser.parse_args()

    from nertz_env.eval.tournament import plan_tournament, play_tournament

    specs = args.agents.split(",")
    tournament = plan_tournament(specs, num_players=args.players, deals=args.deals, seed=args.seed, mode="gauntlet")
    rows: list[dict[str, Any]] = []
    reference = None

    def record(label: str, results: Any, start: float) -> None:
        nonlocal reference
        games = _records(results)
        if reference is None:
            reference = games
        same = games == reference
        rows.append(
            {
                "run": label,
                "cpus": results.workers,
                "deals": len(results.deals_done),
                "start_s": start,
                "play_s": results.elapsed,
                "deals_per_s": len(results.deals_done) / results.elapsed,
                "same_records": same,
            }
        )
        print(f"{label}: {results.elapsed:.1f} s, same records: {same}", file=sys.stderr, flush=True)

    # warm-up: numba compiles the rules and the agents' kernels here once (or loads its cache), outside the times
    play_tournament(plan_tournament(specs, num_players=args.players, deals=1, seed=args.seed, mode="gauntlet"))
    for workers in (1, 2):
        record(f"local --workers {workers}", play_tournament(tournament, workers=workers), 0.0)

    if not args.no_cluster:
        import ray
        from ray.cluster_utils import Cluster

        from nertz_env.eval.cluster import prepare

        here = os.getcwd()
        os.chdir(tempfile.mkdtemp(prefix="nertz-bench-cluster-"))
        try:
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        finally:
            os.chdir(here)
        try:
            cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            ray.shutdown()
            for attempt in ("first", "second"):  # the second run finds warm workers on the nodes
                t0 = time.perf_counter()
                remote = prepare(cluster.address, tournament.plan)
                start = time.perf_counter() - t0
                try:
                    results = play_tournament(tournament, cluster=remote)
                finally:
                    remote.close()
                record(f"two-node cluster ({attempt} run)", results, start)
        finally:
            ray.shutdown()
            cluster.shutdown()

    title = (
        f"Tournament deals/s: gauntlet {' vs '.join(specs)}, {args.players} players, {args.deals} deals "
        f"(x {len(tournament.plan.seatings[0])} rotations x {len(tournament.plan.lineups)} lineup(s))"
    )
    header = ["run", "CPUs", "deals", "start s", "play s", "deals/s", "records = local"]
    table = [
        [r["run"], r["cpus"], r["deals"], f"{r['start_s']:.1f}", f"{r['play_s']:.1f}", f"{r['deals_per_s']:.2f}",
         "yes" if r["same_records"] else "NO"]
        for r in rows
    ]
    text = print_table(title, header, table)
    load = load_average()[0]
    command = "python bench/bench_cluster.py " + " ".join(sys.argv[1:])
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    RESULTS.mkdir(exist_ok=True)
    payload = {"command": command, "when": when, "cpus": os.cpu_count(), "load_1min": load, "rows": rows}
    (RESULTS / "bench_cluster.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / "bench_cluster.md").write_text(
        text + f"\n\n{command} ({when}, {os.cpu_count()} CPUs, load average {load:.1f})\n"
    )
    if not all(r["same_records"] for r in rows):
        sys.exit("the runs' records differ")


if __name__ == "__main__":
    main()
