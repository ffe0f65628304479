"""The framed frontend: `mcpwall proxy --frame-listen unix:PATH|tcp:HOST:PORT|vsock:CID:PORT`.

Each connection is one gateway session of kind "frame", aggregated (tools
named `server__tool`), attributed to the process the relay names in its
META line or frame headers. The rules a connection must keep (docs/wire.md):

- stream 0 carries notifications only, in both directions;
- a client request opens a fresh stream 1..2^31-1 with flags 0 and is
  answered on that stream by one frame with END; an open stream id may not
  be reused, and a JSON-RPC id may not be in flight on two streams;
- a request the gateway sends the client (sampling, elicitation, roots)
  opens a stream with the top bit set; the client answers there with END
  and the same id;
- frames over 1 MiB, a broken header, and a body that does not arrive
  within 30 s of its first byte close the connection (CLOSE frame first);
  other refusals are ERROR frames and the connection goes on.

This module accepts connections (`FrameListener`) and runs the listener with
the gateway (`FrameListenerService`); each connection is a `FrameConnection`
(`_connection.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.protocol import ErrorCode, error
from mcpwall.relay._address import Address, listen, parse_address
from mcpwall.relay._connection import BODY_TIMEOUT_S, MAX_STREAMS, ConnectionStats, FrameConnection
from mcpwall.relay._frame import CLOSE, NOTIFY_STREAM, encode

if TYPE_CHECKING:
    from mcpwall.proxy import Gateway

log = logging.getLogger("mcpwall.relay")

MAX_CONNECTIONS = 64


class FrameListener:
    """Accepts relay connections on one or more addresses for a gateway."""

    def __init__(self, gateway: Gateway, addresses: Sequence[Address], *, body_timeout: float = BODY_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, max_streams: int = MAX_STREAMS) -> None:
        self.gateway = gateway
        self.addresses = list(addresses)
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self.max_streams = max_streams
        self.stats = ConnectionStats()
        self.connections: set[FrameConnection] = set()
        self._servers: list[asyncio.Server] = []
        self._handlers: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        for address in self.addresses:
            self._servers.append(await listen(address, self._accept))
            log.info("framed relay listening on %s", address)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= self.max_connections:
            self.stats.refused += 1
            with contextlib.suppress(Exception):
                writer.write(encode(NOTIFY_STREAM, orjson.dumps(error(None, ErrorCode.INVALID_REQUEST,
                                                                      "too many relay connections")), CLOSE))
                writer.close()
            return
        conn = FrameConnection(self.gateway, reader, writer, body_timeout=self.body_timeout,
                               max_streams=self.max_streams, stats=self.stats)
        self.stats.connections += 1
        self.connections.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)
            if task is not None:
                self._handlers.discard(task)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.writer.close()
        handlers = [t for t in self._handlers if t is not asyncio.current_task()]
        if handlers:
            await asyncio.wait(handlers, timeout=5.0)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2.0)
        self._servers.clear()
        for address in self.addresses:
            if address.kind == "unix":
                with contextlib.suppress(OSError):
                    os.unlink(address.path)

    def status(self) -> dict[str, Any]:
        s = self.stats
        return {"listening": [str(a) for a in self.addresses], "open": len(self.connections),
                "connections": s.connections, "frames_in": s.frames_in, "frames_out": s.frames_out,
                "refused": s.refused, "closed_on_error": s.closed_on_error}


class FrameListenerService:
    """Runs a FrameListener with the gateway (a service): opened at start, closed at stop."""

    name = "frame_listener"

    def __init__(self, gateway: Gateway, addresses: Sequence[Address], **options: Any) -> None:
        self.listener = FrameListener(gateway, list(addresses), **options)

    async def start(self) -> None:
        await self.listener.start()

    async def stop(self) -> None:
        await self.listener.stop()

    def status(self) -> dict[str, Any]:
        return self.listener.status()


def frame_listener_service(settings: Any, gateway: Gateway) -> FrameListenerService | None:
    """A `mcpwall.proxy.SERVICES` entry: the listener when `extras["frame_listen"]` names addresses."""
    extras = getattr(settings, "extras", None) or {}
    addresses = [parse_address(a) for a in extras.get("frame_listen") or []]
    if not addresses:
        return None
    options = {k: extras[k] for k in ("body_timeout", "max_connections", "max_streams") if k in extras}
    return FrameListenerService(gateway, addresses, **options)


__all__ = ["MAX_CONNECTIONS", "FrameListener", "FrameListenerService", "frame_listener_service"]
