"""Compile time: the first step of a 4-player ``parallel_env`` on a cold numba cache and on a warm one, and the
first decision of the compiled agents; optionally several checkouts side by side (old code against new).

Run: ``python bench/bench_compile.py [--checkout /path/to/other/checkout] [--repeats 3] [--breakdown]``.
Every measurement runs in a fresh process with ``NUMBA_CACHE_DIR`` set to a new temporary directory ("cold":
nothing cached; "warm": the same directory again, so everything loads from the cache) and imports the package of
its checkout (``PYTHONPATH``). Checkouts alternate within each repeat, so old and new code share the machine's
load; the table gives medians over the repeats of wall time and of the process's CPU time (the CPU time is
what the compile costs; the wall time is what a user waits, which is more on a busy machine).

Results are keyed by each checkout's commit (``2464fae+`` when its tracked files differ from that commit), this
checkout's first; compare another commit through a worktree (``git worktree add ../old COMMIT``).

``--throughput S`` also measures, with the warm caches, the agent-steps/s of ``bench/bench_env.py``'s
``parallel_env`` loop and of ``bench/bench_vector.py``'s batched loop, checkouts alternating, S seconds each.
``--breakdown`` prints where the cold compile of the first checkout goes, per compiled function (exclusive
CPU time of each numba compile, from numba's event API). Writes ``bench/results/bench_compile.json`` and
``bench/results/bench_compile.md`` (the printed tables; ``--name`` changes the file names).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import commit_of, load_average

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"

# Runs in the child, in the checkout's own package. Prints one JSON line.
CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
w0, c0 = time.perf_counter(), time.process_time()
out = {}
records = []
if args.get("breakdown"):
    from numba.core import event as ev

    class Timer(ev.Listener):
        def __init__(self):
            self.stack = []

        def on_start(self, event):
            self.stack.append([time.process_time(), 0.0])

        def on_end(self, event):
            start, children = self.stack.pop()
            total = time.process_time() - start
            if self.stack:
                self.stack[-1][1] += total
            data = event.data or {}
            disp = data.get("dispatcher")
            name = getattr(getattr(disp, "py_func", None), "__qualname__", str(disp))
            module = getattr(getattr(disp, "py_func", None), "__module__", "?")
            sig = ", ".join(str(a)[:40] for a in (data.get("args") or ()))
            records.append([module.rsplit(".", 1)[-1] + "." + name, sig, total - children, total])

    ev.register("numba:compile", Timer())
import numpy as np
import nertz_env
out["import_s"] = time.perf_counter() - w0
env = nertz_env.parallel_env(num_players=4)
obs, _ = env.reset(seed=0)
obs, *_ = env.step({a: 0 for a in env.agents})
out["first_step_s"] = time.perf_counter() - w0
out["first_step_cpu_s"] = time.process_time() - c0
if args.get("agents"):
    from nertz_env.agents import make_agent

    for name in ("heuristic", "search"):
        w1, c1 = time.perf_counter(), time.process_time()
        agent = make_agent(name)
        agent.reset(env.config, 0, seed=0)
        agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
        out[name + "_s"] = time.perf_counter() - w1
        out[name + "_cpu_s"] = time.process_time() - c1
if args.get("throughput"):
    sys.path.insert(0, args["bench"])
    from common import MaskedSampler, timed_loop

    seconds = args["throughput"]
    sample = MaskedSampler(0)
    env = nertz_env.parallel_env(num_players=4)
    state = {"obs": env.reset(seed=0)[0]}

    def step():
        o, *_ = env.step({a: sample(x["action_mask"]) for a, x in state["obs"].items()})
        if not env.agents:
            o, _ = env.reset()
        state["obs"] = o
        return 4

    n, dt = timed_loop(step, seconds)
    out["parallel_env_steps_per_s"] = n / dt
    for tables in args.get("tables", []):
        venv = nertz_env.vector_env(tables, num_players=4)
        venv.reset(seed=0)

        def vstep(venv=venv, tables=tables):
            venv.step(venv.sample_actions())
            return tables * 4

        n, dt = timed_loop(vstep, seconds, warmup=20)
        out[f"vector_env_{tables}_steps_per_s"] = n / dt
out["compiles"] = records
print("RESULT " + json.dumps(out))
"""


def run_child(checkout: Path, cache: str, **args: object) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(checkout)}
    env.pop("NUMBA_DISABLE_JIT", None)
    args = {**args, "bench": str(HERE)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)], cwd=checkout, env=env, capture_output=True, text=True
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"measurement in {checkout} failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def med(values: list[float]) -> str:
    if not values:
        return "-"
    m = statistics.median(values)
    return f"{m:.1f} ({min(values):.1f}-{max(values):.1f})" if len(values) > 1 else f"{m:.1f}"


def table(title: str, header: list[str], rows: list[list[str]]) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", action="append", default=[], help="another checkout to compare (repeatable)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--agents", action="store_true", help="also time the first heuristic and search decision")
    ap.add_argument("--breakdown", action="store_true", help="per-function compile times of the first checkout")
    ap.add_argument("--throughput", type=float, default=0.0, metavar="S", help="steps/s, S seconds per loop")
    ap.add_argument("--tables", type=int, nargs="*", default=[64, 1024], help="vector_env sizes for --throughput")
    ap.add_argument("--throughput-only", action="store_true", help="skip the first-step table (one untimed run fills each cache)")
    ap.add_argument("--name", default="bench_compile", help="results file stem under bench/results/")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        print("bench_compile: --repeats must be at least 1", file=sys.stderr)
        return 2
    if args.throughput_only and args.throughput <= 0:
        print("bench_compile: --throughput-only needs --throughput S", file=sys.stderr)
        return 2
    if not args.name or "/" in args.name or args.name.startswith("."):
        print(f"bench_compile: --name must be a plain file stem, got {args.name!r}", file=sys.stderr)
        return 2
    checkouts = [ROOT] + [Path(c).resolve() for c in args.checkout]
    for c in checkouts:
        if not (c / "nertz_env" / "__init__.py").is_file():
            print(f"bench_compile: {c} is not a nertz-env checkout (no nertz_env/__init__.py)", file=sys.stderr)
            return 2
    commits = [commit_of(c) for c in checkouts]
    names = [n for n in commits if n]
    # saved results are keyed by commit: two checkouts of one commit may only be compared unsaved
    if len(names) < len(checkouts) or (len(set(names)) < len(names) and not args.no_save):
        print(f"bench_compile: each checkout must be a git checkout of its own commit, got {commits}", file=sys.stderr)
        return 2
    name_of = dict(zip(checkouts, names, strict=True))
    runs: dict[str, dict[str, list[dict]]] = {n: {"cold": [], "warm": [], "throughput": []} for n in names}
    caches: dict[str, str] = {}
    breakdown: list = []
    with tempfile.TemporaryDirectory(prefix="bench_compile_") as tmp:
        if args.throughput_only:
            for c in checkouts:
                caches[str(c)] = tempfile.mkdtemp(dir=tmp)
                run_child(c, caches[str(c)])
        for r in range(0 if args.throughput_only else args.repeats):
            order = checkouts if r % 2 == 0 else checkouts[::-1]
            for c in order:
                cache = tempfile.mkdtemp(dir=tmp)
                want_breakdown = args.breakdown and r == 0 and c == checkouts[0]
                cold = run_child(c, cache, agents=args.agents, breakdown=want_breakdown)
                warm = run_child(c, cache, agents=args.agents)
                if want_breakdown:
                    breakdown = cold["compiles"]
                runs[name_of[c]]["cold"].append(cold)
                runs[name_of[c]]["warm"].append(warm)
                caches[str(c)] = cache
                print(
                    f"  repeat {r + 1} {name_of[c]}: cold {cold['first_step_s']:.1f} s (cpu {cold['first_step_cpu_s']:.1f}), "
                    f"warm {warm['first_step_s']:.2f} s",
                    flush=True,
                )
        if args.throughput > 0:
            for r in range(args.repeats):
                order = checkouts if r % 2 == 0 else checkouts[::-1]
                for c in order:
                    res = run_child(c, caches[str(c)], throughput=args.throughput, tables=args.tables)
                    runs[name_of[c]]["throughput"].append(res)
    texts = []
    rows = []
    for n in [] if args.throughput_only else names:
        cold_runs, warm_runs = runs[n]["cold"], runs[n]["warm"]
        row = [
            n,
            med([x["first_step_s"] for x in cold_runs]),
            med([x["first_step_cpu_s"] for x in cold_runs]),
            med([x["first_step_s"] for x in warm_runs]),
        ]
        if args.agents:
            for a in ("heuristic", "search"):
                row.append(med([x[a + "_s"] for x in cold_runs]) + " / " + med([x[a + "_s"] for x in warm_runs]))
        rows.append(row)
    header = ["commit", "cold first step, s (wall)", "cold, s (CPU)", "warm first step, s"]
    if args.agents:
        header += ["first heuristic decision, s (cold / warm)", "first search decision, s (cold / warm)"]
    texts.append(
        "" if args.throughput_only else table(
            f"First step of parallel_env(num_players=4): import + construct + reset + step, median (min-max) "
            f"of {args.repeats}",
            header,
            rows,
        )
    )
    if args.throughput > 0:
        keys = ["parallel_env_steps_per_s"] + [f"vector_env_{t}_steps_per_s" for t in args.tables]
        trows = []
        base = {k: statistics.median([x[k] for x in runs[names[-1]]["throughput"]]) for k in keys}
        for n in names:
            row = [n]
            for k in keys:
                m = statistics.median([x[k] for x in runs[n]["throughput"]])
                row.append(f"{m:,.0f}" + (f" ({m / base[k] - 1:+.1%})" if len(names) > 1 else ""))
            trows.append(row)
        texts.append(
            table(
                f"Agent-steps/s with warm caches, median of {args.repeats}"
                + (f" (in brackets: against {names[-1]})" if len(names) > 1 else ""),
                ["commit", "parallel_env (4 players)"] + [f"vector_env ({t} tables)" for t in args.tables],
                trows,
            )
        )
    if breakdown:
        total = sum(x[2] for x in breakdown)
        top = sorted(breakdown, key=lambda x: -x[2])
        # as code: a type such as Literal[int](0) reads as a Markdown link otherwise (the docs site includes this)
        brows = [[f"{x[2]:.2f}", f"{x[3]:.2f}", x[0], f"`{x[1][:90]}`"] for x in top[:40]]
        texts.append(
            table(
                f"Cold compile of {names[0]} per numba compile (CPU s; {len(breakdown)} compiles, {total:.1f} s "
                "exclusive in all)",
                ["exclusive", "with callees", "function", "argument types"],
                brows,
            )
        )
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        cmd = "python bench/bench_compile.py " + " ".join(argv if argv is not None else sys.argv[1:])
        header_line = f"{stamp}, {os.cpu_count()} CPUs, load average {load_average()[0]:.1f}; `{cmd}`"
        (RESULTS / f"{args.name}.md").write_text(header_line + "\n\n" + "\n\n".join(texts) + "\n")
        (RESULTS / f"{args.name}.json").write_text(
            json.dumps({"when": stamp, "command": cmd, "runs": runs, "breakdown": breakdown}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
