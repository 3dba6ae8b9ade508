"""What every command shares (``nertz_env.cli``): one ``--rule`` flag that reads a value the same everywhere, and
refusals of one line with exit 2; and how a command ends (``nertz_env.commands.run``): a Ctrl-C or SIGTERM the
command leaves is one line and exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nertz_env import commands
from nertz_env.cli import Parser, add_rule_flag, at_least, parse_rule, rule_flag
from nertz_env.config import make_config

ROOT = Path(__file__).resolve().parents[1]


def _eval_parser() -> Any:
    from nertz_env.eval.cli import build_parser

    return build_parser(), ["round-robin", "random"]


def _play_parser() -> Any:
    from nertz_env.play.cli import build_parser

    return build_parser(), []


def _train_parser() -> Any:
    from nertz_env.train.cli import build_parser

    return build_parser(), []


@pytest.mark.parametrize("command", [_eval_parser, _play_parser, _train_parser], ids=["eval", "play", "train"])
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
def test_rule__a_value_means_the_same_in_every_command(command: Any, text: str, value: Any) -> None:
    parser, head = command()
    key = text.partition("=")[0]
    assert parser.parse_args([*head, "--rule", text]).rule == {key: value}
    make_config(num_players=4, **{key: value})  # and the rules take it
    assert parse_rule(rule_flag(key, value).removeprefix("--rule ")) == (key, value)  # as refusals spell it


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--rule", "draw"], "argument --rule: takes key=value (e.g. --rule draw=1), got 'draw'"),
        (["--rule", "num_players=3"], "argument --rule: give the table size with --players, not as a rule"),
        (["--rule", "draw=1", "--rule", "draw=3"], "argument --rule: draw is given twice (1 and 3): give it once"),
        (["--players", "3", "--players", "4"], "--players is given twice (the last would win silently): give it once"),
        (["--players", "3", "--play", "4"], "--players and --play both set players (the last would win silently): give it once"),
        (["--players", "x"], "argument --players: invalid int value: 'x'"),
        (["--deals", "0"], "argument --deals: must be at least 1, got 0"),
        (["--deals", "x"], "argument --deals: invalid int value: 'x'"),
    ],
)
def test_parser__bad_input_is_one_line_and_exit_2(argv: list[str], error: str, capsys: Any) -> None:
    parser = Parser(prog="nertz-x")
    parser.add_argument("--players", type=int)
    parser.add_argument("--deals", type=at_least(1))
    add_rule_flag(parser)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"nertz-x: error: {error} (see --help)\n"


def _fake_command(monkeypatch: pytest.MonkeyPatch, main: Any) -> None:
    monkeypatch.setitem(commands.COMMANDS, "nertz-x", (f"{__name__}:{main.__name__}", (), ""))


def _ctrl_c(argv: Any) -> int:
    raise KeyboardInterrupt


def _kill(argv: Any) -> int:
    os.kill(os.getpid(), signal.SIGTERM)
    return 0  # never reached: the signal raises where it lands


def test_run__a_ctrl_c_the_command_leaves_is_one_line_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    _fake_command(monkeypatch, _ctrl_c)
    assert commands.run("nertz-x", []) == 130
    assert capsys.readouterr().err == "nertz-x: interrupted (Ctrl-C)\n"


@pytest.mark.skipif(os.name != "posix", reason="SIGTERM to itself")
def test_run__a_sigterm_stops_the_command_as_a_ctrl_c_does(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    before = signal.getsignal(signal.SIGTERM)
    _fake_command(monkeypatch, _kill)
    assert commands.run("nertz-x", []) == 130
    assert capsys.readouterr().err == "nertz-x: terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is the command's only


INSTALLED = """
import multiprocessing as mp, sys
from nertz_env import commands

def main(argv=None):
    global lock
    lock = mp.get_context("spawn").Lock()  # a resource the exit handlers release, as a worker pool's queues
    raise KeyboardInterrupt

commands.COMMANDS["nertz-demo"] = ("__main__:main", (), "")
sys.exit(commands.nertz_demo())
"""


@pytest.mark.skipif(os.name != "posix", reason="ends by a signal on POSIX only")
def test_installed_command__a_ctrl_c_ends_it_by_sigint_after_one_line(tmp_path: Path) -> None:
    """As Python ends on an uncaught Ctrl-C: a shell sees 130 and a shell loop around the command stops, and the
    exit handlers run (no resource_tracker warning of leaked semaphores)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", INSTALLED], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == -signal.SIGINT, out.stderr
    assert out.stderr == "nertz-demo: interrupted (Ctrl-C)\n"
