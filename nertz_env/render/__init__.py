"""Rendering a table from its snapshot (so rendering never touches the engine or its generator).

Every environment class renders through :func:`render_snapshot` and checks its modes with :func:`check_mode`;
the modes, and where ``"rgb_array"`` is offered: docs/env/api.md.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from nertz_env._text import short

#: frames per second of a rendered episode (``metadata["render_fps"]`` of every env): four ticks a second
RENDER_FPS = 4


def render_text(snap: dict[str, Any]) -> str:
    """A readable table: the lake's foundations, then every player's layout (the Nertz pile shows its top
    and count, the stock its count, the waste its top three)."""
    cfg = snap["config"]
    lines = [
        f"Nertz  round {snap['round'] + 1}  tick {snap['tick']}  "
        f"(no progress for {snap['since_progress']} ticks, stalls {snap['stalls']})  {snap['done']}",
        "Lake: " + (" ".join(f"{f[-1][0]}({len(f)})" for f in snap["lake"]) or "(empty)"),
    ]
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


#: ``"rgb_array"`` where resvg-py and pillow are installed (found, not imported)
_RGB = all(importlib.util.find_spec(m) is not None for m in ("resvg_py", "PIL"))
RENDER_MODES: tuple[str, ...] = ("ansi", "rgb_array", "human") if _RGB else ("ansi", "human")


def check_mode(mode: str | None) -> str | None:
    """``mode`` if it is None or a render mode; else a ValueError naming the modes."""
    if mode is None or mode in RENDER_MODES:
        return mode
    if mode == "rgb_array":
        from nertz_env.render.draw import rgb_extra_message

        raise ValueError(rgb_extra_message())
    allowed = "None, " + ", ".join(repr(m) for m in RENDER_MODES)
    raise ValueError(f"render_mode must be one of {allowed}; got {short(mode)}")


def render_snapshot(snap: dict[str, Any], mode: str) -> Any:
    """What ``render()`` returns in ``mode``: the text for ``"ansi"`` (``"human"`` prints it and returns None),
    the drawing of :mod:`nertz_env.render.draw` for ``"rgb_array"``."""
    if mode == "human":
        print(render_text(snap))
        return None
    if mode == "ansi":
        return render_text(snap)
    from nertz_env.render.draw import ENV_FAN, table_rgb

    return table_rgb(snap, fan=ENV_FAN)
