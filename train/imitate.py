"""Behaviour cloning: a policy that imitates a scripted agent, as the starting point of PPO (``init_from``).

See docs/guides/training-sb3.md ("Starting from imitation").
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.save_util import load_from_zip_file
from tqdm import tqdm

import nertz_env
from nertz_env.actions import action_table
from nertz_env.agents import make_agent
from nertz_env.agents.meta import make_meta, read_meta
from nertz_env.agents.policy import PolicyAgent, has_record, load_policy, save_policy
from nertz_env.agents.registry import shipped_models
from nertz_env.config import NertzConfig, make_config
from nertz_env.observation import obs_layout
from nertz_env.single import rival_weights
from nertz_env.train.moves import MovesPolicy
from nertz_env.train.resume import Interrupted, Progress
from nertz_env.train.vec import run_interleaved


@dataclass
class Demonstrations:
    """Teacher decisions: ``obs`` (N, O) float32, ``masks`` (N, A) bool, ``actions`` (N,), ``returns`` (N,)."""

    obs: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    games: int
    seconds: float

    def __add__(self, other: Demonstrations) -> Demonstrations:
        """Both sets of records (DAgger aggregates every round's records)."""
        arrays = {k: np.concatenate([getattr(self, k), getattr(other, k)])
                  for k in ("obs", "masks", "actions", "returns")}
        return Demonstrations(**arrays, games=self.games + other.games, seconds=self.seconds + other.seconds)

    def save(self, path: str) -> None:
        """Write the records to ``path`` (``.npz``)."""
        np.savez_compressed(path, **vars(self))

    @classmethod
    def load(cls, path: str) -> Demonstrations:
        with np.load(path) as z:
            return cls(z["obs"], z["masks"], z["actions"], z["returns"], int(z["games"]), float(z["seconds"]))


def _returns(rewards: list[float], counts: list[int], gamma: float, coef: float) -> np.ndarray:
    """Discounted returns of one seat's round, with potential shaping Phi = -coef * nertz cards (0 at the end)."""
    n = len(rewards)
    out = np.zeros(n, dtype=np.float32)
    g = 0.0
    for t in range(n - 1, -1, -1):
        phi_now = -coef * counts[t]
        phi_next = -coef * counts[t + 1] if t + 1 < n else 0.0
        g = rewards[t] + phi_next - phi_now + gamma * g
        out[t] = g
    return out


def collect(
    teacher: str,
    config: NertzConfig,
    samples: int,
    seed: int = 0,
    gamma: float = 0.995,
    shaping: bool = True,
    progress: bool = False,
    student: Any = None,
    relative_reward: bool = False,
    teacher_threads: int = 1,
) -> Demonstrations:
    """Play rounds of ``teacher`` at every seat until ``samples`` decisions are recorded; a ``student`` plays
    seat ``round % players`` while the teacher labels it (DAgger). See docs/guides/training-sb3.md."""
    p_count = config.num_players
    env = nertz_env.parallel_env(**config.to_dict())
    agents = [make_agent(teacher) for _ in range(p_count)]
    ncount = obs_layout(config).slices["nertz_count"].start
    coef = float(config.nertz_penalty) if shaping else 0.0
    obs_l: list[np.ndarray] = []
    mask_l: list[np.ndarray] = []
    act_l: list[int] = []
    ret_l: list[np.ndarray] = []
    bar = tqdm(total=samples, unit="decision", desc=f"imitating {teacher}", disable=not progress)
    rivals = rival_weights(config)  # seat -> mean over the seats of other teams
    k = min(teacher_threads, p_count)
    labels = [0] * p_count

    def label(seats: Sequence[int], obs: dict[str, Any], names: list[str]) -> None:
        for s in seats:
            o = obs[names[s]]
            labels[s] = int(agents[s].act(o["observation"], o["action_mask"]))

    t0 = time.perf_counter()
    games = 0
    total = 0
    with ThreadPoolExecutor(teacher_threads) as executor:  # (no thread starts with one teacher thread)
        while total < samples:
            obs, _ = env.reset(seed=seed + games)
            for s, agent in enumerate(agents):
                agent.reset(env.config, s, seed=(seed + games) * 16 + s)
            driven = games % p_count if student is not None else -1
            if student is not None:
                student.reset(env.config, driven, seed=(seed + games) * 16 + p_count)
            names = list(env.agents)
            rewards: list[list[float]] = [[] for _ in names]
            counts: list[list[int]] = [[] for _ in names]
            while env.agents:
                if k == 1:
                    label(range(p_count), obs, names)
                else:
                    run_interleaved(executor, partial(label, obs=obs, names=names), range(p_count), k)
                acts = {}
                for s, name in enumerate(names):
                    o, m = obs[name]["observation"], obs[name]["action_mask"]
                    a = labels[s]
                    act_l.append(a)
                    if s == driven:
                        played = int(student.act(o, m))
                        if played != a:
                            tell = getattr(agents[s], "played", None)
                            if tell is not None:
                                tell(played)
                            a = played
                    acts[name] = a
                    obs_l.append(o)
                    mask_l.append(m.astype(bool))
                    counts[s].append(round(float(o[ncount]) * config.nertz_size))
                obs, rew, _, _, _ = env.step(acts)
                for s, name in enumerate(names):
                    rewards[s].append(float(rew[name]))
            games += 1
            # the records of one tick are interleaved by seat: returns go back in the same order
            if relative_reward:
                paid = np.asarray(rewards, dtype=np.float64)  # (P, ticks)
                rewards = (paid - rivals @ paid).tolist()
            per_seat = [_returns(rewards[s], counts[s], gamma, coef) for s in range(p_count)]
            ret_l.append(np.stack(per_seat, axis=1).reshape(-1))
            added = len(rewards[0]) * p_count
            total += added
            bar.update(added)
    bar.close()
    return Demonstrations(
        obs=np.asarray(obs_l, dtype=np.float32),
        masks=np.asarray(mask_l, dtype=bool),
        actions=np.asarray(act_l, dtype=np.int64),
        returns=np.concatenate(ret_l).astype(np.float32),
        games=games,
        seconds=time.perf_counter() - t0,
    )


def load_for_fit(path: str) -> tuple[Any, dict[str, Any]]:
    """A copy of the network of the policy file ``path`` to fit (the loaded one is shared by every agent of
    that file), and its ``policy_kwargs`` for :func:`~nertz_env.train.trainer.save_policy`."""
    policy = copy.deepcopy(load_policy(path)[0])
    data, _, _ = load_from_zip_file(path, device="cpu", load_data=True, print_system_info=False)
    kwargs = dict((data or {}).get("policy_kwargs") or {})  # every setting of the network, so the saves load
    kwargs.pop("obs_size", None)  # a privileged run's checkpoint: load_policy gave the policy without its critic's state
    return policy, kwargs or {"net_arch": policy.net_arch, "activation_fn": policy.activation_fn}


def build_policy(
    config: NertzConfig, net_arch: list[int], activation: str = "relu", lr: float = 3e-4,
    move_arch: list[int] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """A fresh ``MaskableActorCriticPolicy`` with the spaces and ``policy_kwargs`` the trainer uses; with
    ``move_arch`` the move-scoring policy (:class:`~nertz_env.train.moves.MovesPolicy`)."""
    act_fn = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[activation]
    obs_space = gymnasium.spaces.Box(0.0, 1.0, (obs_layout(config).size,), np.float32)
    act_space: gymnasium.spaces.Discrete = gymnasium.spaces.Discrete(action_table(config).n)
    kwargs: dict[str, Any] = {"net_arch": {"pi": list(net_arch), "vf": list(net_arch)}, "activation_fn": act_fn}
    if move_arch is not None:
        kwargs |= {"rules": config.to_dict(), "move_arch": list(move_arch)}
    policy = (MaskableActorCriticPolicy if move_arch is None else MovesPolicy)(obs_space, act_space, lambda _: lr, **kwargs)
    return policy, kwargs


def fit(
    policy: Any,
    demos: Demonstrations,
    epochs: int = 10,
    batch_size: int = 1024,
    lr: float = 3e-4,
    vf_coef: float = 0.5,
    seed: int = 0,
    log: Any = print,
    anchor: Any = None,
    anchor_coef: float = 0.0,
) -> dict[str, float]:
    """Fit ``policy`` to the demonstrations; returns the last epoch's losses and the action accuracy. With
    ``anchor_coef`` > 0 the loss adds that times the KL divergence from the ``anchor`` policy's masked action
    distribution (docs/guides/training-sb3.md, "Distilling a planner")."""
    gen = torch.Generator().manual_seed(seed)
    obs, masks, acts, rets = map(torch.as_tensor, (demos.obs, demos.masks, demos.actions, demos.returns))
    n = obs.shape[0]
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    policy.set_training_mode(True)
    stats: dict[str, float] = {}
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen)
        ce_sum = vf_sum = correct = kl_sum = 0.0
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            o, m, a, r = obs[idx], masks[idx], acts[idx], rets[idx]
            dist = policy.get_distribution(o, action_masks=m.numpy())
            ce = -dist.log_prob(a).mean()
            v = policy.predict_values(o).squeeze(-1)
            vf = torch.nn.functional.mse_loss(v, r)
            loss = ce + vf_coef * vf
            if anchor_coef > 0.0:
                with torch.no_grad():
                    ref = anchor.get_distribution(o, action_masks=m.numpy()).distribution.logits
                # from log-probabilities: finite where the policy's probability of a move underflows to 0
                # (torch's kl_divergence is inf there)
                logp = torch.log_softmax(dist.distribution.logits, dim=-1)
                kl = (torch.softmax(ref, dim=-1) * (torch.log_softmax(ref, dim=-1) - logp)).sum(-1).mean()
                loss = loss + anchor_coef * kl
                kl_sum += float(kl.detach()) * len(idx)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            opt.step()
            k = len(idx)
            ce_sum += float(ce.detach()) * k
            vf_sum += float(vf.detach()) * k
            correct += float((dist.distribution.probs.argmax(-1) == a).sum())
        stats = {"cross_entropy": ce_sum / n, "value_mse": vf_sum / n, "accuracy": correct / n}
        if anchor_coef > 0.0:
            stats["anchor_kl"] = kl_sum / n
        log(
            f"epoch {epoch + 1}/{epochs}: cross-entropy {stats['cross_entropy']:.4f}, "
            f"value MSE {stats['value_mse']:.3f}, accuracy {stats['accuracy']:.1%}"
            + (f", KL to the anchor {stats['anchor_kl']:.4f}" if anchor_coef > 0.0 else "")
        )
    policy.set_training_mode(False)
    return stats


def check_common(
    config: NertzConfig, lr: float, teacher_threads: int = 1, out: str | None = None, folder: str | None = None
) -> None:
    """The checks of the commands that learn from a teacher (imitate, expert, distill) that argparse cannot
    make, before any work; raises ``ValueError`` naming the flag."""
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"--lr must be a finite number > 0, got {lr}")
    if not 1 <= teacher_threads <= config.num_players:
        raise ValueError(f"--teacher-threads must be from 1 to the {config.num_players} seats (one teacher per "
                         f"seat), got {teacher_threads}")
    if config.target_score is not None or config.rounds is not None:
        raise ValueError("learning from a teacher records single rounds; use rules without target_score or rounds")
    if out is not None and not out.lower().endswith(".zip"):
        raise ValueError(f"--out must end in .zip (SB3 adds it otherwise), got {out!r}")
    if out is not None and os.path.isdir(out):
        raise ValueError(f"--out {out!r} is a directory: name a .zip file")
    if folder is not None and os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"--checkpoint-dir {folder!r} is a file, not a directory")


def network_path(init: str) -> str:
    """``--init``'s network: a flat policy over the plain observation, as a file or a shipped model's name;
    ``FileNotFoundError`` or ``ValueError`` otherwise."""
    path = shipped_models().get(init, init)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--init: no network {init!r} (a .zip policy file or a shipped model's name)")
    meta = read_meta(path) if has_record(path) else {}
    rules = meta.get("rules", {})
    if meta.get("train_config", {}).get("policy") == "moves" or rules.get("last_moves") or rules.get("memory"):
        raise ValueError(
            f"--init: {init!r} scores moves or reads last_moves/memory; distillation and expert iteration start "
            "from a flat network over the plain observation, such as ppo_imitation"
        )
    return path


def append_row(folder: str, row: dict[str, Any]) -> None:
    """One more line of a run's ``log.jsonl``."""
    with open(os.path.join(folder, "log.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def imitate(
    out: str,
    teacher: str = "search",
    num_players: int = 4,
    rules: Mapping[str, Any] | None = None,
    samples: int = 200_000,
    seed: int = 0,
    net_arch: list[int] | None = None,
    activation: str = "relu",
    epochs: int = 10,
    batch_size: int = 1024,
    lr: float = 3e-4,
    gamma: float = 0.995,
    shaping: bool = True,
    progress: bool = False,
    log: Any = print,
    dagger_rounds: int = 0,
    dagger_samples: int = 100_000,
    dagger_epochs: int = 3,
    relative_reward: bool = False,
    checkpoint_dir: str | None = None,
    teacher_threads: int = 1,
    resume: str | None = None,
) -> dict[str, Any]:
    """Collect ``samples`` decisions of ``teacher``, fit a policy, then ``dagger_rounds`` DAgger rounds; save it
    to ``out``. Ctrl-C saves the last finished step to ``checkpoint_dir`` (else ``<out without .zip>_resume``)
    for ``resume``. See docs/guides/training-sb3.md, "Starting from imitation"."""
    started = time.perf_counter()
    config = make_config(num_players=num_players, **dict(rules or {}))
    arch = list(net_arch if net_arch is not None else [256, 256])
    # every bad value fails here, before any folder is made (the counts: argparse)
    check_common(config, lr, teacher_threads, out=out, folder=checkpoint_dir)
    if not 0 < gamma <= 1:
        raise ValueError(f"--gamma must be in (0, 1], got {gamma}")
    make_agent(teacher).reset(config, 0, 0)  # a bad spec, or a trained teacher for another table, fails here
    progress_state = Progress("imitate", {
        "teacher": teacher, "num_players": num_players, "rules": dict(rules or {}), "samples": samples, "seed": seed,
        "net_arch": arch, "activation": activation, "epochs": epochs, "batch_size": batch_size, "lr": lr,
        "gamma": gamma, "shaping": shaping, "dagger_rounds": dagger_rounds, "dagger_samples": dagger_samples,
        "dagger_epochs": dagger_epochs, "relative_reward": relative_reward,
    })
    if resume is not None:
        progress_state.load(resume, Demonstrations.load)  # ValueError: not such a folder, or other options
    if checkpoint_dir is not None:
        os.makedirs(checkpoint_dir, exist_ok=True)
    torch.manual_seed(seed)
    policy, kwargs = build_policy(config, arch, activation, lr)
    stats: dict[str, float] = dict(progress_state.figures.get("stats", {}))
    fit_s = float(progress_state.figures.get("fit_s", 0.0))
    if progress_state.step > 0:
        policy.load_state_dict(progress_state.weights)
        log(f"resumed from {resume}: {progress_state.done}")

    def record(dagger_done: int) -> dict[str, Any]:
        return make_meta(
            config,
            num_timesteps=0,
            mode="imitation",
            n_envs=1,
            imitation={"teacher": teacher, "samples": len(demos.actions), "rounds": demos.games, "seed": seed,
                       "epochs": epochs, "dagger_rounds": dagger_done, "dagger_samples": dagger_samples,
                       "dagger_epochs": dagger_epochs, "relative_reward": relative_reward, **stats},
        )

    # the steps: 0 records the teacher, 1 fits; then each DAgger round k records (2k + 2) and fits (2k + 3)
    try:
        if progress_state.step == 0:
            first = collect(
                teacher, config, samples, seed=seed, gamma=gamma, shaping=shaping, progress=progress,
                relative_reward=relative_reward, teacher_threads=teacher_threads,
            )
            log(f"recorded {len(first.actions):,} decisions of {teacher} in {first.games} rounds "
                f"({first.seconds:.0f} s)")
            done = f"the {len(first.actions):,} decisions recorded (the first fit not started)"
            progress_state.mark(1, [first], policy, done, stats=stats, fit_s=fit_s)
        demos: Demonstrations = progress_state.records[0]
        for step in range(progress_state.step, 2 + 2 * dagger_rounds):
            k = step // 2 - 1  # the DAgger round of steps 2k + 2 and 2k + 3
            if step % 2 == 0:
                student = PolicyAgent(policy, record(k), deterministic=True, name="student")
                more = collect(
                    teacher, config, dagger_samples, seed=seed + 7_919 * (k + 1) * 1_000, gamma=gamma,
                    shaping=shaping, progress=progress, student=student, relative_reward=relative_reward,
                    teacher_threads=teacher_threads,
                )
                demos = demos + more
                log(f"DAgger round {k + 1}/{dagger_rounds}: {len(more.actions):,} more decisions "
                    f"({more.seconds:.0f} s), {len(demos.actions):,} in all")
                done = f"DAgger round {k + 1}'s records ({len(demos.actions):,} decisions in all; its fit not started)"
            else:
                t0 = time.perf_counter()
                stats = fit(policy, demos, epochs=epochs if step == 1 else dagger_epochs, batch_size=batch_size,
                            lr=lr, seed=seed if step == 1 else seed + k + 1, log=log)
                fit_s += time.perf_counter() - t0
                if checkpoint_dir is not None:
                    path = os.path.join(checkpoint_dir, f"round_{k + 1:02d}.zip")
                    save_policy(policy, kwargs, path, record(k + 1))
                    log(f"checkpoint {path} ({time.perf_counter() - started:.0f} s since the start)")
                done = "the first fit" if step == 1 else f"DAgger round {k + 1} of {dagger_rounds}"
                done += f" ({len(demos.actions):,} decisions)"
            progress_state.mark(step + 1, [demos], policy, done, stats=stats, fit_s=fit_s)
    except KeyboardInterrupt:  # the state goes to checkpoint_dir, else <out without .zip>_resume
        folder = checkpoint_dir if checkpoint_dir is not None else os.path.splitext(out)[0] + "_resume"
        raise Interrupted(progress_state.save(folder) if progress_state.step > 0 else None, progress_state.done) from None

    save_policy(policy, kwargs, out, record(dagger_rounds))
    log(f"saved {out} (fit {fit_s:.0f} s)")
    return {"path": out, "samples": len(demos.actions), "rounds": demos.games,
            "collect_s": demos.seconds, "fit_s": fit_s, **stats}


def main(argv: list[str] | None = None) -> int:
    """``python -m nertz_env.train.imitate``: collect, fit and save; exit code 2 on bad input (one line)."""
    from nertz_env.cli import Parser, add_rule_flag, at_least
    from nertz_env.train.flags import int_list
    from nertz_env.train.resume import run_command

    ap = Parser(prog="python -m nertz_env.train.imitate", description=__doc__)
    ap.add_argument("--out", required=True, help="the policy file to write (.zip)")
    ap.add_argument("--teacher", default="search", help="agent spec to imitate (default search)")
    ap.add_argument("--players", type=int, default=4)
    add_rule_flag(ap, "a rules option of the tables (repeat); the policy is for these rules")
    ap.add_argument("--samples", type=at_least(1), default=200_000, help="decisions to record (default 200,000)")
    ap.add_argument("--seed", type=at_least(0), default=0)
    ap.add_argument("--net-arch", type=int_list, default=[256, 256], help="hidden widths (default 256,256)")
    ap.add_argument("--epochs", type=at_least(1), default=10)
    ap.add_argument("--batch-size", type=at_least(1), default=1024)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--gamma", type=float, default=0.995)
    ap.add_argument("--dagger-rounds", type=at_least(0), default=0,
                    help="DAgger rounds after the first fit: the policy plays a seat, the teacher labels (default 0)")
    ap.add_argument("--dagger-samples", type=at_least(1), default=100_000,
                    help="decisions per DAgger round (default 100,000; needs --dagger-rounds)")
    ap.add_argument("--dagger-epochs", type=at_least(1), default=3,
                    help="epochs over all records after each DAgger round (default 3; needs --dagger-rounds)")
    ap.add_argument("--relative-reward", action="store_true",
                    help="value targets from the score minus the rivals' mean (as relative_reward = true trains)")
    ap.add_argument("--no-shaping", action="store_true", help="value targets without the Nertz-pile shaping")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="also save the policy after the first fit and after each DAgger round here (round_NN.zip)")
    ap.add_argument("--threads", type=at_least(1), default=1, help="torch threads (default 1)")
    ap.add_argument("--teacher-threads", type=at_least(1), default=1,
                    help="threads the teachers decide in while collecting (default 1; 2 on a 2-core machine)")
    ap.add_argument("--resume", metavar="FOLDER",
                    help="continue an interrupted run from the folder it printed (same options)")
    args = ap.parse_args(argv)
    given = [ap.given[dest] for dest in ("dagger_samples", "dagger_epochs") if dest in ap.given]
    if given and args.dagger_rounds == 0:
        ap.error(f"{given[0]} has no effect without DAgger rounds: pass --dagger-rounds N (N >= 1), or remove it")
    return run_command(ap.prog, argv, lambda: imitate(
        args.out, args.teacher, args.players, args.rule or {}, args.samples, args.seed, args.net_arch,
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, gamma=args.gamma,
        shaping=not args.no_shaping, progress=True, dagger_rounds=args.dagger_rounds,
        dagger_samples=args.dagger_samples, dagger_epochs=args.dagger_epochs,
        relative_reward=args.relative_reward, checkpoint_dir=args.checkpoint_dir,
        teacher_threads=args.teacher_threads, resume=args.resume,
    ), threads=args.threads)


if __name__ == "__main__":
    raise SystemExit(main())
