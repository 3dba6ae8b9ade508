"""``nertz-train --resume CHECKPOINT`` continues the run the checkpoint belongs to: it writes into the run folder
the checkpoint lies in (``RUN/checkpoints/step_N.zip``), from whatever folder it is run and whatever ``run_dir``
the record holds, so a copied or moved run continues in its new place with its own pool; ``--run-dir`` still
names another folder, and a checkpoint outside that layout needs it. ``--print-config`` refuses what the run
refuses (the checkpoint's checks included), a file that cannot be resumed is said before any other problem,
and an option explicitly set to its "off" value passes where it cannot take effect.

One run of 128 transitions (started, as users do, with a relative ``--run-dir``), two resumes of 64 more.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import torch

from nertz_env.train import TrainConfig, Trainer
from nertz_env.train import cli as train_cli

torch.set_num_threads(1)

STEP = "step_000000000128.zip"
TINY = {
    "num_tables": 2, "n_steps": 16, "batch_size": 64, "n_epochs": 1, "net_arch": [16], "checkpoint_every": 0,
    "eval_every": 0, "eval_deals": 0, "progress_bar": False, "tensorboard": False,
    # opponents with snapshots of the learner: the pool and the seated opponents name files in RUN/pool
    "learners_per_table": 2, "opponents": {"random": 1.0}, "snapshot_weight": 0.5, "snapshot_every": 1,
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A folder holding ``runs/selfplay``, a finished run of 128 transitions started there with that relative
    run_dir (what its record holds), and an empty ``other/``."""
    folder = str(tmp_path_factory.mktemp("resume_run_dir"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        cfg = TrainConfig.from_dict({**TINY, "run_dir": "runs/selfplay", "total_timesteps": 128})
        Trainer(cfg, log=lambda _: None).train()
    os.makedirs(os.path.join(folder, "other"))
    yield folder


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    try:
        code = train_cli.main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nertz-train: error:") and "Traceback" not in err, err
    return lines[0]


def _policy_weights(checkpoint: str) -> dict[str, Any]:
    from stable_baselines3.common.save_util import load_from_zip_file

    _, params, _ = load_from_zip_file(checkpoint, device="cpu")
    return params["policy"]


def test_run_dir_of__the_folder_above_checkpoints_spelled_as_given(tmp_path: Any, monkeypatch: Any) -> None:
    from nertz_env.train.checkpoint import run_dir_of

    assert run_dir_of("runs/x/checkpoints/step_1.zip") == os.path.normpath("runs/x")
    assert run_dir_of("../runs/x/checkpoints/step_1.zip") == os.path.normpath("../runs/x")
    assert run_dir_of("/a/b/checkpoints/step_1.zip") == os.path.normpath("/a/b")
    assert run_dir_of("runs/x/policy.zip") is None and run_dir_of("step_1.zip") is None
    inside = tmp_path / "run" / "checkpoints"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    assert os.path.abspath(run_dir_of("step_1.zip") or "") == str(tmp_path / "run")


def test_resume__a_copied_run_continues_in_its_own_folder_from_anywhere(
    base: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    original, copy = os.path.join(base, "runs", "selfplay"), os.path.join(base, "runs", "sp_copy")
    shutil.copytree(original, copy)
    away = os.path.join(base, "runs", "away")
    os.rename(original, away)  # the copy must not need the folder it was trained in
    try:
        monkeypatch.chdir(os.path.join(base, "other"))
        code, out, err = _run(
            ["--resume", os.path.join("..", "runs", "sp_copy", "checkpoints", STEP), "--total-timesteps", "192"],
            capsys,
        )
    finally:
        os.rename(away, original)
    assert code == 0, err
    assert f"run dir: {copy}" in out.splitlines()
    assert not os.path.exists(os.path.join(base, "other", "runs"))  # not the record's run_dir under the cwd
    assert sorted(os.listdir(os.path.join(copy, "checkpoints"))) == [
        "step_000000000128.json", "step_000000000128.state.pkl", STEP,
        "step_000000000192.json", "step_000000000192.state.pkl", "step_000000000192.zip",
    ]
    assert not os.path.exists(os.path.join(original, "checkpoints", "step_000000000192.zip"))
    # the copy played its own snapshots, and continued exactly as the original resumed in place does
    monkeypatch.chdir(base)
    code, out, err = _run(["--resume", os.path.join("runs", "selfplay", "checkpoints", STEP),
                           "--total-timesteps", "192"], capsys)
    assert code == 0, err
    assert f"run dir: {original}" in out.splitlines()
    mine = _policy_weights(os.path.join(copy, "checkpoints", "step_000000000192.zip"))
    theirs = _policy_weights(os.path.join(original, "checkpoints", "step_000000000192.zip"))
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)


def test_resume__print_config_shows_the_run_folder_and_an_explicit_run_dir_wins(
    base: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(os.path.join(base, "other"))
    ckpt = os.path.join(base, "runs", "selfplay", "checkpoints", STEP)
    code, out, err = _run(["--resume", ckpt, "--print-config"], capsys)
    assert code == 0, err
    assert json.loads(out)["run_dir"] == os.path.join(base, "runs", "selfplay")
    elsewhere = os.path.join(base, "elsewhere")
    code, out, err = _run(["--resume", ckpt, "--run-dir", elsewhere, "--print-config"], capsys)
    assert code == 0, err
    assert json.loads(out)["run_dir"] == elsewhere


def test_resume__a_checkpoint_outside_a_run_folder_needs_run_dir(
    base: str, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    checkpoints = os.path.join(base, "runs", "selfplay", "checkpoints")
    for name in os.listdir(checkpoints):
        if name.startswith("step_000000000128."):
            shutil.copy(os.path.join(checkpoints, name), tmp_path / name)
    loose = str(tmp_path / STEP)
    code, out, err = _run(["--resume", loose, "--total-timesteps", "192"], capsys)
    assert code == 2 and out == ""
    assert "not in a run folder's checkpoints/" in _one_line_error(err) and "--run-dir" in err
    assert sorted(os.listdir(tmp_path)) == sorted(n for n in os.listdir(checkpoints) if "128" in n)  # nothing made
    code, out, err = _run(["--resume", loose, "--run-dir", str(tmp_path / "run"), "--print-config"], capsys)
    assert code == 0 and json.loads(out)["run_dir"] == str(tmp_path / "run"), err


def test_resume__a_policy_file_is_refused_before_any_other_problem(
    base: str, capsys: pytest.CaptureFixture
) -> None:
    policy = os.path.join(base, "runs", "selfplay", "policy.zip")
    for extra in ([], ["--print-config"], ["--net-arch", "32"]):
        code, out, err = _run(["--resume", policy, "--total-timesteps", "64", *extra], capsys)
        line = _one_line_error(err)
        assert code == 2 and out == "" and "policy.state.pkl is missing" in line, extra
        assert "total_timesteps" not in line


REFUSED_ON_RESUME = [
    (["--net-arch", "32,32"], "net_arch: checkpoint has [16]"),
    (["--activation", "tanh"], "activation: checkpoint has 'relu'"),
    (["--num-players", "3"], "num_players"),
    (["--rule", "draw=1"], "rules.draw"),
    (["--privileged-critic"], "privileged_critic: checkpoint has False"),
    (["--mode", "single", "--num-envs", "4"], "num_tables (--num-tables) applies only to mode vector"),
    (["--n-steps", "32"], "n_steps: checkpoint has 16"),
    (["--num-tables", "4"], "sub-envs: checkpoint has 4"),
    (["--seed", "3"], "seed: checkpoint has 0"),
    (["--total-timesteps", "64"], "below the 128 transitions"),
]


@pytest.mark.parametrize(("flags", "message"), REFUSED_ON_RESUME, ids=[" ".join(f) for f, _ in REFUSED_ON_RESUME])
def test_print_config__refuses_what_the_resumed_run_refuses(
    base: str, flags: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    ckpt = os.path.join(base, "runs", "selfplay", "checkpoints", STEP)
    for extra in (["--print-config"], []):  # the same line as the run itself, which trains nothing either
        code, out, err = _run(["--resume", ckpt, *flags, *extra], capsys)
        assert code == 2 and out == "" and message in _one_line_error(err), (flags, extra, err)


def test_print_config__refuses_a_fresh_run_into_a_runs_folder(base: str, capsys: pytest.CaptureFixture) -> None:
    code, out, err = _run(["--run-dir", os.path.join(base, "runs", "selfplay"), "--print-config"], capsys)
    assert code == 2 and out == "" and "already holds a run" in _one_line_error(err)


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (["--no-snapshot-deterministic"], 0),  # self-play: no snapshot is played; off asks for nothing
        (["--snapshot-deterministic"], 2),
        (["--mode", "single", "--no-privileged-critic"], 0),  # single mode has no critic of the table's state
        (["--mode", "single", "--privileged-critic"], 2),
        (["--mode", "single", "--opponent-threads", "1"], 0),
        (["--mode", "single", "--opponent-threads", "2"], 2),
    ],
)
def test_an_option_set_to_its_off_value_passes_where_it_cannot_take_effect(
    flags: list[str], code: int, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    got, _, err = _run([*flags, "--run-dir", str(tmp_path / "run"), "--print-config"], capsys)
    assert got == code, err
    if code == 2:
        assert "privileged_critic" in err or "snapshot_deterministic" in err or "opponent_threads" in err


def test_rllib_backend__a_resume_continues_the_checkpoints_run_folder_too(
    tmp_path: Any, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--backend rllib`` writes ``RUN/checkpoints/step_<N>/`` and ``RUN/final/`` (folders with a
    ``nertz_meta.json``): a resume writes into ``RUN`` too (a record, no training: --print-config)."""
    import nertz_env
    from nertz_env.agents.meta import make_meta

    record = make_meta(nertz_env.make_config(num_players=4), learner_module="learner", num_timesteps=64,
                       mode="rllib", train_config={**TrainConfig().to_dict(), "run_dir": "runs/rl"})
    run = tmp_path / "copy_of_rl"
    for folder in (run / "checkpoints" / "step_000000000064", run / "final", tmp_path / "loose"):
        folder.mkdir(parents=True)
        (folder / "nertz_meta.json").write_text(json.dumps(record))
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    for ckpt in (os.path.join("..", "copy_of_rl", "checkpoints", "step_000000000064") + os.sep,
                 os.path.join("..", "copy_of_rl", "final")):
        code, out, err = _run(["--backend", "rllib", "--resume", ckpt, "--print-config"], capsys)
        assert code == 0, err
        assert os.path.abspath(json.loads(out)["run_dir"]) == str(run), ckpt
    code, out, err = _run(["--backend", "rllib", "--resume", str(tmp_path / "loose"), "--print-config"], capsys)
    assert code == 2 and out == "" and "--run-dir" in _one_line_error(err)
    code, out, err = _run(["--backend", "rllib", "--resume", str(tmp_path / "loose"), "--run-dir", "x",
                           "--print-config"], capsys)
    assert code == 0 and json.loads(out)["run_dir"] == "x", err


def test_resume__into_another_runs_folder_is_refused(base: str, capsys: pytest.CaptureFixture) -> None:
    """An explicit --run-dir that holds a run and is not the checkpoint's own folder would mix two runs'
    checkpoints and eval.csv rows (and keep_checkpoints would prune the other's): refused, as a fresh run there
    is; the checkpoint's own folder, named explicitly, is taken."""
    ckpt = os.path.join(base, "runs", "selfplay", "checkpoints", STEP)
    other = os.path.join(base, "runs", "another")
    os.makedirs(os.path.join(other, "checkpoints"), exist_ok=True)
    open(os.path.join(other, "eval.csv"), "w").close()
    for extra in (["--print-config"], []):
        code, out, err = _run(["--resume", ckpt, "--run-dir", other, "--total-timesteps", "192", *extra], capsys)
        line = _one_line_error(err)
        assert code == 2 and out == "" and "already holds a run (eval.csv)" in line, err
        assert f"continue in {os.path.join(base, 'runs', 'selfplay')}" in line
    code, out, err = _run(["--resume", ckpt, "--run-dir", os.path.join(base, "runs", "selfplay"), "--print-config"],
                          capsys)
    assert code == 0, err


def test_a_folder_holding_a_run__one_refusal_for_a_fresh_run_and_a_resume(
    base: str, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    """A fresh run and a resume sent into a folder that holds another run are refused in one wording (one
    message, in one place: checkpoint.check_run_dir), each with its own way out; a fresh run is told the
    run's last checkpoint to resume."""
    own = os.path.join(base, "runs", "selfplay")
    ckpt = os.path.join(own, "checkpoints", STEP)
    copy = str(tmp_path / "copy")
    shutil.copytree(own, copy)
    last = max(n for n in os.listdir(os.path.join(copy, "checkpoints")) if n.endswith(".zip"))
    head = f"nertz-train: error: run_dir {copy} already holds a run (checkpoints/{STEP})"
    why = ": the two runs' checkpoints and eval.csv rows would mix; "
    for extra in (["--print-config"], []):
        code, out, err = _run(["--run-dir", copy, *extra], capsys)
        assert code == 2 and out == "" and _one_line_error(err) == (
            head + why + f"pass a new --run-dir, or continue that run with --resume {copy}/checkpoints/{last}"
        )
        code, out, err = _run(["--resume", ckpt, "--run-dir", copy, *extra], capsys)
        assert code == 2 and out == "" and _one_line_error(err) == (
            head + f" and is not the folder of {ckpt}" + why
            + f"leave out --run-dir to continue in {own}, the run {ckpt} belongs to, or pass a new --run-dir"
        )
