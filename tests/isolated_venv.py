"""Virtual environments of their own for the tests marked ``isolated``: the wheel and the sdist as a user installs
them (tests/test_packaging.py) and client libraries whose pins conflict with the dev extras (tests/test_clients.py).

The sdist and the wheel are built once per test session (``dist``) from the files git tracks, as they are on
disk. A venv is built once under ``.venv/isolated/<name>-<key>`` (the key hashes the Python, the requirements and
pyproject.toml) with the package and its requirements in one resolve, torch pinned to the CPU build; a rerun
only reinstalls the package. ``NERTZ_ISOLATED_DISK=low`` (CI) keeps one venv on disk at a time: building one
removes the others, so the tests that share a venv run one after another, in one pytest run (.ci/run runs the
isolated tests of tests/test_clients.py and tests/test_packaging.py beside the others, in a run of their own).
"""

from __future__ import annotations

import atexit
import functools
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / ".venv" / "isolated"
TORCH_PIN = "torch==2.13.0"  # the CPU build (.ci/setup installs the same)


def make_room(keep: Path) -> None:
    """Under ``NERTZ_ISOLATED_DISK=low``: remove every venv beside ``keep`` (about to be built)."""
    if os.environ.get("NERTZ_ISOLATED_DISK") == "low":
        for other in keep.parent.iterdir():
            if other.is_dir() and other != keep:
                shutil.rmtree(other, ignore_errors=True)


def env_for(venv: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a command run outside the checkout, in ``venv`` (its bin first on PATH)."""
    # (bytecode is written as modules are first imported: pip installs without compiling everything)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "NUMBA_DISABLE_JIT", "PYTHONDONTWRITEBYTECODE")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_PROGRESS_BAR="off", MPLBACKEND="Agg",
               PYTHONHASHSEED="0")
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["NUMBA_CACHE_DIR"] = str(venv / "numba-cache")
    env.update(extra)
    return env


def run(cmd: Sequence[str | Path], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 1800) -> subprocess.CompletedProcess:
    """Run ``cmd``; fail with the end of its output unless it exits 0."""
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or env_for(), capture_output=True, text=True,
                         timeout=timeout, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-4000:]}"
    return out


def python_of(version: str) -> str | None:
    """An interpreter of ``version`` (``3.12``) that runs: pyenv's, else one on PATH."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [p for p in [shutil.which(f"python{version}")] if p]
    for path in candidates:
        check = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if check.returncode == 0 and check.stdout.strip() == version:
            return path
    return None


@functools.cache
def dist() -> dict[str, Path]:
    """The sdist and the wheel built from it (``python -m build``), once per session, from a copy of the files
    git tracks: setuptools writes build/ where it builds."""
    out = Path(tempfile.mkdtemp(prefix="nertz-dist-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    src = out / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, timeout=60).stdout
    for name in filter(None, files.decode().split("\0")):
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    run([sys.executable, "-m", "build", "--outdir", out / "dist", src], cwd=out, timeout=900)
    (wheel,) = (out / "dist").glob("nertz_env-*.whl")
    (sdist,) = (out / "dist").glob("nertz_env-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


_MADE: set[tuple[Path, Path]] = set()  # (venv, package): built or refreshed in this session (make_room may remove it)


def venv(name: str, package: Path, extras: str = "", requirements: Sequence[str] = (), torch: bool = False,
         no_deps: Sequence[str] = (), python: str | None = sys.executable) -> Path:
    """A venv with ``package[extras]``, ``requirements`` (and torch's CPU build with ``torch``) in one resolve,
    then ``no_deps`` without their requirements (a client whose pins would replace torch). Built once and kept;
    a later session only reinstalls the package, once. Skips when ``python`` is None (not on this machine)."""
    import fcntl  # (POSIX; imported here so that the modules importing this one collect on Windows too)

    import pytest

    if python is None:
        pytest.skip(f"no such Python on this machine for the {name} venv")
    blob = json.dumps([os.path.realpath(python), python, extras, list(requirements), torch, list(no_deps),
                       (REPO / "pyproject.toml").read_text()])
    path = ROOT / f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"
    if (path, package) in _MADE and (path / ".ready").exists():
        return path
    pip = [path / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile"]
    ROOT.mkdir(parents=True, exist_ok=True)
    with open(ROOT / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions building the same venv wait for each other
        if (path / ".ready").exists():
            run([*pip, "--no-deps", "--force-reinstall", package], cwd=REPO)
        else:
            make_room(path)
            shutil.rmtree(path, ignore_errors=True)
            run([python, "-m", "venv", path], cwd=REPO, timeout=300)
            run([*pip, *([TORCH_PIN] if torch else []), *requirements, f"{package}[{extras}]" if extras else package],
                cwd=REPO)
            if no_deps:
                run([*pip, "--no-deps", *no_deps], cwd=REPO)
            (path / ".ready").write_text(blob + "\n")
    _MADE.add((path, package))
    return path


def run_script(path: Path, script: Path, *args: str, cwd: Path, timeout: float = 1500) -> dict:
    """Run ``script`` with the venv's python from ``cwd`` (outside the checkout, so the installed package is what
    imports) and return the JSON object its last output line prints."""
    out = run([path / "bin" / "python", script, *args], cwd=cwd, env=env_for(path), timeout=timeout)
    return json.loads(out.stdout.strip().splitlines()[-1])
