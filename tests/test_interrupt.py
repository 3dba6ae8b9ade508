"""Nothing lost on Ctrl-C: ``nertz-train``, imitation and expert iteration save at the end of the step under
way and print the ``--resume`` command; the resumed run equals one that never stopped; a second Ctrl-C
stops at once, leaving no half-written checkpoint."""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import re
import shlex
import signal
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra")

import nertz_env.train.trainer as trainer_module
from conftest import loopback_only
from nertz_env.agents.meta import read_meta
from nertz_env.train import TrainConfig, Trainer, expert, imitate
from nertz_env.train.checkpoint import state_path
from nertz_env.train.cli import main as train_main
from nertz_env.train.resume import Interrupted
from procs import ctrl_c_at, signal_when
from test_imitate import EXPERT, IMITATE
from test_train import TINY, _quiet, _same_weights, _weights

ROLLOUT = 16 * 2 * 4  # n_steps x tables x seats


def _options(run_dir: Path, **kw: Any) -> dict[str, Any]:
    return {**TINY, "n_epochs": 2, "net_arch": [32, 32], "total_timesteps": 6 * ROLLOUT, "eval_every": 0,
            "run_dir": str(run_dir), "seed": 3, **kw}


def _saving(run: Path, evaluating: bool) -> TrainConfig:
    """A run with a checkpoint every 2 rollouts and a progress bar, evaluating every 2 rollouts or not at all."""
    evaluation = {"eval_every": 2 * ROLLOUT, "eval_deals": 1, "eval_opponents": ["random"]} if evaluating else {}
    return TrainConfig.from_dict(_options(run, checkpoint_every=2 * ROLLOUT, progress_bar=True, **evaluation))


def _wrote(run: Path) -> dict[str, Any]:
    """Every file a run wrote, less what depends on the clock (SB3's data, a CSV's seconds, throughput)."""
    out: dict[str, Any] = {}
    for p in sorted(x for x in run.rglob("*") if x.is_file()):
        name, data = p.relative_to(run).as_posix(), p.read_bytes().replace(str(run).encode(), b"RUN")
        if p.suffix in (".zip", ".npz"):
            with zipfile.ZipFile(p) as z:
                out[name] = {m: z.read(m).replace(str(run).encode(), b"RUN") for m in z.namelist() if m != "data"}
        elif p.suffix == ".csv":
            out[name] = [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(io.StringIO(data.decode()))]
        elif name.endswith(".state.pkl"):
            state = pickle.loads(p.read_bytes())
            state["rng"]["torch"] = state["rng"]["torch"].numpy().tobytes()  # (a tensor's pickle varies)
            out[name] = pickle.dumps(state)
        else:
            out[name] = sorted(json.loads(data)) if name == "throughput.json" else data
    return out


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, dict[str, Any]]:
    """The files of the runs that never stopped, without and with evaluation."""
    wrote = {}
    for evaluating in (False, True):
        run = tmp_path_factory.mktemp("straight") / "run"
        Trainer(_saving(run, evaluating), log=_quiet).train()
        wrote[evaluating] = _wrote(run)
    return wrote


@pytest.mark.parametrize(("where", "evaluating"), [("rollout", False), ("update", True)])
def test_ctrl_c_saves_at_the_end_of_the_update_and_the_resumed_run_writes_the_straight_runs_files(
    where: str, evaluating: bool, straight: dict[bool, dict[str, Any]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ctrl-C in the middle of the fourth rollout, or of the fourth update's optimizer steps; the printed
    # command resumes (the checkpoint's own options: evaluation stays as it was)
    import tqdm

    bars: list[tuple[int, int]] = []

    class Bar(tqdm.tqdm):  # type: ignore[misc]
        def close(self) -> None:
            if not self.disable:  # (tqdm closes again when collected)
                bars.append((self.initial, self.n))
            super().close()

    monkeypatch.setattr(trainer_module, "tqdm", Bar)
    trainer = Trainer(_saving(tmp_path / "run", evaluating), log=_quiet)
    if where == "rollout":
        ctrl_c_at(monkeypatch, trainer.timer, "step_wait", 3 * 16 + 5)
    else:  # 2 epochs of ROLLOUT / 64 optimizer steps an update
        ctrl_c_at(monkeypatch, trainer.model.policy.optimizer, "step", 3 * (2 * ROLLOUT // 64) + 1)
    with pytest.raises(Interrupted) as info:
        trainer.train()
    saved = info.value.folder
    assert saved is not None and read_meta(saved)["num_timesteps"] == 4 * ROLLOUT
    assert os.path.isfile(state_path(saved)) and not list((tmp_path / "run" / "checkpoints").glob("tmp_*"))
    assert train_main(["--resume", saved]) == 0
    assert bars == [(0, 4 * ROLLOUT), (4 * ROLLOUT, 6 * ROLLOUT)]  # the bar stopped at the saved step
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir()) == ["checkpoints", *["eval"] * evaluating]
    wrote = _wrote(tmp_path / "run")
    assert sorted(wrote) == sorted(straight[evaluating])
    assert wrote == straight[evaluating]


def test_a_second_ctrl_c_while_saving_stops_at_once_leaving_no_half_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    config = tmp_path / "train.json"
    config.write_text(json.dumps(_options(tmp_path / "run", total_timesteps=6 * ROLLOUT, checkpoint_every=2 * ROLLOUT)))
    ctrl_c_at(monkeypatch, trainer_module.VecTimer, "step_wait", 2 * 16 + 3)  # the first: in the 3rd rollout
    real_write_meta = trainer_module.write_meta

    def write_meta(path: str, meta: dict[str, Any]) -> None:  # the second, while the stop's checkpoint is written
        if meta["num_timesteps"] == 3 * ROLLOUT:
            signal.raise_signal(signal.SIGINT)
        real_write_meta(path, meta)

    monkeypatch.setattr(trainer_module, "write_meta", write_meta)
    assert train_main(["--config", str(config)]) == 130
    err = capsys.readouterr().err
    assert "interrupted again: stopped at once" in err
    periodic = tmp_path / "run" / "checkpoints" / f"step_{2 * ROLLOUT:012d}.zip"
    assert f"--resume {periodic}" in err  # the periodic checkpoint before, complete
    names = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert names == sorted(f"step_{2 * ROLLOUT:012d}{x}" for x in (".zip", ".json", ".state.pkl"))


NERTZ_TRAIN = os.path.join(os.path.dirname(sys.executable), "nertz-train")


@pytest.mark.skipif(os.name != "posix", reason="signals a child process and reads its end by signal (preexec_fn, negative exit codes): POSIX")
def test_a_sigterm_to_a_real_nertz_train_saves_and_its_resume_command_finishes_the_run(tmp_path: Path) -> None:
    """``kill PID`` on the installed command saves as a Ctrl-C does and ends as Ctrl-C ends it."""
    run = tmp_path / "run"
    config = tmp_path / "train.json"
    config.write_text(json.dumps(_options(run, total_timesteps=10_000_000, verbose=1)))
    # SB3 prints its table after each rollout, before the update: the second table follows a finished update
    code, err = signal_when([NERTZ_TRAIN, "--config", str(config)], lambda out: out.count("total_timesteps") >= 2,
                            signal.SIGTERM, 300)
    assert code == -signal.SIGINT, err
    assert "Traceback" not in err, err
    m = re.search(r"resume with: nertz-train .*--resume (\S+)", err)
    assert m, err
    saved = m.group(1)
    steps = int(read_meta(saved)["num_timesteps"])
    assert steps > 0 and steps % ROLLOUT == 0 and os.path.isfile(state_path(saved))
    assert f"last finished update ({steps:,} transitions)" in err
    # the printed command, with a budget one rollout further, finishes the run
    assert train_main(["--resume", saved, "--total-timesteps", str(steps + ROLLOUT)]) == 0
    assert read_meta(str(run / "policy.zip"))["num_timesteps"] == steps + ROLLOUT


# ---------------------------------------------------------------- imitation and expert iteration
@pytest.fixture(scope="module")
def imitated(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The imitation run that never stopped."""
    straight = str(tmp_path_factory.mktemp("imitate") / "straight.zip")
    assert imitate.main([*IMITATE, "--out", straight]) == 0
    return straight


@pytest.mark.parametrize("stop_at", [("fit", 2), ("collect", 3)])  # DAgger round 1's fit; round 2's records
def test_imitate_ctrl_c_saves_the_last_finished_step_and_resume_finishes_the_same_policy(
    stop_at: tuple[str, int], imitated: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    name, call = stop_at
    real = ctrl_c_at(monkeypatch, imitate, name, call, sigint=False)
    out = str(tmp_path / "cut.zip")
    argv = [*IMITATE, "--out", out]
    capsys.readouterr()
    assert imitate.main(argv) == 130
    err = capsys.readouterr().err
    m = re.search(r"resume with: python -m nertz_env.train.imitate (.+)", err)
    assert m, err
    assert not os.path.exists(out)
    monkeypatch.setattr(imitate, name, real)
    assert imitate.main(shlex.split(m.group(1))) == 0
    assert _same_weights(_weights(imitated), _weights(out))
    # a resume with other options is refused in one line
    assert imitate.main([*argv[:-2], "--out", str(tmp_path / "x.zip"), "--seed", "1", "--resume",
                         str(tmp_path / "cut_resume")]) == 2
    assert "other options (seed: the run has 0, this command 1)" in capsys.readouterr().err


def test_expert_ctrl_c_saves_the_last_finished_step_and_resume_finishes_the_same_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    straight = str(tmp_path / "straight.zip")
    assert expert.main([*EXPERT, "--out", straight, "--checkpoint-dir", str(tmp_path / "a")]) == 0
    real_fit = ctrl_c_at(monkeypatch, expert, "fit", 2, sigint=False)  # in the second iteration's fit
    out, folder = str(tmp_path / "cut.zip"), str(tmp_path / "b")
    assert expert.main([*EXPERT, "--out", out, "--checkpoint-dir", folder]) == 130
    err = capsys.readouterr().err
    assert f"saved iteration 2's records (its fit not started) in {folder}" in err
    assert f"--resume {folder}" in err
    monkeypatch.setattr(expert, "fit", real_fit)
    assert expert.main([*EXPERT, "--out", out, "--checkpoint-dir", folder, "--resume", folder]) == 0
    assert _same_weights(_weights(straight), _weights(out))
    assert [json.loads(x)["iteration"] for x in (tmp_path / "b" / "log.jsonl").read_text().splitlines()] == [1, 2]


@pytest.mark.long
def test_sigint_to_a_real_imitation_run_saves_and_resumes_to_the_same_policy(tmp_path: Path) -> None:
    """Two 60-epoch fits: a long test (CI's long-tests phase)."""
    argv = ["--teacher", "greedy", "--players", "2", "--samples", "64", "--epochs", "60", "--batch-size", "16",
            "--net-arch", "16"]
    straight = str(tmp_path / "straight.zip")
    assert imitate.main([*argv, "--out", straight]) == 0
    out = str(tmp_path / "cut.zip")
    argv = [sys.executable, "-m", "nertz_env.train.imitate", *argv, "--out", out]
    code, err = signal_when(argv, lambda out: out.count("epoch") >= 2, signal.SIGINT, 300)  # recorded, and fitting
    assert code == 130 and "Traceback" not in err, err
    m = re.search(r"resume with: python -m nertz_env.train.imitate (.+)", err)
    assert m, err
    assert imitate.main(shlex.split(m.group(1))) == 0
    assert _same_weights(_weights(straight), _weights(out))


@pytest.mark.isolated  # starts a local Ray in the subprocess, on loopback only
@pytest.mark.parametrize(
    ("route", "sig", "returncode"),
    [
        ("module", signal.SIGINT, 130),
        # the installed command, killed: Ray's own SIGTERM handler (exit at once) is replaced by a saving one
        ("installed", signal.SIGTERM, -signal.SIGINT),
    ],
)
def test_a_signal_to_a_real_rllib_run_saves_after_the_iteration_and_resumes(
    tmp_path: Path, route: str, sig: int, returncode: int
) -> None:
    pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install '.[rllib]'")
    with loopback_only():  # Ray binds the machine's address by default: here it has only 127.0.0.1
        run = tmp_path / "run"
        args = ["--backend", "rllib", "--num-players", "2", "--rule", "max_ticks=120", "--num-tables", "2",
                "--n-steps", "32", "--batch-size", "128", "--n-epochs", "1", "--net-arch", "32",
                "--checkpoint-every", "0", "--run-dir", str(run)]
        # Ray writes much to stderr: into a file, so a full pipe nobody reads yet cannot stall the run
        err_path = tmp_path / "stderr.txt"
        command = [NERTZ_TRAIN] if route == "installed" else [sys.executable, "-m", "nertz_env.train.cli"]
        with open(err_path, "w") as err_file:
            code, _ = signal_when([*command, *args, "--total-timesteps", "100000000"],
                                  lambda out: out.count("iter ") >= 2, sig, 600, stderr=err_file)
        err = err_path.read_text()
        assert code == returncode, err
        assert "stopping after this iteration to save" in err
        m = re.search(r"resume with: nertz-train --backend rllib --resume (\S+)", err)
        assert m, err
        saved = m.group(1)
        meta = json.loads((Path(saved) / "nertz_meta.json").read_text())
        steps = int(meta["num_timesteps"])
        assert steps > 0
        code = train_main([*args, "--resume", saved, "--total-timesteps", str(steps + 1)])
        assert code == 0
        assert int(json.loads((run / "final" / "nertz_meta.json").read_text())["num_timesteps"]) > steps
