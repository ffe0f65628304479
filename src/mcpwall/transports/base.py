"""The upstream transport seam: connect, send a message, get messages back.

A transport carries JSON-RPC messages (parsed dicts) to and from one upstream
MCP server. The proxy never sees pipes, HTTP or SSE. Unlike the SDK's
stream-pair transports we deliver inbound messages through a callback: the
relay is push-based, and a queue hop per message is measurable on the hot
path (bench/proxy_overhead.py).

`on_message(msg, related)` receives each inbound message; `related` is the id
of our request it arrived with when the transport knows it (a streamable-HTTP
POST's SSE stream), else None. `on_closed(exc)` fires once when the
connection is gone for good (process exit, stream end) with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mcpwall.errors import MCPWallError
from mcpwall.protocol import Message, RequestId

OnMessage = Callable[[Message, RequestId | None], None]
OnClosed = Callable[[BaseException | None], None]


class TransportError(MCPWallError):
    """The upstream connection failed or is gone."""


class TransportClosed(TransportError):
    """A send was attempted on a connection that has ended."""


class Transport(Protocol):
    """One connection to one upstream server."""

    #: e.g. "stdio: npx -y @modelcontextprotocol/server-memory", for logs and /servers.
    description: str

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        """Open the connection; returns once messages can be sent."""

    async def send(self, message: Message) -> None:
        """Send one message; raises TransportClosed when the connection is gone."""

    async def close(self) -> None:
        """Shut down in documented steps; idempotent."""


__all__ = ["OnClosed", "OnMessage", "Transport", "TransportClosed", "TransportError"]
