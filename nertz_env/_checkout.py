"""Source-checkout imports: ``agents/``, ``train/`` and ``eval/`` at the repository root as ``nertz_env.*``.

An installed wheel holds those folders inside the package (``package-dir`` in ``pyproject.toml``); a checkout
keeps them beside it. ``nertz_env/__init__.py`` calls ``extend_path(__path__, __file__)``, which appends the
repository root to the package's ``__path__`` only when the folder above the package holds nertz-env's own
``pyproject.toml``. So ``python -m pytest`` or ``python -c "import nertz_env.agents"`` run from the root of a
checkout find ``agents/`` as ``nertz_env.agents``, while an installed copy (whose parent folder is
site-packages) is left as it is. This module imports nothing but ``os``.
"""

from __future__ import annotations

import os

PROJECT_NAME = "nertz-env"


def _is_project_file(text: str) -> bool:
    """True when a pyproject.toml text declares ``name = "nertz-env"`` on a line of its own."""
    wanted = f'name="{PROJECT_NAME}"'
    for line in text.splitlines():
        if line.replace(" ", "").replace("\t", "").replace("'", '"') == wanted:
            return True
    return False


def checkout_root(init_file: str) -> str | None:
    """The repository root when the package at ``init_file`` lies in a nertz-env source checkout, else None."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(init_file)))
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    return root if _is_project_file(text) else None


def extend_path(pkg_path: list[str], init_file: str) -> None:
    """Append the checkout root to ``pkg_path`` (the package's ``__path__``) when in a source checkout.

    Args:
        pkg_path: the calling package's ``__path__``, changed in place.
        init_file: the calling package's ``__file__`` (``.../nertz_env/__init__.py``).
    """
    root = checkout_root(init_file)
    if root is not None and root not in pkg_path:
        pkg_path.append(root)
