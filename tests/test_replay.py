"""Replays: a recorded game replays through the engine tick for tick, in every rules variant; a changed file is
caught at the tick that differs; bad files get one clear error."""

from __future__ import annotations

import gzip
import json
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
