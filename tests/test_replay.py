"""Replays: a recorded game replays through the engine tick for tick, in every rules variant; a changed file is
caught at the tick that differs; bad files get one clear error."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from nertz_env.environment import parallel_env
from nertz_env.replay import (
    FORMAT,
    RecordReplay,
    ReplayError,
    ReplayMismatch,
    load_replay,
    replay_states,
    verify_replay,
)
from variants import VARIANTS, variant_id


def play(env: RecordReplay, seed: int, max_ticks: int | None = None, bad_every: int = 0) -> int:
    """Random legal play (mostly moves, sometimes an out-of-range action); returns the ticks played."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    n = 0
    while env.agents and (max_ticks is None or n < max_ticks):
        acts = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            moves = legal[legal > 1]
            acts[a] = int(rng.choice(moves)) if len(moves) and rng.random() < 0.7 else int(rng.choice(legal))
        if bad_every and n % bad_every == 0:
            acts[env.agents[0]] = 10_000
        obs, *_ = env.step(acts)
        n += 1
    return n


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
    *_, (_last_rec, last_snap) = replay_states(rep)
    assert last_snap == rep.final
    names = {i: n for t in rep.ticks for i, n in zip(t["a"], t["n"], strict=True)}
    env2 = parallel_env(**variant)
    for i, n in names.items():
        assert n == (env2.actions.name(i) if 0 <= i < env2.actions.n else "?")


def test_format_and_size(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    env = RecordReplay(parallel_env(num_players=4), path, agents=["a", "b", "c", "d"])
    ticks = play(env, seed=1)
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


def test_unfinished_game_and_episodes(tmp_path: Path) -> None:
    env = RecordReplay(parallel_env(num_players=2), tmp_path / "g{episode}.jsonl.gz")
    play(env, seed=4, max_ticks=25)
    play(env, seed=5, max_ticks=10)  # a second reset closes the first file unfinished
    env.close()
    assert [Path(p).name for p in env.paths] == ["g0.jsonl.gz", "g1.jsonl.gz"]
    first = load_replay(env.paths[0])
    assert first.final is None and len(first.ticks) == 25
    assert verify_replay(first) == 25
    single = RecordReplay(parallel_env(num_players=2), tmp_path / "one.jsonl")
    single.reset(seed=0)
    with pytest.raises(ValueError, match="episode"):
        single.reset(seed=1)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b"not json\n", "not JSON"),
        (b'{"format": "other/1"}\n', "not a nertz-replay/1"),
        (b'{"format": "nertz-replay/1", "agents": []}\n', "no 'config'"),
        (gzip.compress(b"[1, 2]\n"), "JSON object"),
        (b"\x1f\x8b\x08garbage", "unreadable"),
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
    env = RecordReplay(parallel_env(num_players=2), path, agents=["me", "you"])
    play(env, seed=8, max_ticks=12)
    env.close()  # an unfinished game: closing completes the gzip file
    return path


def test_cli_page(short_game: Path, tmp_path: Path) -> None:
    import base64
    import re

    from nertz_env.replay_cli import main

    out = tmp_path / "page.html"
    assert main([str(short_game), "-o", str(out), "--title", "A <test> %DATA%"]) == 0
    page = out.read_text()
    assert "A &lt;test&gt; %DATA%" in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    data = json.loads(gzip.decompress(base64.b64decode(re.search(r'type="application/octet-stream">([^<]+)<', page).group(1))))
    rep = load_replay(short_game)
    assert len(data["frames"]) == len(rep.ticks) + 1 and data["names"] == ["me", "you"]
    # every frame is the drawing of its replayed table: rebuild the last one and compare with table_svg
    from nertz_env.draw import table_svg

    *_, (_rec, last) = replay_states(rep)
    frame = "".join(data["parts"][k] for k in data["frames"][-1]) + "</svg>"
    full = table_svg(last, seat_names=["me", "you"], fan=6)
    assert frame == re.sub(r"<defs>.*?</defs>", "", full)


def test_cli_animations(short_game: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    from nertz_env.draw import table_rgb
    from nertz_env.replay_cli import build_frames, main

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
    ],
)
def test_cli_usage_errors(short_game: Path, args: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    from nertz_env.replay_cli import main

    assert main([str(short_game), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and match in err


def test_cli_bad_files(tmp_path: Path, short_game: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nertz_env.replay_cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "nope"}\n')
    assert main([str(bad), "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # a file the engine does not reproduce: one line naming the tick
    lines = gzip.decompress(short_game.read_bytes()).decode().splitlines()
    rec = json.loads(lines[3])
    rec["h"] = "00000000"
    lines[3] = json.dumps(rec)
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join(lines) + "\n")
    assert main([str(forged), "-o", str(tmp_path / "y.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tick {rec['t']}" in err and not (tmp_path / "y.html").exists()
    assert main([str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "z.html")]) == 2


# ------------------------------------------------------------------ a match: the table as each round ended
@pytest.fixture(scope="module")
def match_game(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("match") / "match.jsonl.gz"
    env = RecordReplay(parallel_env(num_players=2, rounds=2), path, agents=["greedy", "random"])
    play(env, seed=5)
    assert not env.agents
    return path


def test_match_keeps_each_round_end(match_game: Path) -> None:
    from nertz_env.replay import replay_frames, round_end_table

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
    assert kinds[k + 1] == "next_deal" and frames[k].rec is frames[k + 1].rec is first
    assert frames[k].snapshot == table and frames[k + 1].snapshot["round"] == 1
    assert not frames[k + 1].snapshot["lake"]
    assert verify_replay(rep) == len(rep.ticks)
    # the way round_end_table gets the table is exact: on the match's last round it gives the real closing table
    before = next(f.snapshot for f, g in itertools.pairwise(frames) if g.rec is ends[1])
    again = round_end_table(before, ends[1]["a"])
    assert {k: v for k, v in again.items() if k not in ("done", "rng")} == {
        k: v for k, v in rep.final.items() if k not in ("done", "rng")
    }
    # a forged round-end table is caught
    rep.ticks[rep.ticks.index(first)] = {**first, "end_table": {**table, "lake": []}}
    with pytest.raises(ReplayMismatch, match=f"tick {first['t']}: the round-end table"):
        verify_replay(rep)


def test_page_shows_round_end_then_new_deal(match_game: Path) -> None:
    from nertz_env.draw import table_svg
    from nertz_env.replay_cli import build_frames, page_html

    rep = load_replay(match_game)
    _frames, fan = build_frames(rep)
    data = _page_data(page_html(rep))
    kinds = [k[0] for k in data["kinds"]]
    assert len(kinds) == len(rep.ticks) + 2  # the opening, every tick, and round 1's end drawn apart
    k = kinds.index("round_end")
    assert kinds[k + 1] == "next_deal" and data["kinds"][k][1] == data["kinds"][k + 1][1]
    drawn = "".join(data["parts"][j] for j in data["frames"][k]) + "</svg>"
    table = rep.ticks[data["kinds"][k][1]]["end_table"]
    assert drawn == re.sub(r"<defs>.*?</defs>", "", table_svg(table, seat_names=rep.agents, fan=fan))


def _page_data(page: str) -> dict:
    import base64

    blob = re.search(r'type="application/octet-stream">([^<]+)<', page)
    assert blob
    return json.loads(gzip.decompress(base64.b64decode(blob.group(1))))



def test_page_shows_round_scoring_apart_from_the_move(match_game: Path) -> None:
    from nertz_env.replay_cli import page_html

    rep = load_replay(match_game)
    page = page_html(rep)
    data = _page_data(page)
    cfg = rep.config
    for tick in data["ticks"]:
        if "end" not in tick:
            assert "re" not in tick
            continue
        # the round's scoring is bonus - penalty x cards left, kept apart from the move's own reward
        re_ = tick["re"]
        assert [e["reward"] for e in re_] == [e["bonus"] - cfg["nertz_penalty"] * e["left"] for e in re_]
        assert any(e["left"] for e in re_)
        moves = [r - e["reward"] for r, e in zip(tick.get("r", [0.0] * 2), re_, strict=True)]
        assert all(m >= 0 for m in moves)  # a move earns +1 per own card to the lake; no move costs a penalty
    assert "Round end: " in page and "left in the Nertz pile" in page


# ------------------------------------------------------------------ a file cut off while being written
def test_cut_off_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nertz_env.replay import ReplayIncomplete
    from nertz_env.replay_cli import main

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
    # a writer closed before the end writes a closing line: complete, not cut off
    closed = tmp_path / "closed.jsonl"
    env = RecordReplay(parallel_env(num_players=2), closed)
    play(env, seed=6, max_ticks=10)
    env.close()
    assert load_replay(closed).stopped and verify_replay(closed) == 10


def test_page_chart_labels_are_readable(match_game: Path) -> None:
    from nertz_env.replay_cli import page_html

    page = page_html(load_replay(match_game))
    view_w = float(re.search(r'<svg id="chart" viewBox="0 0 (\d+)', page).group(1))
    shown_w = float(re.search(r"#chart\{max-width:(\d+)px\}", page).group(1))
    font = float(re.search(r"#chart text\{[^}]*font-size:(\d+)px", page).group(1))
    assert font * shown_w / view_w >= 11  # the axis labels' size on screen, in px (they were about 5)
    last = load_replay(match_game).final
    assert f">round 2 tick {last['tick']}</text>" in page  # the axis ends at the last table, not the frame count
