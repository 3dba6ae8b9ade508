"""Sphinx configuration of the nertz-env documentation (Sphinx + Furo + MyST Markdown).

Build (offline, warnings are errors), from the repository root:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Nothing here reaches the network: no intersphinx, no remote images, no CDN scripts. The generated parts
(option, action and observation tables, every command's ``--help``, the API reference) come from the
installed code at build time through the ``nertz_docs`` extension in ``docs/_ext``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("COLUMNS", "100")  # argparse wraps --help to the terminal: one fixed width here

project = "nertz-env"
author = "nertz-env contributors"
copyright = "nertz-env contributors, MIT licence"

try:
    from importlib.metadata import version as _version

    release = _version("nertz-env")
except Exception:  # a checkout that is not installed: the docs still build from the sources
    release = "unreleased"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "nertz_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/README.md"]

# MyST: GitHub-flavoured Markdown as the repository shows it, plus directives in ```{name} fences.
myst_enable_extensions = ["colon_fence", "deflist", "attrs_inline", "fieldlist"]
myst_heading_anchors = 4  # [text](#a-heading) links work as they do on GitHub
myst_links_external_new_tab = False

# autodoc: the docstrings of the public API. Optional extras that are not installed are mocked so the
# reference builds with the docs extra alone (the pages say which extra a module needs).
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_mock_imports = [
    m for m in ("ray", "torch", "stable_baselines3", "sb3_contrib", "tensorboard", "openskill", "matplotlib",
                "tqdm", "starlette", "uvicorn", "websockets", "resvg_py", "PIL", "imageio")
    if importlib.util.find_spec(m) is None
]
napoleon_google_docstring = True
napoleon_numpy_docstring = True

# Furo, with no external fonts or scripts.
html_theme = "furo"
html_title = f"nertz-env {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": True,
}

# Warnings that are errors under -W include broken cross-references inside the docs; links to files of the
# repository outside docs/ are rewritten to the repository (see nertz_docs.repo_url).
# The lab notes of experiments/ start at "###" (they are written to be read alone): no header-level warning.
suppress_warnings = ["myst.header"]


def _repository_url() -> str:
    """[project.urls] Repository of pyproject.toml (the base the long description's links use too)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return "https://github.com/nertz-env/nertz-env"
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text()).get("project", {}).get("urls", {})
    return str(urls.get("Repository", "https://github.com/nertz-env/nertz-env"))


nertz_repo_url = _repository_url()

# The public API: every name in these modules' __all__ must have a docstring, and each module an automodule
# on a reference page (nertz_docs warns otherwise; -W makes that an error).
nertz_api_modules = [
    "nertz_env",
    "nertz_env.agents",
    "nertz_env.eval",
    "nertz_env.eval.report",
    "nertz_env.train",
    "nertz_env.rllib",
]
