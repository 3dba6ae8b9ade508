"""Text rendering of a table, from its snapshot (so rendering never touches the engine or its generator)."""

from __future__ import annotations

from typing import Any


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
