"""Rendering a table, from its snapshot (so rendering never touches the engine or its generator).

Every environment class renders through :func:`render_snapshot` and checks its modes with :func:`check_mode`,
so a mode added here (one entry in ``RENDERERS``) reaches all of them. ``"human"`` prints the ``"ansi"`` text.

Every env declares only the modes that can run in this install: ``"rgb_array"`` draws with resvg-py and
pillow (the ``render`` extra), so without them it is left out of ``metadata["render_modes"]`` and
``render_mode="rgb_array"`` is refused with one line naming the extra. (PettingZoo's ``render_test`` and
Gymnasium's ``RecordVideo`` read the declared modes; declaring one that fails would break them on a plain
install. The extra stays an extra: resvg-py is a compiled wheel, and a base install must work wherever numba
does.) ``RENDER_FPS`` is every env's ``metadata["render_fps"]``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from nertz_env.extras import install_command

#: frames per second of a rendered episode (``metadata["render_fps"]`` of every env): four ticks a second
RENDER_FPS = 4


def rgb_extra_message() -> str:
    """Why ``render_mode="rgb_array"`` is refused without the render extra, and the command that installs it."""
    return f"rgb_array rendering needs the render extra (resvg-py and pillow): {install_command('render')}"


def render_text(snap: dict[str, Any]) -> str:
    """A readable table: the lake's foundations, then every player's layout (the Nertz pile shows its top
    and count, the stock its count, the waste its top three)."""
    cfg = snap["config"]
    lines = [
        f"Nertz  round {snap['round'] + 1}  tick {snap['tick']}  "
        f"(no progress for {snap['since_progress']} ticks, stalls {snap['stalls']})  {snap['done']}"
    ]
    lake = snap["lake"]
    if lake:
        tops = [f"{f[-1][0]}({len(f)})" for f in lake]
        lines.append("Lake: " + " ".join(tops))
    else:
        lines.append("Lake: (empty)")
    for p, pl in enumerate(snap["players"]):
        nertz = pl["nertz"]
        top = nertz[-1] if nertz else "--"
        waste = " ".join(pl["waste"][-3:]) or "--"
        lines.append(
            f"player_{p}: nertz {top} [{len(nertz)}/{cfg['nertz_size']}]  stock [{len(pl['stock'])}]  "
            f"waste {waste} [{len(pl['waste'])}]  score {pl['match_score']}"
        )
        for j, pile in enumerate(pl["work"]):
            lines.append(f"    work {j}: " + (" ".join(pile) if pile else "(empty)"))
    return "\n".join(lines)



# mode -> function from a snapshot to what ``render()`` returns for that mode ("human" is handled apart)
def render_rgb(snap: dict[str, Any]) -> Any:
    """The drawing of :mod:`nertz_env.draw` as an (H, W, 3) uint8 array, one size for a whole episode (needs
    the ``render`` extra; imported here, on first use, so ``render_mode=None`` never loads it)."""
    from nertz_env.draw import ENV_FAN, table_rgb

    return table_rgb(snap, fan=ENV_FAN)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def rgb_available() -> bool:
    """Whether ``"rgb_array"`` can run here: resvg-py and pillow are installed (found, not imported)."""
    return _installed("resvg_py") and _installed("PIL")


RENDERERS: dict[str, Callable[[dict[str, Any]], Any]] = {"ansi": render_text}
if rgb_available():
    RENDERERS["rgb_array"] = render_rgb
RENDER_MODES: tuple[str, ...] = (*RENDERERS, "human")


def check_mode(mode: str | None, *, allow_none: bool = True) -> str | None:
    """``mode`` if it is a render mode (or None when ``allow_none``); else a ValueError naming the modes."""
    if (mode is None and allow_none) or mode in RENDER_MODES:
        return mode
    if mode == "rgb_array":
        raise ValueError(rgb_extra_message())
    allowed = ("None, " if allow_none else "") + ", ".join(repr(m) for m in RENDER_MODES)
    raise ValueError(f"render_mode must be one of {allowed}; got {mode!r}")


def resolve_mode(mode: str | None, render_mode: str | None) -> str | None:
    """The mode one ``render(mode)`` call renders in: ``mode`` when given (RLlib's wrappers pass their own
    ``render_mode``, often None, positionally), else the env's ``render_mode``. None when neither is set."""
    return check_mode(mode, allow_none=True) if mode is not None else render_mode


def render_snapshot(snap: dict[str, Any], mode: str) -> Any:
    """What ``render()`` returns in ``mode`` for a table: the text for ``"ansi"``; ``"human"`` prints the text
    and returns None."""
    if mode == "human":
        print(render_text(snap))
        return None
    return RENDERERS[mode](snap)
