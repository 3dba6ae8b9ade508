"""``nertz-replay``: a recorded game (``nertz-replay/1``, from ``nertz-eval --replays`` or
:class:`nertz_env.replay.RecordReplay`) as a self-contained HTML page that opens from disk, a GIF or an MP4.

Guide: docs/guides/replays.md. The file is first replayed through the engine (every tick checked), so what is
drawn is what the engine does with the recorded actions.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import html
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nertz_env.actions import action_table
from nertz_env.cli import Parser, UsageError, at_least, refuse
from nertz_env.config import make_config
from nertz_env.extras import install_command
from nertz_env.render.draw import SEAT_COLOURS, TableDrawing, banners_of, draw_table, longest_pile, svg_to_rgb
from nertz_env.replay import Frame, Replay, ReplayError, ReplayMismatch, load_replay, replay_frames
from nertz_env.snapshot import round_so_far

DEFAULT_FPS = 4.0
DEFAULT_SCALE = 1.0
FAN_CARDS = 6  # the page's least room: a game's longest pile, at least this


def build_frames(rep: Replay) -> tuple[list[Frame], int]:
    """Every frame of the game (replayed and checked) and the work-pile room for the whole game."""
    frames = list(replay_frames(rep))
    return frames, max(FAN_CARDS, *(longest_pile(f.snapshot) for f in frames))


def _drawings(rep: Replay) -> tuple[list[Frame], list[TableDrawing]]:
    frames, fan = build_frames(rep)
    recs = [f.rec if f.rec is not None and f.kind != "next_deal" else {} for f in frames]  # a deal has no banners
    seats = [banners_of(r.get("lr", []), r.get("il", []), ("lost race", "illegal action")) for r in recs]
    return frames, [draw_table(f.snapshot, seat_names=rep.agents, highlight={"seats": s}, fan=fan)
                    for f, s in zip(frames, seats, strict=True)]


CHART_W = 340  # the chart's width in SVG units: the side column's width in pixels
CHART_FONT = 12  # px at that width


def _chart(series: list[list[int]], names: list[str], marks: list[tuple[int, str]], last: str) -> str:
    """Running scores over frames as an SVG line chart (a ``#cursor`` line marks the shown frame)."""
    n_t = len(series)
    width, h, left, right, top, bottom = CHART_W, 160, 40, 8, 8, 26
    lo = min(min(s) for s in series)
    hi = max(lo + 1, *(max(s) for s in series))  # the scores are integers: a span of at least 1
    span_x = max(1, n_t - 1)

    def x(t: float) -> float:
        return left + (width - left - right) * t / span_x

    def y(v: float) -> float:
        return top + (h - top - bottom) * (hi - v) / (hi - lo)

    out = [f'<svg id="chart" viewBox="0 0 {width} {h}" width="100%" data-ticks="{n_t}">']
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{h - top - bottom}" fill="#173d29"/>')
    if lo < 0 < hi:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#5f8f72" stroke-dasharray="3 3"/>')
    for v in (lo, hi):
        out.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    out.append(f'<text x="{left}" y="{h - 6}">tick 0</text>')
    out.append(f'<text x="{width - right}" y="{h - 6}" text-anchor="end">{last}</text>')
    for t, kind in marks:
        colour = "#ff4d4d" if kind == "error" else "#ffb627" if kind == "warn" else "#ffffff"
        out.append(
            f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{h - bottom}" y2="{h - bottom + 6}" stroke="{colour}" stroke-width="1.5"/>'
        )
    for p in range(len(names)):
        pts = " ".join(f"{x(t):.1f},{y(series[t][p]):.1f}" for t in range(n_t))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{SEAT_COLOURS[p % len(SEAT_COLOURS)]}" stroke-width="1.8"/>')
    out.append(f'<line id="cursor" x1="{left}" x2="{left}" y1="{top}" y2="{h - bottom}" stroke="#ffffff" stroke-width="1"/>')
    out.append("</svg>")
    return "".join(out)


def page_html(rep: Replay, title: str | None = None) -> str:
    """The replay page of ``rep``: the SVG parts of every frame, each distinct part stored once, gzip-compressed."""
    fr_list, drawings = _drawings(rep)
    index: dict[str, int] = {}  # each distinct part and its place in ``parts``
    frames = [[index.setdefault(s, len(index)) for s in (d.head, *d.body)] for d in drawings]
    parts = list(index)
    cards = set().union(*(d.cards for d in drawings))
    defs = TableDrawing(0, 0, "", [], cards).defs()
    table = action_table(make_config(**rep.config))
    words: dict[int, str] = {}
    ticks: list[dict[str, Any]] = []
    kinds: list[list[Any]] = []  # per frame: [kind, index into ticks (-1: the opening), round, table's tick]
    series: list[list[int]] = []  # per frame: every seat's running score
    marks: list[tuple[int, str]] = []  # frames with an illegal action or a lost race
    for i, f in enumerate(fr_list):
        rec = f.rec if f.kind != "next_deal" else None
        if rec is not None:
            for a in rec["a"]:
                if a not in words:
                    words[a] = table.describe(a) if 0 <= a < table.n else f"no valid action ({a}): waits"
            tick: dict[str, Any] = {k: rec[k] for k in ("t", "a", "il", "lr", "r", "end", "score", "match") if k in rec}
            if f.round_end is not None:  # the round's scoring, shown apart from the moves' own rewards
                tick["re"] = f.round_end
            ticks.append(tick)
            if rec.get("il") or rec.get("lr"):
                marks.append((i, "error" if rec.get("il") else "warn"))
        snap = f.snapshot
        kinds.append([f.kind, len(ticks) - 1, int(snap["round"]), int(snap["tick"])])
        scores = [int(p["match_score"]) + r for p, r in zip(snap["players"], round_so_far(snap), strict=True)]
        # on a round's last frame the match score says it all
        series.append([int(x) for x in rec["match"]] if rec is not None and "match" in rec else scores)
    last = fr_list[-1].snapshot
    rounds = int(last["round"]) + 1
    data = {
        "parts": parts,
        "frames": frames,
        "ticks": ticks,
        "kinds": kinds,
        "rounds": rounds,
        "words": {str(k): v for k, v in words.items()},
        "names": rep.agents,
        "colours": [SEAT_COLOURS[p % len(SEAT_COLOURS)] for p in range(len(rep.agents))],
        "done": last["done"],
        "complete": rep.final is not None,
        "cut": rep.incomplete() is not None,
    }
    blob = base64.b64encode(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), 9, mtime=0)).decode()
    name = title or os.path.basename(rep.path) or "Nertz replay"
    meta = ", ".join(f"{k} {v}" for k, v in rep.meta.items() if k != "seats")
    fill = {
        "TITLE": html.escape(name),
        "META": html.escape(meta),
        "DEFS": defs,
        # the axis ends at the last table: "tick T", or "round R tick T" in a match (ticks count from each deal)
        "CHART": _chart(series, rep.agents, marks, f"round {rounds} " * (rounds > 1) + f"tick {last['tick']}"),
        "CUT": (
            f'<span class="cut">Cut off: the file ends after tick {rep.last_tick} with no closing line '
            "(a game still being written, or a writer that crashed)</span>"
            if rep.incomplete() is not None
            else ""
        ),
        "DATA": blob,
        "CHARTW": str(CHART_W),
        "CHARTFONT": str(CHART_FONT),
    }
    # one pass, so a title that happens to contain "%DATA%" stays text
    template = (Path(__file__).parent / "replay_page.html").read_text(encoding="utf-8")
    return re.sub(r"%(TITLE|META|DEFS|CHARTW|CHARTFONT|CHART|DATA|CUT)%", lambda m: fill[m.group(1)], template)


def _progress(k: int, total: int, what: str) -> None:
    """``frame k/N`` on stderr: one line rewritten in place on a terminal, else a line every tenth."""
    if sys.stderr.isatty():
        print(f"\rnertz-replay: {what}: frame {k}/{total}", end="\n" if k == total else "", file=sys.stderr, flush=True)
    elif k == total or k % max(1, total // 10) == 0:
        print(f"nertz-replay: {what}: frame {k}/{total}", file=sys.stderr, flush=True)


def _gif_palette(first: Any, last: Any) -> Any:
    """One 256-colour palette for the whole GIF, from the first and last frames and the seat and banner colours."""
    from PIL import Image

    from nertz_env.render.draw import KIND_COLOURS

    swatch = [*SEAT_COLOURS, *KIND_COLOURS.values(), "#ffe14d"]
    rgb = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in swatch], dtype=np.uint8)
    strip = np.repeat(rgb[None, :, :], 8, axis=0).repeat(8, axis=1)
    w = max(first.shape[1], strip.shape[1])

    def pad(a: Any) -> Any:
        return np.pad(a, ((0, 0), (0, w - a.shape[1]), (0, 0)), mode="edge")

    sample = np.concatenate([pad(first), pad(last), pad(strip)], axis=0)
    return Image.fromarray(sample).quantize(256, method=Image.Quantize.MEDIANCUT)


def write_animation(rep: Replay, path: str, fps: float, scale: float, kind: str) -> int:
    """Write a GIF or MP4 of every frame (progress on stderr); returns the number of frames."""
    try:
        import imageio.v2 as imageio
    except ImportError:
        raise UsageError(f"animations need imageio: {install_command('render')}") from None
    svgs = [d.svg() for d in _drawings(rep)[1]]
    what = f"writing {os.path.basename(path)}"
    if kind == "gif":
        from PIL import Image

        first, last = svg_to_rgb(svgs[0], scale), svg_to_rgb(svgs[-1], scale)
        palette = _gif_palette(first, last)
        images = []
        for k, svg in enumerate(svgs, start=1):
            img = first if k == 1 else last if k == len(svgs) else svg_to_rgb(svg, scale)
            images.append(Image.fromarray(img).quantize(palette=palette, dither=Image.Dither.NONE))
            _progress(k, len(svgs), what)
        images[0].save(
            path, save_all=True, append_images=images[1:], duration=1000.0 / fps, loop=0, optimize=True, disposal=1
        )
        return len(svgs)
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise UsageError(f"--mp4 needs imageio-ffmpeg: {install_command('render')} (or use --gif)") from None
    writer = imageio.get_writer(path, fps=fps, codec="libx264", quality=8, macro_block_size=1, pixelformat="yuv420p")
    try:
        for k, svg in enumerate(svgs, start=1):
            img = svg_to_rgb(svg, scale)  # yuv420p needs even sides
            writer.append_data(np.pad(img, ((0, img.shape[0] % 2), (0, img.shape[1] % 2), (0, 0)), mode="edge"))
            _progress(k, len(svgs), what)
    finally:
        writer.close()
    return len(svgs)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="nertz-replay", description=__doc__)
    p.add_argument("file", help="a nertz-replay/1 file (.jsonl or .jsonl.gz)")
    p.add_argument("-o", "--output", metavar="PAGE.html", help="write the HTML page here")
    p.add_argument(
        "--gif",
        metavar="OUT.gif",
        help="write an animated GIF, one frame per tick (progress on stderr)",
    )
    p.add_argument(
        "--mp4", metavar="OUT.mp4", help="write an MP4 video, one frame per tick (imageio-ffmpeg; progress on stderr)"
    )
    p.add_argument("--fps", type=float, help=f"frames per second of --gif/--mp4 (default {DEFAULT_FPS:g})")
    p.add_argument("--scale", type=at_least(0.1, 4, float),
                   help=f"picture size of --gif/--mp4 (default {DEFAULT_SCALE})")
    p.add_argument("--title", help="the page's (-o) title (default: the file's name)")
    p.add_argument(
        "--partial",
        action="store_true",
        help="also draw a file without its closing line (a game nertz-play is still writing, or a crashed "
        "writer), marked as cut off; without it such a file is an error (exit 2). A complete file is drawn whole, "
        "with a note and exit 0 (the game may have finished since the command was typed)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    if not (args.output or args.gif or args.mp4):
        raise UsageError("nothing to write: give -o PAGE.html, --gif OUT.gif or --mp4 OUT.mp4")
    # a flag that cannot take effect is an error, never silently ignored
    if not (args.gif or args.mp4):
        for flag, given in (("--fps", args.fps), ("--scale", args.scale)):
            if given is not None:
                raise UsageError(
                    f"{flag} applies to --gif and --mp4 only, and there is none (the page, -o, sets its speed "
                    f"in the browser and fits its window): drop {flag}"
                )
    if args.title is not None and not args.output:
        raise UsageError("--title names the page (-o PAGE.html), and there is none; a GIF or MP4 has no title: drop --title")
    args.fps = DEFAULT_FPS if args.fps is None else args.fps
    args.scale = DEFAULT_SCALE if args.scale is None else args.scale
    if not 0 < args.fps <= 60:
        raise UsageError(f"--fps must be above 0 and at most 60, got {args.fps}")
    for path, flag, suffix in ((args.output, "-o", ".html"), (args.gif, "--gif", ".gif"), (args.mp4, "--mp4", ".mp4")):
        if path and not path.lower().endswith(suffix):
            raise UsageError(f"{flag} must name a {suffix} file, got {path!r}")
        if path and not os.path.isdir(folder := os.path.dirname(os.path.abspath(path))):
            raise UsageError(f"{flag}: the directory {folder!r} does not exist")
    try:
        rep = load_replay(args.file)
        cut = rep.incomplete()
        if cut is not None and not args.partial:
            raise UsageError(cut)
        if cut is None and args.partial:
            print(
                f"nertz-replay: note: --partial: {args.file} is complete (it has its closing line), "
                "so it is drawn whole",
                file=sys.stderr,
            )
        if args.output:
            page = page_html(rep, args.title)
            Path(args.output).write_text(page, encoding="utf-8")
            print(f"nertz-replay: wrote {args.output} ({len(rep.ticks)} ticks, {len(page.encode()) / 1024:.0f} KB)")
        for path, kind in ((args.gif, "gif"), (args.mp4, "mp4")):
            if path:
                n = write_animation(rep, path, args.fps, args.scale, kind)
                print(f"nertz-replay: wrote {path} ({n} frames, {os.path.getsize(path) / 1024:.0f} KB)")
    except ReplayMismatch as e:
        raise UsageError(f"{args.file}: the engine does not reproduce this game: {e}") from None
    except (ReplayError, ImportError, OSError) as e:
        raise UsageError(str(e)) from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nertz-replay``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UsageError as e:
        return refuse("nertz-replay", e)


if __name__ == "__main__":
    sys.exit(main())
