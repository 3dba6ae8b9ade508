"""The installed commands (``[project.scripts]``): each imports its module only when run, so a missing extra
is one line naming the extra to install (exit 2), never a ``ModuleNotFoundError`` traceback, whether the module
is missing at import (``nertz-eval`` without openskill) or when a run needs it (``nertz-replay --gif`` without
the render extra).

:data:`COMMANDS` is the one list of commands, their code and the extras they need; the README's command list
and ``tests/test_packaging.py`` check against it.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

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
#: the exit code of a command stopped by SIGTERM (128 + SIGTERM)
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """A SIGTERM (``kill PID``, a scheduler or ``docker stop`` ending the job), raised where a Ctrl-C would be,
    so the commands that save what they finished on Ctrl-C (``nertz-train``, ``nertz-eval``) save on it too."""


_terminated: list[int] = []  # the SIGTERMs received while a command ran
_running: list[bool] = []  # [True] while run() has its SIGTERM handler installed


def _on_sigterm(signum: int, frame: object) -> None:
    _terminated.append(signum)
    raise Terminated


def reinstate_sigterm() -> None:
    """Put :func:`run`'s SIGTERM handler back after a library replaced it (``ray.init`` installs one that exits
    at once), so a ``kill`` still saves; nothing outside a command run by :func:`run`."""
    if _running and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


def note_terminated() -> None:
    """Record a SIGTERM that a command's own handler took (it stops gracefully instead of raising), so the
    command still ends by SIGTERM."""
    _terminated.append(signal.SIGTERM)


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` comes of a Ctrl-C (or :class:`Terminated`): it is one, or was raised while one was being
    handled (an error from a ``finally`` or ``__exit__`` that numba's compiler ran while the interrupt unwound
    it replaces the ``KeyboardInterrupt``, which stays in its ``__context__``), or a command running under
    :func:`run` lost one in a callback from C (:func:`_on_unraisable`) before it: numba's compiler then goes
    on without what the callback should have done and fails ("no compiled object yet"). A compile error that
    no interrupt led to is none of these."""
    if _lost:
        return True
    todo: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        todo += [e.__cause__, e.__context__]
    return False


def _on_unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook`` while a command runs: a Ctrl-C (or SIGTERM) that lands in Python code called from
    C where an exception cannot propagate (llvmlite's callbacks while numba compiles, a ``__del__``) is not
    lost with a traceback printed: the signal is raised again, to land at the next line of ordinary Python
    code, where the command handles it. Anything else goes to the hook that was there before."""
    exc = getattr(unraisable, "exc_value", None)
    if isinstance(exc, KeyboardInterrupt) and _running and threading.current_thread() is threading.main_thread():
        _lost.append(1)
        # from another thread, a moment later: raised from here (or at once) it would land in this hook, or in
        # the callback still running, and be lost again; one landing in the next callback comes back here
        again = threading.Timer(REINTERRUPT_AFTER, _reinterrupt,
                                args=(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT,))
        again.daemon = True
        try:
            again.start()
            _again.append(again)
            return
        except RuntimeError:  # no thread to be had: the old way, a traceback and the interrupt lost
            pass
    if _running and _half_closed(unraisable):
        return
    _previous_unraisablehook(unraisable)


def _half_closed(unraisable: Any) -> bool:
    """Whether ``unraisable`` is llvmlite's ``ObjectRef.__del__`` closing an object whose ``close`` a Ctrl-C cut
    short (between dropping ``_as_parameter_`` and marking it closed): the object was released already, and
    the ``AttributeError`` is noise after the interrupt's one line."""
    exc = getattr(unraisable, "exc_value", None)
    owner = getattr(getattr(unraisable, "object", None), "__module__", None) or ""
    return isinstance(exc, AttributeError) and "'_as_parameter_'" in str(exc) and owner.startswith("llvmlite.")


#: seconds after a lost Ctrl-C that it is raised again (a callback from numba's compiler is over by then)
REINTERRUPT_AFTER = 0.05


def _reinterrupt(signum: signal.Signals) -> None:
    if _running:  # not once the command has ended (by the error numba raised after the loss, say)
        _delivered.append(signum)
        _thread.interrupt_main(signum)


_previous_unraisablehook = sys.unraisablehook
_lost: list[int] = []  # the interrupts lost in a callback from C while a command ran
_again: list[threading.Timer] = []  # the timers raising them again
_delivered: list[int] = []  # the lost interrupts raised again


def _die(signum: int) -> None:
    """End the process by ``signum``, as Python ends one on an uncaught Ctrl-C (3.8+): the exit handlers run
    first, then the signal, at its default, ends the process. Among the handlers is multiprocessing's: it
    releases the semaphores of a worker pool that the Ctrl-C cut short (``nertz-eval --workers 2`` stopped while
    its workers start), which the resource tracker would otherwise report as leaked."""
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def run(command: str, argv: Sequence[str] | None = None, *, die_by_signal: bool = False) -> int:
    """Run ``command``'s main; an import of a missing extra's module becomes one line on stderr and exit 2.

    A Ctrl-C the command does not handle itself (``nertz-eval`` and ``nertz-train`` save what they finished;
    ``nertz-play`` closes its game) is one line, not a traceback from wherever it landed: while numba compiles
    the rules on a first run, or while ``nertz-replay`` replays a long game. Then ``run`` returns 130, or with
    ``die_by_signal`` (the installed commands) the process ends by SIGINT as an uncaught Ctrl-C would, so a
    shell loop running the command stops too (bash goes on with a loop whose command exited normally).

    A SIGTERM is raised as :class:`Terminated`, a ``KeyboardInterrupt``: what a command saves on Ctrl-C it saves
    on ``kill PID`` too (a background job started from a script ignores SIGINT, so ``kill`` is how such a run
    is stopped). The command then ends by SIGTERM (with ``die_by_signal``) or returns 143.

    The interrupt is one line wherever it lands during a first compile (a cold numba cache): where Python
    cannot raise it (numba's compile calls back into Python from C) it is raised again at the next line that
    can (see :func:`_on_unraisable`), and an error numba raised because of it (while it unwound, or after one
    was lost) counts as the interrupt (:func:`caused_by_interrupt`); a compile error without an interrupt
    stays a traceback."""
    target, extras, _ = COMMANDS[command]
    module, _, function = target.partition(":")
    _terminated.clear()
    _lost.clear()
    _delivered.clear()
    on_main = os.name == "posix" and threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, _on_sigterm) if on_main else None
    _running[:] = [True] if on_main else []
    global _previous_unraisablehook
    if on_main:
        _previous_unraisablehook, sys.unraisablehook = sys.unraisablehook, _on_unraisable
    try:
        try:
            main = getattr(importlib.import_module(module), function)
            code = main(argv) if argv is not None else main()
        finally:
            _running.clear()
            for again in _again:  # the command has ended: a lost interrupt is not raised again after it
                again.cancel()
            _again.clear()
            if old is not None:
                signal.signal(signal.SIGTERM, old)
            if on_main:
                sys.unraisablehook = _previous_unraisablehook
    except ModuleNotFoundError as e:
        message = missing_extra_message(e, command, prefer=extras)
        if message is None:
            if caused_by_interrupt(e):  # an import cut short by the Ctrl-C
                return _interrupted(command, die_by_signal)
            raise
        print(message, file=sys.stderr)
        return 2
    except BaseException as e:
        if isinstance(e, SystemExit) or not caused_by_interrupt(e):  # a command's own exit code stands
            raise
        return _interrupted(command, die_by_signal)
    if len(_lost) > len(_delivered) and not code:  # it ended before a lost Ctrl-C could be raised again
        return _interrupted(command, die_by_signal)
    return _finish(code, die_by_signal)


def _interrupted(command: str, die_by_signal: bool) -> int:
    print(f"{command}: {'terminated (SIGTERM)' if _terminated else 'interrupted (Ctrl-C)'}", file=sys.stderr,
          flush=True)
    return _finish(EXIT_INTERRUPTED, die_by_signal)


def _finish(code: Any, die_by_signal: bool) -> int:
    if _terminated:  # whatever the command made of it (saved and returned 130, or returned 0 as nertz-play does)
        code = EXIT_TERMINATED
    if die_by_signal and os.name == "posix" and code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        _die(signal.SIGTERM if code == EXIT_TERMINATED else signal.SIGINT)
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
