"""Packaging: the package list, the installed layout (top-level folders as ``nertz_env.agents`` etc., no
symlinks), the README's commands and links, install hints; marked ``isolated``, a wheel from a clone
without symlinks, the sdist (3.12) and the wheel (3.10, 3.13) in venvs of their own."""

from __future__ import annotations

import ast
import fnmatch
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import nertz_env
from isolated_venv import dist, env_for, python_of, run, run_script, venv
from nertz_env.cli.commands import COMMANDS
from nertz_env.extras import EXTRAS, install_command
from procs import serve_and_fetch

ROOT = Path(__file__).resolve().parent.parent
MAPPED = ("agents", "train", "eval")  # top-level folders of the checkout, installed as nertz_env.<name>


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _source_packages() -> set[str]:
    """Every package of the source tree that the wheel should hold, by its installed name."""
    found = set()
    for base in ("nertz_env", *MAPPED):
        for init in (ROOT / base).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            if "__pycache__" not in rel:
                found.add(".".join(rel) if base == "nertz_env" else ".".join(("nertz_env", *rel)))
    return found


def _source_file(module: str) -> Path:
    """The checkout's file of ``module`` (``nertz_env.eval.demo`` -> ``eval/demo.py``)."""
    parts = module.split(".")
    base = ROOT / Path(*(parts[1:] if parts[1:2] and parts[1] in MAPPED else parts))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def test_pyproject__lists_every_package_and_installs_agents_train_eval_inside_nertz_env() -> None:
    tool = _pyproject()["tool"]["setuptools"]
    assert set(tool["packages"]) == _source_packages(), "add new subpackages to [tool.setuptools] packages"
    assert tool["package-dir"] == {f"nertz_env.{name}": name for name in MAPPED}
    assert not any(p.split(".")[0] in MAPPED for p in tool["packages"])


def test_checkout__has_no_symlinks() -> None:
    # a clone with core.symlinks=false (Windows' default) turns each into a small text file
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist)")
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert [line.split("\t")[1] for line in tracked.splitlines() if line.startswith("120000")] == []


def test_installed_wheel__holds_agents_train_eval_only_inside_nertz_env() -> None:
    try:
        dist = importlib.metadata.distribution("nertz-env")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("nertz-env is not installed (bash .ci/setup installs it)")
    if Path(str(dist.locate_file(""))).resolve() == ROOT:
        pytest.skip("found the metadata of a build left in the checkout, not an installed copy")
    if re.search(r'"editable"\s*:\s*true', dist.read_text("direct_url.json") or ""):
        pytest.skip("nertz-env is installed editable: the checkout's own layout is what runs")
    files = {str(f).replace(os.sep, "/") for f in dist.files or []}
    for name in ("agents", "train", "eval"):
        assert f"nertz_env/{name}/__init__.py" in files
        assert not any(f.startswith(f"{name}/") for f in files), f"a top-level {name}/ was installed"
    assert "nertz_env/py.typed" in files
    assert (dist.read_text("top_level.txt") or "").split() == ["nertz_env"]


def test_console_scripts__point_at_functions_of_the_checkout() -> None:
    scripts = _pyproject()["project"]["scripts"]
    assert set(scripts) == set(COMMANDS)
    for script, target in scripts.items():
        # every command runs through nertz_env.cli.commands (a missing extra is one line), which runs COMMANDS' main
        assert target == f"nertz_env.cli.commands:{script.replace('-', '_')}"
        for module, _, func in (target.partition(":"), COMMANDS[script].target.partition(":")):
            path = _source_file(module)
            assert path.is_file(), f"{script} -> {module}: no {path.relative_to(ROOT)}"
            tree = ast.parse(path.read_text())
            names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
            names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
            assert func in names, f"{script}: no {func}"
    assert COMMANDS["nertz-demo"].target == "nertz_env.eval.demo:main"


def test_extras__the_module_table_matches_pyprojects_extras() -> None:
    # import names of the distributions whose import name differs from their name
    import_name = {"pillow": "PIL", "ray": "ray"}
    extras = _pyproject()["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = [re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0] for req in extras[extra]]
        assert modules == tuple(import_name.get(n.lower(), n.lower().replace("-", "_")) for n in names), extra


def test_metadata__classifiers_name_the_tested_pythons_and_urls_point_at_the_repository() -> None:
    project = _pyproject()["project"]
    versions = {
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    # the Pythons the isolated tests install and run the package on: the wheel on 3.10 and 3.13, the sdist on
    # 3.12, the client libraries on 3.11
    assert versions == {"3.10", "3.11", "3.12", "3.13"}
    assert project["requires-python"] == ">=3.10"
    urls = project["urls"]
    assert {"Repository", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith(urls["Repository"]) for u in urls.values())
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    # the engine uses numba's internals (engine/_abi.py, _cache.py): pinned to the version tested, the one here
    from packaging.requirements import Requirement

    (numba,) = [Requirement(r) for r in project["dependencies"] if r.startswith("numba")]
    assert any(s.operator == "<" for s in numba.specifier) and importlib.metadata.version("numba") in numba.specifier


def test_changelog__has_a_section_for_the_version_being_released() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (\d+\.\d+\.\d+)\b", text, re.M)
    assert headings and headings[0] == nertz_env.__version__, "CHANGELOG.md's newest section is not this version"
    assert "version" in _pyproject()["project"]["dynamic"]  # one place for the version: nertz_env.__version__


@pytest.mark.parametrize(
    ("command", "argv", "blocked", "extra"),
    [
        ("nertz-eval", ["--help"], "openskill", "eval"),
        ("nertz-demo", [], "openskill", "eval"),
        ("nertz-train", ["--total-timesteps", "128"], "torch,tensorboard", "train"),
        pytest.param(
            "nertz-eval", ["gauntlet", str(ROOT / "agents" / "models" / "ppo.zip") + ":deterministic=false", "heuristic", "--deals", "1", "--no-save"],
            "torch", "train",
            marks=pytest.mark.skipif(importlib.util.find_spec("openskill") is None, reason="needs the eval extra"),
        ),
        ("nertz-play", ["--no-browser"], "uvicorn", "play"),
    ],
)
def test_commands__a_missing_extra_is_one_line_naming_it(
    command: str, argv: list[str], blocked: str, extra: str, tmp_path: Path
) -> None:
    # the modules are made unimportable as when their extra is not installed (None in sys.modules)
    code = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked.split(',')!r})); sys.argv[1:] = {argv!r}; "
        f"from nertz_env.cli.commands import run; sys.exit(run({command!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"needs the {extra} extra" in lines[0] and install_command(extra) in lines[0], lines[0]


# ---------------------------------------------------------------- README.md: also the page a package index shows
def _link_targets(markdown: str) -> list[tuple[str, bool]]:
    """(target, is a picture) of every Markdown link, reference and HTML src/href outside code fences."""
    prose = re.sub(r"^```.*?^```[^\n]*$", "", markdown, flags=re.M | re.S)
    found = [(m.group(2), m.group(1) == "!") for m in re.finditer(r"(!?)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)", prose)]
    found += [(m.group(1), False) for m in re.finditer(r"^ {0,3}\[[^\]]+\]:\s*(\S+)", prose, re.M)]
    found += [(m.group(2), m.group(1) == "src") for m in re.finditer(r"\b(src|href)=[\"']([^\"']+)", prose)]
    return found


def test_readme_links__are_absolute_and_reach_the_repository() -> None:
    # pyproject's readme is README.md as it is: a relative link (docs/..., #heading) would point nowhere on an index
    assert _pyproject()["project"]["readme"] == "README.md"
    repo = _pyproject()["project"]["urls"]["Repository"].rstrip("/")
    links = _link_targets((ROOT / "README.md").read_text())
    assert len(links) > 20
    for target, image in links:
        assert re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I), f"relative link in README.md: {target}"
        if not target.startswith(repo + "/"):
            continue
        kind, ref, rest = target[len(repo) + 1 :].split("/", 2)
        path, _, anchor = rest.partition("#")
        assert ref == "main" and (ROOT / path).exists(), target
        assert kind == ("raw" if image else "tree" if (ROOT / path).is_dir() else "blob"), target
        headings = re.findall(r"^#{1,6} (.+)$", (ROOT / path).read_text(), re.M) if anchor else []
        assert not anchor or anchor in {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}, target


# ---------------------------------------------------------------- install commands: each works as written
# No package index has nertz-env: it installs from a checkout (".", ".[eval]") or from a wheel built there
# (--find-links dist "nertz-env[eval]"). Any other package a command names is one this venv has at a version
# the command accepts, or a client pinned where tests/ builds its venv.
def _pip_install_commands() -> list[tuple[str, list[str]]]:
    pages = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]
    found = []
    for page in pages:
        for m in re.finditer(r"pip install ([^`\n#&|;)]*)", page.read_text()):
            found.append((f"{page.relative_to(ROOT)}: pip install {m.group(1).strip()}", shlex.split(m.group(1))))
    return found


def _requirement_problem(arg: str, options: list[str]) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    extras = set(_pyproject()["project"]["optional-dependencies"])
    path, _, rest = arg.partition("[")
    if path.startswith((".", "/")):  # a checkout: the extras must exist
        asked = set(rest.rstrip("]").split(",")) - {""}
        return None if (ROOT / path).exists() and asked <= extras else f"{arg}: no such folder or extra"
    try:
        req = Requirement(arg)
    except InvalidRequirement:
        return f"{arg}: not a requirement"
    if canonicalize_name(req.name) == "nertz-env":
        ok = "--find-links" in options and req.extras <= extras
        return None if ok else f"{arg}: no package index has nertz-env (a checkout, or --find-links DIR)"
    try:
        if req.specifier.contains(importlib.metadata.version(req.name), prereleases=True):
            return None
    except importlib.metadata.PackageNotFoundError:
        pass
    pinned = any(f'"{arg}"' in p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    return None if pinned else f"{arg}: neither installed here nor a client venv's pin in tests/"


def test_docs__every_install_command_works_as_written() -> None:
    pytest.importorskip("packaging")
    for name in ("openskill", "resvg-py", "playwright", "starlette", "torch"):  # read against the dev venv
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"needs the dev extras installed (bash .ci/setup): {name} is not")
    problems = []
    commands = _pip_install_commands()
    for where, args in commands:
        options = [a for a in args if a.startswith("-")]
        values = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--find-links", "-f", "--config-settings")}
        for arg in args:
            if not arg.startswith("-") and arg not in values:
                problem = _requirement_problem(arg, options)
                if problem:
                    problems.append(f"{where}: {problem}")
    assert len(commands) > 20 and not problems, "\n".join(problems)


@pytest.mark.parametrize("extra", ["train", "eval", "render", "play", "rllib", "test", "browser"])
def test_missing_extra_hint__installs_the_extra_into_this_python(extra: str) -> None:
    """The hint for a missing extra is this Python's pip installing the packages nertz-env declares for it."""
    packaging = pytest.importorskip("packaging.requirements")
    argv = shlex.split(install_command(extra))
    assert argv[:4] == [sys.executable, "-m", "pip", "install"], argv
    declared = [r for r in importlib.metadata.requires("nertz-env") or [] if f'extra == "{extra}"' in r]
    assert len(argv) - 4 == len(declared) > 0
    for arg in argv[4:]:
        req = packaging.Requirement(arg)
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"needs the {extra} extra installed (bash .ci/setup): {req.name} is not")
        assert req.specifier.contains(version, prereleases=True), arg


def test_sources__every_install_hint_comes_from_install_command() -> None:
    """No message of the package names ``nertz-env[...]`` (no index has it): hints use install_command."""
    offenders = []
    for folder in ("nertz_env", "agents", "train", "eval"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if "nertz-env[" in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    allowed = {"nertz_env/extras.py"}
    assert [o for o in offenders if o.split(":")[0] not in allowed] == []


# ---------------------------------------------------------------- .ci/setup: the demo's set-up and a second run
def _setup_run(venv: Path, log: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NERTZ_FRESH_VENV"}
    out = subprocess.run(["bash", str(ROOT / ".ci" / "setup"), *args], env={**env, "NERTZ_VENV": str(venv)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.skipif(sys.platform != "linux", reason=".ci/setup is the Linux CI's set-up (bash, GNU sha256sum, a venv's bin/)")
def test_setup__the_demo_installs_only_the_eval_extra_and_a_rerun_installs_nothing(tmp_path: Path) -> None:
    """``bash .ci/setup demo`` installs only the eval extra and, rerun on the same sources, nothing (a
    reinstall recompiles the rules); then ``bash .ci/setup`` installs the dev extras (pip calls logged)."""
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = pip ]; then echo "$*" >> {log}; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    calls = lambda: log.read_text().splitlines() if log.exists() else []  # noqa: E731

    _setup_run(venv, log, "demo")
    assert calls() == ["-m pip install -q -e .[eval]"]
    assert "nothing to do" in _setup_run(venv, log, "demo")
    assert len(calls()) == 1
    if not Path("/usr/bin/chromium").exists():  # the dev set-up would apt-get install it: not in a test
        return
    _setup_run(venv, log)
    # (torch==2.13.0 first where it is missing, as in an unpacked sdist's venv)
    assert [c for c in calls()[1:] if c != "-m pip install -q torch==2.13.0"] == ["-m pip install -q -e .[dev]"]
    n = len(calls())
    assert "nothing to do" in _setup_run(venv, log) and "nothing to do" in _setup_run(venv, log, "demo")
    assert len(calls()) == n
    (venv / ".nertz-setup").write_text("dev 0000000000000000\n")  # as after an edit of the sources
    _setup_run(venv, log, "demo")
    assert calls()[n:] == ["-m pip install -q -e .[eval]"]


def test_play_page__its_assets_are_package_data() -> None:
    patterns = _pyproject()["tool"]["setuptools"]["package-data"]["nertz_env.play"]
    static = ROOT / "nertz_env" / "play" / "static"
    files = sorted(p.relative_to(static.parent).as_posix() for p in static.iterdir())
    assert {"static/index.html", "static/play.js", "static/play.css"} <= set(files)
    for name in files:
        assert any(fnmatch.fnmatch(name, pat) for pat in patterns), f"{name} would be left out of the wheel"


# ---------------------------------------------------------------- the sdist and the wheel, installed outside the checkout
@pytest.mark.isolated
def test_clone_without_symlinks__builds_a_wheel_of_every_subpackage_that_imports(tmp_path: Path) -> None:
    """A clone as Windows' git makes it (core.symlinks=false) builds a wheel of every subpackage."""
    clone, wheels, site = tmp_path / "clone", tmp_path / "wheels", tmp_path / "site"
    run(["git", "-c", "core.symlinks=false", "clone", "-q", ROOT, clone], cwd=tmp_path)
    pip = [sys.executable, "-m", "pip", "-q"]
    run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, clone], cwd=tmp_path)
    (wheel,) = wheels.glob("nertz_env-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert {f"{p.replace('.', '/')}/__init__.py" for p in _source_packages()} <= set(zf.namelist())
    run([*pip, "install", "--no-deps", "--target", site, wheel], cwd=tmp_path)
    code = "import nertz_env.agents, nertz_env.train, nertz_env.eval as e; print(e.__file__)"
    out = run([sys.executable, "-c", code], cwd=tmp_path, env=env_for(PYTHONPATH=str(site)))
    assert Path(out.stdout.strip()).is_relative_to(site)


def _quick_start(venv_dir: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The README's quick start (its first python block), run from ``cwd``; the package must come from the venv."""
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.M | re.S)
    assert blocks and "parallel_env" in blocks[0], "README.md's first python block is not the quick start"
    code = "import warnings\nwarnings.simplefilter('default')\n" + blocks[0] + "\nimport nertz_env as _n\nprint('PACKAGE', _n.__file__)\n"
    out = run([venv_dir / "bin" / "python", "-c", code], cwd=cwd, env=env)
    assert "Lake:" in out.stdout  # the table the quick start renders
    return out


@pytest.mark.isolated
def test_sdist__installs_passes_pettingzoos_tests_plain_and_its_own_tests_collect_and_pass(tmp_path: Path) -> None:
    """The sdist on Python 3.12, no extra: the quick start runs, PettingZoo's five tests pass, no lab records
    ship, every test module collects (skipping with the extra it needs) and test_packaging.py passes."""
    sdist = dist()["sdist"]
    path = venv("sdist", sdist, requirements=["pytest>=8"], python=python_of("3.12"))
    env = env_for(path)
    (tmp_path / "elsewhere").mkdir()
    out = _quick_start(path, tmp_path / "elsewhere", env)
    assert Path(out.stdout.strip().splitlines()[-1].split(" ", 1)[1]).resolve().is_relative_to(path.resolve())
    plain = run_script(path, ROOT / "tests" / "clients" / "pettingzoo_plain.py", cwd=tmp_path / "elsewhere")
    assert all(plain["plain"].values()) and "rgb_array" not in plain["render_modes"], plain
    with tarfile.open(sdist) as tar:
        lab = [n for n in tar.getnames() if re.match(r"[^/]+/(experiments/|bench/results/.*\.py$)", n)]
        assert not lab, f"the sdist ships lab records: {lab[:5]}"
        tar.extractall(tmp_path, filter="data")
    unpacked = next(tmp_path.glob("nertz_env-*/"))
    py = path / "bin" / "python"
    # -P: the installed package, not the unpacked nertz_env/ (which has agents/, train/, eval/ beside it)
    out = run([py, "-P", "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"], cwd=unpacked, env=env)
    assert "error" not in out.stdout.lower().split("collected")[-1], out.stdout[-3000:]
    skips = re.findall(r"^SKIPPED \[\d+\] (tests/\S+): (.*)$", out.stdout, re.M)
    assert skips, "the sdist's venv has no extras: the modules that need one should skip"
    for where, reason in skips:
        assert re.search(r"needs the \w+ extra", reason), f"{where} skips without naming the extra: {reason}"
    run([py, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_packaging.py"], cwd=unpacked, env=env)


@pytest.mark.isolated
@pytest.mark.parametrize("version", ["3.10", "3.13"])
def test_wheel__quick_start_and_a_command_of_each_extra_outside_the_checkout(version: str, tmp_path: Path) -> None:
    """The wheel with its eval, render and play extras: a command of each; nertz-train names its extra."""
    path = venv("wheel", dist()["wheel"], "eval,render,play", python=python_of(version))
    env = env_for(path)
    _quick_start(path, tmp_path, env)
    run(["nertz-eval", "round-robin", "random", "greedy", "--players", "2", "--deals", "2", "--workers", "1", "--rule",
         "max_ticks=60", "--out", "results", "--replays", "replays", "--no-progress"], cwd=tmp_path, env=env)
    assert json.loads((tmp_path / "results" / "results.json").read_text())
    replay = sorted((tmp_path / "replays").glob("*.jsonl.gz"))[0]
    run(["nertz-replay", replay, "-o", "page.html"], cwd=tmp_path, env=env)
    run(["nertz-replay", replay, "--gif", "game.gif", "--fps", "20"], cwd=tmp_path, env=env)
    assert (tmp_path / "page.html").stat().st_size > 0 and (tmp_path / "game.gif").read_bytes()[:3] == b"GIF"
    play = [path / "bin" / "nertz-play", "--no-browser", "--players", "2", "--seed", "1", "--step", "--replay-dir",
            tmp_path / "played"]
    assert "<html" in serve_and_fetch(play, "the table is at http", cwd=tmp_path, env=env).lower()
    out = subprocess.run(["nertz-train", "--total-timesteps", "64"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "the train extra" in out.stderr and "-m pip install 'torch>=2.1'" in out.stderr


@pytest.mark.isolated
def test_read_only_install_without_a_home__compiles_in_memory_with_one_warning(tmp_path: Path) -> None:
    """Where nothing can be written and no home: compiles in memory with one warning and one line."""
    path = venv("wheel", dist()["wheel"], "eval,render,play", python=python_of("3.13"))  # the last test's venv
    site, blocker, readonly_cache = tmp_path / "site", tmp_path / "blocker", tmp_path / "readonly-cache"
    run([path / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--target", site, dist()["wheel"]], cwd=tmp_path)
    blocker.write_text("")
    readonly_cache.mkdir()
    if os.geteuid() == 0:  # root writes through permissions: files in the way instead
        for pycache in ("nertz_env/engine/__pycache__", "nertz_env/agents/__pycache__"):
            shutil.rmtree(site / pycache, ignore_errors=True)
            (site / pycache).write_text("")
        home, cache = str(blocker / "home"), str(blocker / "cache")
    else:
        home, cache = "/", str(readonly_cache)
        for d in [site, *site.rglob("*"), readonly_cache]:
            if d.is_dir():
                d.chmod(0o555)
    env = env_for(path, HOME=home, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(site))
    env.pop("XDG_CACHE_HOME", None)
    try:
        (tmp_path / "run").mkdir()
        out = _quick_start(path, tmp_path / "run", env)
    finally:
        for d in [site, *site.rglob("*"), readonly_cache]:
            if d.is_dir():
                d.chmod(0o755)
    assert out.stdout.strip().splitlines()[-1].startswith(f"PACKAGE {site}")
    warned = [x for x in out.stderr.splitlines() if "CompileCacheWarning" in x]
    assert len(warned) == 1 and "NUMBA_CACHE_DIR" in warned[0], out.stderr[-3000:]
    told = [x for x in out.stderr.splitlines() if x.startswith("nertz_env: compiling the rules")]
    assert len(told) == 1 and "every process compiles" in told[0], out.stderr[-3000:]
