"""The installed commands (``[project.scripts]``): each imports its module only when run, so a missing extra
is one line naming the extra to install (exit 2), never a ``ModuleNotFoundError`` traceback, whether the module
is missing at import (``nertz-eval`` without openskill) or when a run needs it (``nertz-replay --gif`` without
the render extra).

:data:`COMMANDS` is the one list of commands, their code and the extras they need; the README's command list
and ``tests/test_packaging.py`` check against it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from nertz_env.extras import missing_extra_message

# command -> (module:function, the extras it needs, first the one it always needs; what the README says)
COMMANDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "nertz-demo": ("nertz_env.eval.demo:main", ("eval",), "eval"),
    "nertz-train": ("nertz_env.train.cli:main", ("train", "rllib"), "train (rllib for --backend rllib)"),
    "nertz-eval": (
        "nertz_env.eval.cli:main",
        ("eval", "train", "rllib"),
        "eval (train for a .zip that samples or was trained outside nertz-train; rllib for RLlib checkpoints)",
    ),
    "nertz-play": ("nertz_env.play.cli:main", ("play", "train"), "play (train for a .zip that samples or was trained outside nertz-train)"),
    "nertz-replay": ("nertz_env.replay_cli:main", ("render",), "nothing for the page; render for --gif and --mp4"),
}


#: the exit code of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130


def run(command: str, argv: Sequence[str] | None = None, *, die_by_signal: bool = False) -> int:
    """Run ``command``'s main; an import of a missing extra's module becomes one line on stderr and exit 2.

    A Ctrl-C the command does not handle itself (``nertz-eval`` and ``nertz-train`` save what they finished;
    ``nertz-play`` closes its game) is one line, not a traceback from wherever it landed: while numba compiles
    the rules on a first run, or while ``nertz-replay`` replays a long game. Then ``run`` returns 130, or with
    ``die_by_signal`` (the installed commands) the process ends by SIGINT as an uncaught Ctrl-C would, so a
    shell loop running the command stops too (bash goes on with a loop whose command exited normally)."""
    target, extras, _ = COMMANDS[command]
    module, _, function = target.partition(":")
    try:
        main = getattr(importlib.import_module(module), function)
        code = main(argv) if argv is not None else main()
    except ModuleNotFoundError as e:
        message = missing_extra_message(e, command, prefer=extras)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{command}: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        if die_by_signal and os.name == "posix":  # die as a Ctrl-C'd process does (Python's own way, 3.8+)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return EXIT_INTERRUPTED
    return int(code or 0)


def nertz_demo() -> int:
    return run("nertz-demo", die_by_signal=True)


def nertz_train() -> int:
    return run("nertz-train", die_by_signal=True)


def nertz_eval() -> int:
    return run("nertz-eval", die_by_signal=True)


def nertz_play() -> int:
    return run("nertz-play", die_by_signal=True)


def nertz_replay() -> int:
    return run("nertz-replay", die_by_signal=True)
