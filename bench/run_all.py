"""Run every benchmark in one process, one after another, and write ``bench/out/summary.md``.

Run: ``python bench/run_all.py [--seconds 5]`` (from a checkout with the package and the ``bench`` extras
installed). Each benchmark prints its own table; the summary collects them with the date and machine.
Throughput moves about 15% from run to run on a shared machine: compare figures from one run only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import OUT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per measured loop")
    ap.add_argument("--skip-agents", action="store_true", help="skip the 1,000-game tournament timing")
    args = ap.parse_args()
    import bench_env
    import bench_vector

    parts = []
    started = time.strftime("%Y-%m-%d %H:%M")
    parts.append(bench_env.main(["--seconds", str(args.seconds)])["table"])
    parts.append(bench_vector.main(["--seconds", str(args.seconds / 2)])["table"])
    if not args.skip_agents:
        try:
            import bench_agents
        except ImportError as e:  # the agents benchmark needs the eval extras
            print(f"bench_agents skipped: {e}")
        else:
            parts.append(bench_agents.main([])["table"])
    OUT.mkdir(exist_ok=True)
    summary = f"Benchmarks run {started} on {os.cpu_count()} cores (`python bench/run_all.py`).\n\n" + "\n\n".join(parts)
    (OUT / "summary.md").write_text(summary + "\n")
    print(f"wrote {OUT / 'summary.md'}")


if __name__ == "__main__":
    main()
