"""Sphinx extension of the nertz-env docs: the parts of the reference that are generated from the code.

Directives (usable from MyST Markdown as ```{name} fences):

- ``nertz-generated NAME``: a table generated from the code (a name of :data:`SECTIONS`, or ``card``), for
  the default rules or, with ``:rules: draw=1 jokers=2``, for a variant.
- ``nertz-help PROGRAM [SUBCOMMAND ...]``: the command's ``--help`` exactly as it prints it, produced at build
  time by running the program's own ``main`` with ``--help`` (console scripts, ``python -m`` modules and
  ``python bench/X.py`` scripts), so the reference cannot drift from the parsers.
- ``nertz-api-check``: placed once on the API reference page; with the ``nertz_api_modules`` setting it warns
  (an error under ``-W``) for every public name (``__all__``) of those modules that has no docstring, and
  for every one of those modules that no ``automodule`` on the reference pages documents.

Links from a page to a file of the repository outside ``docs/`` (``../../bench/results/x.md``) are rewritten
to ``nertz_repo_url`` (set in conf.py) when the file exists, and warn when it does not.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import logging as pylogging
import os
import runpy
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from nertz_env.actions import KIND_NAMES, action_table
from nertz_env.config import NertzConfig, make_config
from nertz_env.global_state import state_layout
from nertz_env.infos import SCHEMAS
from nertz_env.moves import move_layout
from nertz_env.observation import STATUS_FIELDS, obs_layout

LOG = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]

# program -> module whose main(argv) parses its arguments (the console scripts of pyproject.toml and the
# python -m modules the docs show). Scripts under bench/ run as __main__ from their file.
def _console_scripts() -> dict[str, str]:
    """Console script -> the module of its main, from nertz_env.cli.commands.COMMANDS (the one list of commands)."""
    try:
        from nertz_env.cli.commands import COMMANDS
    except ImportError:  # an older package without nertz_env.cli.commands
        return {}
    return {name: spec.target.partition(":")[0] for name, spec in COMMANDS.items()}


PROGRAMS = {
    **_console_scripts(),
    "python -m nertz_env.train.imitate": "nertz_env.train.imitate",
    "python -m nertz_env.train.evaluate": "nertz_env.train.evaluate",
    "python -m nertz_env.train.expert": "nertz_env.train.expert",
    "python -m nertz_env.train.distill": "nertz_env.train.distill",
    "python -m nertz_env.train.plot": "nertz_env.train.plot",
}


def _parse_rules(text: str) -> dict[str, Any]:
    from nertz_env.cli import parse_rule  # as --rule reads them

    return dict(parse_rule(word) for word in text.split())


def generated_markdown(name: str, rules: dict[str, Any] | None = None) -> str:
    """The Markdown of one generated section, for the default rules or the given variant."""
    if name == "card":
        return card_markdown(rules or {})
    if name not in SECTIONS:
        raise ValueError(f"no section {name!r} (the sections are {sorted([*SECTIONS, 'card'])})")
    return SECTIONS[name](make_config(**(rules or {})))


def slices_markdown(slices: dict[str, slice], shapes: dict[str, str] | None = None) -> str:
    """Named slices of a vector as a table (name, index range, width, and a shape where given)."""
    lines = ["| slice | indices | width |" + (" shape |" if shapes else ""),
             "|---|---:|---:|" + ("---|" if shapes else "")]
    for name, sl in slices.items():
        shape = f" {shapes[name]} |" if shapes else ""
        lines.append(f"| `{name}` | {sl.start}-{sl.stop - 1} | {sl.stop - sl.start} |{shape}")
    return "\n".join(lines)


def actions_markdown(config: NertzConfig) -> str:
    """The action table, one row per block of actions of one kind (index range, count, first and last)."""
    t = action_table(config)
    lines = ["| indices | count | kind | first | last |", "|---:|---:|---|---|---|"]
    start = 0
    for i in range(1, t.n + 1):
        if i == t.n or t[i].kind != t[start].kind:
            span = f"{start}" if i - 1 == start else f"{start}-{i - 1}"
            first = f"`{t.name(start)}`: {t.describe(start)}"
            last = "" if i - 1 == start else f"`{t.name(i - 1)}`: {t.describe(i - 1)}"
            lines.append(f"| {span} | {i - start} | {KIND_NAMES[t[start].kind]} | {first} | {last} |")
            start = i
    return "\n".join(lines)


def infos_markdown(config: NertzConfig) -> str:
    """Every info schema of nertz_env.infos (one table per env)."""
    out: list[str] = []
    for env, keys in SCHEMAS.items():
        out += [f"**{env}**", "", "| key | type | none yet | meaning |", "|---|---|---|---|"]
        for k in keys:
            shape = f" ({', '.join(k.shape)}{',' if len(k.shape) == 1 else ''})" if k.shape else ""
            kind = ("int8 array" if k.kind == "array" else k.kind) + shape
            out.append(f"| `{k.name}` | {kind} | {k.none} | {k.meaning} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def state_markdown(config: NertzConfig) -> str:
    """The global state's slices, with their shapes, and the locations of a card."""
    s, p = state_layout(config), config.num_players
    shapes = {"cards": f"{p} seats x {s.deck} cards x {s.card_width}", "status": f"{p} seats x {len(STATUS_FIELDS)}"}
    locations = ", ".join(f"`{loc}`" for loc in s.locations)
    return f"{slices_markdown(s.slices, shapes)}\n\nPer card: {locations}, then `depth`."


# section name -> its Markdown for a config (``card`` reads a live env instead)
SECTIONS = {
    "actions": actions_markdown,
    "observation": lambda config: slices_markdown(obs_layout(config).slices),
    "moves": lambda config: slices_markdown(move_layout(config).slices),
    "infos": infos_markdown,
    "state": state_markdown,
}


def card_markdown(rules: dict[str, Any]) -> str:
    """The environment card's summary table (PettingZoo's format), read off a live env of these rules."""
    import nertz_env

    env = nertz_env.parallel_env(**rules)
    agent = env.possible_agents[0]
    obs_space = env.observation_space(agent)
    act_space = env.action_space(agent)
    obs = obs_space["observation"]
    mask = obs_space["action_mask"]
    n = len(env.possible_agents)
    rows = [
        ("Import", "`import nertz_env` (`nertz_env.parallel_env`, `nertz_env.env`, `nertz_env.vector_env`)"),
        ("Actions", f"Discrete ({act_space.n} for these rules), masked"),
        ("Parallel API", "Yes (`parallel_env`); AEC through `env`"),
        ("Manual Control", "Yes (`nertz-play`, in the browser)"),
        ("Agents", f"`agents= {env.possible_agents}`"),
        ("Agents count", f"{n} (2 to 8: `num_players`)"),
        ("Action Shape", f"`{act_space.shape or ()}` (one integer, `Discrete({act_space.n})`)"),
        ("Action Values", f"`Discrete({act_space.n})`: 0 is `wait`, always legal"),
        ("Observation Shape", f"`{{'observation': {obs.shape}, 'action_mask': {mask.shape}}}`"),
        ("Observation Values", f"`observation`: {obs.dtype} in [{obs.low.min():g}, {obs.high.max():g}]; "
                               f"`action_mask`: {mask.dtype} in {{0, 1}}"),
    ]
    state_space = getattr(env, "state_space", None)
    if state_space is not None:
        rows.append(("State Shape", f"`{state_space.shape}`"))
        rows.append(("State Values", f"{state_space.dtype} in [{state_space.low.min():g}, {state_space.high.max():g}]"))
    env.close()
    lines = ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines)


class GeneratedTable(SphinxDirective):
    required_arguments = 1
    option_spec = {"rules": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        rules = _parse_rules(self.options.get("rules", ""))
        try:
            text = generated_markdown(self.arguments[0], rules)
        except Exception as e:  # a wrong name or rule: a warning (an error under -W) at this line
            LOG.warning(f"nertz-generated {self.arguments[0]}: {e}", location=self.get_location())
            return []
        container = nodes.container(classes=["nertz-generated"])
        self.state.nested_parse(StringList(text.splitlines(), source=f"nertz-generated:{self.arguments[0]}"),
                                self.content_offset, container)
        return [container]


def help_text(command: str, mocks: Sequence[str] = ()) -> str:
    """What ``COMMAND --help`` prints, produced in this process by the program's own argument parser
    (``mocks``: modules of extras that are not installed, stood in for as autodoc does)."""
    from sphinx.ext.autodoc.mock import mock

    words = shlex.split(command)
    if words[:1] == ["python"] and len(words) > 1 and words[1].startswith("bench/"):
        program, args, path = f"python {words[1]}", words[2:], ROOT / words[1]
    elif words[:2] == ["python", "-m"]:
        program, args, path = f"python -m {words[2]}", words[3:], None
    else:
        program, args, path = words[0], words[1:], None
    out, err = io.StringIO(), io.StringIO()
    old_argv, old_path = sys.argv, list(sys.path)
    code: Any = None
    try:
        with mock(list(mocks)), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if path is not None:
                    if not path.exists():
                        raise ValueError(f"{path} does not exist")
                    sys.argv = [str(path), *args, "--help"]
                    sys.path.insert(0, str(path.parent))
                    runpy.run_path(str(path), run_name="__main__")
                else:
                    module = PROGRAMS.get(program)
                    if module is None:
                        raise ValueError(f"unknown program {program!r}: add it to PROGRAMS in docs/_ext/nertz_docs.py")
                    sys.argv = [program, *args, "--help"]
                    importlib.import_module(module).main([*args, "--help"])
            except SystemExit as e:
                code = e.code
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    if code not in (0, None) or not out.getvalue().strip():
        raise ValueError(f"`{command} --help` exited {code}: {err.getvalue().strip()[-500:]}")
    return out.getvalue().rstrip()


class HelpText(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0]
        try:
            text = help_text(command, self.config.autodoc_mock_imports)
        except Exception as e:
            LOG.warning(f"nertz-help {command}: {e}", location=self.get_location())
            return []
        block = nodes.literal_block(text, f"$ {command} --help\n{text}")
        block["language"] = "text"
        return [block]


def public_names(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module_name
                 and (inspect.isclass(v) or inspect.isfunction(v))]
    return [n for n in names if not n.startswith("_")]


PROTOCOLS = ("nertz_env.agents.Agent",)  # documented protocols whose methods agents implement structurally


def protocol_doc(owner: Any, name: str) -> str:
    """The docstring of protocol method ``name`` when ``owner`` (a class) implements that protocol: every
    agent's ``act`` and ``reset`` are documented once, on :class:`nertz_env.agents.Agent`."""
    for dotted in PROTOCOLS:
        module_name, _, cls_name = dotted.rpartition(".")
        proto = getattr(importlib.import_module(module_name), cls_name)
        methods = [m for m in vars(proto) if not m.startswith("_") and callable(getattr(proto, m))]
        if name in methods and all(callable(getattr(owner, m, None)) for m in methods):
            return inspect.getdoc(getattr(proto, name)) or ""
    return ""


def undocumented(module_name: str) -> list[str]:
    """Public names of a module (its ``__all__``) without a docstring of their own."""
    module = importlib.import_module(module_name)
    missing = []
    if not (module.__doc__ or "").strip():
        missing.append(module_name)
    for name in public_names(module_name):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj) or callable(obj)):
            continue  # constants are documented in the module docstring
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(f"{module_name}.{name}")
            continue
        if inspect.isclass(obj):
            if any(getattr(base, "__sphinx_mock__", False) for base in obj.__mro__[1:]):
                continue  # a base from a mocked extra (SB3's VecEnv): its methods' docs come from there
            for attr, value in vars(obj).items():
                if attr.startswith("_") or not (inspect.isfunction(value) or isinstance(value, property)):
                    continue
                # getdoc on the class attribute finds a docstring inherited from a base (Agent.act)
                if not (inspect.getdoc(getattr(obj, attr, value)) or protocol_doc(obj, attr)).strip():
                    missing.append(f"{module_name}.{name}.{attr}")
    return missing


class ApiCheck(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from sphinx.ext.autodoc.mock import mock

        for module_name in self.config.nertz_api_modules:
            try:
                with mock(self.config.autodoc_mock_imports):  # the extras autodoc mocks, mocked here too
                    missing = undocumented(module_name)
            except ImportError as e:
                LOG.warning(f"nertz-api-check: cannot import {module_name}: {e}", location=self.get_location())
                continue
            for name in missing:
                LOG.warning(f"undocumented public name: {name} (give it a docstring)", location=self.get_location())
        return []


def _owner(app: Sphinx, name: str) -> Any:
    module_name = name.rpartition(".")[0]
    owner_path = module_name.split(".")
    for i in range(len(owner_path), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(owner_path[:i]))
        except ImportError:
            continue
        for part in owner_path[i:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def _fill_protocol_doc(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what == "method" and not any(line.strip() for line in lines):
        owner = _owner(app, name)
        doc = protocol_doc(owner, name.rpartition(".")[2]) if inspect.isclass(owner) else ""
        lines.extend(doc.splitlines())


def _keep_protocol_methods(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    if skip and inspect.isfunction(obj) and not name.startswith("_") and not (obj.__doc__ or "").strip():
        qual = getattr(obj, "__qualname__", "")
        owner = _owner(app, f"{obj.__module__}.{qual}") if "." in qual else None
        if inspect.isclass(owner) and protocol_doc(owner, name):
            return False
    return None


def _check_api_pages(app: Sphinx, env: Any) -> None:
    """Every module of nertz_api_modules has an automodule somewhere in the docs."""
    documented = set()
    for path in Path(app.srcdir).rglob("*.md"):
        if "_build" in path.parts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            for prefix in ("```{automodule} ", ":::{automodule} ", ".. automodule:: "):
                if line.strip().startswith(prefix):
                    documented.add(line.strip()[len(prefix):].strip())
    for module_name in app.config.nertz_api_modules:
        if module_name not in documented:
            LOG.warning(f"public module {module_name} has no automodule in docs/ (add it to a reference page)")


def _included_files(app: Sphinx) -> dict[Path, str]:
    """Repository files outside docs/ that a page includes (```{include} ../../bench/results/x.md), to the
    docname of that page."""
    cached = getattr(app, "_nertz_included", None)  # reset by _auto_experiment_pages
    if cached is not None:
        return cached
    srcdir = Path(app.srcdir).resolve()
    found: dict[Path, str] = {}
    for path in srcdir.rglob("*.md"):
        if "_build" in path.relative_to(srcdir).parts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith(("```{include} ", ":::{include} ")):
                target = (path.parent / line.split(None, 1)[1].strip()).resolve()
                found[target] = path.relative_to(srcdir).with_suffix("").as_posix()
    app._nertz_included = found  # type: ignore[attr-defined]
    return found


AUTO = "experiments/auto"  # generated wrapper pages (ignored by git): lab notes no checked-in page includes
NOTES = ("bench/results", "experiments")  # where the notes are: benchmarks' own tables, and the lab's records


def _auto_experiment_pages(app: Sphinx) -> None:
    """Every note of :data:`NOTES` (*.md) is on a page: the checked-in pages of docs/experiments/ include
    the known ones with a title of their own; a note added since (a new benchmark writing a new file) gets a
    generated page under docs/experiments/auto/, so the site lists it without anyone editing the docs."""
    srcdir = Path(app.srcdir).resolve()
    auto = srcdir / AUTO
    included = {k for k, v in _included_files(app).items() if not v.startswith(AUTO + "/")}
    wanted: dict[str, str] = {}
    notes = [(folder, path) for folder in NOTES for path in sorted((ROOT / folder).rglob("*.md"))]
    for folder, path in notes:
        if path.resolve() in included:
            continue
        rel = path.relative_to(ROOT).as_posix()
        slug = path.relative_to(ROOT / folder).with_suffix("").as_posix().replace("/", "-")
        first = path.read_text(encoding="utf-8").lstrip().splitlines()[:1]
        title = "" if first and first[0].startswith("# ") else f"# `{rel}`\n\n"
        wanted[f"{slug}.md"] = f"{title}```{{include}} ../../../{rel}\n:relative-images:\n```\n"
    if auto.is_dir():
        for old in auto.glob("*.md"):
            if old.name not in wanted:
                old.unlink()
    if wanted:
        auto.mkdir(parents=True, exist_ok=True)
        for name, text in wanted.items():
            target = auto / name
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
    app._nertz_included = None  # type: ignore[attr-defined]


def _rewrite_repo_links(app: Sphinx, doctree: nodes.document) -> None:
    """Links to repository files outside docs/ (``../../bench/results/x.md``, ``../../tests/test_x.py``, a
    folder) point to the file on the repository; a link to a file that does not exist is a warning."""
    from sphinx import addnodes

    srcdir = Path(app.srcdir).resolve()
    base = app.config.nertz_repo_url.rstrip("/")
    docdir = Path(app.env.doc2path(app.env.docname)).resolve().parent
    candidates = [
        n for n in doctree.findall()
        if (isinstance(n, addnodes.pending_xref) and n.get("reftype") == "myst")
        or isinstance(n, addnodes.download_reference)
    ]
    for node in candidates:
        target_text = node.get("reftarget", "")
        if not target_text or "://" in target_text or target_text.startswith("#"):
            continue
        path_part, _, anchor = target_text.partition("#")
        if path_part.removesuffix(".md").lstrip("/") in app.env.found_docs:
            continue  # already a page of the site (an include's link MyST resolved with :relative-docs:)
        origin = docdir
        if node.source and Path(node.source).is_file() and not Path(node.source).resolve().is_relative_to(srcdir):
            origin = Path(node.source).resolve().parent  # a link inside an included file (a note)
        target = (origin / path_part).resolve()
        if not target.exists() and Path(path_part).is_absolute():  # MyST made "x.md" a docname "/abs/x"
            for suffix in app.config.source_suffix:
                if Path(path_part + suffix).exists():
                    target = Path(path_part + suffix)
                    break
        if target.is_relative_to(srcdir) or not target.is_relative_to(ROOT):
            continue
        if not target.exists():
            LOG.warning(f"link to a missing repository file: {target_text}", location=node)
            node.replace_self(node.children or [nodes.Text(target_text)])
            continue
        page = _included_files(app).get(target)
        if page is not None:  # a file a docs page includes (a note): link that page
            uri = app.builder.get_relative_uri(app.env.docname, page) + (f"#{anchor}" if anchor else "")
            ref = nodes.reference("", "", internal=True, refuri=uri)
            ref += node.children or [nodes.Text(page)]
            node.replace_self(ref)
            continue
        rel = target.relative_to(ROOT).as_posix()
        kind = "tree" if target.is_dir() else "blob"
        ref = nodes.reference("", "", internal=False, refuri=f"{base}/{kind}/main/{rel}" + (f"#{anchor}" if anchor else ""))
        ref += node.children or [nodes.literal(rel, rel)]
        node.replace_self(ref)


class _EmptyGlobFilter(pylogging.Filter):
    """A toctree glob that matches nothing yet (``clients/*`` before any client page) is not an error: the
    sections are globs so that a new page is listed without editing the index."""

    def filter(self, record: pylogging.LogRecord) -> bool:
        return "didn't match any documents" not in str(record.msg)


def setup(app: Sphinx) -> dict[str, Any]:
    os.environ.setdefault("COLUMNS", "100")
    pylogging.getLogger("sphinx.sphinx.directives.other").addFilter(_EmptyGlobFilter())
    app.add_config_value("nertz_api_modules", [], "env")
    app.add_config_value("nertz_repo_url", "", "env")
    app.add_directive("nertz-generated", GeneratedTable)
    app.add_directive("nertz-help", HelpText)
    app.add_directive("nertz-api-check", ApiCheck)
    app.connect("env-updated", lambda app, env: _check_api_pages(app, env))
    app.connect("builder-inited", _auto_experiment_pages)
    app.connect("doctree-read", _rewrite_repo_links)
    app.connect("autodoc-process-docstring", _fill_protocol_doc)
    app.connect("autodoc-skip-member", _keep_protocol_methods)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
