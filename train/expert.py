"""Expert iteration: train the policy inside the ``expert`` planner on the planner's own choices, and repeat.

See docs/guides/training-sb3.md ("Expert iteration").
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import torch

from nertz_env.agents import make_agent
from nertz_env.agents.meta import make_meta
from nertz_env.agents.policy import save_policy
from nertz_env.agents.registry import _split_params
from nertz_env.config import NertzConfig, make_config
from nertz_env.train.imitate import (
    Demonstrations,
    append_row,
    check_common,
    collect,
    fit,
    load_for_fit,
    network_path,
)
from nertz_env.train.resume import Interrupted, Progress


def _planner_spec(policy_path: str, planner: str) -> str:
    return f"expert:policy={policy_path}" + (f",{planner}" if planner else "")


def check_options(
    init: str, out: str, checkpoint_dir: str, lr: float, planner: str, config: NertzConfig, teacher_threads: int = 1,
    resume: bool = False,
) -> str:
    """Every check before any work: returns the path of the initial network; raises ValueError naming the
    bad option (FileNotFoundError for a missing network)."""
    check_common(config, lr, teacher_threads, out=out, folder=checkpoint_dir)
    if not resume and os.path.exists(os.path.join(checkpoint_dir, "log.jsonl")):  # networks and logs would mix
        raise ValueError(
            f"--checkpoint-dir {checkpoint_dir!r} holds an earlier run (log.jsonl): name a new directory, or "
            f"continue an interrupted one with --resume {checkpoint_dir}"
        )
    path = network_path(init)
    if "policy" in _split_params(planner, "--planner"):
        raise ValueError("--planner sets the planner's search options; the network inside it is --init's, then each iteration's")
    make_agent(_planner_spec(path, planner)).reset(config, 0, 0)  # a bad planner option or table fails here
    return path


def expert_iteration(
    init: str = "ppo_imitation",
    out: str = "runs/expert/best.zip",
    checkpoint_dir: str = "runs/expert/iters",
    iterations: int = 4,
    samples: int = 100_000,
    epochs: int = 2,
    window: int = 3,
    lr: float = 1e-4,
    batch_size: int = 1024,
    planner: str = "",
    num_players: int = 4,
    rules: dict[str, Any] | None = None,
    seed: int = 0,
    teacher_threads: int = 1,
    progress: bool = False,
    log: Any = print,
    resume: bool = False,
) -> dict[str, Any]:
    """Run ``iterations`` rounds of collect-and-fit from the network ``init`` (``planner``: options of the
    planner's spec); returns the run's figures. Ctrl-C saves the last finished step to ``checkpoint_dir`` for
    ``resume``. See docs/guides/training-sb3.md, "Expert iteration"."""
    config = make_config(num_players=num_players, **dict(rules or {}))
    path = check_options(init, out, checkpoint_dir, lr, planner, config, teacher_threads, resume)
    state = Progress("expert", {
        "init": init, "iterations": iterations, "samples": samples, "epochs": epochs, "window": window, "lr": lr,
        "batch_size": batch_size, "planner": planner, "num_players": num_players, "rules": dict(rules or {}),
        "seed": seed,
    })
    if resume:
        state.load(checkpoint_dir, Demonstrations.load)  # ValueError: no interrupted run there, or other options
    os.makedirs(checkpoint_dir, exist_ok=True)
    started = time.perf_counter()
    torch.manual_seed(seed)
    policy, kwargs = load_for_fit(path)
    run = {"init": init, "planner": planner, "samples": samples, "window": window, "epochs": epochs, "seed": seed}
    records, history = state.records, list(state.figures.get("history", []))  # empty in a new run
    current = history[-1]["policy"] if history else path
    if state.step > 0:
        policy.load_state_dict(state.weights)
        log(f"resumed from {checkpoint_dir}: {state.done}")
    try:
        for step in range(state.step, 2 * iterations):
            k = step // 2
            if step % 2 == 0:  # record the planner holding the network of the last iteration
                demos = collect(
                    teacher=_planner_spec(current, planner), config=config, samples=samples,
                    seed=seed + 104_729 * (k + 1), progress=progress, teacher_threads=teacher_threads,
                )
                records = [*records, demos][-window:]
                state.mark(step + 1, records, policy, f"iteration {k + 1}'s records (its fit not started)",
                           history=history)
                continue
            data = sum(records[1:], records[0])
            t0 = time.perf_counter()
            stats = fit(policy, data, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed + k, log=log)
            fit_s = time.perf_counter() - t0
            saved = os.path.join(checkpoint_dir, f"iter_{k + 1:02d}.zip")
            save_policy(policy, kwargs, saved, make_meta(config, num_timesteps=0, mode="expert-iteration", n_envs=1,
                                                 expert={**run, "iteration": k + 1, **stats}))
            demos = records[-1]
            row = {
                "iteration": k + 1, "teacher": _planner_spec(current, planner), "decisions": len(demos.actions),
                "rounds": demos.games, "collect_s": round(demos.seconds, 1), "fit_s": round(fit_s, 1),
                "fitted_on": len(data.actions), "elapsed_s": round(time.perf_counter() - started, 1),
                "policy": saved, **stats,
            }
            append_row(checkpoint_dir, row)
            log(f"iteration {k + 1}/{iterations}: {len(demos.actions):,} planner decisions in {demos.seconds:.0f} s, "
                f"fit {fit_s:.0f} s, accuracy {stats['accuracy']:.1%}, saved {saved}")
            current = row["policy"]
            history.append(row)
            state.mark(step + 1, records, policy, f"iteration {k + 1} of {iterations}", history=history)
    except KeyboardInterrupt:
        raise Interrupted(state.save(checkpoint_dir) if state.step > 0 else None, state.done) from None
    save_policy(policy, kwargs, out, make_meta(config, num_timesteps=0, mode="expert-iteration", n_envs=1,
                                       expert={**run, "iterations": iterations}))
    wall = time.perf_counter() - started
    log(f"saved {out} after {iterations} iterations ({wall / 60:.1f} min)")
    return {"out": out, "iterations": history, "wall_s": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    """``python -m nertz_env.train.expert``: exit code 2 with one line on bad input."""
    from nertz_env.cli import Parser, add_rule_flag, at_least
    from nertz_env.train.resume import run_command

    ap = Parser(prog="python -m nertz_env.train.expert", description=__doc__)
    ap.add_argument("--init", default="ppo_imitation", help="the network to start from: a .zip policy or a shipped name (default ppo_imitation)")
    ap.add_argument("--out", required=True, help="the final network (.zip)")
    ap.add_argument("--checkpoint-dir", required=True, help="each iteration's network (iter_NN.zip) and log.jsonl")
    ap.add_argument("--iterations", type=at_least(1), default=4, help="collect-and-fit rounds (default 4)")
    ap.add_argument("--samples", type=at_least(1), default=100_000, help="planner decisions recorded per iteration (default 100,000)")
    ap.add_argument("--epochs", type=at_least(1), default=2, help="epochs over the window's records per iteration (default 2)")
    ap.add_argument("--window", type=at_least(1), default=3, help="iterations whose records are fitted together (default 3)")
    ap.add_argument("--lr", type=float, default=1e-4, help="Adam learning rate of the fit (default 1e-4)")
    ap.add_argument("--batch-size", type=at_least(1), default=1024)
    ap.add_argument("--planner", default="", help="options of the planner's spec, e.g. rollouts=16,prior=0.5 (default: expert's defaults)")
    ap.add_argument("--players", type=int, default=4)
    add_rule_flag(ap, "a rules option (repeat)")
    ap.add_argument("--seed", type=at_least(0), default=0)
    ap.add_argument("--teacher-threads", type=at_least(1), default=1,
                    help="threads the planners decide in while collecting (default 1; 2 on a 2-core machine)")
    ap.add_argument("--resume", metavar="FOLDER",
                    help="continue the interrupted run of --checkpoint-dir FOLDER (same options; Ctrl-C prints it)")
    args = ap.parse_args(argv)
    if args.resume is not None and os.path.abspath(args.resume) != os.path.abspath(args.checkpoint_dir):
        ap.error(f"--resume {args.resume} continues the run in its --checkpoint-dir: give the same folder "
                 f"(--checkpoint-dir is {args.checkpoint_dir})")
    return run_command(ap.prog, argv, lambda: expert_iteration(
        init=args.init, out=args.out, checkpoint_dir=args.checkpoint_dir, iterations=args.iterations,
        samples=args.samples, epochs=args.epochs, window=args.window, lr=args.lr, batch_size=args.batch_size,
        planner=args.planner, num_players=args.players, rules=args.rule or {}, seed=args.seed,
        teacher_threads=args.teacher_threads, progress=sys.stderr.isatty(), resume=args.resume is not None,
    ), summary=lambda result: {"out": result["out"], "wall_s": result["wall_s"]})


if __name__ == "__main__":
    raise SystemExit(main())
