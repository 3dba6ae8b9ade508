"""Shared pieces of the benchmarks: a fair random masked sampler, timing, table printing, result files."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

OUT = Path(__file__).resolve().parent / "out"


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages; NaN where the system has none (Windows)."""
    return os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3


def commit_of(checkout: Path) -> str | None:
    """The checkout's short commit, the key of a result, with ``+`` when its tracked files differ from it; None
    outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short=7", "HEAD")
    return head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "") if head else None


class MaskedSampler:
    """Uniform random legal action from an int8 mask, the same for every environment compared.

    Uniform numbers are drawn in blocks of 65,536, and the legal indices come from ``mask.nonzero()[0]``
    (0.6 us, where ``np.flatnonzero`` takes 1.8 us: it ravels first), so the sampler's own cost stays small
    next to the env's. Masks are 1-D in every environment measured.
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.buf = self.rng.random(65536)
        self.i = 0

    def __call__(self, mask: np.ndarray) -> int:
        legal = mask.nonzero()[0]
        if self.i == len(self.buf):
            self.buf = self.rng.random(65536)
            self.i = 0
        r = self.buf[self.i]
        self.i += 1
        return int(legal[int(r * len(legal))])

    def choice(self, legal: list[int]) -> int:
        if self.i == len(self.buf):
            self.buf = self.rng.random(65536)
            self.i = 0
        r = self.buf[self.i]
        self.i += 1
        return legal[int(r * len(legal))]


def timed_loop(step: Callable[[], int], seconds: float, warmup: int = 50) -> tuple[int, float]:
    """Call ``step`` (which returns the agent-steps it made) for about ``seconds``; (agent_steps, elapsed)."""
    for _ in range(warmup):
        step()
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(64):
            n += step()
        now = time.perf_counter()
        if now >= deadline:
            return n, now - t0


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    """Print (and return) a Markdown table."""
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    text = "\n".join(lines)
    print(text + "\n", flush=True)
    return text


def save(name: str, payload: dict[str, Any]) -> Path:
    OUT.mkdir(exist_ok=True)
    payload = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.processor()},
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": commit_of(OUT.parent),
        **payload,
    }
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path


def fmt(x: float) -> str:
    return f"{x:,.0f}"
