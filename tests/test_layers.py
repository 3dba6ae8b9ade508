"""The package's layers (docs/contributing.md, "Layout"): every import statement of every module, at the top of
a file or inside a function, stays in its layer or goes down the list, and no modules import each other.

A module named in a string counts as imported: a package's ``_LAZY`` table (names loaded on first use) and
``"module:attr"`` entry points. The package's files are found as pyproject.toml lists them."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# lowest first; a module's layer is its longest entry ("nertz_env" itself is only the package's __init__)
LAYERS = [
    ("helpers", ["nertz_env._text", "nertz_env.threads", "nertz_env.extras"]),
    ("game", ["nertz_env.config", "nertz_env.cards", "nertz_env.actions", "nertz_env.observation",
              "nertz_env.global_state", "nertz_env.infos", "nertz_env.snapshot", "nertz_env.engine",
              "nertz_env.moves"]),
    ("drawing", ["nertz_env.render"]),
    ("agents", ["nertz_env.agents"]),
    ("env forms", ["nertz_env.environment", "nertz_env.vector", "nertz_env.agent_vector", "nertz_env.single",
                   "nertz_env._envbase", "nertz_env.registration", "nertz_env"]),
    ("parser", ["nertz_env.cli"]),
    ("faces", ["nertz_env.replay", "nertz_env.play", "nertz_env.rllib", "nertz_env._rllib_spec"]),
    ("eval", ["nertz_env.eval"]),
    ("train", ["nertz_env.train"]),
    ("commands", ["nertz_env.cli.commands"]),
]
RANK = {entry: rank for rank, (_, entries) in enumerate(LAYERS) for entry in entries}


def layer(module: str) -> int:
    entries = [e for e in RANK if module == e or (e != "nertz_env" and module.startswith(e + "."))]
    assert entries, f"{module} is in no layer: add it to LAYERS here and to docs/contributing.md"
    return RANK[max(entries, key=len)]


def sources() -> dict[str, Path]:
    """Module name -> file, for every package of pyproject.toml's explicit list."""
    tool = pytest.importorskip("tomllib").loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    files = {}
    for package in tool["packages"]:
        for path in (ROOT / tool.get("package-dir", {}).get(package, package.replace(".", "/"))).glob("*.py"):
            files[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return files


def lazy_table(tree: ast.Module) -> dict[str, str]:
    """A package's ``_LAZY``: name -> the module it is loaded from on first use."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def imported(module: str, path: Path, lazy: dict[str, dict[str, str]]) -> set[str]:
    """The modules of the package (``lazy``'s keys) that ``module`` imports or names, but ``nertz_env`` itself:
    Python runs it before any module of it, and each of its ``_LAZY`` names counts as its own module."""
    package = module if path.stem == "__init__" else module.rpartition(".")[0]
    found = set(lazy[module].values())
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level - 1
                base = ".".join([*package.split(".")[: package.count(".") + 2 - node.level], base]).strip(".")
            found.update(lazy.get(base, {}).get(a.name, f"{base}.{a.name}") for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"nertz_env[\w.]*:\w+", node.value):
            found.add(node.value.partition(":")[0])
    out = set()
    for name in found:
        while name and name not in lazy:  # nertz_env.cli.Parser -> nertz_env.cli
            name = name.rpartition(".")[0]
        out.add(name)
    return out - {"", module, "nertz_env"}


def test_every_import_goes_down_the_layers_and_none_is_circular() -> None:
    files = sources()
    lazy = {m: lazy_table(ast.parse(p.read_text(encoding="utf-8"))) for m, p in files.items()}
    graph = {m: imported(m, p, lazy) for m, p in files.items()}
    upward = [f"{m} ({LAYERS[layer(m)][0]}) imports {d} ({LAYERS[layer(d)][0]})"
              for m in sorted(graph) for d in sorted(graph[m]) if layer(d) > layer(m)]
    assert not upward, "imports up the layers:\n" + "\n".join(upward)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        pytest.fail(f"modules that import each other: {' imports '.join(reversed(e.args[1]))}")
