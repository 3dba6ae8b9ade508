"""One PPO iteration of the same size with Ray RLlib (1 and 2 env runners, both ways of batching tables) and
with the SB3 backend: agent-steps/s sampled and trained, and the share of sampling time spent in the env.

Run (needs the rllib extra, so its own venv: ray pins gymnasium 1.2.2)::

    python bench/bench_rllib.py [--players 4 --tables 16 --n-steps 64 --iterations 3]

An iteration samples ``n_steps * tables * players`` agent steps (self-play: every seat learns) and trains
``epochs`` passes of minibatches of ``minibatch`` on them, with a 256x256 MLP for policy and value in both
libraries. Each configuration runs one warm-up iteration (numba compilation, Ray start-up), then
``--iterations`` measured ones. Rates count the agent steps each iteration really sampled (RLlib's batch is
counted in env steps, and a table whose deal ended drops out of an engine-batched env until every table's deal
has ended, so an iteration holds fewer transitions late in an episode); the best iteration is shown (the
machine is shared: the fastest is the least disturbed), and the mean of sampling. Columns:

* sampled/s: agent steps sampled per second of sampling (RLlib: its sampling timer, the parallel sample call
  in the driver; SB3: the rollout's wall time);
* trained/s: agent steps of the batch per second of the update (RLlib: its timer of ``learner_group.update``);
* iteration/s: agent steps per second of a whole iteration (sampling + update + weight sync);
* env share: the share of the sampling processes' time spent inside the env's ``step`` (engine and its
  bookkeeping); the rest is the policy's forward pass and the library's own per-step work.

Rows: ``sb3``: MaskablePPO over ``NertzVecEnv`` (one process); ``rllib single N``: N env runners of RLlib's
single-agent route (``ppo_config(single_agent=True)``: every seat of ``tables`` tables a sub-environment of
one Gymnasium vector env, stepped in one compiled call); ``rllib engine N``: N env runners, each one env
of ``tables`` tables stepped in one compiled call (``num_tables``); ``rllib vector N``: N env runners, each
``tables`` one-table envs that RLlib vectorizes itself (``num_envs_per_env_runner``), stepped one by one.
Prints a Markdown table and writes ``bench/results/bench_rllib.json`` and ``bench/results/bench_rllib.md``.
The machine is shared: compare rows of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import load_average, print_table

RESULTS = Path(__file__).resolve().parent / "results"
HIDDEN = (256, 256)


def bench_sb3(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from nertz_env.train.vec import NertzVecEnv
    from nertz_env.train.wrappers import VecTimer

    torch.set_num_threads(1)
    venv = VecTimer(NertzVecEnv(args.tables, num_players=args.players, seed=0))
    marks: list[tuple[str, float, float]] = []

    class Clock(BaseCallback):
        def _on_rollout_start(self) -> None:
            marks.append(("start", time.perf_counter(), venv.seconds))

        def _on_rollout_end(self) -> None:
            marks.append(("end", time.perf_counter(), venv.seconds))

        def _on_step(self) -> bool:
            return True

    model = MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=args.n_steps,
        batch_size=args.minibatch,
        n_epochs=args.epochs,
        policy_kwargs={"net_arch": {"pi": list(HIDDEN), "vf": list(HIDDEN)}},
        device="cpu",
        seed=0,
    )
    batch = args.n_steps * args.tables * args.players
    model.learn(total_timesteps=batch * (args.iterations + 2), callback=Clock())
    starts = [m for m in marks if m[0] == "start"]
    ends = [m for m in marks if m[0] == "end"]
    sample, train, env_share = [], [], []
    for i in range(1, args.iterations + 1):  # rollout 0 is the warm-up; rollout i's update ends at start i+1
        s, e, nxt = starts[i], ends[i], starts[i + 1]
        sample.append(e[1] - s[1])
        train.append(nxt[1] - e[1])
        env_share.append((e[2] - s[2]) / (e[1] - s[1]))
    whole = [a + b for a, b in zip(sample, train, strict=True)]
    return _row("sb3", 1, [batch] * len(sample), sample, train, whole, env_share)


def bench_rllib(args: argparse.Namespace, runners: int, vectorize: str) -> dict[str, Any]:
    import numpy as np
    import ray
    from ray.rllib.utils.metrics import ENV_RUNNER_SAMPLING_TIMER, LEARNER_UPDATE_TIMER, TIMERS
    from ray.rllib.utils.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP
    from ray.rllib.utils.metrics.stats.ema import EmaStats

    from nertz_env.rllib import ppo_config

    class LatestValue(EmaStats):
        """RLlib's moving average with coefficient 1: its timers report this iteration's time, not an average
        that still carries the warm-up (set through ``config.reporting(custom_stats_cls_lookup=...)``)."""

        def __init__(self, ema_coeff: float = 1.0, **kwargs: Any) -> None:
            super().__init__(ema_coeff=1.0, **kwargs)

    env_config: dict[str, Any] = {"num_players": args.players}
    envs = 1
    single = vectorize == "single"
    if vectorize in ("engine", "single"):
        env_config["num_tables"] = args.tables
    else:
        envs = args.tables
    env_steps = args.n_steps * envs * runners  # RLlib's batch unit: steps of one env (all its tables)
    if single:  # the single-agent route counts a step of every seat: agent steps
        env_steps = args.n_steps * args.tables * args.players * runners
    ray.init(  # "local": a Ray of its own, not a cluster that `ray start` left running on this machine
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}},
    )
    try:
        algo = (
            ppo_config(
                env_config,
                num_env_runners=runners,
                num_envs_per_env_runner=envs,
                train_batch_size=env_steps,
                minibatch_size=args.minibatch,
                num_epochs=args.epochs,
                hidden=HIDDEN,
                single_agent=single,
                fast_sampling=single,  # as nertz-train samples
            )
            .reporting(custom_stats_cls_lookup={**DEFAULT_STATS_CLS_LOOKUP, "ema": LatestValue})
            .build_algo()
        )

        def env_seconds() -> float:
            if single:
                per_runner = algo.env_runner_group.foreach_env_runner(
                    lambda r: r.env.unwrapped.step_seconds, local_env_runner=False
                )
            else:
                per_runner = algo.env_runner_group.foreach_env_runner(
                    lambda r: sum(e.unwrapped.step_seconds for e in r.env.envs), local_env_runner=False
                )
            return float(sum(per_runner))

        algo.train()  # warm-up
        sample, train, whole, share, counts = [], [], [], [], []
        for _ in range(args.iterations):
            e0 = env_seconds()
            t0 = time.perf_counter()
            result = algo.train()
            whole.append(time.perf_counter() - t0)
            sample.append(result[TIMERS][ENV_RUNNER_SAMPLING_TIMER])
            train.append(result[TIMERS][LEARNER_UPDATE_TIMER])
            share.append((env_seconds() - e0) / (sample[-1] * runners))
            # per-agent counters of agents whose table finished in an earlier chunk are NaN in RLlib 2.60
            sampled = result["env_runners"]["num_agent_steps_sampled"]
            if isinstance(sampled, dict):
                counts.append(int(np.nansum([float(v) for v in sampled.values()])))
            else:  # single-agent: one number
                counts.append(int(sampled))
        algo.stop()
    finally:
        ray.shutdown()
    label = f"rllib {vectorize} {runners}"
    return _row(label, runners, counts, sample, train, whole, share)


def bench_interleaved(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Sampling only, in one process, the backends taking turns: an SB3 rollout (``collect_rollouts``), then
    RLlib's single-agent env runner, then its multi-agent one (both local: ``num_env_runners=0``), each
    sampling ``n_steps`` ticks of ``tables`` tables, ``--rounds`` times. On a shared machine the load changes
    from minute to minute; taking turns every few seconds gives each backend the same share of it, so the
    ratio of their rates holds where separate runs' rates do not."""
    import numpy as np
    import ray
    import torch
    from sb3_contrib import MaskablePPO

    from nertz_env.rllib import ppo_config
    from nertz_env.train.vec import NertzVecEnv

    torch.set_num_threads(1)
    venv = NertzVecEnv(args.tables, num_players=args.players, seed=0)
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.minibatch, n_epochs=args.epochs,
        policy_kwargs={"net_arch": {"pi": list(HIDDEN), "vf": list(HIDDEN)}}, device="cpu", seed=0,
    )
    _, callback = model._setup_learn(10**9, callback=None)
    callback.on_training_start(locals(), globals())
    batch = args.n_steps * args.tables * args.players

    def sb3() -> int:
        model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=args.n_steps)
        return batch

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    single = ppo_config(
        {"num_players": args.players, "num_tables": args.tables}, single_agent=True, fast_sampling=True,
        train_batch_size=batch, minibatch_size=args.minibatch, hidden=HIDDEN,
    ).build_algo()
    multi = ppo_config(
        {"num_players": args.players, "num_tables": args.tables}, train_batch_size=args.n_steps,
        minibatch_size=args.minibatch, hidden=HIDDEN,
    ).build_algo()

    def rllib_single() -> int:
        episodes = single.env_runner.sample(num_timesteps=batch, random_actions=False)
        return int(sum(len(e) for e in episodes))

    def rllib_multi() -> int:
        episodes = multi.env_runner.sample(num_timesteps=args.n_steps, random_actions=False)
        return int(sum(e.agent_steps() for e in episodes))

    runs = {"sb3": sb3, "rllib single-agent route": rllib_single, "rllib multi-agent env": rllib_multi}
    rates: dict[str, list[float]] = {k: [] for k in runs}
    try:
        for fn in runs.values():  # warm-up: compilation, first forward passes
            fn()
        for r in range(args.rounds):
            for k, fn in runs.items():
                t = time.perf_counter()
                n = fn()
                rates[k].append(n / (time.perf_counter() - t))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rates.items()), file=sys.stderr)
    finally:
        single.stop()
        multi.stop()
        ray.shutdown()
    sb3_rates = np.array(rates["sb3"])
    return [
        {
            "backend": k,
            "sampled_per_s_median": float(np.median(v)),
            "sampled_per_s_best": float(np.max(v)),
            "ratio_to_sb3_median": float(np.median(sb3_rates / np.array(v))),
            "rates": v,
        }
        for k, v in rates.items()
    ]


def league_env_cost(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Env ``step`` time per tick of one env of ``tables`` tables with RLlib playing every seat (self-play) or
    seat 0 only, seats 1.. played by a scripted agent inside the env; random legal actions for RLlib's seats."""
    import numpy as np

    from nertz_env.rllib import NertzRLlibEnv

    rows = []
    for spec, ticks in ((None, 300), ("heuristic", 300), ("search", 40)):
        cfg: dict[str, Any] = {"num_players": args.players, "num_tables": args.tables}
        if spec:
            cfg.update(learners_per_table=1, opponents={spec: 1.0})
        env = NertzRLlibEnv(cfg)
        obs, _ = env.reset(seed=0)
        rng = np.random.default_rng(0)
        for phase in ("warm-up", "measure"):
            env.step_seconds, seats, live, n = 0.0, 0, 0, 0
            while n < (20 if phase == "warm-up" else ticks):
                if not env.agents:
                    obs, _ = env.reset()
                live += int(env._live_tables.sum())
                acts = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
                obs, *_ = env.step(acts)
                seats += len(acts)
                n += 1
        # self-play's time per live table (engine and RLlib's seats) stands for the rest of a league tick
        base = rows[0]["ms_per_tick"] / rows[0]["live_tables_per_tick"] if rows else None
        ms = env.step_seconds / n * 1e3
        scripted = (args.players - 1) * live / n if spec else 0.0
        per_decision = (ms - base * live / n) / scripted * 1e3 if spec and base is not None else None
        rows.append(
            {
                "opponents": spec or "self-play",
                "ms_per_tick": ms,
                "rllib_seats_per_tick": seats / n,
                "live_tables_per_tick": live / n,
                "us_per_scripted_decision": per_decision,
            }
        )
    return rows


def _row(label: str, runners: int, counts: list, sample: list, train: list, whole: list, share: list) -> dict:
    """Per-iteration rates (the agent steps each iteration really sampled, over its phase's time): the best
    iteration (the least disturbed by other work on this shared machine) and the mean."""

    def rates(times: list) -> list:
        return [n / t for n, t in zip(counts, times, strict=True)]

    m = statistics.fmean
    return {
        "backend": label,
        "sampling_processes": runners,
        "agent_steps_per_iteration": counts,
        "sampled_per_s": max(rates(sample)),
        "trained_per_s": max(rates(train)),
        "iteration_per_s": max(rates(whole)),
        "mean_sampled_per_s": m(rates(sample)),
        "mean_trained_per_s": m(rates(train)),
        "mean_iteration_per_s": m(rates(whole)),
        "env_share": m(share),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--tables", type=int, default=16, help="tables per sampling process")
    parser.add_argument("--n-steps", type=int, default=64, help="ticks per table per iteration")
    parser.add_argument("--minibatch", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=5, help="measured iterations (after one warm-up)")
    parser.add_argument(
        "--only",
        default="sb3,single1,single2,engine1,engine2,vector1,vector2",
        help="rows to run (comma-separated)",
    )
    parser.add_argument(
        "--league-cost",
        action="store_true",
        help="instead: the env's step time with scripted opponents inside it (no Ray, one process)",
    )
    parser.add_argument(
        "--interleaved",
        action="store_true",
        help="instead: sampling only, SB3 and RLlib's two routes taking turns in one process (--rounds)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --interleaved")
    args = parser.parse_args()
    if args.interleaved:
        from nertz_env.threads import limit_threads

        limit_threads(1)
        rows = bench_interleaved(args)
        text = print_table(
            f"Sampling side by side, taking turns in one process ({args.rounds} rounds): {args.players} players "
            f"self-play, {args.tables} tables x {args.n_steps} ticks, MLP {HIDDEN}, one CPU",
            ["sampler", "agent steps/s (median)", "agent steps/s (best)", "SB3 / this (median of rounds)"],
            [
                [r["backend"], f"{r['sampled_per_s_median']:,.0f}", f"{r['sampled_per_s_best']:,.0f}",
                 f"{r['ratio_to_sb3_median']:.2f}x"]
                for r in rows
            ],
        )
        RESULTS.mkdir(exist_ok=True)
        cmd = "python bench/bench_rllib.py " + " ".join(sys.argv[1:])
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        load = load_average()[0]
        stem = f"bench_rllib_interleaved_{args.tables}"
        (RESULTS / f"{stem}.json").write_text(
            json.dumps({"command": cmd, "when": when, "load_1min": load, "rows": rows}, indent=2) + "\n"
        )
        (RESULTS / f"{stem}.md").write_text(text + f"\n\n{cmd} ({when}, load average {load:.1f})\n")
        return
    if args.league_cost:
        from nertz_env.threads import limit_threads

        limit_threads(1)
        rows = league_env_cost(args)
        text = print_table(
            f"Env step per tick, one env of {args.tables} tables of {args.players} (seats 1.. scripted inside the env)",
            ["seats 1..", "env step ms/tick", "seats RLlib sees/tick", "live tables/tick", "us per scripted decision"],
            [
                [
                    r["opponents"],
                    f"{r['ms_per_tick']:.2f}",
                    f"{r['rllib_seats_per_tick']:.1f}",
                    f"{r['live_tables_per_tick']:.1f}",
                    "-" if r["us_per_scripted_decision"] is None else f"{r['us_per_scripted_decision']:,.0f}",
                ]
                for r in rows
            ],
        )
        RESULTS.mkdir(exist_ok=True)
        cmd = "python bench/bench_rllib.py " + " ".join(sys.argv[1:])
        (RESULTS / "bench_rllib_league.json").write_text(json.dumps({"command": cmd, "rows": rows}, indent=2) + "\n")
        (RESULTS / "bench_rllib_league.md").write_text(text + f"\n\n{cmd} ({time.strftime('%Y-%m-%d %H:%M:%S')})\n")
        return
    from nertz_env.threads import limit_threads

    limit_threads(1)
    rows = []
    plan = {
        "sb3": lambda: bench_sb3(args),
        "engine1": lambda: bench_rllib(args, 1, "engine"),
        "engine2": lambda: bench_rllib(args, 2, "engine"),
        "vector1": lambda: bench_rllib(args, 1, "vector"),
        "vector2": lambda: bench_rllib(args, 2, "vector"),
        "single1": lambda: bench_rllib(args, 1, "single"),
        "single2": lambda: bench_rllib(args, 2, "single"),
    }
    for key in args.only.split(","):
        print(f"running {key} ...", file=sys.stderr, flush=True)
        rows.append(plan[key.strip()]())
    title = (
        f"One PPO iteration: {args.players} players self-play, {args.tables} tables x {args.n_steps} ticks per "
        f"sampling process, {args.epochs} epochs of {args.minibatch}, MLP {HIDDEN}"
    )
    header = [
        "backend", "sampling procs", "agent steps/iter (mean)", "sampled/s", "trained/s", "iteration/s",
        "sampled/s (mean)", "env share",
    ]
    table = [
        [
            r["backend"],
            r["sampling_processes"],
            f"{statistics.fmean(r['agent_steps_per_iteration']):,.0f}",
            f"{r['sampled_per_s']:,.0f}",
            f"{r['trained_per_s']:,.0f}",
            f"{r['iteration_per_s']:,.0f}",
            f"{r['mean_sampled_per_s']:,.0f}",
            f"{r['env_share']:.0%}",
        ]
        for r in rows
    ]
    text = print_table(title, header, table)
    RESULTS.mkdir(exist_ok=True)
    import ray

    payload = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "ray": ray.__version__},
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": "python bench/bench_rllib.py " + " ".join(sys.argv[1:]),
        "args": vars(args),
        "rows": rows,
    }
    stem = "bench_rllib" if args.only == parser.get_default("only") else "bench_rllib_" + args.only.replace(",", "_")
    (RESULTS / f"{stem}.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(text + f"\n\n{payload['command']} ({payload['when']}, {os.cpu_count()} CPUs)\n")
    print(f"saved {RESULTS / stem}.json and .md", file=sys.stderr)


if __name__ == "__main__":
    main()
