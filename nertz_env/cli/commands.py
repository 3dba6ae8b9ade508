"""The installed commands (``[project.scripts]``) and how a command process ends.

Each command imports its module only when run, so a missing extra is one line naming the extra to install (exit
2), not a ``ModuleNotFoundError`` traceback. Ctrl-C and SIGTERM print one line and exit 130 (docs/guides/install.md).
:data:`COMMANDS` is the one list of commands; the README's command list and ``tests/test_packaging.py`` check it.
"""

from __future__ import annotations

import importlib
import io
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from nertz_env.cli import EXIT_INTERRUPTED, EXIT_USAGE
from nertz_env.extras import missing_extra_message


class Command(NamedTuple):
    """One installed command."""

    target: str  # "module:function", its main
    extras: tuple[str, ...]  # the extras it may need, first the one it always needs
    needs: str  # what the README's command list says it needs


COMMANDS: dict[str, Command] = {
    "nertz-demo": Command("nertz_env.eval.demo:main", ("eval",), "eval"),
    "nertz-train": Command("nertz_env.train.cli:main", ("train", "rllib"), "train (rllib for --backend rllib)"),
    "nertz-eval": Command(
        "nertz_env.eval.cli:main",
        ("eval", "train", "rllib"),
        "eval (train for a .zip that samples or was trained outside nertz-train; rllib for RLlib checkpoints)",
    ),
    "nertz-play": Command("nertz_env.play.cli:main", ("play", "train"), "play (train for a .zip that samples or was trained outside nertz-train)"),
    "nertz-replay": Command("nertz_env.replay.cli:main", ("render",), "nothing for the page; render for --gif and --mp4"),
}


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt("terminated (SIGTERM)")  # a kill stops a command as Ctrl-C does: what it saves, it saves


def run(command: str, argv: Sequence[str] | None = None) -> int:
    """Run ``command``'s main and return its exit code. A missing extra is one line and 2; a Ctrl-C or SIGTERM
    the command leaves is one line (the ``KeyboardInterrupt``'s message, else ``interrupted (Ctrl-C)``) and 130."""
    spec = COMMANDS[command]
    module, _, function = spec.target.partition(":")
    on_main = threading.current_thread() is threading.main_thread()
    for stream in (sys.stdout, sys.stderr):  # a pipe in Windows' code page has no σ: print '?', not a traceback
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    old = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        return int(getattr(importlib.import_module(module), function)(argv) or 0)
    except ModuleNotFoundError as e:
        message = missing_extra_message(e, command, prefer=spec.extras)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        print(f"{command}: {str(e) or 'interrupted (Ctrl-C)'}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def _installed(command: str) -> Callable[[], int]:
    def main() -> int:
        code = run(command)
        if code == EXIT_INTERRUPTED:  # end as Python ends on an uncaught Ctrl-C, by SIGINT: a shell loop stops too
            sys.excepthook = lambda *exc: None  # the command said its one line
            raise KeyboardInterrupt
        return code

    return main


nertz_demo = _installed("nertz-demo")
nertz_train = _installed("nertz-train")
nertz_eval = _installed("nertz-eval")
nertz_play = _installed("nertz-play")
nertz_replay = _installed("nertz-replay")
