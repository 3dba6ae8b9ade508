"""The command line: the shared ``--rule`` flag and one-line refusals (``nertz_env.cli``), how a command ends
(Ctrl-C or SIGTERM: one line, exit 130), and what the commands print. nertz-eval's refusals: test_eval.py."""

from __future__ import annotations

import csv
import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nertz_env.cli import Parser, add_rule_flag, at_least, commands, parse_rule, rule_flag
from nertz_env.config import make_config

ROOT = Path(__file__).resolve().parents[1]


def _parser(command: str) -> Any:
    return importlib.import_module(f"nertz_env.{command}.cli").build_parser()


# ---------------------------------------------------------------- one --rule flag, one parser
@pytest.mark.parametrize(("command", "head"), [("eval", ["round-robin", "random"]), ("play", []), ("train", [])])
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("draw=1", 1),
        ("max_redeals=none", None),
        ("max_redeals=null", None),
        ("max_redeals=None", None),
        ("allow_tuck=true", True),
        ("allow_tuck=False", False),
        ("teams=[[0, 2], [1, 3]]", [[0, 2], [1, 3]]),
        ("call_mode=manual", "manual"),
        ('call_mode="manual"', "manual"),
    ],
)
def test_rule__a_value_means_the_same_in_every_command(command: str, head: list[str], text: str, value: Any) -> None:
    key = text.partition("=")[0]
    assert _parser(command).parse_args([*head, "--rule", text]).rule == {key: value}
    make_config(num_players=4, **{key: value})  # and the rules take it
    assert parse_rule(rule_flag(key, value).removeprefix("--rule ")) == (key, value)  # as refusals spell it


@pytest.mark.parametrize(
    ("command", "head", "flag"),
    [("eval", ["round-robin", "random"], "--players"), ("play", [], "--players"), ("train", [], "--num-players")],
)
def test_rule__the_table_size_is_refused_naming_the_commands_own_flag(
    command: str, head: list[str], flag: str, capsys: Any
) -> None:
    with pytest.raises(SystemExit):
        _parser(command).parse_args([*head, "--rule", "num_players=3"])
    assert f"argument --rule: give the table size with {flag}, not as a rule" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--rule", "draw"], "argument --rule: takes key=value (e.g. --rule draw=1), got 'draw'"),
        (["--rule", "draw=1", "--rule", "draw=3"], "argument --rule: draw is given twice (1 and 3): give it once"),
        (["--players", "3", "--players", "4"], "--players is given twice (the last would win silently): give it once"),
        (["--players", "3", "--seats", "4"], "--players and --seats both set players (the last would win silently): give it once"),
        (["--play", "4"], "unrecognized arguments: --play 4"),
        (["--players", "x"], "argument --players: invalid int value: 'x'"),
        (["--deals", "0"], "argument --deals: must be at least 1, got 0"),
        (["--scale", "nan"], "argument --scale: must be at least 0.1, got nan"),
    ],
)
def test_parser__bad_input_is_one_line_and_exit_2(argv: list[str], error: str, capsys: Any) -> None:
    parser = Parser(prog="nertz-x")
    parser.add_argument("--players", type=int)
    parser.add_argument("--seats", dest="players", type=int)
    parser.add_argument("--deals", type=at_least(1))
    parser.add_argument("--scale", type=at_least(0.1, 4, float))
    add_rule_flag(parser)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"nertz-x: error: {error} (see --help)\n"


LONG = "x" * 5000
REFUSED_SHORT = [
    ("eval", ["round-robin", "random", LONG]),
    ("eval", ["round-robin", "random", "--deals", LONG]),  # argparse's own refusal repeats the value
    ("play", ["--opponent", LONG]),
    ("play", ["--host", "x" * 70]),  # a label too long for a host name: a UnicodeError, not a gaierror
    ("play", ["--seed", str(2**64)]),  # the env refuses it once the server is up
    ("demo", ["--seed", str(2**64)]),
    ("replay", [LONG + ".jsonl"]),
    ("train", ["--config", LONG]),
    ("train", ["--config", "{deep}"]),  # JSON nested past Python's recursion limit
]


@pytest.mark.parametrize(("command", "argv"), REFUSED_SHORT, ids=[f"{c} {' '.join(a)[:24]}" for c, a in REFUSED_SHORT])
def test_commands__a_refusal_is_one_short_line_and_exit_2(command: str, argv: list[str], tmp_path: Path,
                                                         capsys: Any) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000)
    module, _, function = commands.COMMANDS[f"nertz-{command}"].target.partition(":")
    extra = ["--no-browser", "--replay-dir", str(tmp_path)] if command == "play" else []
    try:
        code = getattr(importlib.import_module(module), function)([*extra, *(a.format(deep=tmp_path / "deep.json") for a in argv)])
    except SystemExit as e:  # argparse's refusals
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and len(err) < 1100, err[:1100]


# ---------------------------------------------------------------- refusals a command makes
def test_make_agent__a_run_folder_points_to_its_policy(tmp_path: Path) -> None:
    from nertz_env.agents import AgentSpecError, make_agent

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    with pytest.raises(AgentSpecError, match=r"run folder with no policy\.zip and nothing in checkpoints/"):
        make_agent(str(run))
    (run / "checkpoints" / "step_000000000128.zip").write_bytes(b"")
    with pytest.raises(AgentSpecError, match=r"step_000000000128\.zip"):
        make_agent(str(run))


# ---------------------------------------------------------------- how a command ends
def _ctrl_c(argv: Any) -> int:
    raise KeyboardInterrupt


def _kill(argv: Any) -> int:
    os.kill(os.getpid(), signal.SIGTERM)
    return 0  # never reached: the signal raises where it lands


POSIX = pytest.mark.skipif(os.name != "posix", reason="SIGTERM to itself")


@pytest.mark.parametrize(("main", "said"), [(_ctrl_c, "interrupted (Ctrl-C)"),
                                            pytest.param(_kill, "terminated (SIGTERM)", marks=POSIX)])
def test_run__a_ctrl_c_or_sigterm_is_one_line_exit_130(main: Any, said: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: Any) -> None:
    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setitem(commands.COMMANDS, "nertz-x", commands.Command(f"{__name__}:{main.__name__}", (), ""))
    assert commands.run("nertz-x", []) == 130
    assert capsys.readouterr().err == f"nertz-x: {said}\n"
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is the command's only


INSTALLED = """
import multiprocessing as mp, sys
from nertz_env.cli import commands

def main(argv=None):
    global lock
    lock = mp.get_context("spawn").Lock()  # a resource the exit handlers release, as a worker pool's queues
    raise KeyboardInterrupt

commands.COMMANDS["nertz-demo"] = commands.Command("__main__:main", (), "")
sys.exit(commands.nertz_demo())
"""


@pytest.mark.skipif(os.name != "posix", reason="ends by a signal on POSIX only")
def test_installed_command__a_ctrl_c_ends_it_by_sigint_after_one_line(tmp_path: Path) -> None:
    """As on an uncaught Ctrl-C: a shell sees 130 (a loop around it stops) and exit handlers run."""
    out = subprocess.run([sys.executable, "-c", INSTALLED], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGINT, out.stderr
    assert out.stderr == "nertz-demo: interrupted (Ctrl-C)\n"


# ---------------------------------------------------------------- outside Linux's defaults
# macOS and Windows have no os.sched_getaffinity and start worker processes with spawn: a sitecustomize on the
# path gives this Python, and the workers it starts, both. CI runs the suite on those systems themselves.
ELSEWHERE = 'import multiprocessing, os\ndel os.sched_getaffinity\nmultiprocessing.set_start_method("spawn", force=True)\n'
COMMANDS_ELSEWHERE = """
import os, nertz_env
from nertz_env.eval.cli import main as nertz_eval
from nertz_env.train.cli import main as nertz_train
assert not hasattr(os, "sched_getaffinity")
v = nertz_env.vector_env(300, 2)  # at least PARALLEL_MIN_TABLES: stepped on the engine's threads
v.reset(seed=0), v.step(v.sample_actions())
assert nertz_train(["--num-tables=2", "--n-steps=16", "--batch-size=64", "--n-epochs=1", "--net-arch=16",
    "--checkpoint-every=0", "--eval-deals=0", "--no-progress-bar", "--no-tensorboard", "--total-timesteps=128",
    "--run-dir=run"]) == 0
assert nertz_eval(["round-robin", "random", "greedy", "--deals=2", "--workers=2", "--no-progress", "--out=ev"]) == 0
"""


@pytest.mark.long
def test_commands__run_without_sched_getaffinity_and_with_spawned_workers(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="needs the train extra")
    (tmp_path / "sitecustomize.py").write_text(ELSEWHERE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", COMMANDS_ELSEWHERE], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "run" / "policy.zip").is_file() and (tmp_path / "ev" / "results.json").is_file()


@pytest.mark.skipif(sys.platform != "linux", reason="an ASCII C locale stands in for Windows' code pages")
def test_nertz_eval__a_stdout_that_cannot_take_its_table_loses_nothing(tmp_path: Path) -> None:
    """A stdout without σ (Windows' ANSI code pages): the table is printed and the files are saved."""
    code = "import sys; from nertz_env.cli.commands import nertz_eval; sys.exit(nertz_eval())"  # the installed command
    legacy = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    out = subprocess.run([sys.executable, "-c", code, "round-robin", "random", "greedy", "--deals", "1", "--no-progress",
                          "--no-plots", "--out", "ev"], cwd=tmp_path, env=legacy, capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    assert "rating mu ± 2σ" in (tmp_path / "ev" / "table.txt").read_text(encoding="utf-8")


# ---------------------------------------------------------------- what the commands print
def test_nertz_eval__tables_and_files_name_how_each_policy_played(tmp_path: Path, capsys: Any) -> None:
    """A trained policy plays its most probable action (by name or by path) unless told to sample."""
    from nertz_env.agents import make_agent
    from nertz_env.agents.registry import shipped_models
    from nertz_env.eval.cli import main

    ppo = shipped_models()["ppo"]
    assert make_agent(ppo).play == "most probable" and make_agent("ppo").deterministic  # type: ignore[attr-defined]
    sampled = f"{ppo}:deterministic=false"
    out = tmp_path / "out"
    argv = ["round-robin", "ppo", sampled, "random", "--deals", "1", "--workers", "1", "--no-progress", "--no-plots"]
    assert main([*argv, "--out", str(out)]) == 0
    assert f"policies play: ppo: most probable action; {sampled}: sampled from the policy" in capsys.readouterr().out
    assert "policies play:" in (out / "table.txt").read_text()
    rows = {r["agent"]: r["play"] for r in csv.DictReader((out / "summary.csv").open())}
    assert [rows["ppo"], rows[sampled], rows["random"]] == ["most probable", "sampled", ""]
    assert {r["agent"]: r["play"] for r in csv.DictReader((out / "tables.csv").open())}["ppo"] == "most probable"
    saved = json.loads((out / "results.json").read_text())
    assert saved["play"] == [a["play"] for a in saved["summary"]["agents"]] == ["most probable", "sampled", ""]


def test_nertz_train__evaluation_rows_name_how_the_policy_played_and_star_a_gain() -> None:
    pytest.importorskip("sb3_contrib", reason="needs the train extra")
    from nertz_env.agents.registry import shipped_models
    from nertz_env.train.evaluate import EvalRow, evaluate_checkpoint, format_rows

    for deterministic, play in ((True, "most probable"), (False, "sampled")):
        rows = evaluate_checkpoint(shipped_models()["ppo"], ["random"], 4, {}, deals=1, seed=0, deterministic=deterministic)
        assert rows[0].play == play and play in format_rows(rows)

    def row(low: float) -> EvalRow:
        return EvalRow(0, "heuristic", 10, 40, 1.0, 0.5, 0.0, 1.0, low, 2.0, 0.3, 0.2, 0, 1.0, "x.zip")

    above, across = format_rows([row(0.1)]), format_rows([row(-0.1)])
    assert "]*" in above and above.splitlines()[-1] == "  * the 95% interval of diff (policy minus baseline) lies above 0"
    assert "*" not in across and len(across.splitlines()) == 1
