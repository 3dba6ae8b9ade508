"""What ``--resume`` continues: a checkpoint's files, the run folder it belongs to, and the checks a run makes
before any work (no torch here, so ``--print-config`` refuses what the run refuses). See
docs/guides/training-sb3.md.
"""

from __future__ import annotations

import glob
import importlib.util
import os
from typing import Any

from nertz_env.agents.meta import CheckpointError, IncompatibleCheckpointError, check_compatible, read_meta
from nertz_env.agents.rllib_policy import META_FILE, read_rllib_meta
from nertz_env.config import make_config
from nertz_env.train.config import ConfigError, TrainConfig

#: the files that mark a run in a folder: the SB3 backend's checkpoints, policy, evaluations and throughput, and
#: the RLlib backend's checkpoint folders
RUN_FILES = (
    "checkpoints/step_*.zip", "policy.zip", "eval.csv", "throughput.json",
    f"checkpoints/step_*/{META_FILE}", f"final/{META_FILE}",
)


def state_path(checkpoint: str) -> str:
    """``checkpoints/step_100.zip`` -> ``checkpoints/step_100.state.pkl``."""
    return os.path.splitext(checkpoint)[0] + ".state.pkl"


def run_dir_of(checkpoint: str, final: bool = False) -> str | None:
    """``RUN`` for ``RUN/checkpoints/step_<N>.zip`` (or the RLlib backend's ``step_<N>/``; with ``final`` also
    ``RUN/final``), spelled as ``checkpoint`` is; ``None`` for a checkpoint outside that layout."""
    checkpoint = os.path.normpath(checkpoint)  # an RLlib checkpoint is a folder: "RUN/checkpoints/step_64/"
    if final and os.path.basename(os.path.abspath(checkpoint)) == "final":
        return os.path.normpath(os.path.join(checkpoint, os.pardir))
    if os.path.basename(os.path.dirname(os.path.abspath(checkpoint))) != "checkpoints":
        return None
    return os.path.normpath(os.path.join(os.path.dirname(checkpoint) or os.curdir, os.pardir))


def resume_run_dir(checkpoint: str, final: bool = False) -> str:
    """Where ``--resume CHECKPOINT`` without ``--run-dir`` writes: the run folder the checkpoint lies in
    (:func:`run_dir_of`), not the ``run_dir`` its record holds; a checkpoint outside that layout is refused."""
    run_dir = run_dir_of(checkpoint, final)
    if run_dir is None:
        where, writes = (
            ("a run folder's final/ or checkpoints/step_<N>/ (", "")
            if final
            else ("in a run folder's checkpoints/ (RUN/checkpoints/step_<N>.zip, ", " its checkpoints, policy and eval.csv")
        )
        raise ConfigError(
            f"--resume {checkpoint}: the checkpoint is not {where}where the run it continues would write): "
            f"pass --run-dir DIR to say where the resumed run writes{writes}"
        )
    return run_dir


def read_checkpoint(path: str, rllib: bool = False) -> dict[str, Any]:
    """The record of the training checkpoint ``path`` (``rllib``: the RLlib backend's checkpoint folder);
    ``FileNotFoundError``, or :class:`CheckpointError` for a file no option makes resumable (no record, no
    training config, no ``.state.pkl`` beside it)."""
    meta = read_rllib_meta(path) if rllib else read_meta(path)  # FileNotFoundError / CheckpointError
    if not isinstance(meta.get("train_config"), dict):
        raise CheckpointError(f"{path} stores no training config: it is not a training checkpoint")
    if not rllib and not os.path.isfile(state_path(path)):
        raise CheckpointError(
            f"cannot resume {path}: {state_path(path)} is missing (a policy file or a copied zip holds the "
            "network only; resume needs a checkpoint from checkpoints/ with its .state.pkl)"
        )
    return meta


def check_resume(cfg: TrainConfig, path: str, meta: dict[str, Any], rllib: bool = False) -> None:
    """Whether ``cfg`` can continue the checkpoint ``path`` (its record ``meta``): the same table, the options a
    resume restores (with ``rllib``, the RLlib backend's: ``net_arch`` only) and a ``total_timesteps`` not below
    what it has trained. Raises :class:`IncompatibleCheckpointError` naming every mismatch, or
    :class:`ConfigError`."""
    check_compatible(meta, make_config(num_players=cfg.num_players, **cfg.rules), where=f"checkpoint {path}", path=path)
    problems = []
    if not rllib and meta.get("mode") != cfg.mode:
        problems.append(f"mode: checkpoint has {meta.get('mode')!r}, the config has {cfg.mode!r}")
    if not rllib and meta.get("n_envs") != cfg.n_envs:
        problems.append(
            f"sub-envs: checkpoint has {meta.get('n_envs')}, the config has {cfg.n_envs} "
            "(num_tables x learners_per_table in vector mode, num_envs in single mode)"
        )
    recorded, now = TrainConfig.from_dict(meta.get("train_config", {})).flat(), cfg.flat()
    # a resumed run restores every generator and the env's tables: these cannot change on resume
    keys = ["net_arch", "activation", "n_steps", "shaping", "relative_reward", "seed", "privileged_critic", "policy",
            "move_arch"]
    if rllib:
        keys = ["net_arch"]
    elif cfg.mode == "vector":
        keys += ["num_tables", "learners_per_table"]
    problems += [f"{key}: checkpoint has {recorded[key]!r}, the config has {now[key]!r}"
                 for key in keys if recorded[key] != now[key]]
    if cfg.init_from is not None and cfg.init_from != recorded["init_from"]:
        problems.append(
            f"init_from {cfg.init_from!r} applies to a fresh run only (a resumed run continues the "
            "checkpoint's weights): remove it"
        )
    if problems:
        raise IncompatibleCheckpointError(f"cannot resume {path}: " + "; ".join(problems))
    done = int(meta.get("num_timesteps", 0))
    if cfg.total_timesteps < done:
        raise ConfigError(
            f"total_timesteps {cfg.total_timesteps:,} is below the {done:,} transitions {path} has trained: "
            f"pass --total-timesteps {done} or more"
        )


def check_run(cfg: TrainConfig, resume: str | None = None) -> tuple[TrainConfig, list[str], dict[str, Any]]:
    """Every check a run makes before its first file, without torch (so ``--print-config`` refuses what the run
    refuses): the checkpoint it resumes, the config as it will run (:meth:`TrainConfig.resolve`), the tensorboard
    package and the run directory. Returns that config, its notes and the checkpoint's record."""
    meta = read_checkpoint(resume) if resume is not None else {}  # FileNotFoundError / CheckpointError
    if resume is not None:
        check_resume(cfg, resume, meta)
    cfg, notes = cfg.resolve(resume=resume is not None)
    if cfg.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise ConfigError(
            "tensorboard = true needs the tensorboard package: pip install tensorboard, or pass --no-tensorboard"
        )
    check_run_dir(cfg.run_dir, resume)
    return cfg, notes, meta


def check_run_dir(run_dir: str, resume: str | None = None, final: bool = False) -> None:
    """Raise :class:`ConfigError` for a ``run_dir`` that is a file, or that holds another run than the one
    ``resume`` continues (the two runs' files would mix). Both backends check it before their first file."""
    run_dir = os.path.abspath(run_dir)
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ConfigError(f"run_dir {run_dir} is a file, not a directory: pass another --run-dir")
    own = run_dir_of(resume, final) if resume is not None else None
    if own is not None and os.path.abspath(own) == run_dir:
        return  # a resume continuing its own run
    # the files that mark a run (an RLlib checkpoint as its folder), sorted: the step numbers are zero-padded
    found = sorted(os.path.dirname(p) if os.path.basename(p) == META_FILE else p
                   for pattern in RUN_FILES for p in glob.glob(os.path.join(run_dir, pattern)))
    if not found:
        return
    if resume is None:  # the newest checkpoint: the RLlib backend's final, else the highest step
        steps = [p for p in found if os.path.dirname(p) == os.path.join(run_dir, "checkpoints")]
        rllib_final = os.path.join(run_dir, "final")
        last = rllib_final if rllib_final in found else steps[-1] if steps else None
        backend = "--backend rllib " if last and os.path.isdir(last) else ""  # an RLlib checkpoint is a folder
        way = "pass a new --run-dir" + (f", or continue that run with {backend}--resume {last}" if last else "")
        whose = ""
    else:
        way = (f"leave out --run-dir to continue in {own}, the run {resume} belongs to, or " if own else "") + (
            "pass a new --run-dir"
        )
        whose = f" and is not the folder of {resume}"
    raise ConfigError(
        f"run_dir {run_dir} already holds a run ({os.path.relpath(found[0], run_dir)}){whose}: the two runs' "
        f"checkpoints and eval.csv rows would mix; {way}"
    )

