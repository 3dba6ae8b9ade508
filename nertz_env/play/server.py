"""The web side of ``nertz-play``: a Starlette app serving one table to a browser over a websocket.

Its routes, the messages the page and the server send, and what the server promises: docs/guides/replays.md
("Play a seat yourself"). Who may connect: :func:`create_app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import FileResponse, PlainTextResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from nertz_env._text import short
from nertz_env.play.game import MoveError, PlayGame
from nertz_env.render.draw import banners_of, table_svg

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
MAX_MESSAGE = 4096
#: messages waiting for one tab before it is dropped: its own answers wait for it to read and a state not sent
#: yet is replaced, so only news of other tabs' moves piles up for a tab whose connection is stuck
MAX_QUEUE = 100


def banners(game: PlayGame) -> dict[int, tuple[str, str]]:
    """Banners for the seats' panels after the last tick: lost races and the person's illegal move."""
    moves = game.last.moves if game.last is not None else []
    illegal = [game.seat] if moves and moves[game.seat].illegal else []
    lost = [m.seat for m in moves if m.lost_race]
    return banners_of(lost, illegal, ("LOST RACE", "ILLEGAL MOVE: YOU WAITED"))


class _Tab:
    """One connected tab: its websocket and the messages waiting for it, sent in order by
    :meth:`TableServer._send_loop`."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.queue: deque[dict[str, Any]] = deque()
        self.wake = asyncio.Event()  # a message waits, or the tab is gone
        self.sent = asyncio.Event()  # nothing waits
        self.sent.set()
        self.gone = False


class TableServer:
    """One table served to the tabs connected to it: the clock, the person's moves, a sender per tab."""

    def __init__(
        self,
        game: PlayGame,
        step: bool = False,
        tick_ms: int = 1000,
        log: Callable[[str], None] | None = None,
        new_game_interval: float = 1.0,  # seconds between two new games at least (each makes a replay file)
    ) -> None:
        self.game = game
        self.step = step
        self.tick_ms = tick_ms
        self.log = log or (lambda text: print(f"nertz-play: {text}", file=sys.stderr, flush=True))
        self.new_game_interval = new_game_interval
        self.dealt_at = -float("inf")  # when the last new game was dealt (loop time)
        self.tabs: dict[WebSocket, _Tab] = {}  # in the order they connected
        self.pending: int | None = None
        self.paused = False
        self.failure: str | None = None
        self.lock = asyncio.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nertz-play-table")
        self._clock: asyncio.Task[None] | None = None
        self._view: dict[str, Any] = {}
        self._svg = ""

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self._run(self._render)
        if not self.step:
            self._clock = asyncio.create_task(self._clock_loop())

    async def stop(self) -> None:
        """Stop the clock and every tab's sending (no send is waited for), then close the replay."""
        if self._clock is not None:
            self._clock.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._clock
        for tab in list(self.tabs.values()):
            self._forget(tab)  # its sender ends
        async with self.lock:
            await self._run(self.game.close)
        self._tell_record_notes()
        self.executor.shutdown(wait=True)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the table's own thread (the engine and the bots never block the event loop)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def _render(self) -> None:
        self._view = self.game.public_view()
        g = self.game
        self._svg = table_svg(g.env.snapshot(), seat_names=g.names, highlight={"seats": banners(g)},
                              interactive=True)

    @property
    def player(self) -> WebSocket | None:
        """The tab that plays the seat: the oldest one open (the others watch)."""
        return next(iter(self.tabs), None)

    # ------------------------------------------------------------------ ticks
    async def _clock_loop(self) -> None:
        loop = asyncio.get_running_loop()
        period = self.tick_ms / 1000.0
        due = loop.time() + period
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            due += period
            if due < loop.time():  # a slow tick (a searching bot): start counting again from now
                due = loop.time() + period
            async with self.lock:  # a tick never runs inside a move's check or a new deal
                if not (self.paused or self.game.done or self.failure) and self.player is not None:
                    action, self.pending = self.pending, None
                    await self._tick_locked(action)

    async def _tick_locked(self, action: int | None) -> None:
        """Play one tick (the caller holds ``self.lock``) and tell every tab (queued: nothing waits for a tab)."""
        try:
            result = await self._run(self.game.tick, action)
            await self._run(self._render)
        except Exception as e:  # a bot or the engine failed: the table stops, the server and the replay stay
            self._stop_table(e)
            return
        self.broadcast(self._state(result))
        self._tell_record_notes()
        if result.done:
            path = self.game.replay_file
            self.log(f"game over at tick {result.tick}; replay saved to {path}")
            if path:
                self.broadcast({"type": "info", "message": f"game over; the replay is saved in {path}"})

    def _stop_table(self, e: BaseException) -> None:
        self.failure = f"the table stopped: {type(e).__name__}: {e}"
        self.log(self.failure)
        self.broadcast({"type": "error", "message": self.failure, "fatal": True})

    def _tell_record_notes(self) -> None:
        """Recording problems (a replay that cannot be written): the log and every tab hear of each once."""
        notes = self.game.record_notes
        while notes:
            note = notes.pop(0)
            self.log(note)
            self.broadcast({"type": "error", "message": note, "recording": True})

    def _state(self, result: Any = None) -> dict[str, Any]:
        return {
            "type": "state",
            "view": self._view,
            "svg": self._svg,
            "moves": [asdict(m) for m in result.moves] if result is not None else None,
            "events": list(result.events) if result is not None else [],
            "pending": self._pending_move(),
            "paused": self.paused,
            "replay": self.game.replay_file,
            "recording": self.game.record_error,
            "failure": self.failure,
        }

    def _pending_move(self) -> dict[str, Any] | None:
        a = self.pending
        return None if a is None else {"action": a, "words": self.game.table.describe(a)}

    # ------------------------------------------------------------------ sending (never awaited by the table)
    def send(self, ws: WebSocket, message: dict[str, Any]) -> None:
        """Queue ``message`` for ``ws``. A ``state`` not sent yet is replaced by the newer one (keeping its
        events); a tab with more than :data:`MAX_QUEUE` messages waiting is dropped."""
        tab = self.tabs.get(ws)
        if tab is None or tab.gone:
            return
        q = tab.queue
        if message.get("type") == "state":
            for k, old in enumerate(q):
                if old.get("type") == "state":
                    del q[k]
                    message = {**message, "events": [*old.get("events", []), *message.get("events", [])]}
                    break
        q.append(message)
        if len(q) > MAX_QUEUE:  # it does not take what it is sent: forget it (its connection ends at a ping)
            who = "playing" if ws is self.player else "watching"
            self.log(f"dropped a {who} tab that does not read ({len(q)} messages wait); the table goes on")
            self.disconnect(ws)
            return
        tab.sent.clear()
        tab.wake.set()

    async def _send_loop(self, tab: _Tab) -> None:
        """Send ``tab``'s messages in order until it is gone. A peer that stops reading stalls only this loop:
        uvicorn's ping finds it and aborts its connection (:mod:`nertz_env.play.limits`)."""
        try:
            with contextlib.suppress(Exception):  # the connection is gone; the tab's receive loop hears of it too
                while not tab.gone:
                    if not tab.queue:
                        tab.sent.set()
                        tab.wake.clear()
                        await tab.wake.wait()
                        continue
                    await tab.ws.send_text(json.dumps(tab.queue.popleft()))
        finally:
            self._forget(tab)

    def broadcast(self, message: dict[str, Any]) -> None:
        player = self.player
        for ws in list(self.tabs):
            self.send(ws, {**message, "role": "player" if ws is player else "spectator"})

    @staticmethod
    def _forget(tab: _Tab) -> None:
        tab.gone = True
        tab.queue.clear()
        tab.wake.set()
        tab.sent.set()

    # ------------------------------------------------------------------ connections
    def _greet(self, ws: WebSocket, role: str, note: str) -> None:
        """The welcome, then the table as it stands."""
        g = self.game
        mode = "step" if self.step else "realtime"
        self.send(ws, {"type": "welcome", "role": role, "message": note, "seat": g.seat, "names": g.names,
                       "mode": mode, "tick_ms": self.tick_ms, "replay": g.replay_file})
        self.send(ws, {**self._state(g.last), "role": role})

    def disconnect(self, ws: WebSocket) -> None:
        """``ws`` is gone: forget it; if it played the seat, the oldest watching tab plays on."""
        was_player = ws is self.player
        tab = self.tabs.pop(ws, None)
        if tab is None:
            return
        self._forget(tab)
        if not was_player:
            return
        self.pending = None
        heir = self.player
        if heir is not None:  # the oldest watching tab (a reloaded page, say) plays on
            self.log(f"the player's tab closed at tick {self.game.env.tick}; another open tab plays the seat now")
            self._greet(heir, "player", f"the player's tab closed: this tab plays seat {self.game.seat} now")
            for spec in list(self.tabs)[1:]:
                self.send(spec, {"type": "info", "message": "the player's tab closed; another tab plays the seat now"})
            return
        path = self.game.replay_file
        self.log(
            f"the player's tab closed at tick {self.game.env.tick}; the game waits for a tab to come back"
            + (f" (replay so far: {path})" if path else "")
        )

    async def serve(self, ws: WebSocket) -> None:
        """The whole life of one tab's websocket; it ends with the tab's sender, so a closed tab leaves no task."""
        await ws.accept()
        tab = _Tab(ws)
        g = self.game
        async with self.lock:  # between ticks
            self.tabs[ws] = tab
            if ws is self.player:
                others = ", ".join(n for s, n in enumerate(g.names) if s != g.seat)
                role, note = "player", f"you play seat {g.seat} against {others}"
            else:
                role, note = "spectator", "this game is already played in another tab: this tab watches (moves from it are refused)"
            self._greet(ws, role, note)
        sender = asyncio.create_task(self._send_loop(tab))
        try:
            while True:
                await tab.sent.wait()  # one message at a time: a tab that does not read cannot pile up answers
                msg = await ws.receive()
                if msg["type"] == "websocket.disconnect" or tab.gone:
                    break
                await self.handle(ws, msg.get("text"))
        finally:
            self.disconnect(ws)  # forgets the tab: its sender ends
            await asyncio.wait([sender])

    # ------------------------------------------------------------------ messages
    async def handle(self, ws: WebSocket, text: str | None) -> None:
        """One message from a tab; anything refused (a :class:`MoveError`) gets an error message, never an
        exception."""
        handlers = {"move": self._move, "wait": self._move, "pause": self._pause, "new_game": self._new_game}
        try:
            if text is None:
                raise MoveError("malformed message: send JSON text, not binary data")
            if len(text) > MAX_MESSAGE:
                raise MoveError(f"malformed message: longer than {MAX_MESSAGE} characters")
            try:
                msg = json.loads(text)
            except (ValueError, RecursionError):
                example = '{"type": "move", "action": 1}'
                raise MoveError(f"malformed message: not JSON (send e.g. {example})") from None
            if not isinstance(msg, dict):
                raise MoveError("malformed message: send a JSON object such as {\"type\": \"wait\"}")
            kind = msg.get("type")
            if not isinstance(kind, str) or kind not in handlers:
                kinds = ", ".join(handlers)
                raise MoveError(f"malformed message: 'type' must be one of {kinds}, got {short(kind)}")
            if ws is not self.player:
                raise MoveError("this tab is a spectator: the seat is played in another tab")
            if self.failure is not None:
                raise MoveError(self.failure)
            await handlers[kind](ws, msg)
        except MoveError as e:
            self.send(ws, {"type": "error", "message": str(e)})

    async def _move(self, ws: WebSocket, msg: dict[str, Any]) -> None:
        """A move, or a wait (no move), for the next tick; step mode plays the tick at once."""
        g = self.game
        seat = msg.get("seat", g.seat)
        is_seat = isinstance(seat, int) and not isinstance(seat, bool)  # false and 0.0 are not seat 0
        if not is_seat or seat != g.seat:
            who = (
                f"seat {seat} is played by {g.names[seat]}"
                if is_seat and 0 <= seat < len(g.names)
                else f"there is no seat {short(seat)}"
            )
            raise MoveError(f"{who}; you play seat {g.seat}")
        async with self.lock:  # a move is checked against the table as it is between ticks
            if msg["type"] == "wait" and g.done:  # a move's check says so after its own
                raise MoveError("the game is over; start a new game to play again")
            action = g.check_action(msg.get("action")) if msg["type"] == "move" else None
            if self.step:
                await self._tick_locked(action)
                return
            old, self.pending = self.pending, action
        if action is None:
            text = "you wait this tick" + (f" (dropped: {g.table.describe(old)})" if old is not None else "")
        else:
            note = f" (instead of: {g.table.describe(old)})" if old is not None and old != action else ""
            text = f"next tick: {g.table.describe(action)}{note}"
        self.send(ws, {"type": "queued", "pending": self._pending_move(), "message": text})

    async def _pause(self, ws: WebSocket, msg: dict[str, Any]) -> None:
        if self.step:
            raise MoveError("step mode has no clock to pause: the table waits for your moves")
        async with self.lock:  # a tick in flight ends before the pause is told
            self.paused = not self.paused
        self.broadcast({"type": "info", "message": "paused" if self.paused else "the clock runs again",
                        "paused": self.paused})

    async def _new_game(self, ws: WebSocket, msg: dict[str, Any]) -> None:
        now = asyncio.get_running_loop().time()
        if now - self.dealt_at < self.new_game_interval:
            raise MoveError(f"a new game was dealt less than {self.new_game_interval:g} s ago: one at a time")
        self.dealt_at = now
        async with self.lock:
            old = self.game.replay_file
            self.pending = None
            try:
                await self._run(self.game.reset, (self.game.seed + 1) % 2**64)  # seeds end at 2**64 - 1
                await self._run(self._render)
            except Exception as e:  # the engine or a bot failed to deal: the table stops, the server stays
                self._stop_table(e)
                return
        if old and not os.path.exists(old):  # its folder was removed: the file went with it
            self.log(f"new game, seed {self.game.seed}; the last one's replay {old} is gone (removed from disk)")
        else:
            self.log(f"new game, seed {self.game.seed}" + (f"; the last one is saved in {old}" if old else ""))
        self.broadcast(self._state(None))
        self.broadcast({"type": "info", "message": f"new game (seed {self.game.seed})"})
        self._tell_record_notes()


# ---------------------------------------------------------------------------------------------------------- access
def token_cookie(token: str) -> str:
    """The cookie's name for ``token`` (two tables on one machine keep theirs apart: cookies ignore ports)."""
    return "nertz_play_" + hashlib.sha256(token.encode()).hexdigest()[:12]


class TokenCheck:
    """Every request needs ``token``, as ``?token=...`` or as the cookie the page's answer sets; others get 403.
    (Starlette checks sessions and users, not one shared secret.)"""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token, self.cookie = app, token.encode(), token_cookie(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            conn = HTTPConnection(scope)
            given = [*conn.query_params.getlist("token"), conn.cookies.get(self.cookie, "")]
            if not any(hmac.compare_digest(g.encode(), self.token) for g in given):
                text = "nertz-play: this table needs the token of the address nertz-play printed (http://HOST:PORT/?token=...)"
                await PlainTextResponse(text, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(server: TableServer, allowed_hosts: Sequence[str] | None = None, token: str | None = None) -> ASGIApp:
    """The ASGI app of one table. ``allowed_hosts``: the ``Host`` names served (others get 400, against DNS
    rebinding), None for any. ``token``: the secret every request needs (:class:`TokenCheck`), None for none.
    A websocket is accepted only from the table's own page. The headers of every answer: ``cli.server_config``."""

    async def page(request: Request) -> FileResponse:
        answer = FileResponse(os.path.join(STATIC_DIR, "index.html"))
        if token is not None and request.query_params.get("token") == token:  # the printed address: a cookie for the rest
            answer.set_cookie(token_cookie(token), token, httponly=True, samesite="strict")
        return answer

    async def websocket(ws: WebSocket) -> None:
        host = ws.headers.get("host", "")
        if ws.headers.get("origin", f"http://{host}") not in (f"http://{host}", f"https://{host}"):
            # a page of another site must not drive the table (cross-site websocket hijacking)
            await ws.close(code=1008, reason="nertz-play takes connections from its own page only")
            return
        await server.serve(ws)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await server.start()
        try:
            yield
        finally:
            await server.stop()

    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts, www_redirect=False)]
    if token is not None:
        middleware.append(Middleware(TokenCheck, token=token))
    return Starlette(
        routes=[
            Route("/", page),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
            WebSocketRoute("/ws", websocket),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
