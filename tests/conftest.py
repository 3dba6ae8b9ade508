"""Shared test setup: one torch thread (2-core machines), the variants list, card-conservation checks, Ray
clusters on loopback only."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import http.server
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

try:  # training tests use torch; on 2 cores more threads collapse throughput
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def card_counts(state) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(tables, players, 53): how many of each card code (jokers: 52) each seat's deck has on the table."""
    t, p = state.nertz_len.shape
    bins = 53
    idx_parts = []

    def add(cards: np.ndarray, valid: np.ndarray, seat: np.ndarray) -> None:
        codes = np.where(cards >= 52, 52, cards).astype(np.int64)
        tt = np.broadcast_to(np.arange(t).reshape((t,) + (1,) * (cards.ndim - 1)), cards.shape)
        flat = (tt * p + seat) * bins + codes
        idx_parts.append(flat[valid])

    seat_p = np.arange(p).reshape(1, p, 1)
    k = np.arange(13)
    add(state.nertz, k < state.nertz_len[..., None], np.broadcast_to(seat_p, state.nertz.shape))
    add(state.work, k < state.work_len[..., None], np.broadcast_to(seat_p[..., None], state.work.shape))
    kd = np.arange(state.stock.shape[2])
    add(state.stock, kd < state.stock_len[..., None], np.broadcast_to(seat_p, state.stock.shape))
    add(state.waste, kd < state.waste_len[..., None], np.broadcast_to(seat_p, state.waste.shape))
    lake = state.lake.astype(np.int64)
    real = np.where(lake >= 64, 52, lake)
    fvalid = k < state.lake_len[..., None]
    add(real, fvalid, state.lake_owner.astype(np.int64))
    counts = np.bincount(np.concatenate(idx_parts), minlength=t * p * bins)
    return counts.reshape(t, p, bins)


def expected_counts(jokers: int) -> np.ndarray:
    e = np.ones(53, dtype=np.int64)
    e[52] = jokers
    return e


# Markers the README's test command skips, with a reason; CI runs each in a phase of its own (pytest -m long --long).
SKIPPED_UNLESS = {
    "isolated": "builds its own venvs or cluster; run with pytest -m isolated --isolated (CI's isolated phase)",
    "long": "a long test; run with pytest -m long --long (CI's long-tests phase)",
}


def pytest_addoption(parser) -> None:  # type: ignore[no-untyped-def]
    for marker in SKIPPED_UNLESS:
        parser.addoption(f"--{marker}", action="store_true", help=f"run the tests marked {marker}")


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    for marker, reason in SKIPPED_UNLESS.items():
        if not config.getoption(f"--{marker}"):
            for item in items:
                if marker in item.keywords:
                    item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))


def run_main(main: Any, argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of a command's ``main`` (argparse's errors exit through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, prog: str) -> str:
    """``err`` is one line of ``prog``'s error and no traceback: that line."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error:") and "Traceback" not in err, err
    return lines[0]


def restore_sigint() -> None:
    """``preexec_fn`` for a child process a test sends SIGINT to: a suite started in the background (``cmd &``)
    has SIGINT ignored, and an ignored signal stays ignored across exec; a terminal gives it the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# ---------------------------------------------------------------- Ray clusters on loopback only
CLONE_NEWNET = 0x40000000  # <sched.h>
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>
IFREQ = "16sH22x"  # struct ifreq: the interface's name, its flags


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """This thread and every process it starts in a network namespace holding only loopback (``unshare -n``,
    ``ip link set lo up``): a Ray cluster started inside sends nothing off 127.0.0.1. Needs CAP_SYS_ADMIN:
    without it the test is skipped, and fails on CI (CI=true)."""
    if sys.platform != "linux":
        pytest.skip("Ray runs in a network namespace of loopback only, which only Linux has")
    import fcntl  # Linux's, as the namespace is: this module must import on Windows too

    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            why = f"cannot make a network namespace of loopback only: {os.strerror(ctypes.get_errno())}"
            (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(why)
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                flags = struct.unpack(IFREQ, fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack(IFREQ, b"lo", 0)))[1]
                fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))
            assert [name for _, name in socket.if_nameindex()] == ["lo"]
            yield
        finally:
            if libc.setns(own, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back to the test's own network namespace")
    finally:
        os.close(own)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """The browser tests' Chromium (NERTZ_CHROMIUM, else Debian's) through Playwright, one a module, with no
    network of its own (no background requests, no updates)."""
    from playwright import sync_api

    path = os.environ.get("NERTZ_CHROMIUM", "/usr/bin/chromium")
    if not os.path.exists(path):
        pytest.skip(f"no chromium at {path} (apt-get install -y chromium, or set NERTZ_CHROMIUM)")
    args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update"]
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=args)
        try:
            yield b
        finally:
            b.close()


def watched_page(browser: Any, width: int, height: int,
                 allowed: tuple[str, ...] | None = None) -> tuple[Any, list[str]]:
    """A new tab of ``browser`` and the problems it meets: script errors and, with ``allowed`` (URL prefixes),
    requests elsewhere and requests that failed."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    if allowed is not None:
        page.on("request", lambda r: r.url.startswith(allowed) or problems.append(f"left the site: {r.url}"))
        page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    return page, problems


@contextlib.contextmanager
def loopback_http(directory: str) -> Iterator[str]:
    """``directory`` served quietly (from a thread) on a free port of 127.0.0.1; yields its address."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
