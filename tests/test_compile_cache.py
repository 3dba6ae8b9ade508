"""numba's on-disk cache is keyed on every source the compiled code comes from (nertz_env.engine._cache).

numba's own ``cache=True`` notices only edits to the file a function is defined in; a constant or a callee
imported from another file is frozen into the cached machine code. These tests edit such a file between two
processes and check that the keyed cache compiles afresh while numba's plain cache runs the old code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nertz_env.engine import _cache

ROOT = Path(__file__).resolve().parent.parent


def test_engine_key_covers_every_file_its_code_comes_from() -> None:
    names = {os.path.relpath(p, ROOT) for p in _cache.source_files("nertz_env.engine.rules")}
    for f in ("rules.py", "state.py"):
        assert os.path.join("nertz_env", "engine", f) in names
    for f in ("actions.py", "cards.py", "observation.py"):  # constants the rules import
        assert os.path.join("nertz_env", f) in names
    kernels = {os.path.relpath(p, ROOT) for p in _cache.source_files("nertz_env.agents.kernels")}
    assert os.path.join("agents", "kernels.py") in kernels
    assert os.path.join("nertz_env", "engine", "rules.py") in kernels  # the card helpers it inlines


def _write_package(tmp: Path, value: int) -> None:
    pkg = tmp / "cachepkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text(f"VALUE = {value}\n")
    (pkg / "helpers.py").write_text(
        textwrap.dedent(
            """
            import numba

            from cachepkg.consts import VALUE


            @numba.njit
            def helper():
                return VALUE
            """
        )
    )
    for name, decorator in (
        ("keyed", "@keyed_jit({})"),
        ("plain", "@numba.njit(cache=True)"),
    ):
        (pkg / f"{name}.py").write_text(
            textwrap.dedent(
                f"""
                import numba

                from cachepkg.helpers import helper
                from nertz_env.engine._cache import keyed_jit


                {decorator}
                def f():
                    return helper() * 10
                """
            )
        )


def _run(tmp: Path, module: str) -> tuple[int, int]:
    """``f()`` of ``cachepkg.<module>`` in a fresh process, and the number of its cache hits."""
    code = (
        f"from cachepkg.{module} import f; v = f(); "
        "print(v, sum(f.stats.cache_hits.values()))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"}
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp, capture_output=True, text=True, check=True)
    value, hits = out.stdout.split()
    return int(value), int(hits)


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_editing_a_callee_in_another_file_never_runs_the_stale_cache(tmp_path: Path) -> None:
    _write_package(tmp_path, 1)
    assert _run(tmp_path, "keyed") == (10, 0)  # compiled, then saved
    assert _run(tmp_path, "keyed") == (10, 1)  # loaded from the cache
    assert _run(tmp_path, "plain") == (10, 0)
    assert _run(tmp_path, "plain") == (10, 1)
    (tmp_path / "cachepkg" / "consts.py").write_text("VALUE = 2\n")  # two files away from f
    assert _run(tmp_path, "plain") == (10, 1)  # numba's own cache: the old code, loaded
    assert _run(tmp_path, "keyed") == (20, 0)  # keyed: compiled afresh
    assert _run(tmp_path, "keyed") == (20, 1)  # and cached again under the new key


_NO_CACHE_CHILD = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from ropkg.fns import f, g
    value = f() + g()
print(json.dumps({"value": value, "warnings": [[w.category.__name__, str(w.message)] for w in caught]}))
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_no_writable_cache_folder_compiles_in_memory_with_one_warning(tmp_path: Path) -> None:
    # A read-only install without a writable home (containers, CI images): numba finds no folder for its
    # cache (not NUMBA_CACHE_DIR, read-only here; not the package's __pycache__; not ~/.cache with HOME=/).
    # numba's cache raised "cannot cache function ...: no locator available" at the first step; the rules
    # must compile in memory instead, with one warning for the process that names NUMBA_CACHE_DIR.
    pkg = tmp_path / "ropkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "fns.py").write_text(
        "from nertz_env.engine._cache import keyed_jit\n\n\n"
        "@keyed_jit({})\ndef f():\n    return 1\n\n\n@keyed_jit({})\ndef g():\n    return 2\n"
    )
    cache = tmp_path / "cache"
    cache.mkdir()
    home = "/"
    if os.geteuid() == 0:
        # root writes through any permission: block the folders with files in the way instead (no one can
        # create a folder inside a file)
        blocker = tmp_path / "blocker"
        blocker.write_text("")
        (pkg / "__pycache__").write_text("")
        cache, home = blocker / "cache", str(blocker / "home")
    else:
        cache.chmod(0o555)
        pkg.chmod(0o555)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "NUMBA_DISABLE_JIT")}
    env.update(HOME=home, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    try:
        out = subprocess.run(
            [sys.executable, "-c", _NO_CACHE_CHILD], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=300,
        )
    finally:
        pkg.chmod(0o755)
        if cache.is_dir():
            cache.chmod(0o755)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["value"] == 3
    ours = [m for c, m in result["warnings"] if c == "CompileCacheWarning"]
    assert len(ours) == 1, result["warnings"]  # one for the process, not one per function
    assert "NUMBA_CACHE_DIR" in ours[0] and "compile in memory" in ours[0]


def _notices(tmp_path: Path, files: dict[str, str], module: str, what: str, call: str, runs: int = 1,
             after: float = 0.0) -> list[str]:
    """Write the package ``files`` (name -> source) under ``tmp_path``, name ``module`` in FIRST_COMPILE as
    ``what``, run ``call`` (which must print 3) in ``runs`` fresh processes sharing one numba cache, with the
    notice logged after ``after`` s of compiling, and return each run's stderr."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    code = (
        "from nertz_env.engine import _cache\n"
        f"_cache.FIRST_COMPILE[{module!r}] = ({what!r}, 'a moment')\n"
        f"_cache.ANNOUNCE_AFTER = {after!r}\n"
        f"{call}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    errs = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr[-2000:]
        errs.append(out.stderr)
    return errs


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_a_compile_is_announced_once_per_process_and_a_cache_load_not_at_all(tmp_path: Path) -> None:
    # The first step compiled for 15-30 s in silence. A compile of a module of FIRST_COMPILE logs one line
    # (what compiles, how long the first time takes) through logging, never print; loading from the cache
    # logs nothing. (The real modules' line is checked on the installed wheel: tests/test_wheel.py.)
    fns = ("from nertz_env.engine._cache import keyed_jit\n\n\n"
           "@keyed_jit({})\ndef f():\n    return 1\n\n\n@keyed_jit({})\ndef g():\n    return f() + 1\n")
    cold, warm = _notices(tmp_path, {"notepkg/__init__.py": "", "notepkg/fns.py": fns}, "notepkg.fns",
                          "the test functions", "from notepkg.fns import f, g\nprint(f() + g())", runs=2)
    assert [x for x in cold.splitlines() if "compiling" in x] == [
        "nertz_env: compiling the test functions with numba for their first use (a moment); "
        "later processes load them from numba's cache"
    ]
    assert "compiling" not in warm  # loaded from the cache: nothing to wait for


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_the_notice_says_the_cache_works_when_an_uncached_helper_compiles_first(tmp_path: Path) -> None:
    # rules.py's helpers are plain (uncached) njit functions inlined into its cached entry points; when the search
    # kernels (another module) call one, that helper is the module's first compile. The notice named the cache
    # as unusable then ("no cache can be kept here"), though it was kept: it must say what holds for the process.
    files = {
        "notepkg2/__init__.py": "",
        "notepkg2/fns.py": "from nertz_env.engine._cache import keyed_jit\n\n\n"
                           "@keyed_jit({}, cache=False)\ndef helper():\n    return 2\n",
        "notepkg2/other.py": "from nertz_env.engine._cache import keyed_jit\nfrom notepkg2.fns import helper\n\n\n"
                             "@keyed_jit({})\ndef entry():\n    return helper() + 1\n",
    }
    (err,) = _notices(tmp_path, files, "notepkg2.fns", "the helpers", "from notepkg2.other import entry\nprint(entry())")
    assert [x for x in err.splitlines() if "compiling" in x] == [
        "nertz_env: compiling the helpers with numba for their first use (a moment); later processes load them from numba's cache"
    ], err[-2000:]


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
@pytest.mark.parametrize(("after", "told"), [(0.01, True), (60.0, False)])
def test_the_notice_waits_for_a_compile_that_takes_a_while(tmp_path: Path, after: float, told: bool) -> None:
    # A later process meeting a small part of the rules for the first time (a block sampler, a helper at a new
    # signature) compiled it in well under a second, and the notice still promised "up to about 15 s". It is
    # logged only when the compile is still running ANNOUNCE_AFTER seconds after it started (1 s by default):
    # a first compile in a process takes far more than 10 ms, and none here takes a minute.
    fns = "from nertz_env.engine._cache import keyed_jit\n\n\n@keyed_jit({})\ndef f():\n    return 3\n"
    (err,) = _notices(tmp_path, {"waitpkg/__init__.py": "", "waitpkg/fns.py": fns}, "waitpkg.fns", "the test function",
                      "from waitpkg.fns import f\nprint(f())", after=after)
    assert ("compiling the test function" in err) is told, err[-2000:]
