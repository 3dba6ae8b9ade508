"""Distil a planner into the network alone: DAgger from a trained network, with a KL anchor to where it started.

See docs/guides/training-sb3.md ("Distilling a planner into the network").
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np
import torch

from nertz_env.agents import make_agent
from nertz_env.agents.forward import NumpyActor
from nertz_env.agents.meta import make_meta
from nertz_env.agents.policy import PolicyAgent, policy_probabilities, save_policy
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
from nertz_env.train.resume import Interrupted


def check_options(opts: dict[str, Any], config: NertzConfig) -> str:
    """Every check before any work; returns the starting network's file. Raises ValueError (AgentSpecError)
    or FileNotFoundError naming the bad option."""
    check_common(config, opts["lr"])
    if not (np.isfinite(opts["anchor"]) and opts["anchor"] >= 0):
        raise ValueError(f"--anchor must be a finite number >= 0, got {opts['anchor']}")
    path = network_path(opts["init"])
    for spec in (path, opts["teacher"]):  # a network for another table, or a bad teacher spec, fails here
        make_agent(spec).reset(config, 0, 0)
    return path


def _agreement(policy: Any, demos: Any) -> float:
    """How often the network's most probable legal action is the teacher's choice, over the records."""
    hits = 0
    for i in range(0, len(demos.actions), 4096):
        probs = policy_probabilities(policy, demos.obs[i : i + 4096], demos.masks[i : i + 4096])
        hits += int((probs.argmax(1) == demos.actions[i : i + 4096]).sum())
    return hits / max(1, len(demos.actions))


def distill(
    run_dir: str,
    init: str = "ppo_imitation",
    teacher: str = "best",
    rounds: int | None = 8,
    samples: int = 100_000,
    epochs: int = 2,
    lr: float = 5e-5,
    anchor: float = 0.1,
    batch_size: int = 1024,
    seed: int = 0,
    players: int = 4,
    rules: dict[str, Any] | None = None,
    resume: bool = False,
    progress: bool = False,
    log: Any = print,
) -> dict[str, Any]:
    """Run (or, with ``resume``, continue) the rounds of a distillation run in ``run_dir``; returns its figures.

    With ``resume`` every option but ``rounds`` is read from ``run_dir/config.json`` (``rounds`` None: the run's
    own number of rounds).
    """
    cfg_path = os.path.join(run_dir, "config.json")
    if resume:
        if not os.path.isfile(cfg_path):
            raise FileNotFoundError(f"--resume {run_dir!r}: no distillation run there (no config.json)")
        with open(cfg_path, encoding="utf-8") as f:
            opts = json.load(f)
        if rounds is not None:
            opts["rounds"] = rounds
    else:
        if os.path.exists(run_dir) and (not os.path.isdir(run_dir) or os.listdir(run_dir)):
            raise ValueError(f"--run-dir {run_dir!r} exists and is not an empty directory: name a new one "
                             "(or continue it with --resume)")
        opts = {"init": init, "teacher": teacher, "rounds": 8 if rounds is None else rounds, "samples": samples, "epochs": epochs, "lr": lr,
                "anchor": anchor, "batch_size": batch_size, "seed": seed, "players": players,
                "rules": dict(rules or {})}
    config = make_config(num_players=int(opts["players"]), **opts["rules"])
    path = check_options(opts, config)
    done: list[dict[str, Any]] = []  # the rows of log.jsonl: one per finished round
    if resume and os.path.isfile(os.path.join(run_dir, "log.jsonl")):
        with open(os.path.join(run_dir, "log.jsonl"), encoding="utf-8") as f:
            done = [json.loads(line) for line in f if line.strip()]
    if len(done) > opts["rounds"]:
        raise ValueError(f"--rounds {opts['rounds']}: the run in {run_dir!r} has already finished {len(done)} rounds")
    for sub in ("rounds", "records"):
        os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    if not resume:
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(opts, f, indent=2)

    def meta(**figures: Any) -> dict[str, Any]:
        return make_meta(config, num_timesteps=0, mode="distillation", n_envs=1, distill={**opts, **figures})

    start, start_kwargs = load_for_fit(path)  # the anchor: the network the run started from (round_00)
    if not resume:
        save_policy(start, start_kwargs, os.path.join(run_dir, "rounds", "round_00.zip"), meta(round=0))
    policy, kwargs = load_for_fit(os.path.join(run_dir, "rounds", f"round_{len(done):02d}.zip") if done else path)
    records = [Demonstrations.load(os.path.join(run_dir, "records", f"round_{k + 1:02d}.npz")) for k in range(len(done))]
    started = time.perf_counter()
    elapsed0 = float(done[-1]["elapsed_s"]) if done else 0.0
    try:
        for k in range(len(done), int(opts["rounds"])):
            # the network does not change while the round is collected: it plays through its numpy forward
            actor = NumpyActor.from_policy(policy)
            student = PolicyAgent(policy, meta(round=k), deterministic=True, name="student", actor=actor)
            demos = collect(opts["teacher"], config, int(opts["samples"]), seed=int(opts["seed"]) + 7_919 * (k + 1),
                            progress=progress, student=student, relative_reward=True)
            demos.save(os.path.join(run_dir, "records", f"round_{k + 1:02d}.npz"))
            records.append(demos)
            agree = _agreement(policy, demos)
            every = sum(records[1:], records[0])
            torch.manual_seed(int(opts["seed"]) + k)
            t0 = time.perf_counter()
            stats = fit(policy, every, epochs=int(opts["epochs"]), batch_size=int(opts["batch_size"]), lr=float(opts["lr"]),
                        seed=int(opts["seed"]) + k, log=log, anchor=start, anchor_coef=float(opts["anchor"]))
            fit_s = time.perf_counter() - t0
            out = os.path.join(run_dir, "rounds", f"round_{k + 1:02d}.zip")
            save_policy(policy, kwargs, out, meta(round=k + 1, **stats))
            row = {"round": k + 1, "decisions": len(demos.actions), "games": demos.games,
                   "collect_s": round(demos.seconds, 1), "fit_s": round(fit_s, 1), "fitted_on": len(every.actions),
                   "agreement_before_fit": round(agree, 5),
                   "elapsed_s": round(elapsed0 + time.perf_counter() - started, 1), "policy": out, **stats}
            append_row(run_dir, row)
            done.append(row)
            log(f"round {k + 1}/{opts['rounds']}: {len(demos.actions):,} decisions in {demos.seconds:.0f} s, the network "
                f"agreed with {opts['teacher']} on {agree:.2%} before the fit; fit {fit_s:.0f} s, accuracy "
                f"{stats['accuracy']:.2%}; saved {out}")
    except KeyboardInterrupt:  # every finished round is on disk: --resume continues from the last one
        raise Interrupted(run_dir, f"{len(done)} of {opts['rounds']} rounds") from None
    final = os.path.join(run_dir, "policy.zip")
    save_policy(policy, kwargs, final, meta(round=int(opts["rounds"])))
    log(f"saved {final} after {len(done)} rounds ({done[-1]['elapsed_s'] / 60 if done else 0:.1f} min of rounds)")
    return {"out": final, "rounds": done}


def main(argv: list[str] | None = None) -> int:
    """``python -m nertz_env.train.distill``: exit code 2 with one line on bad input."""
    from nertz_env.cli import Parser, add_rule_flag, at_least
    from nertz_env.train.resume import run_command

    ap = Parser(prog="python -m nertz_env.train.distill", description=__doc__)
    ap.add_argument("--run-dir", help="a new directory for the run (with --resume: the run to continue)")
    ap.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR (only --rounds may change)")
    ap.add_argument("--init", help="the network to start from: a .zip policy or a shipped name (default ppo_imitation)")
    ap.add_argument("--teacher", help="the agent spec whose choices are the labels (default best)")
    ap.add_argument("--rounds", type=at_least(1), help="DAgger rounds (default 8; with --resume, the run's own)")
    ap.add_argument("--samples", type=at_least(1), help="decisions recorded per round (whole rounds, so a few more; default 100,000)")
    ap.add_argument("--epochs", type=at_least(1), help="epochs over all the records after each round (default 2)")
    ap.add_argument("--lr", type=float, help="Adam learning rate of the fit (default 5e-5)")
    ap.add_argument("--anchor", type=float, help="weight of the KL divergence to the starting network (default 0.1)")
    ap.add_argument("--batch-size", type=at_least(1), help="minibatch size of the fit (default 1024)")
    ap.add_argument("--seed", type=at_least(0), help="seed of the rounds' deals and the fit (default 0)")
    ap.add_argument("--players", type=int, help="table size (default 4)")
    add_rule_flag(ap, "a rules option (repeat)")
    args = ap.parse_args(argv)
    names = ("init", "teacher", "samples", "epochs", "lr", "anchor", "batch_size", "seed", "players")
    given = {k: getattr(args, k) for k in names if k in ap.given}  # the rest: distill's defaults
    if args.resume is not None:
        flags = [flag for dest, flag in ap.given.items() if dest not in ("resume", "rounds")]
        if flags:
            ap.error(f"{', '.join(flags)} cannot change a run being resumed (its options are in config.json); "
                     "only --rounds may")
    elif args.run_dir is None:
        ap.error("give --run-dir (a new run) or --resume RUN_DIR")
    again = [] if args.rounds is None else ["--rounds", str(args.rounds)]  # all a resumed run takes
    return run_command(ap.prog, again, lambda: distill(
        args.resume or args.run_dir, rounds=args.rounds, rules=args.rule, resume=args.resume is not None,
        progress=sys.stderr.isatty(), **given,
    ), summary=lambda result: {"out": result["out"], "rounds": len(result["rounds"])})


if __name__ == "__main__":
    raise SystemExit(main())
