"""Ctrl-C as a user gives it: inside a command at a chosen call, to a command once its output shows it under way,
to a server once its page was fetched (POSIX: ``preexec_fn``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from conftest import restore_sigint


def ctrl_c_at(monkeypatch: Any, owner: Any, name: str, call: int, sigint: bool = True) -> Any:
    """Ctrl-C at call number ``call`` of ``owner.name``: a SIGINT as a terminal sends it, or the
    KeyboardInterrupt it raises by default. Returns the function replaced."""
    real, calls = getattr(owner, name), [0]

    def stopping(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        if calls[0] == call and sigint:
            signal.raise_signal(signal.SIGINT)
        elif calls[0] == call:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(owner, name, stopping)
    return real


def signal_when(argv: list[Any], ready: Callable[[str], bool], sig: int, timeout: float, watch: str = "stdout",
                **popen: Any) -> tuple[int, str]:
    """Start ``argv``, send it ``sig`` once ``ready`` holds for its ``watch`` stream so far (read in chunks: a
    progress bar's updates count), and wait for its end: its exit code and what it printed on the streams piped
    (both, unless ``popen`` sends one elsewhere)."""
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "env": {**os.environ, "PYTHONUNBUFFERED": "1"},
             **popen}
    proc = subprocess.Popen(argv, preexec_fn=restore_sigint, **popen)
    out = {name: bytearray() for name in ("stdout", "stderr") if popen[name] == subprocess.PIPE}

    def pump(name: str) -> None:
        while chunk := getattr(proc, name).read1(4096):
            out[name].extend(chunk)

    threads = [threading.Thread(target=pump, args=(name,), daemon=True) for name in out]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not ready(out[watch].decode(errors="replace")):
            assert proc.poll() is None and time.monotonic() < deadline, out[watch].decode(errors="replace")[-2000:]
            time.sleep(0.1)
        proc.send_signal(sig)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()  # never left running (it would slow every later test)
            proc.wait()
    for thread in threads:
        thread.join(timeout=10)
    return proc.returncode, "\n".join(text.decode(errors="replace") for text in out.values())


def serve_and_fetch(argv: list[Any], ready: str, where: str = "", **popen: Any) -> str:
    """Start a server, read its output up to the line with ``ready`` and an address, fetch that page, then stop
    the server with a Ctrl-C, as a user does: the page's text."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=restore_sigint, **popen)
    timer = threading.Timer(600, proc.kill)  # a server that never says where it is
    timer.start()
    seen: list[str] = []
    try:
        for line in proc.stdout or []:  # ends when the server does
            seen.append(line)
            if ready in line and (url := re.search(r"https?://[^\s)]+", line)):
                with urllib.request.urlopen(url.group(0), timeout=60) as page:
                    assert page.status == 200, f"{where}\n{url.group(0)} answered {page.status}"
                    return page.read().decode()
        raise AssertionError(f"{where}\nno {ready!r} line with an address (exit {proc.wait()}):\n" + "".join(seen))
    finally:
        timer.cancel()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
