"""Replays: a recorded game replays through the engine tick for tick, in every rules variant; a changed file is
caught at the tick that differs; bad files get one clear error."""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nertz_env.environment import parallel_env
from nertz_env.render.draw import table_rgb, table_svg
from nertz_env.replay import (
    FORMAT,
    MAX_LINE_BYTES,
    RecordReplay,
    ReplayError,
    ReplayIncomplete,
    ReplayMismatch,
    load_replay,
    replay_frames,
    round_end_table,
    verify_replay,
)
from nertz_env.replay.cli import build_frames, main, page_html
from variants import VARIANTS, variant_id


def play(env: Any, seed: int, max_ticks: int | None = None, bad_every: int = 0, p_move: float = 0.7) -> int:
    """Random legal play (mostly moves, sometimes an out-of-range action); returns the ticks played."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    n = 0
    while env.agents and (max_ticks is None or n < max_ticks):
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            moves = legal[legal > 1]
            move = len(moves) and rng.random() < p_move
            acts[a] = int(rng.choice(moves if move else legal))
        if bad_every and n % bad_every == 0:
            acts[env.agents[0]] = 10_000
        obs, *_ = env.step(acts)
        n += 1
    return n


def record(path: Path, seed: int, max_ticks: int | None = None, agents: list[str] | None = None,
           **rules: Any) -> int:
    """A game of ``parallel_env(num_players=2, **rules)`` recorded to ``path`` and closed; its ticks."""
    env = RecordReplay(parallel_env(**{"num_players": 2, **rules}), path, agents=agents)
    ticks = play(env, seed, max_ticks)
    env.close()
    return ticks


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_round_trip_every_variant(variant: dict, tmp_path: Path) -> None:
    path = tmp_path / "game.jsonl.gz"
    env = RecordReplay(parallel_env(**variant), path, meta={"variant": variant_id(variant)})
    ticks = play(env, seed=3, bad_every=17)
    assert not env.agents  # the game was played to its end
    rep = load_replay(path)
    assert len(rep.ticks) == ticks and rep.final is not None
    assert rep.meta == {"variant": variant_id(variant), "seed": 3}
    assert any("il" in t for t in rep.ticks)  # the illegal actions were recorded
    assert verify_replay(path) == ticks
    # the last replayed table is the closing snapshot, and every action name matches its index
    *_, last = replay_frames(rep)
    assert last.snapshot == rep.final
    names = {i: n for t in rep.ticks for i, n in zip(t["a"], t["n"], strict=True)}
    env2 = parallel_env(**variant)
    for i, n in names.items():
        assert n == (env2.actions.name(i) if 0 <= i < env2.actions.n else "?")


def test_format_and_size(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    ticks = record(path, seed=1, agents=["a", "b", "c", "d"], num_players=4)
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    assert head["format"] == FORMAT and head["agents"] == ["a", "b", "c", "d"]
    assert head["snapshot"]["tick"] == 0 and json.loads(lines[-1])["ticks"] == ticks
    assert len(lines) == ticks + 2
    ends = [json.loads(x) for x in lines[1:-1] if "end" in json.loads(x)]
    assert ends and set(ends[-1]) >= {"end", "score", "match"}
    # gzip is what keeps thousands of games small
    assert len(gzip.compress(path.read_bytes())) < 40 * ticks + 3000


def test_tampered_file_is_caught(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    play(RecordReplay(parallel_env(num_players=3), path), seed=2, max_ticks=60)
    lines = path.read_text().splitlines()
    rec = json.loads(lines[31])
    # swap a seat's move for a wait: the table hash (or a flag) differs at that very tick
    seat = next(p for p, a in enumerate(rec["a"]) if a > 1 and p not in rec.get("il", []))
    rec["a"][seat] = 0
    lines[31] = json.dumps(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayMismatch, match=f"tick {rec['t']}:"):
        verify_replay(bad)


def test_tick_lines_without_action_names_or_with_empty_fields_spelt_out_still_verify(tmp_path: Path) -> None:
    """A file written before ``n`` (the action names) existed, or that writes ``il``, ``lr`` and ``r`` when empty."""
    path = tmp_path / "g.jsonl"
    play(RecordReplay(parallel_env(num_players=3, max_ticks=60), path), seed=2, max_ticks=60)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in lines[1:-1]:
        rec.pop("n")
        rec.setdefault("il", []), rec.setdefault("lr", []), rec.setdefault("r", [0.0] * 3)
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    verify_replay(path)


def test_unfinished_game_and_episodes(tmp_path: Path) -> None:
    env = RecordReplay(parallel_env(num_players=2), tmp_path / "g{episode}.jsonl.gz")
    play(env, seed=4, max_ticks=25)
    play(env, seed=5, max_ticks=10)  # a second reset closes the first file unfinished
    env.close()
    assert [Path(p).name for p in env.paths] == ["g0.jsonl.gz", "g1.jsonl.gz"]
    first = load_replay(env.paths[0])
    assert first.stopped and first.final is None and len(first.ticks) == 25
    assert verify_replay(first) == 25
    single = RecordReplay(parallel_env(num_players=2), tmp_path / "one.jsonl")
    single.reset(seed=0)
    with pytest.raises(ValueError, match="episode"):
        single.reset(seed=1)


def test_record_keeps_every_action_form_the_env_takes(tmp_path: Path) -> None:
    """A size-1 integer array is an action to the env, an index out of range an illegal wait: both kept."""
    env = RecordReplay(parallel_env(num_players=2), tmp_path / "g.jsonl")
    env.reset(seed=1)
    env.step({"player_0": np.array([0]), "player_1": 10_000})
    env.close()
    assert load_replay(tmp_path / "g.jsonl").ticks[0]["a"] == [0, 10_000]
    assert verify_replay(tmp_path / "g.jsonl") == 1


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b"not json\n", "not JSON"),
        (b'{"format": "other/1"}\n', "not a nertz-replay/1"),
        (b'{"format": "nertz-replay/1", "agents": []}\n', "'config' must be"),
        (gzip.compress(b"[1, 2]\n", mtime=0), "JSON object"),  # mtime: the same test id in every xdist worker
        (b"\x1f\x8b\x08garbage", "unreadable"),
        (b"\n\n" + b"x" * (MAX_LINE_BYTES + 10) + b"\n", r"bad:3: a line longer than"),  # refused when reached
    ],
)
def test_bad_files(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(ReplayError, match=match):
        load_replay(path)
    with pytest.raises(ReplayError, match="cannot read"):
        load_replay(tmp_path / "missing.jsonl")


def test_tournament_replays(tmp_path: Path) -> None:
    """nertz-eval's --replays: one file per game, named by deal, lineup and rotation, each replaying exactly."""
    from nertz_env.eval.tournament import run_tournament

    out = tmp_path / "replays"
    results = run_tournament(["random", "greedy"], num_players=2, deals=1, replays=str(out))
    files = sorted(out.iterdir())
    assert [f.name for f in files] == ["deal0000_lineup00_rot0.jsonl.gz", "deal0000_lineup00_rot1.jsonl.gz"]
    for f, game in zip(files, results.games, strict=True):
        rep = load_replay(f)
        assert rep.agents == [results.labels[k] for k in game.seats]
        assert rep.meta["rotation"] == game.rotation and verify_replay(rep) == game.ticks
    with pytest.raises(ValueError, match="replays"):
        run_tournament(["random", "greedy"], num_players=2, deals=1, replays=str(files[0]))


# ------------------------------------------------------------------ nertz-replay (the command)
@pytest.fixture(scope="module")
def short_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "short.jsonl.gz"
    record(path, seed=8, max_ticks=12, agents=["me", "you"])  # unfinished: closing completes the gzip file
    return path


def test_cli_page(short_game: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    assert main([str(short_game), "-o", str(out), "--title", "A <test> %DATA%"]) == 0
    page = out.read_text()
    assert "A &lt;test&gt; %DATA%" in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    data = _page_data(page)
    rep = load_replay(short_game)
    assert len(data["frames"]) == len(rep.ticks) + 1 and data["names"] == ["me", "you"]
    # every frame is the drawing of its replayed table: rebuild the last one and compare with table_svg
    *_, last = replay_frames(rep)
    frame = "".join(data["parts"][k] for k in data["frames"][-1]) + "</svg>"
    full = table_svg(last.snapshot, seat_names=["me", "you"], fan=6)
    assert frame == re.sub(r"<defs>.*?</defs>", "", full)


def test_cli_animations(short_game: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    gif = tmp_path / "a.gif"
    assert main([str(short_game), "--gif", str(gif), "--scale", "0.5", "--fps", "8"]) == 0
    err = capsys.readouterr().err
    assert "frame 13/13" in err and "frame 1/13" in err  # progress on stderr (a line every tenth off a terminal)
    with Image.open(gif) as im:
        assert im.n_frames == 13 and im.size[0] > 100
        # one palette for the whole GIF, and the frames still look like the drawing
        frames, fan = build_frames(load_replay(short_game))
        im.seek(12)
        got = np.asarray(im.convert("RGB")).astype(int)
        want = table_rgb(frames[-1].snapshot, seat_names=["me", "you"], fan=fan, scale=0.5).astype(int)
        assert got.shape == want.shape and np.abs(got - want).mean() < 2
    pytest.importorskip("imageio_ffmpeg")
    mp4 = tmp_path / "a.mp4"
    assert main([str(short_game), "--mp4", str(mp4), "--scale", "0.5"]) == 0
    assert mp4.stat().st_size > 1000 and mp4.read_bytes()[4:8] == b"ftyp"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ([], "nothing to write"),
        (["-o", "x.txt"], "must name a .html file"),
        (["-o", "/no/such/dir/x.html"], "does not exist"),
        (["--gif", "x.gif", "--fps", "0"], "--fps"),
        # a flag that cannot take effect
        (["-o", "x.html", "--fps", "10"], "--fps applies to --gif and --mp4 only"),
        (["-o", "x.html", "--scale", "1.0"], "--scale applies to --gif and --mp4 only"),  # even the default's value
        (["--gif", "x.gif", "--title", "T"], "--title names the page"),
        (["--mp4", "x.mp4", "--title", "T"], "--title names the page"),
    ],
)
def test_cli_usage_errors__one_line_exit_2_and_nothing_written(
    short_game: Path, tmp_path: Path, args: list[str], match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    assert main([str(short_game), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and match in err, err
    assert os.listdir(tmp_path) == []


def test_cli_a_file_the_engine_does_not_reproduce_is_one_line_naming_the_tick(
        tmp_path: Path, short_game: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = gzip.decompress(short_game.read_bytes()).decode().splitlines()
    rec = json.loads(lines[3])
    rec["h"] = "00000000"
    lines[3] = json.dumps(rec)
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join(lines) + "\n")
    assert main([str(forged), "-o", str(tmp_path / "y.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tick {rec['t']}" in err and not (tmp_path / "y.html").exists()


# ------------------------------------------------------------------ a match: the table as each round ended
@pytest.fixture(scope="module")
def match_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("match") / "match.jsonl.gz"
    record(path, seed=5, agents=["greedy", "random"], rounds=2, nertz_size=8)  # to the match's end
    return path


@pytest.fixture(scope="module")
def match_page(match_game: Path) -> str:
    return page_html(load_replay(match_game))


def test_match_keeps_each_round_end(match_game: Path) -> None:
    rep = load_replay(match_game)
    ends = [t for t in rep.ticks if "end" in t]
    assert len(ends) == 2
    first = ends[0]
    # the recorder keeps round 1's last table; the tick's hash is the new deal's
    table = first["end_table"]
    assert table["round"] == 0 and table["lake"] and table["config"] == rep.config
    assert "end_table" not in ends[1]  # the match's last round ends on its own table
    frames = list(replay_frames(rep))
    kinds = [f.kind for f in frames]
    k = kinds.index("round_end")
    assert kinds[k + 1] == "next_deal" and frames[k].rec is frames[k + 1].rec and frames[k].rec == first
    assert frames[k].snapshot == table and frames[k + 1].snapshot["round"] == 1
    assert not frames[k + 1].snapshot["lake"]
    assert verify_replay(rep) == len(rep.ticks)
    # the way round_end_table gets the table is exact: on the match's last round it gives the real closing table
    before = next(f.snapshot for f, g in itertools.pairwise(frames) if g.rec == ends[1])
    again = round_end_table(before, ends[1]["a"])
    assert {k: v for k, v in again.items() if k not in ("done", "rng")} == {
        k: v for k, v in rep.final.items() if k not in ("done", "rng")
    }
    # a forged round-end table is caught
    rep.ticks.lines[rep.ticks.index(first)] = json.dumps({**first, "end_table": {**table, "lake": []}}).encode()
    with pytest.raises(ReplayMismatch, match=f"tick {first['t']}: the round-end table"):
        verify_replay(rep)


def test_page_shows_round_end_then_new_deal_and_readable_chart_labels(match_game: Path, match_page: str) -> None:
    rep = load_replay(match_game)
    _frames, fan = build_frames(rep)
    data = _page_data(match_page)
    kinds = [k[0] for k in data["kinds"]]
    assert len(kinds) == len(rep.ticks) + 2  # the opening, every tick, and round 1's end drawn apart
    k = kinds.index("round_end")
    assert kinds[k + 1] == "next_deal" and data["kinds"][k][1] == data["kinds"][k + 1][1]
    drawn = "".join(data["parts"][j] for j in data["frames"][k]) + "</svg>"
    table = rep.ticks[data["kinds"][k][1]]["end_table"]
    assert drawn == re.sub(r"<defs>.*?</defs>", "", table_svg(table, seat_names=rep.agents, fan=fan))
    view_w = float(re.search(r'<svg id="chart" viewBox="0 0 (\d+)', match_page).group(1))
    shown_w = float(re.search(r"#chart\{max-width:(\d+)px\}", match_page).group(1))
    font = float(re.search(r"#chart text\{[^}]*font-size:(\d+)px", match_page).group(1))
    assert font * shown_w / view_w >= 11  # the axis labels' size on screen, in px
    assert f">round 2 tick {rep.final['tick']}</text>" in match_page  # the axis ends at the last table


def _page_data(page: str) -> dict:
    blob = re.search(r'type="application/octet-stream">([^<]+)<', page)
    assert blob
    return json.loads(gzip.decompress(base64.b64decode(blob.group(1))))


def test_page_shows_round_scoring_apart_from_the_move(match_game: Path, match_page: str) -> None:
    cfg = load_replay(match_game).config
    for tick in _page_data(match_page)["ticks"]:
        if "end" not in tick:
            assert "re" not in tick
            continue
        # the round's scoring is bonus - penalty x cards left, kept apart from the move's own reward
        re_ = tick["re"]
        assert [e["reward"] for e in re_] == [e["bonus"] - cfg["nertz_penalty"] * e["left"] for e in re_]
        assert any(e["left"] for e in re_)
        moves = [r - e["reward"] for r, e in zip(tick.get("r", [0.0] * 2), re_, strict=True)]
        assert all(m >= 0 for m in moves)  # a move earns +1 per own card to the lake; no move costs a penalty
    assert "Round end: " in match_page and "left in the Nertz pile" in match_page


# ------------------------------------------------------------------ a file cut off while being written
def test_cut_off_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "g.jsonl"
    play(RecordReplay(parallel_env(num_players=2), path), seed=6, max_ticks=40)  # no close: still being written
    whole = path.read_text()
    assert '"stopped"' not in whole and '"final"' not in whole
    rep = load_replay(path)
    assert rep.incomplete() and rep.last_tick == 40
    with pytest.raises(ReplayIncomplete, match="cut off after tick 40, the last complete tick"):
        verify_replay(path)
    assert verify_replay(path, partial=True) == 40  # a game still being written, checked as far as it goes
    # cut in the middle of a line: that line is dropped, the tick before it is the last complete one
    mid = tmp_path / "mid.jsonl"
    mid.write_text(whole[: whole.rindex('{"t":40') + 25])
    with pytest.raises(ReplayIncomplete, match=r"after tick 39, .*line 41 ends in the middle"):
        verify_replay(mid)
    # a gzip stream that ends early
    gz = tmp_path / "g.jsonl.gz"
    packed = gzip.compress(whole.encode())
    gz.write_bytes(packed[: len(packed) - 40])
    cut = load_replay(gz)
    assert cut.cut_off.startswith("the gzip stream ends early") and 0 < cut.last_tick < 40
    with pytest.raises(ReplayIncomplete, match=f"after tick {cut.last_tick},"):
        verify_replay(cut)
    # the command: one line without --partial (exit 2); with it, a page that says it was cut off
    out = tmp_path / "p.html"
    assert main([str(mid), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "after tick 39" in err and "--partial" in err and not out.exists()
    assert main([str(mid), "-o", str(out), "--partial"]) == 0
    page = out.read_text()
    assert "Cut off: the file ends after tick 39" in page and _page_data(page)["cut"] is True


def test_partial_on_a_complete_file__drawn_whole_with_a_note_and_exit_0(
    short_game: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # not an error: a game nertz-play is writing may end between typing the command and running it
    out = tmp_path / "p.html"
    assert main([str(short_game), "-o", str(out), "--partial"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [f"nertz-replay: note: --partial: {short_game} is complete (it has its closing line), "
                                "so it is drawn whole"]
    assert _page_data(out.read_text())["cut"] is False


# ------------------------------------------------------------------ hostile files: bounded reading, one line each
GIB_NEWLINES_CRC32 = 0xC71C045C  # zlib.crc32 of 2**30 newlines (computed once: recomputing takes seconds)


def gzip_bomb() -> bytes:
    """One gzip member of about 1 MB that inflates to 1 GiB of newlines, with a valid trailer. Built from one
    compressed MiB repeated: after a full flush deflate's output is byte-aligned and starts afresh."""
    mib = b"\n" * (1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    assert first.endswith(block)
    end = c.flush(zlib.Z_FINISH)[:-8]  # the last (empty) block; the trailer is the whole stream's
    return first + block * 1023 + end + struct.pack("<II", GIB_NEWLINES_CRC32, 0)


def test_cli_gzip_bomb_fails_in_one_line_within_bounded_memory(tmp_path: Path) -> None:
    """1 GiB of newlines in 1 MB, read with 300 MB more address space: one line, exit 2, in seconds."""
    resource = pytest.importorskip("resource")
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc to measure the process's address space")
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip_bomb())
    assert bomb.stat().st_size < 2 << 20
    script = (
        "import resource, sys\n"
        "from nertz_env.replay.cli import main\n"
        "vm = next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmSize:')) * 1024\n"
        "limit = vm + 300 * 2**20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    assert resource.RLIMIT_AS
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script, str(bomb), "-o", str(tmp_path / "x.html")],
                          capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "MiB (decompressed)" in proc.stderr and not (tmp_path / "x.html").exists()
    assert took < 60


def test_tick_lines_are_kept_as_text__a_crafted_long_game_loads_into_twice_its_text(tmp_path: Path) -> None:
    """With max_ticks raised the 128 MiB text bound bounds memory: a tick line costs about twice its text."""
    path = tmp_path / "long.jsonl"
    env = RecordReplay(parallel_env(num_players=2, max_ticks=10**9), path)
    env.reset(seed=1)
    env.close()  # a header and its closing line
    head = path.read_text().splitlines()[0]
    line = json.dumps({"t": 1, "a": [0, 0], "h": "00000000"}, separators=(",", ":"))
    sizes, peaks = [], []
    for n in (2000, 4000):  # what each line more costs: the fixed costs of a load aside
        text = head + "\n" + (line + "\n") * n
        path.write_text(text)
        tracemalloc.start()
        try:
            rep = load_replay(path)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(len(text))
    assert len(rep.ticks) == n and rep.cut_off is None and rep.final is None
    assert peaks[1] - peaks[0] < 3 * (sizes[1] - sizes[0]), (peaks, sizes)  # parsed records: about 11x
    assert rep.ticks[-1] == {"t": 1, "a": [0, 0], "h": "00000000"} and rep.last_tick == 1
    # still a sequence of records to its reader: read, iterate, slice
    assert rep.ticks[1:3] == [rep.ticks[0]] * 2 and sum(1 for _ in rep.ticks) == n


def test_multi_member_gzip_is_read_to_its_end(tmp_path: Path) -> None:
    """``cat a.gz b.gz`` is one gzip file: every member is read, not only the first."""
    plain = tmp_path / "g.jsonl"
    ticks = record(plain, seed=6, max_ticks=30)
    lines = plain.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    both = tmp_path / "g.jsonl.gz"
    both.write_bytes(gzip.compress(b"".join(lines[:half])) + gzip.compress(b"".join(lines[half:])) + b"\0" * 8)
    rep = load_replay(both)
    assert rep.stopped and rep.cut_off is None and len(rep.ticks) == ticks
    assert verify_replay(both) == ticks
    # a second member cut short is a cut-off file; bytes after the stream that are not gzip are refused
    packed = both.read_bytes()[:-8]
    (tmp_path / "cut.jsonl.gz").write_bytes(packed[:-30])
    assert load_replay(tmp_path / "cut.jsonl.gz").cut_off.startswith("the gzip stream ends early")
    (tmp_path / "junk.jsonl.gz").write_bytes(packed + b"junk")
    with pytest.raises(ReplayError, match="not a gzip stream"):
        load_replay(tmp_path / "junk.jsonl.gz")
    (tmp_path / "junk1.jsonl.gz").write_bytes(packed + b"x")  # one stray byte is no cut member
    with pytest.raises(ReplayError, match="not a gzip stream"):
        load_replay(tmp_path / "junk1.jsonl.gz")


@pytest.fixture(scope="module")
def tiny_game(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    path = tmp_path_factory.mktemp("tiny") / "tiny.jsonl"
    record(path, seed=8, max_ticks=3, agents=["me", "you"])
    return [json.loads(x) for x in path.read_text().splitlines()]


HUGE = "x" * 600_000  # under the line bound (a 10 MB line is refused as too long), far over any message


def _mutations(lines: list[dict]) -> list[tuple[str, int, dict, str]]:
    """(case, line index, fields to set, a word the one error line must hold)."""
    snap = lines[0]["snapshot"]
    dup = json.loads(json.dumps(snap))
    dup["players"][0]["nertz"][0] = dup["players"][0]["nertz"][1]
    huge_card = json.loads(json.dumps(snap))
    huge_card["players"][0]["nertz"][0] = HUGE
    end = {"end": "nertz", "score": [0, 0], "match": [0, 0]}
    huge_score = json.loads(json.dumps(snap))
    huge_score["players"][0]["match_score"] = 10**30
    three = parallel_env(num_players=3)
    three.reset(seed=1)
    cases: list[tuple[str, int, dict, str]] = [
        ("agents ints", 0, {"agents": [1, 2]}, "agents"),
        ("agents text", 0, {"agents": "me, you"}, "agents"),
        ("agents nested", 0, {"agents": [["me"], "you"]}, "agents"),
        ("agents short", 0, {"agents": ["me"]}, "agents"),
        ("config text", 0, {"config": "rules"}, "config"),
        ("config huge value", 0, {"config": {**lines[0]["config"], "draw": HUGE}}, "draw"),
        ("config huge key", 0, {"config": {HUGE: 1}}, "unknown option"),
        ("format huge", 0, {"format": HUGE}, "format"),
        ("snapshot text", 0, {"snapshot": "the table"}, "snapshot"),
        ("snapshot empty", 0, {"snapshot": {}}, "snapshot"),
        ("snapshot list", 0, {"snapshot": [1]}, "snapshot"),
        ("snapshot 3 players", 0, {"snapshot": three.snapshot()}, "snapshot"),
        ("snapshot duplicate card", 0, {"snapshot": dup}, "snapshot"),
        ("snapshot huge card", 0, {"snapshot": huge_card}, "snapshot"),
        ("meta list", 0, {"meta": [1]}, "meta"),
        ("t text", 1, {"t": "1"}, "'t'"),
        ("t bool", 1, {"t": True}, "'t'"),
        ("t negative", 1, {"t": -1}, "'t'"),
        ("t of 4,000 digits", 1, {"t": 10**3999}, "tick"),
        ("a text", 1, {"a": "0 0"}, "'a'"),
        ("a short", 1, {"a": [0]}, "'a'"),
        ("a text item", 1, {"a": [0, "1"]}, "'a'"),
        ("a bool", 1, {"a": [0, True]}, "'a'"),
        ("a float", 1, {"a": [0, 1.5]}, "'a'"),
        ("a huge", 1, {"a": [0, HUGE]}, "'a'"),
        ("n ints", 1, {"n": [1, 2]}, "'n'"),
        ("il out of range", 1, {"il": [5]}, "'il'"),
        ("il text", 1, {"il": "0"}, "'il'"),
        ("lr twice", 1, {"lr": [0, 0]}, "'lr'"),
        ("r text", 1, {"r": ["x", 0]}, "'r'"),
        ("r short", 1, {"r": [1.0]}, "'r'"),
        ("end unknown", 1, {**end, "end": "boom"}, "'end'"),
        ("match text", 1, {**end, "match": ["a", "b"]}, "'match'"),
        ("score missing", 1, {"end": "nertz", "match": [0, 0]}, "'score'"),
        ("match without end", 1, {"match": [0, 0]}, "'match'"),
        ("end_table text", 1, {**end, "end_table": "table"}, "'end_table'"),
        ("h int", 1, {"h": 5}, "'h'"),
        ("h huge", 1, {"h": HUGE}, "'h'"),
        ("final text", -1, {"final": "over"}, "'final'"),
        # values the engine's int32/int16 cannot hold, unhashable and non-text values
        ("config huge max_ticks", 0, {"config": {**lines[0]["config"], "max_ticks": 10**30}}, "max_ticks"),
        ("config 2**31 call_bonus", 0, {"config": {**lines[0]["config"], "call_bonus": 2**31}}, "call_bonus"),
        ("config huge rounds", 0, {"config": {**lines[0]["config"], "rounds": 40_000}}, "rounds"),
        ("snapshot huge tick", 0, {"snapshot": {**snap, "tick": 10**30}}, "snapshot.tick"),
        ("snapshot 2**31 since_progress", 0, {"snapshot": {**snap, "since_progress": 2**31}}, "since_progress"),
        ("snapshot done list", 0, {"snapshot": {**snap, "done": []}}, "snapshot.done"),
        ("snapshot huge match_score", 0, {"snapshot": huge_score}, "match_score"),
        ("meta lone surrogate", 0, {"meta": {"who": "\ud800"}}, "\\ud800"),
        ("agents lone surrogate", 0, {"agents": ["\udfff", "you"]}, "\\ud800"),
        ("closing ticks text", -1, {"ticks": "x"}, "'ticks'"),
        ("closing ticks wrong", -1, {"ticks": 99}, "'ticks'"),
        ("stopped number", -1, {"stopped": 5}, "'stopped'"),
    ]
    return cases


def test_cli_every_malformed_field_is_one_line_naming_it(tiny_game: list[dict], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A hostile value in any field of the header, a tick or the closing line: exit 2, one line naming it."""
    path = tmp_path / "m.jsonl"
    out = tmp_path / "m.html"
    for case, index, fields, word in _mutations(tiny_game):
        lines = [dict(x) for x in tiny_game]
        lines[index].update(fields)
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        assert main([str(path), "-o", str(out)]) == 2, case
        err = capsys.readouterr().err
        assert err.count("\n") == 1, (case, err[:500])
        assert word in err and len(err) < 500, (case, err[:500])
        assert not out.exists()
    # a line after the closing line, and the untouched file still reads
    path.write_text("".join(json.dumps(x) + "\n" for x in [*tiny_game, tiny_game[1]]))
    assert main([str(path), "-o", str(out)]) == 2 and "after the closing line" in capsys.readouterr().err
    path.write_text("".join(json.dumps(x) + "\n" for x in tiny_game))
    assert main([str(path), "-o", str(out)]) == 0 and out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX (Windows has none)")
def test_a_fifo_is_one_line_at_once_not_a_wait_for_ever(tmp_path: Path) -> None:
    """Not a regular file (a FIFO would wait for a writer): one line at once; the waits below are bounded."""
    fifo = tmp_path / "game.jsonl"
    os.mkfifo(fifo)
    failed: list[ReplayError] = []

    def read() -> None:
        try:
            load_replay(fifo)
        except ReplayError as e:
            failed.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # open() waits for a writer: give it one so the thread ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
        pytest.fail("load_replay waited on a FIFO")
    assert len(failed) == 1 and "not a regular file" in str(failed[0]), failed
