"""The web side of ``nertz-play``: a Starlette app serving one table to a browser over a websocket.

Routes: ``/`` the page, ``/static/*`` its script and style, ``/ws`` the websocket.

Protocol (JSON text messages). The page sends::

    {"type": "move", "action": 17, "seat": 0, "tick": 12}   # seat and tick optional; action from "legal"
    {"type": "wait"}        # step mode: play a wait tick; real time: drop the queued move
    {"type": "pause"}       # real time: stop or restart the clock
    {"type": "new_game"}    # deal the next game (seed + 1), a new replay file

The server sends ``{"type": "welcome", "role": "player"|"spectator", ...}`` once, ``{"type": "state", ...}``
after every tick (the drawing as SVG, the public view with the person's legal moves, what every seat did,
the events such as lost races), ``{"type": "info", "message": ...}`` (a move queued, a game saved) and
``{"type": "error", "message": ...}`` for anything refused: a malformed message, a move for another seat, an
action out of range or not legal now, a move from a spectator tab. An error never ends the connection.

Modes: real time (a clock ticks every ``tick_ms`` while the player's tab is open and the game is not paused;
the bots act every tick; the person's move waits for the next tick, a later move replaces it) and step
(every move or wait of the person plays one tick at once). The first tab to connect plays the seat; later
tabs watch (their moves are refused with a message). When the player's tab closes, the oldest watching tab
plays the seat from then on (a reloaded page is such a tab); with no tab left the clock stops and the game
waits for a tab to come back. The replay on disk has every tick played so far, whatever the tabs do.

Only pages of this server may connect (the websocket's ``Origin`` must be the server's own address), and with
``allowed_hosts`` only requests naming one of those hosts are served (no DNS-rebinding page can reach a
table on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from nertz_env.play.game import MoveError, PlayGame

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
MAX_MESSAGE = 4096
MESSAGE_TYPES = ("move", "wait", "pause", "new_game")

Drawer = Callable[[PlayGame], str | None]


class Hub:
    """One table and the tabs connected to it."""

    def __init__(
        self,
        game: PlayGame,
        step: bool = False,
        tick_ms: int = 1000,
        drawer: Drawer | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {tick_ms}")
        self.game = game
        self.step = step
        self.tick_ms = tick_ms
        self.drawer = drawer
        self.log = log or (lambda text: print(f"nertz-play: {text}", file=sys.stderr, flush=True))
        self.player: WebSocket | None = None
        self.spectators: list[WebSocket] = []
        self.pending: int | None = None
        self.paused = False
        self.started = False  # the clock starts when the player's tab first connects
        self.failure: str | None = None
        self.lock = asyncio.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nertz-play-table")
        self._clock: asyncio.Task[None] | None = None
        self._view: dict[str, Any] = {}
        self._svg: str | None = None
        self.ticks_played = 0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await self._run(self._render)
        if not self.step:
            self._clock = asyncio.create_task(self._clock_loop())

    async def stop(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._clock
        async with self.lock:
            await self._run(self.game.close)
        self.executor.shutdown(wait=True)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the table's own thread (the engine and the bots never block the event loop)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def _render(self) -> None:
        self._view = self.game.public_view()
        self._svg = self.drawer(self.game) if self.drawer is not None else None

    def _tick_and_render(self, action: int | None) -> Any:
        result = self.game.tick(action)
        self._render()
        return result

    # ------------------------------------------------------------------ ticks
    @property
    def clock_running(self) -> bool:
        return (
            not self.step
            and self.started
            and self.player is not None
            and not self.paused
            and not self.game.done
            and self.failure is None
        )

    async def _clock_loop(self) -> None:
        loop = asyncio.get_running_loop()
        period = self.tick_ms / 1000.0
        due = loop.time() + period
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            due += period
            if due < loop.time():  # a slow tick (a searching bot): start counting again from now
                due = loop.time() + period
            if self.clock_running:
                async with self.lock:
                    if self.clock_running:
                        action, self.pending = self.pending, None
                        await self._tick_locked(action)

    async def _tick_locked(self, action: int | None) -> None:
        """Play one tick (the caller holds ``self.lock``) and tell every tab."""
        try:
            result = await self._run(self._tick_and_render, action)
        except Exception as e:  # a bot or the engine failed: the table stops, the server and the replay stay
            self.failure = f"the table stopped: {type(e).__name__}: {e}"
            self.log(self.failure)
            await self.broadcast({"type": "error", "message": self.failure, "fatal": True})
            return
        self.ticks_played += 1
        await self.broadcast(self._state(result))
        if result.done:
            path = self.replay_path()
            self.log(f"game over at tick {result.tick}; replay saved to {path}")
            if path:
                await self.broadcast({"type": "info", "message": f"game over; the replay is saved in {path}"})

    def replay_path(self) -> str | None:
        return getattr(self.game, "replay_file", None)

    def _state(self, result: Any = None) -> dict[str, Any]:
        return {
            "type": "state",
            "view": self._view,
            "svg": self._svg,
            "moves": [m.to_dict() for m in result.moves] if result is not None else None,
            "events": list(result.events) if result is not None else [],
            "round_end": result.round_end if result is not None else None,
            "pending": self._pending_move(),
            "mode": "step" if self.step else "realtime",
            "tick_ms": self.tick_ms,
            "paused": self.paused,
            "replay": self.replay_path(),
            "failure": self.failure,
        }

    def _pending_move(self) -> dict[str, Any] | None:
        if self.pending is None:
            return None
        return {"action": self.pending, "words": self.game.table.describe(self.pending)}

    # ------------------------------------------------------------------ sending
    async def send(self, ws: WebSocket, message: dict[str, Any]) -> bool:
        if ws.application_state != WebSocketState.CONNECTED:
            return False
        try:
            await ws.send_text(json.dumps(message))
        except Exception:  # the tab went away mid-send; its receive loop cleans up
            return False
        return True

    async def broadcast(self, message: dict[str, Any]) -> None:
        for ws in [self.player, *self.spectators]:
            if ws is not None:
                await self.send(ws, {**message, "role": self.role(ws)})

    def role(self, ws: WebSocket) -> str:
        return "player" if ws is self.player else "spectator"

    async def error(self, ws: WebSocket, message: str) -> None:
        await self.send(ws, {"type": "error", "message": message})

    async def info(self, ws: WebSocket, message: str) -> None:
        await self.send(ws, {"type": "info", "message": message})

    # ------------------------------------------------------------------ connections
    def _welcome(self, role: str, note: str) -> dict[str, Any]:
        g = self.game
        return {
            "type": "welcome",
            "role": role,
            "message": note,
            "seat": g.seat,
            "names": g.names,
            "mode": "step" if self.step else "realtime",
            "tick_ms": self.tick_ms,
            "replay": self.replay_path(),
            "num_actions": g.table.n,
        }

    async def connect(self, ws: WebSocket) -> None:
        await ws.accept()
        g = self.game
        async with self.lock:  # between ticks: the welcome comes first, then the table as it stands
            if self.player is None:
                self.player = ws
                self.started = True
                others = ", ".join(n for s, n in enumerate(g.names) if s != g.seat)
                role, note = "player", f"you play seat {g.seat} against {others}"
            else:
                self.spectators.append(ws)
                role, note = "spectator", "this game is already played in another tab: this tab watches (moves from it are refused)"
            await self.send(ws, self._welcome(role, note))
            await self.send(ws, {**self._state(g.last), "role": role})

    async def disconnect(self, ws: WebSocket) -> None:
        if ws in self.spectators:
            self.spectators.remove(ws)
            return
        if ws is not self.player:
            return
        self.player = None
        self.pending = None
        if self.spectators:  # the oldest watching tab (a reloaded page, say) plays on
            heir = self.spectators.pop(0)
            self.player = heir
            self.log(f"the player's tab closed at tick {self.game.tick_count}; another open tab plays the seat now")
            await self.send(heir, self._welcome("player", f"the player's tab closed: this tab plays seat {self.game.seat} now"))
            await self.send(heir, {**self._state(self.game.last), "role": "player"})
            for spec in self.spectators:
                await self.info(spec, "the player's tab closed; another tab plays the seat now")
            return
        path = self.replay_path()
        self.log(
            f"the player's tab closed at tick {self.game.tick_count}; the game waits for a tab to come back"
            + (f" (replay so far: {path})" if path else "")
        )

    async def serve(self, ws: WebSocket) -> None:
        """The whole life of one tab's websocket."""
        origin = ws.headers.get("origin")
        host = ws.headers.get("host")
        if origin is not None and host is not None and origin not in (f"http://{host}", f"https://{host}"):
            # a page from another site must not drive the table (cross-site websocket hijacking)
            await ws.close(code=1008, reason="nertz-play takes connections from its own page only")
            return
        await self.connect(ws)
        try:
            while True:
                msg = await ws.receive()
                if msg["type"] == "websocket.disconnect":
                    break
                await self.handle(ws, msg.get("text"), msg.get("bytes"))
        except WebSocketDisconnect:
            pass
        finally:
            # the handover to another tab must finish even when the server cancels this connection's task
            await asyncio.shield(self.disconnect(ws))

    # ------------------------------------------------------------------ messages
    async def handle(self, ws: WebSocket, text: str | None, data: bytes | None = None) -> None:
        """One message from a tab; anything refused gets an error message, never an exception."""
        if text is None:
            await self.error(ws, "malformed message: send JSON text, not binary data")
            return
        if len(text) > MAX_MESSAGE:
            await self.error(ws, f"malformed message: longer than {MAX_MESSAGE} characters")
            return
        try:
            msg = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            await self.error(ws, "malformed message: not JSON (send e.g. {\"type\": \"move\", \"action\": 1})")
            return
        if not isinstance(msg, dict):
            await self.error(ws, "malformed message: send a JSON object such as {\"type\": \"wait\"}")
            return
        kind = msg.get("type")
        if kind not in MESSAGE_TYPES:
            await self.error(ws, f"malformed message: 'type' must be one of {', '.join(MESSAGE_TYPES)}, got {kind!r}")
            return
        if ws is not self.player:
            await self.error(ws, "this tab is a spectator: the seat is played in another tab")
            return
        if self.failure is not None:
            await self.error(ws, self.failure)
            return
        if kind == "move":
            await self._move(ws, msg)
        elif kind == "wait":
            await self._wait(ws)
        elif kind == "pause":
            await self._pause(ws)
        else:
            await self._new_game(ws)

    async def _move(self, ws: WebSocket, msg: dict[str, Any]) -> None:
        g = self.game
        if "action" not in msg:
            await self.error(ws, "malformed message: a move needs 'action', an action index from the legal moves")
            return
        seat = msg.get("seat", g.seat)
        if seat != g.seat:
            who = (
                f"seat {seat} is played by {g.names[seat]}"
                if isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < len(g.names)
                else f"there is no seat {seat!r}"
            )
            await self.error(ws, f"{who}; you play seat {g.seat}")
            return
        async with self.lock:  # a move is checked against the table as it is between ticks
            try:
                action = g.check_action(msg["action"])
            except MoveError as e:
                await self.error(ws, str(e))
                return
            if self.step:
                await self._tick_locked(action)
                return
            replaced = self.pending
            self.pending = action
        words = g.table.describe(action)
        note = f" (instead of: {g.table.describe(replaced)})" if replaced is not None and replaced != action else ""
        await self.send(ws, {"type": "queued", "pending": self._pending_move(), "message": f"next tick: {words}{note}"})

    async def _wait(self, ws: WebSocket) -> None:
        async with self.lock:
            if self.game.done:
                await self.error(ws, "the game is over; start a new game to play again")
                return
            if self.step:
                await self._tick_locked(None)
                return
            dropped, self.pending = self.pending, None
        text = "you wait this tick" + (f" (dropped: {self.game.table.describe(dropped)})" if dropped is not None else "")
        await self.send(ws, {"type": "queued", "pending": None, "message": text})

    async def _pause(self, ws: WebSocket) -> None:
        if self.step:
            await self.error(ws, "step mode has no clock to pause: the table waits for your moves")
            return
        async with self.lock:  # a tick in flight ends before the pause is told
            self.paused = not self.paused
        await self.broadcast({"type": "info", "message": "paused" if self.paused else "the clock runs again",
                              "paused": self.paused})

    async def _new_game(self, ws: WebSocket) -> None:
        async with self.lock:
            old = self.replay_path()
            self.pending = None
            await self._run(self.game.reset, self.game.seed + 1)
            await self._run(self._render)
        self.log(f"new game, seed {self.game.seed}" + (f"; the last one is saved in {old}" if old else ""))
        await self.broadcast(self._state(None))
        await self.broadcast({"type": "info", "message": f"new game (seed {self.game.seed})"})


def create_app(hub: Hub, allowed_hosts: Sequence[str] | None = None) -> Starlette:
    """The Starlette app of one table; ``allowed_hosts`` (e.g. ``["127.0.0.1", "localhost"]``) refuses any
    request whose ``Host`` names another host (``None``: no check)."""

    async def page(request: Request) -> FileResponse:
        return FileResponse(os.path.join(STATIC_DIR, "index.html"), headers={"Cache-Control": "no-store"})

    async def websocket(ws: WebSocket) -> None:
        await hub.serve(ws)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    app = Starlette(
        routes=[
            Route("/", page),
            Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
            WebSocketRoute("/ws", websocket),
        ],
        lifespan=lifespan,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))] if allowed_hosts else None,
    )
    app.state.hub = hub
    return app
