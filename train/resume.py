"""Ctrl-C in the training commands: stop at a clean point, save, and continue with ``--resume``.

:class:`StopOnSignal` turns the first Ctrl-C or SIGTERM into a request the loop reads; a second stops at once.
:class:`Progress` keeps the last finished step of ``imitate`` and ``expert`` runs and writes it to a folder
(``records_<i>.npz``, ``weights.pt``, then ``resume.json``).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nertz_env.cli import refuse
from nertz_env.threads import limit_threads

FORMAT = "nertz-resume/1"


class Interrupted(KeyboardInterrupt):
    """Stopped by Ctrl-C; ``folder`` holds the state to resume from (``None``: no step had finished)."""

    def __init__(self, folder: str | None, done: str) -> None:
        super().__init__(folder)
        self.folder = folder
        self.done = done  # what the saved state holds, in words


class StopOnSignal:
    """Within ``with``: the first SIGINT or SIGTERM sets :attr:`requested` (the loop saves at its next clean
    point); a second raises ``KeyboardInterrupt`` at once. Outside the main thread it installs nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, prog: str, where: str) -> None:
        self.prog, self.where = prog, where
        self.requested = False
        self._old: list[Any] = []

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        what = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        print(f"\n{self.prog}: {what}: stopping after {self.where} to save (Ctrl-C again: stop at once)",
              file=sys.stderr, flush=True)

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            self._old = [signal.signal(sig, self._handle) for sig in self.SIGNALS]
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in zip(self.SIGNALS, self._old, strict=False):
            signal.signal(sig, old)
        self._old = []


class Progress:
    """The last finished step of a run of the command ``kind`` (``"imitate"``, ``"expert"``) with ``options``,
    every option that decides its result: a resume must be of the same command, with the same options."""

    def __init__(self, kind: str, options: Mapping[str, Any]) -> None:
        self.kind = kind
        self.options = json.loads(json.dumps(dict(options), default=list))  # as resume.json reads it back
        self.step = 0  # the next step to run
        self.records: list[Any] = []  # Demonstrations, in the order the command keeps them
        self.weights: dict[str, Any] | None = None
        self.figures: dict[str, Any] = {}
        self.done = ""

    def mark(self, step: int, records: Sequence[Any], policy: Any, done: str, **figures: Any) -> None:
        """Step ``step - 1`` finished: keep the records (no copy: the commands never change them in place) and
        a copy of the network's weights."""
        self.step = step
        self.records = list(records)
        self.weights = {k: v.detach().clone() for k, v in policy.state_dict().items()}
        self.figures.update(figures)
        self.done = done

    def save(self, folder: str) -> str:
        """Write the state to ``folder`` (``resume.json`` last: without it the folder is not resumable);
        returns the folder."""
        import torch

        os.makedirs(folder, exist_ok=True)
        marker = os.path.join(folder, "resume.json")
        if os.path.exists(marker):  # an older state: it no longer goes with the new files
            os.remove(marker)
        for i, d in enumerate(self.records):
            d.save(os.path.join(folder, f"records_{i}.npz"))
        torch.save(self.weights, os.path.join(folder, "weights.pt"))
        info = {"format": FORMAT, "kind": self.kind, "options": self.options, "step": self.step, "done": self.done,
                "figures": self.figures, "records": len(self.records)}
        with open(marker + ".tmp", "w", encoding="utf-8") as f:
            json.dump(info, f, indent=1)
        os.replace(marker + ".tmp", marker)
        return folder

    def load(self, folder: str, read_record: Callable[[str], Any]) -> None:
        """Read the state of ``folder``, each record with ``read_record(path)``; ``ValueError`` (one line) when
        it is not this command's, or was started with other options."""
        import torch

        path = os.path.join(folder, "resume.json")
        if not os.path.isfile(path):
            raise ValueError(f"--resume {folder}: no resume.json there (a folder an interrupted run printed)")
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
        if info.get("format") != FORMAT or info.get("kind") != self.kind:
            raise ValueError(f"--resume {folder}: not the state of an interrupted {self.kind} run")
        old = info["options"]
        changed = [f"{k}: the run has {old.get(k)!r}, this command {v!r}" for k, v in self.options.items()
                   if old.get(k) != v]
        if changed:
            raise ValueError(f"--resume {folder} continues a run with other options ({'; '.join(changed)}): "
                             "give the options it was started with")
        self.records = [read_record(os.path.join(folder, f"records_{i}.npz")) for i in range(info["records"])]
        self.weights = torch.load(os.path.join(folder, "weights.pt"), weights_only=True)
        self.step, self.figures, self.done = int(info["step"]), dict(info["figures"]), str(info["done"])


def interrupted_message(prog: str, argv: Sequence[str], stop: Interrupted) -> str:
    """Where the state went, and the command that continues: ``argv`` with ``--resume`` the folder."""
    if stop.folder is None:
        return f"{prog}: interrupted before its first step finished: nothing to save"
    kept = [a for i, a in enumerate(argv) if not (a == "--resume" or a.startswith("--resume=")
                                                  or (i and argv[i - 1] == "--resume"))]
    return (f"{prog}: interrupted; saved {stop.done} in {stop.folder}\n"
            f"resume with: {prog} {shlex.join([*kept, '--resume', stop.folder])}")


def run_command(prog: str, argv: Sequence[str] | None, work: Callable[[], Any], threads: int = 1,
                summary: Callable[[Any], Any] = lambda result: result) -> int:
    """``work()`` for a command's ``main``, in ``threads`` threads: its result's ``summary`` printed as JSON
    (exit 0); bad input prints one line (exit 2), a first Ctrl-C where to resume and a second one that it
    stopped at once (exit 130)."""
    limit_threads(threads)
    try:
        result = work()
    except (FileNotFoundError, ValueError) as e:  # AgentSpecError is a ValueError
        return refuse(prog, e)
    except Interrupted as stop:
        print(interrupted_message(prog, sys.argv[1:] if argv is None else argv, stop), file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's state was being written
        print(f"{prog}: interrupted again: stopped at once", file=sys.stderr)
        return 130
    print(json.dumps(summary(result), indent=2))
    return 0
