"""Every flag and config key of ``nertz-train`` and of the ``python -m nertz_env.train.*`` commands either takes
effect or is refused: an option of a section that does not exist with the others is one line on stderr and exit
code 2 (never a traceback, never a half-made run directory), and what a run adjusts (a budget rounded up to
whole rollouts, a default batch size larger than a rollout) is said before training starts.

The refusals are checked before any training, so these tests train nothing but two runs of 128 transitions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import torch

import nertz_env
from nertz_env.train import TrainConfig, Trainer
from nertz_env.train import cli as train_cli
from nertz_env.train import evaluate as train_evaluate
from nertz_env.train import imitate as train_imitate
from nertz_env.train import plot as train_plot
from nertz_env.train.cli import _opponent, build_parser, config_from_args
from nertz_env.train.config import ConfigError, options, read_config_file, shipped_configs
from nertz_env.train.meta import make_meta

torch.set_num_threads(1)

TINY = {
    "num_tables": 2,
    "n_steps": 16,
    "batch_size": 64,
    "n_epochs": 1,
    "net_arch": [16],
    "checkpoint_every": 0,
    "eval_every": 0,
    "eval_deals": 0,
    "progress_bar": False,
    "tensorboard": False,
}


def _run(main: Callable[[Any], int], argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """Exit code and stderr of a command's ``main`` (argparse's own errors exit through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    return code, capsys.readouterr().err


def _one_line_error(err: str, prog: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prog) and "error:" in lines[0] and "Traceback" not in err, err
    return lines[0]


def _policy_file(path: str, num_players: int, **rules: Any) -> str:
    """A policy file (as imitate writes it) for a table of ``num_players`` seats, without training."""
    from nertz_env.train.imitate import _PolicyHolder, build_policy
    from nertz_env.train.trainer import save_policy

    config = nertz_env.make_config(num_players=num_players, **rules)
    policy, kwargs = build_policy(config, [16])
    return save_policy(_PolicyHolder(policy, kwargs), path, make_meta(config, num_timesteps=0, mode="imitation"))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A finished run of 128 transitions with opponents (one learner per table is two of four seats)."""
    run_dir = str(tmp_path_factory.mktemp("flags_run"))
    cfg = TrainConfig.from_dict(
        {**TINY, "run_dir": run_dir, "learners_per_table": 2, "opponents": {"random": 1.0}, "total_timesteps": 128}
    )
    trainer = Trainer(cfg, log=lambda _: None)
    trainer.train()
    return {"dir": run_dir, "checkpoint": trainer.checkpoints[-1], "config": cfg}


# ---------------------------------------------------------------- nertz-train: refused before any work
REFUSED = [
    # (flags, a piece of the one-line message): one per kind of refusal
    (["--opponent", "search=1"], "--learners-per-table 1"),  # self-play: the pool section does not exist
    (["--mode", "single", "--num-tables", "8"], "num_tables (--num-tables) applies only to mode vector"),
    (["--num-envs", "8"], "num_envs (--num-envs) applies only to mode single"),
    (["--opponent-threads", "2"], "every seat learns"),
    (["--learners-per-table", "1", "--snapshot-every", "5"], "snapshot_weight 0"),
    (["--learners-per-table", "1", "--opponent", "heuristic=0"], "the opponent pool is empty"),
    (["--learners-per-table", "1", "--opponent", "nobody"], "unknown agent 'nobody'"),
    (["--shaping-scale", "2"], "applies only with shaping on"),
    (["--eval-deals", "0", "--eval-seed", "3"], "evaluation off"),
    (["--checkpoint-every", "0", "--keep-checkpoints", "2"], "checkpoint_every 0"),
    (["--batch-size", "99999"], "larger than a rollout"),
    (["--gamma", "1.5"], "gamma must be in (0, 1]"),
    (["--rule", "draw=7"], "rules:"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--num-tables", "8", "--num-tables", "16"], "--num-tables is given twice"),
]


@pytest.mark.parametrize(("flags", "message"), REFUSED, ids=[" ".join(f) for f, _ in REFUSED])
def test_nertz_train__an_option_that_cannot_take_effect_is_one_line_and_exit_2(
    flags: list[str], message: str, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    run_dir = os.path.join(str(tmp_path), "run")
    code, err = _run(train_cli.main, [*flags, "--run-dir", run_dir, "--total-timesteps", "128"], capsys)
    assert code == 2
    assert message in _one_line_error(err, "nertz-train")
    assert not os.path.exists(run_dir)  # nothing half-written


def test_nertz_train__bad_config_files_are_one_line_and_exit_2(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    files = {
        "bad.toml": ("num_tables = = 3\n", "could not be read"),
        "unknown.toml": ("num_tabels = 3\n", "num_tabels"),
        "type.json": (json.dumps({"num_tables": "many"}), "num_tables must be an integer"),
        "list.json": ("[1, 2]", "must hold a table of options"),
        "run.yaml": ("num_tables: 3\n", "use a .toml or .json file"),
    }
    run_dir = os.path.join(str(tmp_path), "run")
    for name, (text, message) in files.items():
        path = os.path.join(str(tmp_path), name)
        with open(path, "w") as f:
            f.write(text)
        code, err = _run(train_cli.main, ["--config", path, "--run-dir", run_dir], capsys)
        assert code == 2 and message in _one_line_error(err, "nertz-train"), name
    code, err = _run(train_cli.main, ["--config", os.path.join(str(tmp_path), "gone.toml")], capsys)
    assert code == 2 and "config file not found" in _one_line_error(err, "nertz-train")
    assert not os.path.exists(run_dir)


def test_nertz_train__init_from_another_table_is_refused_before_the_run_dir(
    tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    three = _policy_file(os.path.join(str(tmp_path), "three.zip"), 3)
    draw1 = _policy_file(os.path.join(str(tmp_path), "draw1.zip"), 4, draw=1)
    run_dir = os.path.join(str(tmp_path), "run")
    for path, message in ((three, "num_players: init_from"), (draw1, "rules.draw: init_from")):
        code, err = _run(train_cli.main, ["--init-from", path, "--run-dir", run_dir], capsys)
        assert code == 2 and message in _one_line_error(err, "nertz-train")
    assert not os.path.exists(run_dir)
    # the opponent pool and the baselines are checked against the table the same way
    code, err = _run(train_cli.main, ["--learners-per-table", "1", "--opponent", three, "--run-dir", run_dir], capsys)
    assert code == 2 and "num_players" in _one_line_error(err, "nertz-train")
    code, err = _run(train_cli.main, ["--eval-opponents", f"random,{draw1}", "--run-dir", run_dir], capsys)
    assert code == 2 and "rules.draw" in _one_line_error(err, "nertz-train")
    # a planner holding a network checks it against the table too (best holds the 4-player ppo)
    code, err = _run(train_cli.main, ["--num-players", "2", "--eval-opponents", "best", "--run-dir", run_dir], capsys)
    assert code == 2 and "num_players" in _one_line_error(err, "nertz-train")
    code, err = _run(train_cli.main, ["--learners-per-table", "1", "--opponent", f"expert:policy={three}",
                                      "--run-dir", run_dir], capsys)
    assert code == 2 and "num_players" in _one_line_error(err, "nertz-train")
    assert not os.path.exists(run_dir)


def test_nertz_train__resume_refuses_what_a_resume_cannot_change(
    run: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    ckpt = run["checkpoint"]
    new_dir = os.path.join(str(tmp_path), "cont")
    cases = [
        (["--total-timesteps", "64"], "below the 128 transitions"),
        (["--seed", "5"], "seed: checkpoint has 0"),
        (["--init-from", ckpt], "applies to a fresh run only"),
        (["--num-tables", "4", "--learners-per-table", "1"], "num_tables: checkpoint has 2"),  # same sub-envs
        (["--num-players", "3"], "num_players"),
    ]
    for flags, message in cases:
        code, err = _run(train_cli.main, ["--resume", ckpt, "--run-dir", new_dir, *flags], capsys)
        assert code == 2 and message in _one_line_error(err, "nertz-train"), flags
    code, err = _run(train_cli.main, ["--resume", os.path.join(str(tmp_path), "gone", "step_1.zip")], capsys)
    assert code == 2 and "checkpoint file not found" in _one_line_error(err, "nertz-train")
    # a copy whose training state was cut short
    import shutil

    from nertz_env.train.meta import sidecar_path
    from nertz_env.train.trainer import state_path

    cut = os.path.join(str(tmp_path), "cut.zip")
    shutil.copy(ckpt, cut)
    shutil.copy(sidecar_path(ckpt), sidecar_path(cut))
    with open(state_path(ckpt), "rb") as src, open(state_path(cut), "wb") as dst:
        dst.write(src.read()[:100])
    code, err = _run(train_cli.main, ["--resume", cut, "--run-dir", new_dir], capsys)
    assert code == 2 and "cannot be read" in _one_line_error(err, "nertz-train")
    assert not os.path.exists(new_dir)


def test_nertz_train__a_fresh_run_into_a_finished_runs_directory_is_refused(
    run: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    a_file = os.path.join(str(tmp_path), "notes.txt")
    open(a_file, "w").close()
    code, err = _run(train_cli.main, ["--run-dir", a_file, "--total-timesteps", "128"], capsys)
    assert code == 2 and "is a file, not a directory" in _one_line_error(err, "nertz-train")
    code, err = _run(train_cli.main, ["--run-dir", run["dir"], "--total-timesteps", "128"], capsys)
    assert code == 2 and "already holds a run" in _one_line_error(err, "nertz-train")
    with pytest.raises(ConfigError, match="already holds a run"):
        Trainer(TrainConfig.from_dict({**TINY, "run_dir": run["dir"]}), log=lambda _: None)


# ---------------------------------------------------------------- nertz-train: adjustments are said
def test_budget__a_total_that_is_not_whole_rollouts_is_said_before_training(tmp_path: Any) -> None:
    # the case: --total-timesteps 100 trained 16,384 without a word
    assert TrainConfig(total_timesteps=100).planned_timesteps() == 16_384
    assert TrainConfig(total_timesteps=16_384 * 3).planned_timesteps() == 16_384 * 3
    assert TrainConfig(total_timesteps=100).planned_timesteps(start=16_384) == 16_384
    lines: list[str] = []
    cfg = TrainConfig.from_dict({**TINY, "run_dir": str(tmp_path), "total_timesteps": 100})
    trainer = Trainer(cfg, log=lines.append)
    trainer.train()
    said = [x for x in lines if "total_timesteps" in x]
    assert said == ["training to 128 transitions, not total_timesteps 100: PPO trains whole rollouts of "
                    "n_steps 16 x 8 sub-envs = 128"]
    assert lines.index(said[0]) < next(i for i, x in enumerate(lines) if x.startswith("checkpoint:"))
    assert trainer.model.num_timesteps == 128


def test_budget__the_command_prints_the_rounded_budget_on_stdout(tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    run_dir = os.path.join(str(tmp_path), "run")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items() if k not in ("net_arch", "progress_bar", "tensorboard")]
    code = train_cli.main([*flags, "--net-arch", "16", "--no-progress-bar", "--no-tensorboard",
                           "--total-timesteps", "100", "--run-dir", run_dir])
    out = capsys.readouterr().out
    assert code == 0
    assert "training to 128 transitions, not total_timesteps 100" in out


def _cfg(**options: Any) -> Any:
    return TrainConfig.from_dict(options)


def test_batch_size__a_default_larger_than_a_rollout_is_lowered_and_said() -> None:
    cfg, notes = _cfg(mode="single").resolve()
    assert cfg.batch_size == 256 and any("batch_size: 256, a whole rollout" in n for n in notes)
    _, notes = _cfg(batch_size=1000).resolve()
    assert any("last minibatch of each epoch has 384 transitions" in n for n in notes)


def test_periodic_work_past_the_end_or_off_a_rollout_multiple_is_said() -> None:
    _, notes = _cfg(total_timesteps=16_384, checkpoint_every=16_384 * 4, eval_deals=0).resolve()
    assert notes == [
        "checkpoint_every is past the end of the run (16,384 transitions): the only one is the final checkpoint"
    ]
    _, notes = _cfg(checkpoint_every=250_000, eval_every=16_384).resolve()
    assert notes == [
        "checkpoint_every 250,000: not a multiple of a rollout (16,384 transitions), so that work is done at "
        "the first rollout boundary at or past each multiple"
    ]
    _, notes = _cfg(learners_per_table=1, snapshot_weight=0.5).resolve()
    assert any("the only snapshot in the pool is the starting policy" in n for n in notes)


def test_sections__a_file_takes_tables_or_the_flags_keys_and_an_absent_section_is_refused_unless_default(
    tmp_path: Any,
) -> None:
    tables = _cfg(vector={"learners_per_table": 1}, pool={"opponents": {"greedy": 1.0}}, shaping={"scale": 2.0},
                  evaluation={"every": 0})
    flat = _cfg(learners_per_table=1, opponents={"greedy": 1.0}, shaping=True, shaping_scale=2.0, eval_every=0)
    assert tables == flat and TrainConfig.from_dict(tables.to_dict()) == tables  # what a checkpoint stores
    assert tables.shaping is not None and tables.shaping.scale == 2.0 and tables.pool is not None
    off = _cfg(eval_deals=0)
    assert off.evaluation is None and off.shaping is None and off.pool is None and off.single is None
    assert "evaluation" not in off.to_dict() and "pool" not in off.to_dict()
    # a default where its section is absent asks for what happens anyway: accepted
    assert _cfg(opponent_threads=1, shaping_scale=1.0, eval_seed=20_240_601, eval_deals=0, snapshot_weight=0) == off
    with pytest.raises(ConfigError, match=r"\[pool\] has no option 'weight'"):
        _cfg(pool={"weight": 1.0})
    with pytest.raises(ConfigError, match="applies only to mode single"):
        _cfg(single={"num_envs": 8}, mode="vector")


def test_resume__changed_opponents_take_effect_and_are_said(run: dict[str, Any], tmp_path: Any) -> None:
    lines: list[str] = []
    cfg = TrainConfig.from_dict(
        {**TINY, "run_dir": str(tmp_path), "learners_per_table": 2, "opponents": {"greedy": 1.0},
         "total_timesteps": 256}
    )
    trainer = Trainer(cfg, resume=run["checkpoint"], log=lines.append)
    assert trainer.pool is not None and [e.spec for e in trainer.pool.scripted] == ["greedy"]
    assert any("the opponent pool is now" in x and "scripted" in x for x in lines)
    lines.clear()
    same = Trainer(run["config"].__class__.from_dict({**run["config"].to_dict(), "run_dir": str(tmp_path)}),
                   resume=run["checkpoint"], log=lines.append)
    assert same.pool is not None and [e.spec for e in same.pool.scripted] == ["random"]
    assert not any("opponent pool" in x for x in lines)


def test_resume__a_new_checkpoint_interval_counts_from_the_resume_point(run: dict[str, Any], tmp_path: Any) -> None:
    cfg = TrainConfig.from_dict(
        {**TINY, "run_dir": str(tmp_path), "learners_per_table": 2, "opponents": {"random": 1.0},
         "total_timesteps": 512, "checkpoint_every": 64}
    )
    trainer = Trainer(cfg, resume=run["checkpoint"], log=lambda _: None)
    assert trainer.next_checkpoint == 192  # not the old schedule's "never" (checkpoint_every was 0)


# ---------------------------------------------------------------- parsing and the key audit
def test_opponent_flag__agent_parameters_keep_their_equals_sign() -> None:
    assert _opponent("heuristic") == ("heuristic", 1.0)
    assert _opponent("search=0.2") == ("search", 0.2)
    assert _opponent("search:rollouts=4") == ("search:rollouts=4", 1.0)  # was ("search:rollouts", 4.0)
    assert _opponent("search:rollouts=4,depth=2=0.5") == ("search:rollouts=4,depth=2", 0.5)
    assert _opponent("runs/x/policy.zip=0.3") == ("runs/x/policy.zip", 0.3)


def test_every_config_key_is_a_flag_and_every_flag_a_config_key() -> None:
    parser = build_parser()
    dests = {a.dest for a in parser._actions} - {"help", "config", "resume", "print_config", "backend"}
    assert dests - {"rule", "opponent"} == {name for name, *_ in options()} - {"rules", "opponents"}
    cfg = config_from_args(parser.parse_args(["--num-tables", "8", "--opponent", "random", "--learners-per-table", "1"]))
    assert cfg.vector is not None and cfg.vector.num_tables == 8 and cfg.pool is not None


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(os.path.dirname(__file__), "..", "train", "configs"))))
def test_every_shipped_config_is_valid_and_needs_no_adjustment(name: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "..", "train", "configs", name)
    cfg = config_from_args(build_parser().parse_args(["--config", path]))
    resolved, notes = cfg.resolve(resume=True)  # resume: the init_from file is phase 1's output, not shipped
    assert resolved == cfg and not any("batch_size" in n for n in notes)


def test_trainer__takes_the_cpus_it_may_use_unless_told(tmp_path: Any) -> None:
    try:
        Trainer(TrainConfig.from_dict({**TINY, "run_dir": str(tmp_path / "a")}), log=lambda _: None)
        assert torch.get_num_threads() == len(os.sched_getaffinity(0))
        Trainer(TrainConfig.from_dict({**TINY, "run_dir": str(tmp_path / "b"), "torch_threads": 1}), log=lambda _: None)
        assert torch.get_num_threads() == 1
        assert os.environ.get("OMP_NUM_THREADS")  # set for the processes it starts, unless the user set it
    finally:
        torch.set_num_threads(1)


# ---------------------------------------------------------------- python -m nertz_env.train.imitate
IMITATE_REFUSED = [
    (["--dagger-samples", "5000"], "--dagger-samples has no effect without DAgger rounds"),
    (["--dagger-epochs", "2"], "--dagger-epochs has no effect without DAgger rounds"),
    (["--samples", "0"], "samples must be at least 1"),
    (["--epochs", "0"], "epochs must be at least 1"),
    (["--batch-size", "0"], "batch_size must be at least 1"),
    (["--lr", "0"], "lr must be a finite number > 0"),
    (["--gamma", "2"], "gamma must be in (0, 1]"),
    (["--teacher-threads", "5"], "teacher_threads must be from 1 to the 4 seats"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--net-arch", ""], "net_arch must list positive layer widths"),
    (["--net-arch", "a,b"], "comma-separated integers"),
    (["--teacher", "nobody"], "unknown agent 'nobody'"),
    (["--players", "9"], "num_players"),
    (["--rule", "target_score=100"], "single rounds"),
    (["--seed", "-3"], "seed must be >= 0"),
]


@pytest.mark.parametrize(("flags", "message"), IMITATE_REFUSED, ids=[" ".join(f) for f, _ in IMITATE_REFUSED])
def test_imitate__bad_options_are_one_line_exit_2_and_write_nothing(
    flags: list[str], message: str, tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    out = os.path.join(str(tmp_path), "bc", "policy.zip")
    ckpt = os.path.join(str(tmp_path), "rounds")
    small = [] if "--samples" in flags else ["--samples", "50"]  # should a case pass, it stays short
    code, err = _run(train_imitate.main, ["--out", out, "--checkpoint-dir", ckpt, *small, *flags], capsys)
    assert code == 2
    assert message in _one_line_error(err, "python -m nertz_env.train.imitate: error:")
    assert not os.path.exists(ckpt) and not os.path.exists(os.path.dirname(out))


def test_imitate__a_teacher_for_another_table_and_an_out_without_zip_are_refused(
    tmp_path: Any, capsys: pytest.CaptureFixture
) -> None:
    three = _policy_file(os.path.join(str(tmp_path), "three.zip"), 3)
    code, err = _run(train_imitate.main, ["--out", os.path.join(str(tmp_path), "p.zip"), "--teacher", three], capsys)
    assert code == 2 and "num_players: teacher" in _one_line_error(err, "python -m nertz_env.train.imitate")
    code, err = _run(train_imitate.main, ["--out", os.path.join(str(tmp_path), "policy")], capsys)
    assert code == 2 and "must end in .zip" in _one_line_error(err, "python -m nertz_env.train.imitate")
    out = os.path.join(str(tmp_path), "p.zip")
    code, err = _run(train_imitate.main, ["--out", out, "--checkpoint-dir", three], capsys)
    assert code == 2 and "is a file, not a directory" in _one_line_error(err, "python -m nertz_env.train.imitate")


# ---------------------------------------------------------------- python -m nertz_env.train.evaluate / plot
def test_evaluate__bad_input_is_one_line_and_exit_2(run: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    draw1 = _policy_file(os.path.join(str(tmp_path), "draw1.zip"), 4, draw=1)
    cases = [
        ([os.path.join(str(tmp_path), "gone")], "run directory not found"),
        ([str(tmp_path)], "has no checkpoints"),
        ([run["dir"], "--deals", "0"], "--deals must be at least 1"),
        ([run["dir"], "--workers", "0"], "--workers must be at least 1"),
        ([run["dir"], "--seed", "-1"], "--seed must be >= 0"),
        ([run["dir"], "--baselines", ","], "--baselines must name an agent"),
        ([run["dir"], "--baselines", "random,random"], "names an agent twice"),
        ([run["dir"], "--baselines", "nobody"], "unknown agent"),
        ([run["dir"], "--baselines", draw1], "rules.draw: baseline"),
        ([run["dir"], "--no-start"], "--no-start has no effect"),
    ]
    before = sorted(os.listdir(run["dir"]))
    for argv, message in cases:
        code, err = _run(train_evaluate.main, argv, capsys)
        assert code == 2, argv
        assert message in _one_line_error(err, "python -m nertz_env.train.evaluate: error:"), argv
    assert sorted(os.listdir(run["dir"])) == before  # no evaluation file was started


def test_plot__bad_input_is_one_line_and_exit_2(run: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("matplotlib")
    bad = os.path.join(str(tmp_path), "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "eval.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    cases = [
        ([os.path.join(str(tmp_path), "gone")], "run directory not found"),
        ([run["dir"]], "eval.csv does not exist"),
        ([run["dir"], "--out", os.path.join(str(tmp_path), "curve.txt")], "must end in .png, .svg or .pdf"),
        ([bad], "not one that nertz-train wrote"),
    ]
    for argv, message in cases:
        code, err = _run(train_plot.main, argv, capsys)
        assert code == 2 and message in _one_line_error(err, "python -m nertz_env.train.plot: error:"), argv


def test_nertz_train__every_flag_says_what_it_means_not_only_its_default() -> None:
    parser = build_parser()
    for action in parser._actions:
        help_text = (action.help or "").split(" (default ")[0]
        assert action.dest == "help" or len(help_text) >= 12, (action.option_strings, action.help)
    text = " ".join(parser.format_help().split())
    for allowed in ("'vector'", "'single'", "'constant' or 'linear'", "'relu' or 'tanh'", "1 to num_players"):
        assert allowed in text, allowed


def test_config__a_shipped_config_by_name_from_any_folder(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # the docs' `--config train/configs/long_run.toml` is a checkout path; an install ships the configs as
    # package data and takes them by name (and by the docs' path) wherever the user stands
    monkeypatch.chdir(tmp_path)
    shipped = shipped_configs()
    assert set(shipped) == {
        f[: -len(".toml")] for f in os.listdir(os.path.join(os.path.dirname(__file__), "..", "train", "configs"))
    }
    expected = read_config_file(shipped["long_run"])
    for spelling in ("long_run", "long_run.toml", "train/configs/long_run.toml"):
        assert read_config_file(spelling) == expected, spelling
    code = train_cli.main(["--config", "long_run", "--print-config"])
    assert code == 0 and json.loads(capsys.readouterr().out)["total_timesteps"] == expected["total_timesteps"]
    code, err = _run(train_cli.main, ["--config", "long_rn", "--print-config"], capsys)
    assert code == 2 and "config file not found: long_rn" in err and "long_run" in err
    assert len(err.strip().splitlines()) == 1
    help_text = build_parser().format_help()
    for name in shipped:
        assert name in help_text


def test_config__a_file_in_the_current_folder_wins_over_a_shipped_name(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "long_run.toml").write_text("num_tables = 3\n")
    assert read_config_file("long_run.toml") == {"num_tables": 3}
    assert read_config_file("long_run") != {"num_tables": 3}  # a bare name is the shipped config
