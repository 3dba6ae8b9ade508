"""Batched throughput: many tables stepped in one call, random masked actions drawn inside the loop
(compiled sampler over the int8 masks), observations and masks produced every step; and, in the same run,
pgx's leduc_holdem batched with jax.vmap at 1,024 games when pgx is installed.

Run: ``python bench/bench_vector.py [--seconds 3]``. Prints the scaling table, writes
``bench/out/bench_vector.json`` and ``bench/out/vector_scaling.png``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import OUT, fmt, print_table, save, timed_loop

SIZES = (1, 4, 16, 64, 256, 1024, 4096)


def nertz_batch(tables: int, seconds: float, seed: int, copy: bool = False, num_players: int = 4) -> dict:
    import nertz_env

    venv = nertz_env.vector_env(tables, num_players=num_players, copy=copy)
    venv.reset(seed=seed)

    def step() -> int:
        venv.step(venv.sample_actions())
        return tables * num_players

    n, dt = timed_loop(step, seconds, warmup=20)
    return {
        "tables": tables,
        "copy": copy,
        "agent_steps": n,
        "seconds": dt,
        "steps_per_s": n / dt,
        "bytes_per_table": venv.bytes_per_table(),
    }


def plot(rows: list[dict], pgx: dict | None, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r["tables"] for r in rows], [r["steps_per_s"] for r in rows], "o-", label="nertz vector_env (4 players)")
    if pgx:
        ax.plot([1024], [pgx["steps_per_s"]], "s", label="pgx leduc_holdem (jax.vmap)")
    ax.axhline(3_000_000, color="grey", ls="--", lw=1, label="target 3M")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tables per call")
    ax.set_ylabel("agent-steps / s")
    ax.set_title("Batched random masked play, one process, 2 cores")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = ap.parse_args(argv)
    import competitors

    rows = []
    for t in args.sizes:
        rows.append(nertz_batch(t, args.seconds, args.seed))
        print(f"  {t} tables: {fmt(rows[-1]['steps_per_s'])} agent-steps/s", flush=True)
    copied = nertz_batch(1024, args.seconds, args.seed, copy=True) if 1024 in args.sizes else None
    try:
        pgx = competitors.pgx_leduc_1024(args.seconds, args.seed)
        pgx_note = "" if pgx else "pgx not installed"
    except ImportError as e:
        pgx, pgx_note = None, str(e)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    table_rows = [[r["tables"], fmt(r["steps_per_s"])] for r in rows]
    if copied:
        table_rows.append(["1024 (copy=True)", fmt(copied["steps_per_s"])])
    if pgx:
        table_rows.append(["pgx leduc_holdem, 1024 (jax.vmap)", fmt(pgx["steps_per_s"])])
    table = print_table("Batched random masked play, 4 players (agent-steps/s, same run)", ["tables", "agent-steps/s"], table_rows)
    at1024 = next((r for r in rows if r["tables"] == 1024), None)
    if at1024 and pgx:
        print(f"at 1,024 tables nertz is {at1024['steps_per_s'] / pgx['steps_per_s']:.2f}x pgx leduc_holdem")
    print(f"engine memory per table (state, observations, masks): {rows[0]['bytes_per_table']:,} bytes")
    print(f"peak resident memory of this benchmark process: {peak_rss / 2**20:,.0f} MiB\n")
    png = str(OUT / "vector_scaling.png")
    OUT.mkdir(exist_ok=True)
    drawn = plot(rows, pgx, png)
    payload = {
        "rows": rows,
        "copy_true_1024": copied,
        "pgx_leduc_1024": pgx,
        "pgx_note": pgx_note,
        "peak_rss_bytes": peak_rss,
        "plot": png if drawn else None,
        "table": table,
        "time": time.time(),
    }
    save("bench_vector", payload)
    return payload


if __name__ == "__main__":
    main()
