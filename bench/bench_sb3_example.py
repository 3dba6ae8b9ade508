"""Time the SB3 guide's SubprocVecEnv example exactly as the page shows it (docs/guides/training-sb3.md):
wall time, CPU time of the script and its worker processes, the load average before it, transitions/s.

The example's wall time is its CPU time divided by the cores it gets, so it is printed with both.
Run: ``python bench/bench_sb3_example.py [--out bench/results/sb3_example.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import load_average

try:
    import resource  # the CPU time and peak memory of the example's processes (not on Windows)
except ImportError:
    resource = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guides" / "training-sb3.md"


def example() -> tuple[str, int]:
    """The page's SubprocVecEnv example and the total_timesteps it trains for."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    code = next(b for b in blocks if "SubprocVecEnv([make, make])" in b)
    steps = re.search(r"total_timesteps=([\d_]+)", code)
    assert steps, "the example has no total_timesteps"
    return code, int(steps.group(1).replace("_", ""))


def children_usage() -> tuple[float, float]:
    """CPU seconds and peak memory (MB, of the largest process) of the finished child processes; NaN on
    Windows, which has no ``resource`` module."""
    if resource is None:
        return float("nan"), float("nan")
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("--timesteps", type=int, help="train this many steps, not the page's (a quick check of the bench)")
    args = ap.parse_args(argv)
    code, steps = example()
    if args.timesteps is not None:
        code, steps = re.sub(r"total_timesteps=[\d_]+", f"total_timesteps={args.timesteps}", code), args.timesteps
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "example.py"
        script.write_text(code)
        load = load_average()[0]
        cpu_before, _ = children_usage()
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(script)], cwd=tmp, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        cpu_after, peak_mb = children_usage()
    cpu = cpu_after - cpu_before
    figures = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": os.cpu_count(),
        "load_average_before": round(load, 1),
        "total_timesteps": steps,
        "wall_s": round(wall, 1),
        "cpu_s": None if cpu != cpu else round(cpu, 1),  # None: unknown (Windows)
        "transitions_per_s": round(steps / wall),
        "peak_rss_mb_largest_process": None if peak_mb != peak_mb else round(peak_mb),
    }
    print(f"{steps:,} transitions: {wall:.0f} s wall, {cpu:.0f} s CPU (script and workers), "
          f"load average {load:.1f} on {os.cpu_count()} cores before it")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
