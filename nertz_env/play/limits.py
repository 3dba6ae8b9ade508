"""What ``nertz-play`` adds to uvicorn's protocols, where uvicorn's options stop short.

The rest is uvicorn's own settings (:func:`nertz_env.play.cli.server_config`); the promises are listed in
"What the server promises", docs/guides/replays.md.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol, bounded before a request head comes.

    uvicorn starts ``timeout_keep_alive`` only after a response (Kludex/uvicorn#1192) and answers
    ``limit_concurrency`` only to a request head, so sockets that send nothing would hold every file. Here a
    connection must send its head within ``timeout_keep_alive`` seconds of opening or of its last response, and
    a new one that reaches ``limit_concurrency`` connections closes the oldest that waits for a head."""

    _told: ClassVar[weakref.WeakSet[ServerState]] = weakref.WeakSet()  # servers whose log said so once

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_due = self.loop.call_later(self.timeout_keep_alive, self._head_late)
        if self.limit_concurrency is None or len(self.connections) < self.limit_concurrency:
            return  # uvicorn answers 503 to a head at the limit: the new connection must come in below it
        idle = [c for c in self.connections if isinstance(c, BoundedH11) and c is not self and c.waits_for_head()]
        if idle:
            oldest = min(idle, key=lambda c: c.head_due.when())
            oldest.transport.close()
            self.connections.discard(oldest)  # it ends on the loop's next turn: the next connection counts it gone
            if self.server_state not in self._told:
                self._told.add(self.server_state)
                self.logger.warning("nertz-play: %d connections open: closing the oldest that sent no request "
                                    "(said once)", self.limit_concurrency)

    def waits_for_head(self) -> bool:
        """Whether this connection is open and waits for a request head."""
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _head_late(self) -> None:
        if self.waits_for_head():
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.head_due.cancel()
        self.head_due = self.loop.call_later(self.timeout_keep_alive, self._head_late)


class BoundedWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol, bounded for a peer that reads nothing.

    uvicorn writes a pong for every ping, and closes a connection whose peer answers no ping within
    ``ws_ping_timeout``; a close waits for the peer to read what is buffered, so a peer that reads nothing would
    keep its connection and grow its buffer for ever. Here its pings get no pong while writing is paused, and a
    missed pong, or a server that stops while the peer's data is unread, aborts the connection."""

    def handle_ping(self) -> None:
        if self.writable.is_set():
            super().handle_ping()
        else:
            self.conn.data_to_send()  # the pong is dropped: the peer reads nothing anyway

    def keepalive_timeout(self) -> None:
        self.logger.warning("nertz-play: a tab answered no ping within %g s (it reads nothing): its connection is "
                            "aborted", self.ping_timeout)
        self.transport.abort()

    def shutdown(self) -> None:
        if self.transport.get_write_buffer_size():
            self.transport.abort()  # a peer that has not read what it was sent would not read a close either
        else:
            super().shutdown()
