"""The package as a user gets it: the wheel and the sdist, built from this checkout, installed into fresh
virtual environments on every Python 3.10-3.13 this machine has, and used from a folder outside the checkout.

- wheel, each Python: the README's quick start, then one command of each extra installed beside it: ``eval``
  (``nertz-eval round-robin``, recording replays), ``render`` (``nertz-replay --gif`` of such a replay; its
  HTML page needs no extra), ``play`` (``nertz-play``'s page fetched over HTTP); and, on Python 3.11 only,
  ``train`` (``nertz-train --config long_run --print-config``, a tiny training run, its ``policy.zip`` in a
  gauntlet). torch 2.13.0's CPU wheel is on this machine's disk for 3.11 only; for the other Pythons pip
  would fetch the CUDA build from PyPI, several GB, so the train extra is not installed there.
- sdist, each Python: it installs (building the wheel from the sdist), the quick start runs, and ``pytest``
  from the unpacked sdist collects every test module with no error (modules needing an extra that is not
  installed skip naming it); on 3.11 it also passes ``tests/test_packaging.py`` there.
- a read-only install without a writable home (the newest Python, in its wheel venv): the quick start
  compiles in memory with one warning naming ``NUMBA_CACHE_DIR`` and one line saying the rules are compiling.

The ``rllib`` extra (Ray, ~1 GB) is left to ``tests/test_rllib.py``. Marked ``isolated``: CI runs these in its
isolated phase (``pytest -m isolated --isolated``). The venvs are kept under ``.venv/isolated/`` keyed by a
hash of the Python and the requirements, so a rerun only reinstalls the package (and its numba cache stays
warm); the first run builds them (a few minutes). Under ``NERTZ_ISOLATED_DISK=low`` (CI) only the venv in
use is kept (tests/isolated_venv.py): the tests that share one run one after another.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

import pytest

from isolated_venv import make_room

pytestmark = pytest.mark.isolated

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".venv" / "isolated"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
TRAIN_PYTHON = "3.11"  # the only Python with torch 2.13.0's CPU wheel on this machine (/opt/wheels)
TORCH_PIN = "torch==2.13.0"
WHEEL_EXTRAS = "eval,render,play"


def _python(version: str) -> str | None:
    """An interpreter of ``version`` (``3.12``) that runs: pyenv's, else one on PATH (a pyenv shim on PATH
    may name a version it cannot run)."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [p for p in [shutil.which(f"python{version}")] if p]
    for path in candidates:
        check = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True)
        if check.returncode == 0 and check.stdout.strip() == version:
            return path
    return None


def _env(venv: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "NUMBA_DISABLE_JIT")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_PROGRESS_BAR="off", MPLBACKEND="Agg")
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["NUMBA_CACHE_DIR"] = str(venv / "numba-cache")
    env.update(extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (``python -m build``), from a copy of the checkout (setuptools
    writes build/ and *.egg-info where it builds)."""
    tmp = tmp_path_factory.mktemp("dist")
    src = tmp / "src"
    skip = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "runs", "eval_out", "out", "_build")
    shutil.copytree(ROOT, src, ignore=skip)
    _run([sys.executable, "-m", "build", "--outdir", str(tmp / "out"), str(src)], cwd=tmp, env=_env(), timeout=900)
    wheels = list((tmp / "out").glob("nertz_env-*.whl"))
    sdists = list((tmp / "out").glob("nertz_env-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list((tmp / "out").iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def _venv(version: str, kind: str, label: str, requirements: list[str]) -> Path:
    """A venv of Python ``version`` with ``requirements`` (the built package with its extras, for its
    dependencies: installed once; the package itself is reinstalled by each test), kept under .venv/isolated/
    by a hash of the Python, ``label`` (what the requirements are, without the build's temporary paths) and
    pyproject's dependencies."""
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[.*?^\]", text, re.M | re.S)
    extras = re.search(r"^\[project\.optional-dependencies\].*?(?=^\[(?!project\.optional))", text, re.M | re.S)
    key = hashlib.sha256(
        "\n".join([python, os.path.realpath(python), label, deps.group(0) if deps else "", extras.group(0) if extras else ""]).encode()
    ).hexdigest()[:12]
    venv = CACHE / f"{kind}-py{version}-{key}"
    if not (venv / ".ready").exists():
        make_room(venv)  # NERTZ_ISOLATED_DISK=low (CI): one venv on disk at a time
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        _run([python, "-m", "venv", str(venv)], cwd=ROOT, env=_env())
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        if "train" in label or "rllib" in label:
            _run([*pip, TORCH_PIN], cwd=ROOT, env=_env(), timeout=1800)  # the CPU build, before anything pulls torch
        _run([*pip, *requirements], cwd=ROOT, env=_env(), timeout=1800)
        (venv / ".ready").write_text(label + "\n")
    return venv


def _wheel_venv(version: str, dist: dict[str, Path]) -> Path:
    """The wheel's venv of Python ``version``: its extras (and ``train`` on TRAIN_PYTHON) installed."""
    extras = WHEEL_EXTRAS + (",train" if version == TRAIN_PYTHON else "")
    return _venv(version, "wheel", f"wheel[{extras}]", [f"{dist['wheel']}[{extras}]"])


def _newest_python() -> str:
    """The newest of PYTHONS this machine has (the wheel tests run in that order, so its venv is the last built)."""
    found = [v for v in PYTHONS if _python(v) is not None]
    if not found:
        pytest.skip(f"none of Python {', '.join(PYTHONS)} on this machine")
    return found[-1]


def _install(venv: Path, package: Path) -> None:
    _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(package)],
        cwd=ROOT, env=_env(), timeout=900,
    )


def _quick_start() -> str:
    """The README's quick start (its first python block)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    assert blocks and "parallel_env" in blocks[0], "README.md's first python block is not the quick start"
    return blocks[0]


def _run_quick_start(venv: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    code = _quick_start() + "\nimport nertz_env as _n\nprint('PACKAGE', _n.__file__)\n"
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=cwd, env=env)
    package = out.stdout.strip().splitlines()[-1].split(" ", 1)[1]
    assert Path(package).resolve().is_relative_to(venv.resolve()), f"nertz_env came from {package}, not the venv"
    assert "Lake:" in out.stdout  # the table the quick start renders
    return out


def _serve_and_fetch(venv: Path, cwd: Path, env: dict[str, str]) -> str:
    """nertz-play on a free port; the page it serves."""
    proc = subprocess.Popen(
        [str(venv / "bin" / "nertz-play"), "--no-browser", "--players", "2", "--seed", "1", "--step",
         "--replay-dir", str(cwd / "played")],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
    )
    seen = []
    try:
        deadline = time.monotonic() + 600
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            m = re.search(r"(http://\S+/)", line)
            if m:
                with urllib.request.urlopen(m.group(1), timeout=60) as r:
                    assert r.status == 200
                    return r.read().decode()
        raise AssertionError("nertz-play printed no address:\n" + "".join(seen))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("version", PYTHONS)
def test_wheel__quick_start_and_a_command_of_each_extra_outside_the_checkout(
    version: str, dist: dict[str, Path], tmp_path: Path
) -> None:
    venv = _wheel_venv(version, dist)
    _install(venv, dist["wheel"])
    env = _env(venv)
    _run_quick_start(venv, tmp_path, env)
    # eval: a tournament, saved and recorded
    _run(
        ["nertz-eval", "round-robin", "random", "greedy", "--players", "2", "--deals", "2", "--workers", "1",
         "--rule", "max_ticks=60", "--out", "results", "--replays", "replays", "--no-progress"],
        cwd=tmp_path, env=env,
    )
    assert json.loads((tmp_path / "results" / "results.json").read_text())
    replay = sorted((tmp_path / "replays").glob("*.jsonl.gz"))[0]
    # base: the replay page; render: the animation
    _run(["nertz-replay", str(replay), "-o", "page.html"], cwd=tmp_path, env=env)
    _run(["nertz-replay", str(replay), "--gif", "game.gif", "--fps", "20"], cwd=tmp_path, env=env)
    assert (tmp_path / "page.html").stat().st_size > 0 and (tmp_path / "game.gif").read_bytes()[:3] == b"GIF"
    # play: the page, served
    assert "<html" in _serve_and_fetch(venv, tmp_path, env).lower()
    if version == TRAIN_PYTHON:
        out = _run(["nertz-train", "--config", "long_run", "--print-config"], cwd=tmp_path, env=env)
        assert json.loads(out.stdout)["num_players"] == 4  # the shipped config, found by name
        _run(
            ["nertz-train", "--num-tables", "2", "--n-steps", "16", "--batch-size", "32", "--n-epochs", "1",
             "--net-arch", "16", "--checkpoint-every", "0", "--eval-every", "0", "--eval-deals", "0",
             "--no-progress-bar", "--no-tensorboard", "--total-timesteps", "64", "--run-dir", "run"],
            cwd=tmp_path, env=env,
        )
        assert (tmp_path / "run" / "policy.zip").is_file()
        # a .zip policy as a player (the train extra loads it)
        _run(["nertz-eval", "gauntlet", "run/policy.zip", "random", "--deals", "1", "--workers", "1", "--no-save", "--no-progress"],
             cwd=tmp_path, env=env)
    else:  # no train extra here: the command says which extra in one line
        out = subprocess.run(["nertz-train", "--total-timesteps", "64"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 2 and "the train extra" in out.stderr and "-m pip install 'torch>=2.1'" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_read_only_install_without_a_home__compiles_in_memory_with_one_warning(dist: dict[str, Path], tmp_path: Path) -> None:
    venv = _wheel_venv(_newest_python(), dist)  # the venv the last wheel test used: none is built again
    site = tmp_path / "site"  # the package alone, installed where nothing can be written
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(dist["wheel"])],
         cwd=tmp_path, env=_env())
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    readonly_cache = tmp_path / "readonly-cache"
    readonly_cache.mkdir()
    if os.geteuid() == 0:
        # root writes through permissions: files in the way instead (no folder can be made inside a file)
        for pycache in ("nertz_env/engine/__pycache__", "nertz_env/agents/__pycache__"):
            shutil.rmtree(site / pycache, ignore_errors=True)
            (site / pycache).write_text("")
        home, cache = str(blocker / "home"), str(blocker / "cache")
    else:
        home, cache = "/", str(readonly_cache)
        for d in [site, *site.rglob("*")]:
            if d.is_dir():
                d.chmod(0o555)
        readonly_cache.chmod(0o555)
    env = _env(venv, HOME=home, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(site))
    env.pop("XDG_CACHE_HOME", None)
    try:
        code = "import warnings\nwarnings.simplefilter('default')\n" + _quick_start() + "\nimport nertz_env as _n\nprint('PACKAGE', _n.__file__)\n"
        (tmp_path / "run").mkdir()
        out = _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path / "run", env=env)
    finally:
        for d in [site, *site.rglob("*"), readonly_cache]:
            if d.is_dir():
                d.chmod(0o755)
    assert out.stdout.strip().splitlines()[-1].startswith(f"PACKAGE {site}")
    warned = [x for x in out.stderr.splitlines() if "CompileCacheWarning" in x]
    assert len(warned) == 1 and "NUMBA_CACHE_DIR" in warned[0], out.stderr[-3000:]
    told = [x for x in out.stderr.splitlines() if x.startswith("nertz_env: compiling the rules")]
    assert len(told) == 1 and "every process compiles" in told[0], out.stderr[-3000:]


@pytest.mark.parametrize("version", PYTHONS)
def test_sdist__installs_runs_and_its_tests_collect_and_pass(version: str, dist: dict[str, Path], tmp_path: Path) -> None:
    venv = _venv(version, "sdist", "sdist, pytest>=8", [str(dist["sdist"]), "pytest>=8"])
    _install(venv, dist["sdist"])  # the wheel, built from the sdist
    env = _env(venv)
    (tmp_path / "elsewhere").mkdir()
    _run_quick_start(venv, tmp_path / "elsewhere", env)
    with tarfile.open(dist["sdist"]) as tar:
        lab = [n for n in tar.getnames() if re.match(r"[^/]+/(experiments/|bench/results/.*\.py$)", n)]
        assert not lab, f"the sdist ships lab records: {lab[:5]}"
        tar.extractall(tmp_path, filter="data")
    unpacked = next(tmp_path.glob("nertz_env-*/"))
    py = str(venv / "bin" / "python")
    out = _run([py, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"], cwd=unpacked, env=env)
    assert "error" not in out.stdout.lower().split("collected")[-1], out.stdout[-3000:]
    skips = re.findall(r"^SKIPPED \[\d+\] (tests/\S+): (.*)$", out.stdout, re.M)
    assert skips, "the sdist's venv has no extras: the modules that need one should skip"
    for where, reason in skips:
        assert re.search(r"needs the \w+ extra", reason), f"{where} skips without naming the extra: {reason}"
    if version == TRAIN_PYTHON:  # one Python runs a test module for real (its commands compile in fresh processes)
        _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_packaging.py"], cwd=unpacked, env=env)
