"""``nertz-train --backend rllib``: PPO self-play (or a league) on Ray RLlib, on one machine or a Ray cluster.
Its options are the SB3 backend's but those only SB3 reads, plus its own flags; every check is made before Ray
starts. See docs/guides/rllib.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from nertz_env._rllib_spec import LEARNER_MODULE_DIR, League, parse_env_config
from nertz_env.cli import UsageError, at_least, refuse
from nertz_env.eval.cluster import ClusterError, authenticate, check_address
from nertz_env.extras import install_command
from nertz_env.train.checkpoint import check_resume, check_run_dir, read_checkpoint
from nertz_env.train.config import SB3_ONLY, ConfigError, TrainConfig
from nertz_env.train.flags import build_parser, config_from_args
from nertz_env.train.resume import StopOnSignal

TABLES_PER_ENV = 16


def build_rllib_parser() -> argparse.ArgumentParser:
    """``nertz-train``'s flags without those only the SB3 backend reads (argparse refuses them), plus this
    backend's own."""
    parser = build_parser(sb3=False)
    parser.prog = "nertz-train --backend rllib"
    parser.description = "Train a PPO policy for Nertz on Ray RLlib (a laptop or a Ray cluster)."
    parser.add_argument("--num-env-runners", type=at_least(0), default=0, metavar="N",
                        help="RLlib env runners (default 0)")
    parser.add_argument(
        "--address",
        metavar="ADDR",
        help="a running Ray cluster to join (host:port or auto); without it the run starts a Ray of its own "
        "on this machine, even where a cluster is running",
    )
    parser.add_argument(
        "--tables-per-env",
        type=at_least(1),
        metavar="K",
        help="a league's tables per env (default 16; at most num_tables); not with self-play",
    )
    return parser


def check_options(cfg: TrainConfig, num_env_runners: int = 0) -> None:
    """Raise :class:`ConfigError` for an option only the SB3 backend reads (:data:`SB3_ONLY`) set away from its
    default (a file shared with the SB3 backend; evaluation may also be off), or a ``batch_size`` other than the
    default larger than an iteration."""
    flat, default = cfg.flat(), TrainConfig().flat()
    for name in SB3_ONLY:
        if flat[name] != default[name] and not (name.startswith("eval") and cfg.evaluation is None):
            raise ConfigError(
                f"{name} is read by the SB3 backend only (the rllib backend evaluates nothing while it trains: play "
                "its checkpoints with nertz-eval): remove it, or train without --backend rllib"
            )
    transitions = iteration_transitions(cfg, num_env_runners)
    if transitions < cfg.batch_size != TrainConfig.batch_size:
        raise ConfigError(
            f"batch_size {cfg.batch_size:,} is larger than an iteration ({transitions:,} learner transitions: "
            "n_steps x num_tables x learning seats x env runners), so it cannot take effect: pass --batch-size "
            f"{transitions} or less, or raise --n-steps"
        )


def layout(cfg: TrainConfig, tables_per_env: int | None = None, multi_agent: bool = False) -> tuple[dict[str, Any], Any, int]:
    """How a training config runs on RLlib, checked without Ray: the env config, the League (None: self-play,
    RLlib's single-agent route unless ``multi_agent``) and the envs each env runner steps. Raises
    :class:`UsageError` for a ``--tables-per-env`` that cannot take effect, ``ValueError`` for a bad env config."""
    env_config: dict[str, Any] = {"num_players": cfg.num_players, **cfg.rules}
    league = None
    if cfg.pool is not None:  # the pool's options this backend reads
        options = {k: v for k, v in dataclasses.asdict(cfg.pool).items() if k not in SB3_ONLY}
        league = League(cfg.learners, **options)
    assert cfg.vector is not None  # the rllib backend has no mode single (SB3_ONLY)
    num_tables = cfg.vector.num_tables
    if league is None and not multi_agent:
        if tables_per_env is not None:
            raise UsageError(
                "--tables-per-env has no effect in self-play: every seat of a runner's num_tables tables is one "
                "sub-environment of one vector env; drop it (it sets a league's envs)"
            )
        env_config["num_tables"] = num_tables  # TrainConfig checked it, with the rules
        return env_config, None, 1
    if tables_per_env is None:
        tables_per_env = TABLES_PER_ENV
    tables_per_env = min(tables_per_env, num_tables)
    if num_tables % tables_per_env:
        raise UsageError(
            f"num_tables={num_tables} is not a multiple of --tables-per-env {tables_per_env}: "
            "every env of a runner holds the same number of tables"
        )
    if tables_per_env > 1:
        env_config["num_tables"] = tables_per_env
    parse_env_config({**env_config, **(league.env_keys() if league else {})})  # as ppo_config joins them
    return env_config, league, num_tables // tables_per_env


def build_config(
    cfg: TrainConfig, num_env_runners: int = 0, tables_per_env: int | None = None, multi_agent: bool = False
) -> Any:
    """The ``PPOConfig`` of a training config (validated; Ray need not be running). Self-play takes RLlib's
    single-agent route unless ``multi_agent`` (a resumed checkpoint of the multi-agent env)."""
    from nertz_env.rllib import ppo_config

    env_config, league, envs = layout(cfg, tables_per_env, multi_agent)
    single_agent = league is None and not multi_agent
    transitions = iteration_transitions(cfg, num_env_runners)
    return ppo_config(
        env_config,
        league=league,
        num_env_runners=num_env_runners,
        num_envs_per_env_runner=envs,
        # agent steps on the single-agent route; on the multi-agent env RLlib counts env steps: n_steps ticks of
        # each env per runner (one env of num_tables tables, or num_tables one-table envs)
        train_batch_size=transitions if single_agent else cfg.n_steps * envs * max(1, num_env_runners),
        minibatch_size=min(cfg.batch_size, transitions),
        num_epochs=cfg.n_epochs,
        lr=cfg.learning_rate,
        gamma=cfg.gamma,
        lambda_=cfg.gae_lambda,
        clip_param=cfg.clip_range,
        entropy_coeff=cfg.ent_coef,
        vf_loss_coeff=cfg.vf_coef,
        grad_clip=cfg.max_grad_norm,
        hidden=cfg.net_arch,
        seed=cfg.seed,
        single_agent=single_agent,
        fast_sampling=single_agent,  # RLlib's sampling loop with nertz-env's fast paths (Ray 2.60's internals)
    )


def check_before_ray(args: argparse.Namespace) -> tuple[TrainConfig, bool]:
    """Every check the run makes before it imports Ray, with neither Ray nor torch, so ``--print-config``
    refuses what the run refuses. Returns the config as it will run, and whether a resumed checkpoint is of the
    multi-agent env."""
    meta = read_checkpoint(args.resume, rllib=True) if args.resume else None
    cfg = config_from_args(args, TrainConfig.from_dict(meta["train_config"]) if meta else None, final=True)
    check_options(cfg, args.num_env_runners)
    multi_agent = False
    if meta is not None:
        check_resume(cfg, args.resume, meta, rllib=True)  # the table, net_arch, a budget below the checkpoint's
        multi_agent = os.path.normpath(str(meta.get("learner_module"))) == os.path.normpath(LEARNER_MODULE_DIR)
        if not multi_agent and cfg.pool is not None:
            # RLlib's restore has no "learner" module to fill from such a checkpoint and leaves it untrained
            raise UsageError(
                f"cannot resume {args.resume} as a league (learners_per_table {cfg.learners}): it is a "
                "self-play checkpoint (RLlib's single-agent route, module default_policy), whose network a league's "
                "module would not take; resume it in self-play (leave out learners_per_table), or start a new run"
            )
    layout(cfg, args.tables_per_env, multi_agent=multi_agent)
    check_run_dir(cfg.run_dir, args.resume, final=True)
    if args.address:
        check_address(args.address)  # ClusterError
    if importlib.util.find_spec("ray") is None:
        raise ModuleNotFoundError("No module named 'ray'", name="ray")
    if cfg.tensorboard and importlib.util.find_spec("tensorboardX") is None:  # ray[rllib] installs it
        raise UsageError(
            "tensorboard = true needs the tensorboardX package (ray[rllib] installs it): pip install tensorboardX, "
            "or pass --no-tensorboard"
        )
    return cfg, multi_agent


def main(argv: Sequence[str] | None = None) -> int:
    args = build_rllib_parser().parse_args(argv)  # --backend rllib is one of its flags
    try:
        cfg, multi_agent = check_before_ray(args)
        if args.print_config:
            print(json.dumps(cfg.to_dict(), indent=2))
            return 0
        config = build_config(cfg, args.num_env_runners, args.tables_per_env, multi_agent=multi_agent)
    except ImportError as e:
        need = f"the rllib backend needs the rllib extra ({install_command('rllib')}): {e}"
        return refuse("nertz-train", ImportError(need))
    except (UsageError, ClusterError, FileNotFoundError, ValueError) as e:  # ConfigError, CheckpointError, AgentSpecError
        return refuse("nertz-train", e)
    note = budget_note(cfg, args.num_env_runners)
    if note:
        print(note, file=sys.stderr)
    return run(cfg, config, address=args.address, resume=args.resume, num_env_runners=args.num_env_runners)


def budget_note(cfg: TrainConfig, num_env_runners: int) -> str | None:
    """What the run will train when ``total_timesteps`` is not a whole number of iterations, else None."""
    per_iter = iteration_transitions(cfg, num_env_runners)
    if cfg.total_timesteps % per_iter == 0:
        return None
    return (
        f"note: RLlib trains whole iterations of about {per_iter:,} learner transitions, so the run stops at the "
        f"first iteration past total_timesteps {cfg.total_timesteps:,} (about "
        f"{-(-cfg.total_timesteps // per_iter) * per_iter:,})"
    )


def iteration_transitions(cfg: TrainConfig, num_env_runners: int) -> int:
    """Learner transitions one PPO iteration samples: ``n_steps`` ticks of every table of every runner, times
    the learning seats (about: a table whose deal ends mid-round waits for the others)."""
    return cfg.rollout_size * max(1, num_env_runners)


def run(cfg: TrainConfig, config: Any, address: str | None, resume: str | None, num_env_runners: int) -> int:
    import ray
    import torch

    from nertz_env.agents.rllib_policy import read_rllib_meta
    from nertz_env.rllib import add_snapshot, save_checkpoint
    from nertz_env.threads import limit_threads, usable_cpus

    threads = cfg.torch_threads or usable_cpus()
    limit_threads(threads)  # the learner, in this process; every env runner runs one thread
    torch.set_num_threads(threads)
    runtime_env = {"env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}}
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        if address:
            authenticate(address)  # the token of a `ray start --head` cluster, for host:port as for auto
        # no address: "local", a Ray of the run's own (ray.init() with no address joins a cluster that `ray start`
        # left running on this machine, or RAY_ADDRESS names, with its CPUs and installed packages)
        ray.init(address=address or "local", runtime_env=runtime_env, include_dashboard=False,
                 log_to_driver=cfg.verbose > 0)  # a cluster joined keeps its own dashboard
    except (ConnectionError, RuntimeError) as e:
        print(f"nertz-train: error: could not join Ray at {address}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    if sigterm is not None and signal.getsignal(signal.SIGTERM) is not sigterm:
        signal.signal(signal.SIGTERM, sigterm)  # ray.init's exits at once: a kill saves as a Ctrl-C does
    run_dir = os.path.abspath(cfg.run_dir)
    os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
    with open(os.path.join(run_dir, "train_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg.to_dict(), f, indent=2)
    print(f"run dir: {run_dir}  (Ray: {ray.cluster_resources().get('CPU', 0):g} CPUs, "
          f"{len(ray.nodes())} node(s), {num_env_runners} env runner(s))")
    algo, tb = None, None
    try:
        algo = config.build_algo()
        if num_env_runners:
            nodes = algo.env_runner_group.foreach_env_runner(
                lambda _: ray.get_runtime_context().get_node_id(), local_env_runner=False
            )
            print(f"{len(nodes)} env runner(s) on {len(set(nodes))} node(s)", flush=True)
        if resume:
            algo.restore_from_path(os.path.abspath(resume))
        steps = int(read_rllib_meta(resume).get("num_timesteps", 0)) if resume else 0
        max_snapshots = cfg.pool.max_snapshots if cfg.pool and cfg.pool.snapshot_weight > 0 else 0
        for slot in range(max_snapshots):  # the league starts with copies of the starting learner
            add_snapshot(algo, slot)
        next_ckpt = steps + cfg.checkpoint_every if cfg.checkpoint_every else None
        record = {"train_config": cfg.to_dict(), "mode": "rllib"}  # with num_timesteps, the checkpoints' record
        it, slot, last = 0, 0, None
        t0, s0 = time.perf_counter(), steps
        tb = tensorboard_writer(run_dir) if cfg.tensorboard else None
        module = "learner" if config.is_multi_agent else "default_policy"  # the learner's module id on each route
        stop = StopOnSignal("nertz-train", "this iteration")
        # the whole loop, not only algo.train(): a Ctrl-C landing between two iterations (the line, the TensorBoard
        # points, a snapshot, a checkpoint) also stops after the iteration with a checkpoint, not at once
        with stop:
            while steps < cfg.total_timesteps:
                result = algo.train()
                it += 1
                n = float(result["env_runners"]["num_module_steps_sampled"].get(module, 0))
                steps += int(n) if n == n else 0  # RLlib reports NaN for a module that sampled nothing
                ret = result["env_runners"].get("agent_episode_returns_mean", {})
                if not isinstance(ret, dict) or not config.is_multi_agent:  # single-agent: one return per seat
                    ret = {"seat": result["env_runners"].get("episode_return_mean", float("nan"))}
                values = [float(v) for v in ret.values() if float(v) == float(v)]  # NaN: no finished deal yet
                mean = sum(values) / len(values) if values else None
                rate = (steps - s0) / (time.perf_counter() - t0)
                shown = "       -" if mean is None else f"{mean:8.2f}"
                print(f"iter {it:4d}  steps {steps:10d}  agent return {shown}  {rate:8.0f} steps/s", flush=True)
                if tb is not None:
                    for tag, value in iteration_scalars(result, module, mean, rate).items():
                        tb.add_scalar(tag, value, steps)
                    tb.flush()  # a run stopped at once keeps every finished iteration's points
                every = cfg.pool.snapshot_every if cfg.pool else 0
                if max_snapshots and every and it % every == 0:
                    add_snapshot(algo, slot)
                    slot = (slot + 1) % max_snapshots
                if stop.requested or (next_ckpt is not None and steps >= next_ckpt):
                    last = save_checkpoint(algo, os.path.join(run_dir, "checkpoints", f"step_{steps:012d}"),
                                           num_timesteps=steps, **record)
                    print(f"checkpoint: {last}")
                    if next_ckpt is not None and steps >= next_ckpt:
                        next_ckpt += cfg.checkpoint_every
                if stop.requested:
                    print(
                        f"nertz-train: interrupted; saved the run after iteration {it} ({steps:,} learner transitions) "
                        f"in {last}\nresume with: nertz-train --backend rllib --resume {last}",
                        file=sys.stderr,
                    )
                    return 130
        final = save_checkpoint(algo, os.path.join(run_dir, "final"), num_timesteps=steps, **record)
        print(f"final checkpoint: {final}\nplay it: nertz-eval gauntlet {final} heuristic search")
    except KeyboardInterrupt:  # before the first iteration finished, or a second Ctrl-C
        hint = f"; the last checkpoint: nertz-train --backend rllib --resume {last}" if last else ""
        print(f"nertz-train: interrupted: stopped at once{hint}", file=sys.stderr)
        return 130
    finally:
        if tb is not None:
            tb.close()
        if algo is not None:
            algo.stop()
        ray.shutdown()
    return 0


#: what :func:`iteration_scalars` takes from RLlib's statistics of the learner module (``result["learners"]``)
LEARNER_SCALARS = {
    "policy_loss": "train/policy_loss",
    "vf_loss": "train/value_loss",
    "entropy": "train/entropy",
    "mean_kl_loss": "train/approx_kl",
    "vf_explained_var": "train/explained_variance",
    "default_optimizer_learning_rate": "train/learning_rate",
}


def iteration_scalars(result: dict[str, Any], module: str, agent_return: float | None, rate: float) -> dict[str, float]:
    """The TensorBoard scalars of one PPO iteration: ``rollout/agent_return_mean`` and ``time/fps`` (as the
    iteration line prints them) and the learner's losses (:data:`LEARNER_SCALARS`); NaN values are left out."""
    stats = result.get("learners", {}).get(module, {})
    scalars = {tag: stats[key] for key, tag in LEARNER_SCALARS.items() if key in stats}
    scalars["time/fps"] = rate
    if agent_return is not None:
        scalars["rollout/agent_return_mean"] = agent_return
    return {tag: float(v) for tag, v in scalars.items() if float(v) == float(v)}


def tensorboard_writer(run_dir: str) -> Any:
    """``tensorboard = true``: a tensorboardX writer of event files in ``run_dir/tb/RLlibPPO_<n>`` (a new
    ``n`` for each run or resume); RLlib's own logger is a Ray Tune callback, unused here."""
    from tensorboardX import SummaryWriter

    folder = os.path.join(run_dir, "tb")
    taken = [name[len("RLlibPPO_"):] for name in (os.listdir(folder) if os.path.isdir(folder) else [])
             if name.startswith("RLlibPPO_")]
    n = 1 + max((int(t) for t in taken if t.isdigit()), default=0)
    return SummaryWriter(os.path.join(folder, f"RLlibPPO_{n}"))
