"""Virtual environments of their own for client libraries whose pins conflict with the dev extras (AgileRL
resolves PettingZoo 1.26 and needs ``peft`` by hand; BenchMARL pins TorchRL 0.11), for tests marked
``isolated``.

A venv is built once and kept under ``.venv/isolated/<name>-<key>``, where the key is a hash of the Python
version, the torch pin, nertz-env's own dependencies and the client's requirements: a changed requirement
builds a new one, a rerun reuses it (seconds instead of minutes). torch is pinned to the CPU build in the same
resolve as the client, so no client can pull a CUDA torch. nertz-env itself is installed from a wheel of the
checkout built once per test session, without dependencies and forced, so every run tests the current
sources as a user gets them (the wheel, not the checkout on ``sys.path``).

Disk: the venvs take from 0.3 GB (the package alone) to 2.5 GB (AgileRL, with torch, jax and transformers),
about 9 GB all together. With ``NERTZ_ISOLATED_DISK=low`` (CI's isolated phase sets it) at most one is kept:
building a venv first removes the others under ``.venv/isolated``, so the phase needs the largest one's room,
not their sum; the tests use each venv in one run of consecutive tests, so none is built twice. Two test
sessions sharing a checkout should not both run in that mode.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / ".venv" / "isolated"
TORCH_PIN = "torch==2.13.0"  # the CPU build (.ci/setup installs the same)


DISK_ENV = "NERTZ_ISOLATED_DISK"


def make_room(keep: Path) -> None:
    """Under ``NERTZ_ISOLATED_DISK=low``: remove every venv under ``.venv/isolated`` but ``keep`` (about to be
    built). Any other value but unset is refused, so that a typo does not silently keep them all."""
    mode = os.environ.get(DISK_ENV, "")
    if mode not in ("", "low"):
        raise ValueError(f"{DISK_ENV}={mode!r}: the only value is 'low' (keep one isolated venv on disk at a time)")
    if mode != "low" or not keep.parent.is_dir():
        return
    for other in keep.parent.iterdir():
        if other.is_dir() and other != keep:
            shutil.rmtree(other, ignore_errors=True)


def _pip(python: Path | str, *args: str, timeout: float = 1800) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_PROGRESS_BAR": "off"}
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def build_wheel(out: Path) -> Path:
    """A wheel of the checkout's current sources (every file git tracks, as it is on disk), built from a copy:
    setuptools writes build/ beside the sources, which must not race with anything else using the checkout."""
    src = out / "src"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, timeout=60
    ).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_symlink():  # nertz_env/agents -> ../agents, ...: links stay links
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(REPO / name), src / name)
        elif (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"building the wheel failed:\n{proc.stderr[-3000:]}")
    (wheel,) = out.glob("nertz_env-*.whl")
    return wheel


def _key(requirements: list[str], torch: bool, no_deps: Sequence[str] = ()) -> str:
    import tomllib  # Python 3.11+; imported here so that collecting these tests works on 3.10 too

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    blob = json.dumps([list(sys.version_info[:2]), TORCH_PIN if torch else None, sorted(deps), list(requirements)]
                      + ([list(no_deps)] if no_deps else []))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def client_venv(name: str, requirements: list[str], wheel: Path, torch: bool = True,
                no_deps: Sequence[str] = ()) -> Path:
    """The python of a venv with ``requirements`` (plus torch CPU unless ``torch=False``, and nertz-env's
    dependencies), built once and cached, with ``wheel`` (nertz-env) installed into it afresh. ``no_deps``:
    packages installed after that without their own requirements (a client whose pins would replace torch)."""
    ROOT.mkdir(parents=True, exist_ok=True)
    path = ROOT / f"{name}-{_key(requirements, torch, no_deps)}"
    python = path / "bin" / "python"
    done = path / ".complete"
    with open(ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions building the same venv wait for each other
        if not done.exists():
            make_room(path)
            shutil.rmtree(path, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
            # one resolve: the client's requirements, torch pinned to the CPU build, nertz-env's dependencies
            _pip(python, *([TORCH_PIN] if torch else []), *requirements, str(wheel))
            if no_deps:
                _pip(python, "--no-deps", *no_deps)
            done.write_text(json.dumps({"requirements": requirements, "no_deps": list(no_deps)}) + "\n")
        _pip(python, "--no-deps", "--force-reinstall", str(wheel), timeout=600)
    return python


def run_script(python: Path, script: Path, *args: str, cwd: Path, timeout: float = 1500) -> dict:
    """Run ``script`` with the venv's ``python`` from ``cwd`` (outside the checkout, so the installed wheel is
    what imports) and return the JSON object its last output line prints."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(python.parent.parent / "numba-cache"), "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(python), str(script), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout
    )
    if proc.returncode != 0:
        raise AssertionError(f"{script.name} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
