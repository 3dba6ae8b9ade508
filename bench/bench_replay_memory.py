"""Memory of loading a crafted replay: a header that raises ``max_ticks`` (lifting the tick-count bound), then
the shortest valid tick lines up to the reader's 128 MiB text bound, gzipped (a few hundred KB).

``load_replay`` kept each tick line parsed (a dict with its lists: about ten times its text); it now keeps the
text (``nertz_env.replay.TickLines``). For each checkout (this one, and ``--checkout OTHER``, e.g. a worktree
of an older commit) a fresh process imports the checkout's ``nertz_env.replay``, notes its peak resident memory
(``ru_maxrss``), loads the file and notes it again; the table gives both, what the load added, and that as a
multiple of the file's decompressed text. Checkouts alternate within each repeat; medians over the repeats.

Run: ``python bench/bench_replay_memory.py [--lines 4000000] [--checkout OTHER] [--repeats 1]``. Prints a
Markdown table and writes ``bench/results/bench_replay_memory.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import commit_of, load_average, print_table  # noqa: E402

CHILD = r"""
import json, resource, sys, time
kb = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import nertz_env.replay as r
base = kb()
t0 = time.perf_counter()
rep = r.load_replay(sys.argv[1])
took = time.perf_counter() - t0
print(json.dumps({"base_kb": base, "peak_kb": kb(), "load_s": took, "ticks": len(rep.ticks),
                  "kept_as": type(rep.ticks).__name__, "package": r.__file__}))
"""


def make_file(path: Path, lines: int) -> int:
    """The crafted replay; returns its decompressed size in bytes."""
    sys.path.insert(0, str(ROOT))
    from nertz_env.environment import parallel_env
    from nertz_env.replay import RecordReplay

    with tempfile.TemporaryDirectory() as tmp:
        head_file = Path(tmp) / "head.jsonl"
        env = RecordReplay(parallel_env(num_players=2, max_ticks=2**31 - 1), head_file)
        env.reset(seed=1)
        env.close()
        head = head_file.read_text().splitlines()[0] + "\n"
    line = json.dumps({"t": 1, "a": [0, 0], "h": "00000000"}, separators=(",", ":")) + "\n"
    block = (line * 10_000).encode()
    with gzip.open(path, "wb", compresslevel=6) as f:
        f.write(head.encode())
        for _ in range(lines // 10_000):
            f.write(block)
        f.write((line * (lines % 10_000)).encode())
    return len(head) + len(line) * lines


def measure(checkout: Path, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True,
                         cwd=path.parent)  # not a checkout's folder: python -c imports from its folder first
    if out.returncode != 0:
        raise SystemExit(f"bench_replay_memory: the load failed in {checkout}:\n{out.stderr[-2000:]}")
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(rec["package"]).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"bench_replay_memory: {checkout} ran the package at {rec['package']}")
    return rec


def describe(checkout: Path) -> str:
    """The checkout's path and commit (``+`` when its files differ from it)."""
    commit = commit_of(checkout)
    return f"{checkout} ({commit})" if commit else str(checkout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_replay_memory.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=4_000_000, help="tick lines in the file (default 4,000,000: "
                    "just under the 128 MiB bound)")
    ap.add_argument("--checkout", action="append", default=[], metavar="OTHER", help="another checkout to "
                    "measure side by side (repeatable)")
    ap.add_argument("--repeats", type=int, default=1, help="measurements per checkout (default 1)")
    args = ap.parse_args(argv)
    if args.lines < 1 or args.repeats < 1:
        ap.error("--lines and --repeats must be at least 1")
    checkouts = [ROOT] + [Path(c).resolve() for c in args.checkout]
    for c in checkouts:
        if not (c / "nertz_env" / "__init__.py").is_file():
            ap.error(f"--checkout {c}: not a nertz-env checkout (no nertz_env/__init__.py)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "crafted.jsonl.gz"
        text = make_file(path, args.lines)
        gz = path.stat().st_size
        runs: dict[str, list[dict]] = {str(c): [] for c in checkouts}
        for r in range(args.repeats):
            for c in checkouts:
                rec = measure(c, path)
                runs[str(c)].append(rec)
                print(f"  repeat {r + 1} {c}: peak {rec['peak_kb'] / 1024:.0f} MB, load {rec['load_s']:.1f} s",
                      file=sys.stderr)
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = load_average()[0]
    cmd = "python bench/bench_replay_memory.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rows = []
    for c, recs in runs.items():
        base = statistics.median(r["base_kb"] for r in recs) / 1024
        peak = statistics.median(r["peak_kb"] for r in recs) / 1024
        secs = statistics.median(r["load_s"] for r in recs)
        added = peak - base
        rows.append([describe(Path(c)), recs[0]["kept_as"], f"{base:.0f}", f"{peak:.0f}", f"{added:.0f}",
                     f"{added * 2**20 / text:.2f}", f"{secs:.1f}"])
    print(f"{when}, {os.cpu_count()} CPUs, load average {load:.1f}; `{cmd.strip()}`\n")
    table = print_table(
        f"A {gz / 1024:.0f} KB gzip of {args.lines:,} tick lines, {text / 2**20:.1f} MiB of text: peak resident "
        f"memory (ru_maxrss), median of {args.repeats}",
        ["checkout", "ticks kept as", "after imports, MB", "after the load, MB", "the load added, MB", "× the text",
         "load, s"],
        rows,
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_replay_memory.md").write_text(
        f"{when}, {os.cpu_count()} CPUs, load average {load:.1f}; `{cmd.strip()}`\n\n{table}\n")
    (RESULTS / "bench_replay_memory.json").write_text(json.dumps(
        {"when": when, "command": cmd.strip(), "lines": args.lines, "text_bytes": text, "gzip_bytes": gz,
         "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
