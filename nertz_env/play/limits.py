"""The bounds ``nertz-play`` puts on every connection before any request is read: uvicorn's protocols, subclassed.

See "What the server promises" in docs/guides/replays.md: sockets that send nothing cannot hold every file, and a
peer that pings and never reads cannot grow the server's write buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class _Waiting:
    """The connections of one server that may wait for a request head, oldest first (checked when taken)."""

    def __init__(self) -> None:
        self.conns: dict[BoundedH11, None] = {}
        self.said = False  # the log said it once


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with two bounds more: a request head within ``timeout_keep_alive`` seconds of the
    connection or the last response (uvicorn's timer stops at the first byte), and at ``limit_concurrency``
    connections a new one closes the oldest that sent no request head (uvicorn answers 503 only to a head)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        waiting = getattr(self.server_state, "nertz_waiting", None)
        if waiting is None:
            waiting = self.server_state.nertz_waiting = _Waiting()  # type: ignore[attr-defined]
        self.waiting: _Waiting = waiting
        self._wait_for_head()
        limit = self.limit_concurrency
        while limit is not None and len(self.connections) >= limit and waiting.conns:
            oldest = next(iter(waiting.conns))
            del waiting.conns[oldest]
            if not oldest.waiting_for_head():  # busy since, or gone: not a candidate
                continue
            if not waiting.said:
                waiting.said = True
                self.logger.warning(
                    "nertz-play: %d connections open: closing the oldest that sent no request (said once)", limit)
            oldest.transport.close()
            self.connections.discard(oldest)  # closing ends it on the next loop turn: count it gone now

    def waiting_for_head(self) -> bool:
        """Whether this connection is open, still HTTP (no websocket yet) and waits for a request head."""
        return self in self.connections and self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _wait_for_head(self) -> None:
        self.waiting.conns[self] = None
        self.head_timer = self.loop.call_later(self.timeout_keep_alive, self._head_late)

    def _head_late(self) -> None:
        if self.waiting_for_head():
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self.head_timer.cancel()
            self.waiting.conns.pop(self, None)  # to the end: the newest waiting
            self._wait_for_head()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self.head_timer.cancel()
        self.waiting.conns.pop(self, None)  # a websocket now: its protocol is another
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self.head_timer.cancel()
        self.waiting.conns.pop(self, None)
        super().connection_lost(exc)


class BoundedWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol with a bound on what a peer may leave unread: while the peer does not read (the
    transport's buffer over its high-water mark) a ping gets no pong, and after ``ws_ping_timeout`` seconds so
    the connection is aborted, and at once when the server stops."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stuck_timer: asyncio.TimerHandle | None = None

    def handle_ping(self) -> None:
        if self.writable.is_set():
            super().handle_ping()
        else:
            self.conn.data_to_send()  # the pong is dropped: the peer reads nothing anyway

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stuck_timer is None:
            self.stuck_timer = self.loop.call_later(self.ping_timeout or 0.0, self._give_up)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.stuck_timer is not None:
            self.stuck_timer.cancel()
            self.stuck_timer = None

    def shutdown(self) -> None:
        if self.writable.is_set():
            super().shutdown()
        else:  # the server stops: a peer that reads nothing would not read a close either
            self.transport.abort()

    def _give_up(self) -> None:
        self.stuck_timer = None
        if not self.disconnected:
            self.logger.warning("nertz-play: a tab read nothing for %g s: dropped", self.ping_timeout or 0.0)
            self.transport.abort()
