"""Shared test setup: one torch thread (2-core machines), the variants list, card-conservation checks, Ray
clusters on loopback only."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
import sys
from collections.abc import Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

try:  # training tests use torch; on 2 cores more threads collapse throughput
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def card_counts(state) -> np.ndarray:  # type: ignore[no-untyped-def]
    """(tables, players, 53) counts of every card code each seat's deck has across the table (jokers -> 52).

    Vectorised over the batch so the invariant can be checked after every tick of thousands of games.
    """
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


# ---------------------------------------------------------------- isolated tests (their own venvs, clusters)
# Tests marked ``isolated`` build virtual environments of their own (the built wheel on every Python, clients
# whose pins conflict with the dev extras) or start clusters; they take minutes, so the README's test command
# skips them with a reason and CI runs them in a phase of their own: ``pytest -m isolated --isolated``.
# Tests marked ``long`` (the heaviest, over about 10 s each: the README's benchmark commands shrunk, the ladder's
# order, a longer training run, ...) are skipped the same way and run in CI's "long tests" phase:
# ``pytest -m long --long``.
SKIPPED_UNLESS = {
    "isolated": "builds its own venvs or cluster; run with pytest -m isolated --isolated (CI's isolated phase)",
    "long": "a long test; run with pytest -m long --long (CI's long-tests phase)",
}


def pytest_addoption(parser) -> None:  # type: ignore[no-untyped-def]
    for marker in SKIPPED_UNLESS:
        parser.addoption(
            f"--{marker}",
            action="store_true",
            default=False,
            help=f"run the tests marked {marker} (CI's '{marker}' phase)",
        )


def pytest_collection_modifyitems(config, items) -> None:  # type: ignore[no-untyped-def]
    import pytest

    for marker, reason in SKIPPED_UNLESS.items():
        if config.getoption(f"--{marker}"):
            continue
        skip = pytest.mark.skip(reason=f"{marker}: {reason}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


# ---------------------------------------------------------------- tests that need an extra that is missing
# pytest from an unpacked sdist with only some extras installed: a test that fails because a module of an
# extra is not installed is reported as skipped, naming the extra. The failure is an ImportError naming the
# module, or a message naming the extra as the package's own messages do ("needs the train extra"),
# or a command's output in an assertion (a subprocess's "No module named 'openskill'"). Only when a module of
# that extra really is missing here: with the extras installed, the same failure stays a failure.
def _missing_extra(exc: BaseException) -> str | None:
    import importlib.util
    import re

    from nertz_env.extras import EXTRAS, extra_of

    def absent(module: str) -> bool:
        return importlib.util.find_spec(module.split(".")[0]) is None

    names = [exc.name] if isinstance(exc, ImportError) and exc.name else []
    text = str(exc)
    names += re.findall(r"No module named \\*['\"]([\w.]+)", text)  # also inside a repr (\\')
    for name in names:
        extra = extra_of(name)
        if extra and absent(name):
            return extra
    for extra in re.findall(r"the (\w+) extra", text):
        if extra in EXTRAS and any(absent(m) for m in EXTRAS[extra]):
            return extra
    return None


def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    if call.when != "call" or call.excinfo is None:
        return None
    extra = _missing_extra(call.excinfo.value)
    if extra is None:
        return None
    import pytest

    report = pytest.TestReport.from_item_and_call(item, call)
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0, f"needs the {extra} extra: pip install '.[{extra}]'")
    return report


def restore_sigint() -> None:
    """``preexec_fn`` for a child process a test sends SIGINT to (a user's Ctrl-C).

    A shell that runs the suite in the background without job control (``cmd &`` in a script, ``nohup``) starts
    it with SIGINT ignored, and an ignored signal stays ignored across exec: Python then installs no
    KeyboardInterrupt handler and the child never sees the Ctrl-C. Resetting SIGINT to its default before exec
    gives the child what a terminal gives it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)



# ---------------------------------------------------------------- Ray clusters on loopback only
CLONE_NEWNET = 0x40000000  # <sched.h>
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1  # <linux/sockios.h>, <net/if.h>
IFREQ = "16sH22x"  # struct ifreq: the interface's name, its flags


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """This thread, and every process it starts, in a network namespace of its own that holds only loopback
    (``unshare -n``, then ``ip link set lo up``, without either command).

    Ray binds the machine's network address by default; in here the only address is 127.0.0.1, so a cluster
    started inside (its nodes, and the drivers a test runs: they inherit the namespace) sends nothing off
    loopback. The thread returns to its own namespace at the end. Needs CAP_SYS_ADMIN (root): without it the
    test is skipped, and fails on CI (CI=true), which must not pass it silently."""
    import pytest

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
