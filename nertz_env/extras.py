"""The optional extras (``pip install ".[train]"`` in a checkout) and the modules each provides.

A command that needs a module of a missing extra says so in one line naming a command that installs it
(:func:`missing_extra_message`). The table mirrors ``[project.optional-dependencies]`` of ``pyproject.toml``
as import names; ``tests/test_packaging.py`` checks that the two agree.
"""

from __future__ import annotations

import importlib.metadata
import shlex
import sys
from collections.abc import Sequence

# extra -> the top-level modules its requirements install, in pyproject's order
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "tqdm", "rich"),
    "eval": ("openskill", "matplotlib", "tqdm", "scipy"),
    "render": ("resvg_py", "PIL", "imageio", "imageio_ffmpeg"),
    "play": ("starlette", "uvicorn", "websockets"),
    "rllib": ("torch", "ray"),
    # the clients tests/test_clients.py runs
    "test": ("supersuit", "tianshou", "torchrl", "array_api_compat", "skrl"),
    "browser": ("playwright",),  # the browser tests
}


def requirements(extra: str) -> list[str]:
    """The requirements of ``extra`` as the installed nertz-env declares them (``["starlette>=0.37", ...]``);
    empty when nertz-env is not installed (sources on ``sys.path``)."""
    try:
        declared = importlib.metadata.requires("nertz-env") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    ours = [req.partition(";") for req in declared]
    return [name.strip() for name, _, when in ours if when.strip().replace("'", '"') == marker]


def install_command(extra: str) -> str:
    """A command that installs ``extra`` into the running Python as it is written: no package index has
    nertz-env, so it names the extra's requirements (``/venv/bin/python -m pip install 'starlette>=0.37'
    ...``); without an installed nertz-env, the checkout's own ``pip install '.[extra]'``."""
    reqs = requirements(extra)
    if not reqs:
        return f"pip install '.[{extra}]' (in a checkout of nertz-env)"
    return " ".join([shlex.quote(sys.executable), "-m", "pip", "install", *map(shlex.quote, reqs)])


def missing_extra_message(error: ImportError, needs: str, prefer: Sequence[str] = ()) -> str | None:
    """One line for an import of an extra's module that failed: ``{needs} needs the eval extra (no module
    named 'openskill'): .../python -m pip install 'openskill>=5' ...``; None when no extra provides the
    missing module. The extra named is the first of ``prefer`` that provides it, else the first in :data:`EXTRAS`."""
    top = (getattr(error, "name", None) or "").split(".")[0]
    having = [extra for extra, modules in EXTRAS.items() if top in modules]
    if not having:
        return None
    extra = next((e for e in prefer if e in having), having[0])
    return f"{needs} needs the {extra} extra (no module named {error.name!r}): {install_command(extra)}"
