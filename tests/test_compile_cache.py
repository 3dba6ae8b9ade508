"""numba's on-disk cache is keyed on the engine's sources (nertz_env.engine._cache.SOURCES).

numba's own ``cache=True`` notices only edits to the file a function is defined in; a constant or a callee
imported from another file is frozen into the cached machine code. These tests edit a listed source between
two processes and check that the keyed cache compiles afresh while numba's plain cache runs the old code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nertz_env.engine import _cache

ROOT = Path(__file__).resolve().parent.parent


def test_sources__list_every_module_of_the_package_the_compiled_code_imports() -> None:
    code = "import sys, nertz_env.engine.rules; print(' '.join(m for m in sys.modules if m.startswith('nertz_env')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    for file in ("agents/kernels.py", "agents/forward.py"):  # their own files are keyed by numba
        text = (_cache.PACKAGE / file).read_text() if (_cache.PACKAGE / file).is_file() else (ROOT / file).read_text()
        loaded += re.findall(r"^from (nertz_env\.[\w.]+) import", text, re.M)
    files = set()
    for module in set(loaded) - {"nertz_env", "nertz_env.registration"}:
        rel = module.removeprefix("nertz_env.").replace(".", "/")
        files.add(f"{rel}/__init__.py" if (_cache.PACKAGE / rel).is_dir() else f"{rel}.py")
    assert files <= set(_cache.SOURCES), sorted(files - set(_cache.SOURCES))


def _write_package(tmp: Path, value: int) -> None:
    """``cachepkg``, whose ``f`` returns ``helper() * 10``, and a copy of the engine's sources that its cache
    is keyed on (as if ``consts.py`` were one of them)."""
    src = tmp / "src"
    for name in _cache.SOURCES:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_cache.PACKAGE / name, src / name)
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
        f"from pathlib import Path; from nertz_env.engine import _cache; _cache.PACKAGE = Path({str(tmp / 'src')!r}); "
        f"from cachepkg.{module} import f; v = f(); "
        "print(v, sum(f.stats.cache_hits.values()))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"}
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp, capture_output=True, text=True, check=True)
    value, hits = out.stdout.split()
    return int(value), int(hits)


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_editing_a_listed_source_never_runs_the_stale_cache(tmp_path: Path) -> None:
    _write_package(tmp_path, 1)
    assert _run(tmp_path, "keyed") == (10, 0)  # compiled, then saved
    assert _run(tmp_path, "keyed") == (10, 1)  # loaded from the cache
    assert _run(tmp_path, "plain") == (10, 0)
    assert _run(tmp_path, "plain") == (10, 1)
    (tmp_path / "cachepkg" / "consts.py").write_text("VALUE = 2\n")  # two files away from f
    with open(tmp_path / "src" / "cards.py", "a") as f:  # and an edit to a listed source
        f.write("\n# edited\n")
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


def _notices(tmp_path: Path, files: dict[str, str], call: str, runs: int = 1) -> list[str]:
    """Write the package ``files`` (name -> source) under ``tmp_path``, run ``call`` (which must print 3) in
    ``runs`` fresh processes sharing one numba cache, and return each run's stderr."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    errs = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", call], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr[-2000:]
        errs.append(out.stderr)
    return errs


NOTICE = "nertz_env: compiling the rules with numba for their first use; later processes load them from numba's cache"


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_a_compile_is_announced_once_per_process_and_a_cache_load_not_at_all(tmp_path: Path) -> None:
    # a first call compiles for a while: one line on the nertz_env logger says so; loading says nothing
    fns = ("from nertz_env.engine._cache import keyed_jit\n\n\n"
           "@keyed_jit({})\ndef f():\n    return 1\n\n\n@keyed_jit({})\ndef g():\n    return f() + 1\n")
    cold, warm = _notices(tmp_path, {"notepkg/__init__.py": "", "notepkg/fns.py": fns},
                          "from notepkg.fns import f, g\nprint(f() + g())", runs=2)
    assert [x for x in cold.splitlines() if "compiling" in x] == [NOTICE]
    assert "compiling" not in warm


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")
def test_the_notice_says_the_cache_works_when_an_uncached_helper_compiles_inside_a_cached_function(
        tmp_path: Path) -> None:
    files = {
        "notepkg2/__init__.py": "",
        "notepkg2/fns.py": "from nertz_env.engine._cache import keyed_jit\n\n\n"
                           "@keyed_jit({}, cache=False)\ndef helper():\n    return 2\n",
        "notepkg2/other.py": "from nertz_env.engine._cache import keyed_jit\nfrom notepkg2.fns import helper\n\n\n"
                             "@keyed_jit({})\ndef entry():\n    return helper() + 1\n",
    }
    (err,) = _notices(tmp_path, files, "from notepkg2.other import entry\nprint(entry())")
    assert [x for x in err.splitlines() if "compiling" in x] == [NOTICE], err[-2000:]
