"""nertz-play without a browser: the table (PlayGame), the websocket protocol through Starlette's TestClient
(every bad input gets an error message and the server keeps serving), the replay written as the game goes,
and the command line's bad input (one line, exit 2)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import AsyncMock, Mock

import numpy as np
import pytest

pytest.importorskip("starlette", reason="needs the play extra: pip install '.[play]'")

import uvicorn
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.sync.client import connect

import nertz_env
from conftest import one_line, restore_sigint, run_main
from nertz_env.actions import FLIP, LAKE, RUN, TO_WORK, WAIT
from nertz_env.agents import make_agent
from nertz_env.agents.meta import ZIP_MEMBER
from nertz_env.agents.registry import shipped_models
from nertz_env.play import cli
from nertz_env.play.game import PlayGame
from nertz_env.play.server import TableServer, banners, create_app, token_cookie
from nertz_env.replay import load_replay, verify_replay

SEED = 11


def make_game(players: int = 3, seed: int = SEED, bots: str | list[str] = "heuristic", seat: int = 0,
              replay_dir: Any = None, **rules: Any) -> PlayGame:
    env = nertz_env.parallel_env(num_players=players, **rules)
    specs = [bots] * (players - 1) if isinstance(bots, str) else bots
    return PlayGame(env, [make_agent(s) for s in specs], specs, seat=seat, seed=seed,
                    replay_dir=None if replay_dir is None else str(replay_dir))


def test_play_game__a_seat_off_the_table_is_one_line() -> None:
    with pytest.raises(ValueError, match="seat must be from 0 to 2, got 3"):
        make_game(seat=3)


def make_client(game: PlayGame, step: bool = True, tick_ms: int = 1000) -> tuple[TestClient, TableServer]:
    table = TableServer(game, step=step, tick_ms=tick_ms, log=lambda text: None)
    return TestClient(create_app(table)), table


@contextlib.contextmanager
def seated(game: PlayGame, **options: Any) -> Iterator[tuple[Any, TableServer, Any, Any]]:
    """A tab at ``game``'s table (a TableServer of ``options``, step mode unless told), through a TestClient:
    its websocket, the table, its welcome and its first state."""
    table = TableServer(game, **{"step": True, "log": lambda text: None, **options})
    with TestClient(create_app(table)) as client, client.websocket_connect("/ws") as ws:
        yield ws, table, *join(ws)


def receive_until(ws: Any, kind: str, limit: int = 50) -> dict[str, Any]:
    """The next message of type ``kind`` (other messages in between are skipped)."""
    for _ in range(limit):
        msg = ws.receive_json()
        if msg["type"] == kind:
            return msg
    raise AssertionError(f"no {kind!r} message in {limit} messages")


def ask(ws: Any, kind: str, answer: str = "state", **fields: Any) -> dict[str, Any]:
    """Send a message of type ``kind``; the next message of type ``answer``."""
    ws.send_json({"type": kind, **fields})
    return receive_until(ws, answer)


def join(ws: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return receive_until(ws, "welcome"), receive_until(ws, "state")


def pick(view: dict[str, Any], k: int) -> int:
    """A legal move of the person that is not a flip when there is one (the k-th, cycling)."""
    legal = view["legal"]
    others = [m for m in legal if m["kind"] != "flip"] or legal
    return int(others[k % len(others)]["action"])


# ------------------------------------------------------------------ the table
def test_legal_moves__are_exactly_the_mask_with_a_click_for_each() -> None:
    game = make_game(players=4, seed=5, draw=1)
    table = game.table
    for k in range(40):
        moves = game.legal_moves()
        mask = game._mask
        assert sorted(m["action"] for m in moves) == [a for a in np.flatnonzero(mask) if a != WAIT]
        for m in moves:
            row = table[m["action"]]
            assert m["name"] == table.name(m["action"])
            if row.kind == FLIP:
                assert m["src"]["zone"] == "stock" and m["dst"] is None
            if row.kind == LAKE:
                assert m["dst"] == {"zone": "lake", "pile": None}
            if row.kind == TO_WORK:
                assert m["src"]["zone"] in ("nertz", "waste") and m["dst"] == {"zone": "work", "pile": row.dst}
            if row.kind == RUN:
                assert m["src"] == {"zone": "work", "pile": row.src - 2, "count": row.length}
        # one click pair names one action in the default rules (jokers and tuck add choices, see below)
        pairs = [json.dumps([m["src"], m["dst"]], sort_keys=True) for m in moves]
        assert len(pairs) == len(set(pairs))
        game.tick(pick(game.public_view(), k) if k % 2 else None)


def test_legal_moves__joker_and_tuck_moves_share_a_click_and_the_page_offers_the_choice() -> None:
    game = make_game(players=2, seed=1, jokers=2, allow_tuck=True)
    # every joker-lake action of a source has the same click as the others of that source: the page's chooser
    # (several matches -> the person picks by the words) is what tells them apart
    descr = [game._describe(a, stock=1) for a in range(2, game.table.n)]
    jl = [d for d in descr if d["kind"] == "joker_lake" and d["src"]["zone"] == "waste"]
    assert len(jl) == 4 and len({d["words"] for d in jl}) == 4
    assert all(d["src"] == jl[0]["src"] and d["dst"] == jl[0]["dst"] for d in jl)


# ------------------------------------------------------------------ the protocol
def test_server__step_mode_plays_the_clicked_moves_and_matches_the_engine() -> None:
    ref = nertz_env.parallel_env(num_players=3)
    ref.reset(seed=SEED)
    with seated(make_game(players=3, seed=SEED)) as (ws, table, welcome, state):
        assert welcome["role"] == "player" and welcome["seat"] == 0 and welcome["mode"] == "step"
        assert welcome["names"] == ["you", "heuristic 1", "heuristic 2"]  # a repeated spec gets the seat
        assert state["view"]["tick"] == 0
        for k in range(12):
            view = state["view"]
            if k % 4 == 3:
                state = ask(ws, "wait")
            else:
                state = ask(ws, "move", action=pick(view, k), seat=0, tick=view["tick"])
            assert state["view"]["tick"] == k + 1
            moves = state["moves"]
            ref.step({f"player_{m['seat']}": m["submitted"] for m in moves})
            assert table.game.env.snapshot() == ref.snapshot()
            # the public view is the engine's table as people see it, and no hidden card leaks
            for seat, pl in zip(state["view"]["seats"], ref.snapshot()["players"], strict=True):
                assert seat["work"] == pl["work"]
                assert seat["nertz_left"] == len(pl["nertz"])
                assert seat["stock"] == len(pl["stock"])
                shown = {seat["nertz_top"], seat["waste_top"]} | {c for pile in seat["work"] for c in pile}
                visible = {pl["nertz"][-1] if pl["nertz"] else None, pl["waste"][-1] if pl["waste"] else None}
                assert shown == visible | {c for pile in pl["work"] for c in pile}
                assert isinstance(seat["stock"], int) and isinstance(seat["waste"], int)


BAD_MESSAGES = [
    ("not json {", "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"type": "dance"}', "'type' must be one of"),
    ('{"type": ["move"]}', "got ['move']"),  # a type of any shape is answered, and the tab keeps its seat
    ('{"type": {"move": 1}}', "got {'move': 1}"),
    ('{"type": "move"}', "an action is an integer index"),
    ('{"type": "move", "action": 99999}', "out of range"),
    ('{"type": "move", "action": true}', "integer"),
    ('{"type": "move", "action": 1, "seat": 1}', "seat 1 is played by heuristic 1; you play seat 0"),
    ('{"type": "move", "action": 1, "seat": 7}', "there is no seat 7"),
    ('{"type": "move", "action": 1, "seat": false}', "there is no seat False"),  # bools and floats are no seats
    ('{"type": "move", "action": 1, "seat": 0.0}', "there is no seat 0.0"),
    ('{"type": "pause"}', "step mode has no clock"),
    ('{"type": "move", "action": 1, "pad": "' + "x" * 5000 + '"}', "longer than"),
    ('{"type": "' + "x" * 4000 + '"}', "'type' must be one of"),
    ('{"type": "move", "action": ' + "9" * 4000 + "}", "(4000 characters)"),  # cut, not echoed whole
]


def test_server__bad_messages_get_a_clear_error_and_change_nothing() -> None:
    with seated(make_game(players=3, seed=SEED)) as (ws, table, _, state):
        before = table.game.env.snapshot()
        for text, words in BAD_MESSAGES:
            ws.send_text(text)
            msg = ws.receive_json()
            assert msg["type"] == "error", (text, msg)
            assert words in msg["message"], (text, msg["message"])
            assert len(msg["message"]) < 300, msg["message"]  # a long value is cut, never echoed whole
        ws.send_bytes(b"\x00\x01")
        msg = ws.receive_json()
        assert msg["type"] == "error" and "binary" in msg["message"]
        masked = int(np.flatnonzero(table.game._mask == 0)[0])
        ws.send_json({"type": "move", "action": masked})
        msg = ws.receive_json()
        assert msg["type"] == "error" and msg["message"].startswith("not legal now:")
        assert table.game.env.snapshot() == before
        # and the connection still plays
        assert ask(ws, "move", action=pick(state["view"], 0))["view"]["tick"] == 1


def test_server__a_burst_of_messages_from_a_tab_that_reads_gets_every_answer() -> None:
    """150 messages in one write from a tab that reads: each is answered, and the tab keeps its seat."""
    logged: list[str] = []
    served = Served(TableServer(make_game(), step=True, log=logged.append))
    try:
        with connect(served.url, max_queue=None) as ws:
            assert json.loads(ws.recv(timeout=10))["role"] == "player"
            next_state(ws, 10)
            ws.socket.sendall(masked_frame(0x1, b'{"type": "dance"}') * 150)
            assert all("'type' must be one of" in json.loads(ws.recv(timeout=10))["message"] for _ in range(150))
            ws.send(json.dumps({"type": "wait"}))
            assert next_state(ws)["view"]["tick"] == 1 and logged == []
    finally:
        served.stop()


def test_server__a_closed_tab_leaves_no_task() -> None:
    """When a tab's connection ends, so has its sender: no task is left pending."""
    async def main() -> set[Any]:
        table = TableServer(make_game(), step=True, log=lambda text: None)
        await table.start()
        tab = AsyncMock()  # a tab that sends one move and closes
        tab.receive.side_effect = [{"type": "websocket.receive", "text": '{"type": "wait"}'},
                                   {"type": "websocket.disconnect"}]
        await table.serve(tab)
        left = asyncio.all_tasks() - {asyncio.current_task()}
        await table.stop()
        return left

    assert asyncio.run(main()) == set()


def test_server__a_second_tab_watches_and_plays_on_when_the_first_closes() -> None:
    game = make_game(players=3, seed=SEED)
    client, _ = make_client(game, step=True)
    with client:
        ws1 = client.websocket_connect("/ws").__enter__()
        welcome1, state = join(ws1)
        with client.websocket_connect("/ws") as ws2, client.websocket_connect("/ws") as ws3:
            welcome2, _ = join(ws2)
            welcome3, _ = join(ws3)
            assert welcome1["role"] == "player" and welcome2["role"] == welcome3["role"] == "spectator"
            assert "another tab" in welcome2["message"]
            for text in ('{"type": "move", "action": 1}', '{"type": "wait"}', '{"type": "new_game"}'):
                ws2.send_text(text)
                msg = ws2.receive_json()
                assert msg["type"] == "error" and "spectator" in msg["message"]
            # the player plays; the spectators see the tick
            assert ask(ws1, "move", action=pick(state["view"], 0))["view"]["tick"] == 1
            for ws in (ws2, ws3):
                seen = receive_until(ws, "state")
                assert seen["view"]["tick"] == 1 and seen["role"] == "spectator"
            # the player's tab closes mid-game: the oldest watching tab plays on, the others are told
            ws1.__exit__(None, None, None)
            welcome = receive_until(ws2, "welcome")
            assert welcome["role"] == "player" and "this tab plays seat 0 now" in welcome["message"]
            assert receive_until(ws2, "state")["view"]["tick"] == 1
            assert "another tab plays the seat" in receive_until(ws3, "info")["message"]
            assert ask(ws2, "wait")["view"]["tick"] == 2
            assert "spectator" in ask(ws3, "wait", "error")["message"]
        # a new tab after all closed plays the seat again, at the same tick
        with client.websocket_connect("/ws") as ws4:
            welcome, state = join(ws4)
            assert welcome["role"] == "player" and state["view"]["tick"] == 2


def test_server__real_time_ticks_on_the_clock_and_plays_the_queued_move_on_the_next_tick() -> None:
    with seated(make_game(players=3, seed=SEED), step=False, tick_ms=60) as (ws, table, welcome, state):
        assert welcome["mode"] == "realtime"
        state = receive_until(ws, "state")  # the clock runs without any click: the person waits
        assert state["moves"][0]["submitted"] == WAIT
        assert ask(ws, "pause", "info")["paused"] is True
        paused_at = table.game.env.tick
        time.sleep(0.3)
        assert table.game.env.tick == paused_at
        view = table.game.public_view()
        first, second = pick(view, 0), pick(view, 1)
        q = ask(ws, "move", "queued", action=first)
        assert q["pending"]["action"] == first
        q = ask(ws, "move", "queued", action=second)
        assert q["pending"]["action"] == second
        if first != second:
            assert "instead of" in q["message"]
        ws.send_json({"type": "pause"})
        # the next tick plays the last queued move, and only it
        while True:
            state = receive_until(ws, "state")
            if state["view"]["tick"] == paused_at + 1:
                break
        assert state["moves"][0]["submitted"] == second
        assert not state["moves"][0]["illegal"]
        state = receive_until(ws, "state")
        assert state["moves"][0]["submitted"] == WAIT


def test_server__the_clock_stops_while_no_tab_plays_the_seat() -> None:
    game = make_game(players=2, seed=SEED)
    client, table = make_client(game, step=False, tick_ms=50)
    with client:
        time.sleep(0.3)
        assert table.game.env.tick == 0  # nobody sat down yet
        with client.websocket_connect("/ws") as ws:
            join(ws)
            receive_until(ws, "state")
        stopped = table.game.env.tick
        time.sleep(0.3)
        assert table.game.env.tick <= stopped + 1  # at most the tick in flight when the tab closed


def test_server__a_failing_bot_stops_the_table_with_a_message_and_the_server_keeps_serving() -> None:
    broken = Mock(**{"act.side_effect": RuntimeError("no policy loaded")})
    game = PlayGame(nertz_env.parallel_env(num_players=2), [broken], ["broken"], seed=SEED)
    client, _ = make_client(game, step=True)
    with client, client.websocket_connect("/ws") as ws:
        join(ws)
        msg = ask(ws, "wait", "error")
        assert "the table stopped: RuntimeError: no policy loaded" in msg["message"]
        assert "the table stopped" in ask(ws, "wait", "error")["message"]
        assert client.get("/").status_code == 200


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--opponent", "wizard"], "unknown agent 'wizard'"),
        (["--players", "9"], "argument --players: invalid choice: 9"),
        ([*["--opponent", "random"] * 8], "--opponent is given 8 times: a table has 2 to 8 players"),
        (["--opponent", "heuristic", "--opponent", "search", "--players", "4"], "has 3 opponents, but --opponent is given 2 times"),
        (["--seat", "4"], "--seat must be from 0 to 3"),
        (["--step", "--tick-ms", "200"], "--step has no clock"),
        (["--tick-ms", "5"], "argument --tick-ms: must be at least 50, got 5"),
        (["--rule", "draw=4"], "draw=4 is not allowed"),
        (["--rule", "max_ticks=99999999999"], "max_ticks=99999999999 is not allowed"),  # an OverflowError traceback
        (["--opponent", "runs/none.zip"], "checkpoint file not found"),
        (["--port", "70000"], "argument --port: must be from 0 to 65535"),
        (["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["--seed", str(2**64)], "argument --seed: must be from 0 to 18446744073709551615"),
        (["--opponent", "heuristic:depth=3"], "has no parameter depth"),
        (["--host", "no.such.host.invalid"], "--host"),
        (["--port", "{taken}"], "cannot listen on 127.0.0.1:{taken}"),  # a port in use
        (["--replay-dir", "{file}/sub"], "--replay-dir"),  # a folder that cannot be made
    ],
)
def test_cli__bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               argv: list[str], words: str) -> None:
    (tmp_path / "file").write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        fill = {"taken": taken.getsockname()[1], "file": tmp_path / "file"}
        argv = [a.format(**fill) for a in argv]
        replay_dir = [] if "--replay-dir" in argv else ["--replay-dir", str(tmp_path)]
        code, _, err = run_main(cli.main, ["--no-browser", *replay_dir, *argv], capsys)
    assert code == 2 and words.format(**fill) in one_line(err, "nertz-play")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        # one opponent named: a table of 2 by default, not the 4 the shipped policy was trained for
        (["--opponent", "ppo"], "num_players: policy 'ppo' has 4, the table has 2"),
        # nertz-play has no --target-score: the rule is named (nertz-eval's advice: tests/test_cli.py)
        (["--opponent", "ppo", "--players", "4", "--rule", "target_score=50"], "drop --rule target_score=50"),
        (["--opponent", "{cut}"], "cut.zip is not a checkpoint"),  # cut short: an interrupted download
        # the shipped policy as SB3 saves one trained on NertzSingleAgentEnv: no nertz-env record
        (["--opponent", "{bare}", "--players", "3"], "its spaces are those of a table of 4 players"),
    ],
)
def test_cli__an_opponent_that_cannot_play_this_table_is_one_line_saying_what_to_pass(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], words: str) -> None:
    pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")
    shipped = Path(shipped_models()["ppo_imitation"])  # a flat network over the plain observation
    cut, bare = tmp_path / "cut.zip", tmp_path / "bare.zip"
    cut.write_bytes(shipped.read_bytes()[:1000])
    with zipfile.ZipFile(shipped) as src, zipfile.ZipFile(bare, "w") as dst:
        for item in src.infolist():
            if item.filename != ZIP_MEMBER:
                dst.writestr(item, src.read(item.filename))
    argv = ["--no-browser", "--replay-dir", str(tmp_path), *[a.format(cut=cut, bare=bare) for a in argv]]
    code, _, err = run_main(cli.main, argv, capsys)
    assert code == 2 and words in err
    assert one_line(err, "nertz-play").startswith("nertz-play: error: --opponent:")


def test_cli__one_opponent_fills_every_seat_and_the_default_table_is_four() -> None:
    args = cli.build_parser().parse_args(["--opponent", "greedy", "--players", "5"])
    assert cli._opponents(args) == (5, ["greedy"] * 4)
    assert cli._opponents(cli.build_parser().parse_args([])) == (4, ["heuristic"] * 3)
    assert cli._opponents(cli.build_parser().parse_args(["--opponent", "search", "--opponent", "greedy"])) == (3, ["search", "greedy"])


# ------------------------------------------------------------------ the replay
def test_replay__every_tick_is_on_disk_while_the_game_runs_and_a_closed_tab_loses_nothing(tmp_path: Path) -> None:
    game = make_game(players=3, seed=SEED, replay_dir=tmp_path)
    client, table = make_client(game, step=True)
    with client:
        with client.websocket_connect("/ws") as ws:
            _, state = join(ws)
            for k in range(8):
                state = ask(ws, "move", action=pick(state["view"], k))
            path = state["replay"]
            assert path is not None and path.startswith(str(tmp_path)) and path.endswith(".jsonl")
        # the tab is gone, the server still runs the table: the file already holds every tick, flushed
        rep = load_replay(path)
        assert [t["t"] for t in rep.ticks] == list(range(1, 9)) and rep.final is None
        assert rep.agents == ["human", "heuristic", "heuristic"]
        assert rep.meta == {"tool": "nertz-play", "seed": SEED, "human_seat": 0}
        assert [t["a"] for t in rep.ticks] == [[m.submitted for m in r.moves] for r in table.game.history]
        assert verify_replay(path, partial=True) == 8  # still being written: no closing line yet
        with client.websocket_connect("/ws") as ws:  # a new tab plays on, into the same file
            join(ws)
            ask(ws, "wait")
        assert verify_replay(path, partial=True) == 9
    # the server stopped (Ctrl-C): the file is closed, and still replays
    assert verify_replay(path) == 9


def test_replay__a_finished_game_has_its_closing_line_and_replays_exactly(tmp_path: Path) -> None:
    game = make_game(players=2, seed=4, bots="greedy", replay_dir=tmp_path,
                     nertz_size=8, max_ticks=300)
    k = 0
    while not game.done:
        game.tick(pick(game.public_view(), k) if game.legal_moves() and k % 2 else None)
        k += 1
    rep = load_replay(game.replay_file or "")
    assert rep.final == game.env.snapshot()
    assert verify_replay(rep) == game.env.tick == len(game.history)
    # a new game writes a new file; the old one stays as it was
    old = game.replay_file
    game.reset(seed=5)
    assert game.replay_file != old and verify_replay(old or "") == len(rep.ticks)


def test_events__a_lost_race_and_an_illegal_move_are_reported_to_the_person() -> None:
    game = make_game(players=4, seed=1, bots="greedy")  # seat 0 loses a race at tick 60
    for _ in range(60):
        lake = [m["action"] for m in game.legal_moves() if m["kind"] == "lake"]
        result = game.tick(lake[0] if lake else (1 if game._mask[1] else None))
    assert result.moves[0].lost_race and any(e.startswith("lost race") for e in result.events)
    assert banners(game)[0] == ("LOST RACE", "warn")
    assert game.public_view()["seats"][0]["last"]["lost_race"] is True
    # an action the engine refuses (the server's check is bypassed here) is reported, never silent
    game = make_game(players=2, seed=1)
    masked = int(np.flatnonzero(game._mask == 0)[0])
    result = game.tick(masked)
    assert result.moves[0].illegal and result.moves[0].applied == WAIT
    assert any(e.startswith("your move was not legal") for e in result.events)
    assert banners(game)[0][1] == "error"


@pytest.mark.skipif(os.name != "posix", reason="signals a child process and reads its end by signal (preexec_fn, negative exit codes): POSIX")
def test_cli__ctrl_c_while_the_first_run_compiles_is_one_line_then_a_sigint_exit(tmp_path: Path) -> None:
    """A Ctrl-C while numba compiles the rules (a fresh cache) ended in a traceback from deep inside numba."""
    root = Path(__file__).resolve().parent.parent
    code = "import sys; from nertz_env.cli.commands import nertz_play; sys.exit(nertz_play())"  # the installed command
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--no-browser", "--replay-dir", str(tmp_path / "replays")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=restore_sigint,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(tmp_path / "cache")},
    )
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        assert "dealing" in first, first
        time.sleep(0.3)  # compiling now (a cold cache takes 13 s or more)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    # one line, then the process ends by SIGINT (as an uncaught Ctrl-C would: a shell loop stops too); the
    # compile notice may come first, a second after the compile starts
    assert proc.returncode == -signal.SIGINT, err[-2000:]
    lines = err.splitlines()
    assert lines[-1] == "nertz-play: interrupted (Ctrl-C)" and "Traceback" not in err, err[-2000:]
    assert all(line.startswith("nertz_env: compiling the rules") for line in lines[:-1]), err[-2000:]


# ------------------------------------------------------------------ who may reach the table
def test_server__on_ipv6_loopback_the_bracketed_host_is_served_with_allowed_hosts_from_its_own_page() -> None:
    hosts, token = cli.access("::1")
    assert token is None and "[::1]" in hosts
    table = TableServer(make_game(), step=True, log=lambda text: None)
    client = TestClient(create_app(table, hosts), base_url="http://[::1]:8123")
    with client:
        assert client.get("/", headers={"host": "[::1]:8123"}).status_code == 200
        assert client.get("/", headers={"host": "localhost:8123"}).status_code == 200
        assert client.get("/", headers={"host": "[::2]:8123"}).status_code == 400
        with client.websocket_connect("ws://[::1]:8123/ws", headers={"origin": "http://[::1]:8123"}) as ws:
            assert ws.receive_json()["type"] == "welcome"
        with pytest.raises(WebSocketDisconnect), client.websocket_connect("ws://rebound.example:8123/ws") as ws:
            ws.receive_json()
        evil = {"origin": "http://evil.example"}  # a page of another site: refuses_a_page_from_another_origin
        with pytest.raises(WebSocketDisconnect) as refused, client.websocket_connect("ws://[::1]:8123/ws", headers=evil):
            pass
        assert refused.value.code == 1008 and "its own page" in refused.value.reason
    assert cli.addresses("::1", 8123, None) == ("http://[::1]:8123/", "http://[::1]:8123/")


def test_server__beyond_loopback_every_request_needs_the_token_then_its_cookie() -> None:
    hosts, token = cli.access("0.0.0.0")
    assert hosts is None and token and len(token) >= 24 and cli.access("0.0.0.0")[1] != token
    shown, local = cli.addresses("0.0.0.0", 8123, token)
    assert shown.endswith(f":8123/?token={token}") and local == f"http://127.0.0.1:8123/?token={token}"
    table = TableServer(make_game(), step=True, log=lambda text: None)
    client = TestClient(create_app(table, hosts, token), base_url="http://127.0.0.1:8123")
    with client:
        for host in ("127.0.0.1:8123", "evil.example:8123", "localhost"):  # no token: refused, whatever the Host
            r = client.get("/", headers={"host": host})
            assert r.status_code == 403 and "token" in r.text
        assert client.get("/?token=wrong" + token[5:]).status_code == 403
        assert client.get("/static/play.js").status_code == 403
        with pytest.raises(WebSocketDisconnect), client.websocket_connect("ws://127.0.0.1:8123/ws") as ws:
            ws.receive_json()
        page = client.get(f"/?token={token}")  # the printed address: the page, and a cookie for what follows
        assert page.status_code == 200 and "httponly" in page.headers["set-cookie"].lower()
        assert "samesite=strict" in page.headers["set-cookie"].lower()
        assert client.get("/static/play.js").status_code == 200  # the cookie alone now
        with client.websocket_connect("ws://127.0.0.1:8123/ws", headers={"origin": "http://127.0.0.1:8123"}) as ws:
            assert ws.receive_json()["type"] == "welcome"
        # a page from another site gets nowhere even with the cookie: its Origin is not this server's
        evil = {"origin": "http://evil.example"}
        with pytest.raises(WebSocketDisconnect), client.websocket_connect(
                f"ws://127.0.0.1:8123/ws?token={token}", headers=evil) as ws:
            ws.receive_json()
        # a_malformed_cookie_of_another_application beside ours costs only itself
        ours = f"{token_cookie(token)}={token}"
        for jar in (f'pref={{"x":1}}; {ours}', f"a=b c; {ours}", f'{ours}; pref={{"x":1}}; a=b c; =; ;x'):
            assert client.get("/static/play.js", headers={"cookie": jar}).status_code == 200, jar
            with client.websocket_connect("ws://127.0.0.1:8123/ws", headers={"cookie": jar,
                                                                            "origin": "http://127.0.0.1:8123"}) as ws:
                assert ws.receive_json()["type"] == "welcome"
        assert client.get("/static/play.js", headers={"cookie": 'pref={"x":1}; a=b c'}).status_code == 403


# ------------------------------------------------------------------ a real server (uvicorn in a thread, loopback)
class Served:
    """A table served by uvicorn with nertz-play's own settings (:func:`cli.server_config`) in a thread."""

    def __init__(self, table: TableServer, host: str = "127.0.0.1", allowed: Any = None, token: str | None = None,
                 **options: Any) -> None:
        self.table = table
        self.sock = socket.socket()
        # small kernel send buffers (accepted sockets inherit them), so a peer that does not read blocks the
        # server's sends after a few messages instead of a few MB
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self.page = f"http://127.0.0.1:{self.port}/"
        self.server = uvicorn.Server(cli.server_config(create_app(table, allowed, token), **options))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)

    def stop(self, within: float = 30) -> float:
        """Stop as the first Ctrl-C does; returns the seconds it took."""
        start = time.monotonic()
        self.server.should_exit = True
        self.thread.join(timeout=within)
        self.sock.close()
        return time.monotonic() - start


def silent_socket(port: int) -> socket.socket:
    """A client that completes the websocket upgrade and then never reads (a tiny receive buffer)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    s.settimeout(10)
    while b"\r\n\r\n" not in head:
        head += s.recv(1)  # the answer's head only, a byte at a time: nothing after it is read
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def next_state(ws: Any, timeout: float = 3.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        msg = json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
        if msg["type"] == "state":
            return msg


def test_server__a_client_that_never_reads_costs_only_itself_and_the_server_stops_promptly() -> None:
    """A socket that upgrades and never reads: the playing tab keeps its ticks and answers, a new tab gets its
    welcome, the silent one is dropped when it answers no ping; a first Ctrl-C stops the server promptly."""
    table = TableServer(make_game(players=2, bots="greedy"), step=False, tick_ms=60, log=lambda text: None)
    served = Served(table, allowed=cli.access("127.0.0.1")[0], ws_ping_interval=0.2, ws_ping_timeout=0.3)
    try:
        with connect(served.url, max_queue=None) as ws:  # this client reads all the time
            assert json.loads(ws.recv(timeout=10))["role"] == "player"
            first = next_state(ws, 10)["view"]["tick"]
            with silent_socket(served.port):
                # the table goes on for the playing tab while the silent one is dropped
                seen, deadline = first, time.monotonic() + 10
                while seen < first + 8 or len(table.tabs) > 1:
                    assert time.monotonic() < deadline, (first, seen, len(table.tabs))
                    seen = next_state(ws)["view"]["tick"]
            # a_message_over_4096_characters gets an error (uvicorn's limit is 1 MiB), and the connection stays
            ws.send(json.dumps({"type": "wait", "pad": "x" * 100_000}))
            ws.send(json.dumps({"type": "wait"}))
            answers: list[dict[str, Any]] = []
            while len(answers) < 2:
                msg = json.loads(ws.recv(timeout=3))
                answers += [msg] if msg["type"] != "state" else []
            assert "longer than 4096" in answers[0]["message"] and answers[1]["type"] == "queued", answers
            with connect(served.url) as other:  # a new tab is welcomed
                welcome = json.loads(other.recv(timeout=3))
                assert welcome["type"] == "welcome" and welcome["role"] == "spectator"
    finally:
        took = served.stop()
    assert not served.thread.is_alive() and took < cli.SHUTDOWN_GRACE, took


def http_get(port: int, path: str, host: str, **headers: str) -> Any:
    """A GET to the server on ``port`` of 127.0.0.1 naming ``host``; the answer, its body read as ``text``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": host, **headers})
    answer = conn.getresponse()
    answer.text = answer.read().decode(errors="replace")  # type: ignore[attr-defined]
    conn.close()
    return answer


def test_server__on_0_0_0_0_a_foreign_host_needs_the_token_and_every_answer_refuses_framing() -> None:
    """Listening on every address: a DNS-rebinding request is refused, page and websocket; the token opens the
    page, its cookie the rest; every answer, refusals too, forbids framing, caching, sniffing, referrers."""
    allowed, token = cli.access("0.0.0.0")
    served = Served(TableServer(make_game(players=2), step=True, log=lambda text: None), "0.0.0.0", allowed, token)
    port = served.port
    own, evil = f"127.0.0.1:{port}", f"evil.example:{port}"
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": f"http://{evil}"}
    try:
        page = http_get(port, f"/?token={token}", own)
        cookie = page.headers["set-cookie"].split(";")[0]
        answers = [page, http_get(port, "/static/play.js", own, Cookie=cookie),
                   http_get(port, "/static/nothing.js", own, Cookie=cookie), http_get(port, "/", evil)]
        assert http_get(port, "/ws", evil, **upgrade).status == 403
    finally:
        served.stop()
    assert [r.status for r in answers] == [200, 200, 404, 403]
    for r in answers:
        csp = r.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
        assert r.headers.get("x-frame-options") == "DENY"
        assert r.headers.get("x-content-type-options") == "nosniff"
        assert r.headers.get("referrer-policy") == "no-referrer"
        assert r.headers.get("cache-control") == "no-store"
    # the page satisfies its own policy: no inline script or style, nothing from elsewhere
    assert "play.js" in page.text
    assert "<script>" not in page.text and "<style" not in page.text and " style=" not in page.text
    assert "http" not in page.text


# ------------------------------------------------------------------ a replay that cannot be written
def test_server__a_removed_replay_folder_is_reported_and_the_table_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "replays"
    folder.mkdir()
    logged: list[str] = []
    game = make_game(players=2, replay_dir=folder)
    with seated(game, log=logged.append, new_game_interval=0) as (ws, table, _, _):
        assert ask(ws, "wait")["view"]["tick"] == 1
        shutil.rmtree(folder)
        state = ask(ws, "new_game")  # the new replay cannot be created: told, and the game is dealt
        assert state["view"]["tick"] == 0 and table.game.seed == SEED + 1
        assert state["replay"] is None and "No such file or directory" in state["recording"]
        error = receive_until(ws, "error")
        assert error.get("recording") and "cannot create the replay" in error["message"] and not error.get("fatal")
        assert any("cannot create the replay" in line for line in logged)
        # the last game's file went with its folder: the log must not say it is saved there
        assert not any("saved in" in line for line in logged), logged
        assert any("is gone (removed from disk)" in line for line in logged), logged
        assert ask(ws, "wait")["view"]["tick"] == 1  # the game goes on, unrecorded
        folder.mkdir()  # writable again: the next game records
        state = ask(ws, "new_game")
        assert state["recording"] is None and state["replay"].startswith(str(folder))
        assert ask(ws, "wait")["view"]["tick"] == 1
        assert verify_replay(state["replay"], partial=True) == 1


def disk_full(real: Any) -> Mock:
    """A replay's file ``real`` on a disk that fills up: the next write puts a few bytes down, then fails."""

    def write(data: Any) -> int:
        real.write(bytes(data[:7]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return Mock(wraps=real, write=write)


def test_server__a_full_disk_is_reported_the_game_goes_on_and_the_file_stays_valid(tmp_path: Path) -> None:
    game = make_game(players=2, replay_dir=tmp_path)
    with seated(game) as (ws, table, _, _):
        for _ in range(3):
            ask(ws, "wait")
        path = table.game.replay_file
        game.writer._file = disk_full(game.writer._file)
        state = ask(ws, "wait")
        assert state["view"]["tick"] == 4 and "No space left on device" in state["recording"]
        error = receive_until(ws, "error")
        assert "No space left on device" in error["message"] and not error.get("fatal")
        state = ask(ws, "wait")  # the game goes on; the failure is told once
        assert state["view"]["tick"] == 5 and table.failure is None
        # the file holds the three ticks written before the disk filled, and nothing cut in the middle
        rep = load_replay(path)
        assert [t["t"] for t in rep.ticks] == [1, 2, 3] and rep.cut_off is None
        assert verify_replay(path, partial=True) == 3
        state = ask(ws, "new_game")  # room again: the next game records
        assert state["recording"] is None and state["replay"] != path


# ------------------------------------------------------------------ new games
def test_server__new_games_come_one_a_second_at_most(tmp_path: Path) -> None:
    """A burst of new_game messages deals one game (one replay file), the others are refused."""
    game = make_game(players=2, replay_dir=tmp_path)
    with seated(game, new_game_interval=60) as (ws, table, _, _):  # a loaded machine takes seconds
        for _ in range(5):
            ws.send_json({"type": "new_game"})
        answers, errors = 0, 0
        while answers < 5:  # each gets an error or the news of its game
            msg = ws.receive_json()
            if msg["type"] == "error":
                assert "one at a time" in msg["message"], msg
                errors += 1
            answers += msg["type"] == "error" or msg.get("message", "").startswith("new game")
        assert errors == 4 and table.game.seed == SEED + 1
        ref = nertz_env.parallel_env(num_players=2)  # the new game deals the next seed
        ref.reset(seed=SEED + 1)
        assert table.game.env.snapshot() == ref.snapshot()
    assert len(list(tmp_path.iterdir())) == 2  # the first game's and the one new game's


def test_server__the_game_after_seed_2_64_minus_1_is_seed_0() -> None:
    """Seeds wrap at 2**64 (the env refuses 2**64): the table deals on."""
    with seated(make_game(players=2, seed=2**64 - 1)) as (ws, _, _, _):
        ws.send_json({"type": "new_game"})
        msg = ws.receive_json()
        while msg["type"] not in ("info", "error"):
            msg = ws.receive_json()
        assert msg["message"] == "new game (seed 0)", msg


# ------------------------------------------------------------------ the protocols' bounds, on fake transports
def connection(loop: asyncio.AbstractEventLoop, protocol_class: Any, **options: Any) -> Any:
    """A connection made to ``protocol_class`` with nertz-play's settings (and ``options``) on a fake transport
    whose peer reads nothing: its ``write`` calls keep what was sent, and only an abort ends the connection."""
    async def asgi(scope: Any, receive: Any, send: Any) -> None:  # a request never answered; a websocket read to the end
        await receive()
        if scope["type"] == "http":
            await asyncio.Event().wait()
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            pass

    state = options.pop("server_state", None) or uvicorn.server.ServerState()
    config = cli.server_config(asgi, lifespan="off", log_config=None, **options)  # the log to caplog
    protocol = protocol_class(config=config, server_state=state, app_state={}, _loop=loop)
    transport = Mock(**{"get_extra_info.return_value": None, "is_closing.return_value": False,
                        "get_write_buffer_size.return_value": 0})
    transport.abort.side_effect = lambda: loop.call_soon(protocol.connection_lost, None)
    protocol.connection_made(transport)
    return protocol


def written(protocol: Any) -> bytes:
    return b"".join(call.args[0] for call in protocol.transport.write.call_args_list)


def finish(loop: asyncio.AbstractEventLoop) -> None:
    """End the apps still running on ``loop``, then close it."""
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()


def upgraded(loop: asyncio.AbstractEventLoop, **options: Any) -> Any:
    """A websocket connection past its handshake, its peer reading nothing from now on."""
    from nertz_env.play.limits import BoundedWebSocket

    ws = connection(loop, BoundedWebSocket, **options)
    ws.data_received(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    loop.run_until_complete(asyncio.sleep(0.01))
    assert written(ws).startswith(b"HTTP/1.1 101")
    return ws


def masked_frame(opcode: int, payload: bytes) -> bytes:
    """A client's websocket frame (masked, as a client must send it; payload under 126 bytes)."""
    mask = b"abcd"
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[k % 4] for k, b in enumerate(payload))


def test_limits__a_ping_flood_from_a_peer_that_reads_nothing_is_not_answered() -> None:
    """The peer pings and never reads: once the transport's buffer is past its high-water mark (writing paused),
    its pings get no pong, so the server's memory does not grow with them."""
    loop = asyncio.new_event_loop()
    ws = upgraded(loop)
    ws.data_received(masked_frame(0x9, b"p" * 125))
    assert written(ws).endswith(b"p" * 125)  # a pong while the peer reads
    ws.pause_writing()
    before = ws.transport.write.call_count
    ws.data_received(masked_frame(0x9, b"p" * 125) * 1000)
    assert ws.transport.write.call_count == before
    finish(loop)


def test_limits__a_peer_that_answers_no_ping_is_aborted_and_the_log_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """uvicorn's keepalive finds the peer that reads nothing; the connection is aborted (a close would wait for the
    peer to read), so the app hears of it and the tab is dropped."""
    loop = asyncio.new_event_loop()
    ws = upgraded(loop, ws_ping_interval=0.01, ws_ping_timeout=0.01)
    loop.run_until_complete(asyncio.sleep(0.2))
    assert ws.transport.abort.called and ws.disconnected and not ws.tasks  # the app ended
    assert "answered no ping within 0.01 s (it reads nothing)" in caplog.text
    finish(loop)


def test_limits__a_stopping_server_aborts_a_connection_whose_peer_left_data_unread() -> None:
    loop = asyncio.new_event_loop()
    stuck, idle = upgraded(loop), upgraded(loop)
    stuck.transport.get_write_buffer_size.return_value = 100_000  # not read
    stuck.shutdown()
    idle.shutdown()
    assert stuck.transport.abort.called and not idle.transport.abort.called and idle.transport.close.called
    assert idle.transport.write.call_args.args[0].startswith(b"\x88")  # a close frame
    finish(loop)


def test_limits__a_socket_that_sends_no_request_head_is_closed_and_the_oldest_makes_room(
        caplog: pytest.LogCaptureFixture) -> None:
    """Sockets that send nothing cannot hold every file: each has timeout_keep_alive seconds for its head, and a
    new connection at the limit closes the oldest that sent none, said once."""
    from nertz_env.play.limits import BoundedH11

    loop = asyncio.new_event_loop()
    state = uvicorn.server.ServerState()

    def connect(**options: Any) -> Any:
        return connection(loop, BoundedH11, server_state=state, limit_concurrency=3, **options)

    oldest, busy = connect(), connect()
    busy.data_received(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # its request runs: not idle
    trickle = connect()  # the limit: the oldest idle one goes, so a new client's head is not refused with 503
    trickle.data_received(b"GET / HTTP/1.1\r\n")  # half a head: still waiting for one
    newer = connect()
    closed = [c.transport.close.called for c in (oldest, busy, trickle, newer)]
    assert closed == [True, False, True, False] and caplog.text.count("closing the oldest that sent no") == 1
    quick = connection(loop, BoundedH11, server_state=state, timeout_keep_alive=0.01)
    loop.run_until_complete(asyncio.sleep(0.1))
    assert quick.transport.close.called  # no head in time
    finish(loop)


def test_server_config__the_connection_limit_follows_the_open_files_limit_where_one_exists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("resource")
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (200, 4096))
    assert cli.server_config(None).limit_concurrency == 50
    monkeypatch.setitem(sys.modules, "resource", None)  # Windows: no resource module
    assert cli.server_config(None).limit_concurrency == cli.MAX_CONNECTIONS


@pytest.mark.skipif(os.name != "posix", reason="signals a child process and reads its end by signal (preexec_fn, negative exit codes): POSIX")
def test_cli__serves_the_table_and_a_first_ctrl_c_stops_it_with_its_replay_closed(tmp_path: Path) -> None:
    """nertz-play itself on loopback, played over a real websocket."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nertz_env.play.cli", "--no-browser", "--seed", "5", "--players", "2", "--opponent",
         "random", "--tick-ms", "100", "--replay-dir", str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=restore_sigint,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        seen = ""
        while "the table is at " not in seen and (line := proc.stdout.readline() if proc.stdout else ""):
            seen += line
        url = seen.split("the table is at ")[1].split()[0]
        with connect(url.replace("http://", "ws://") + "ws", origin=url.rstrip("/"), open_timeout=10) as ws:
            while next_state(ws, 10)["view"]["tick"] < 5:
                pass
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped after tick" in out and "Traceback" not in out, seen + out
    replays = list(tmp_path.glob("nertz-play-*-seed5.jsonl"))
    assert len(replays) == 1 and verify_replay(replays[0]) >= 5
