"""The framed relay: agents in sandboxes reach the gateway through one socket.

    mcpwall proxy --frame-listen unix:/run/mcpwall/agent.sock      # the gateway side
    mcpwall relay --connect unix:/run/mcpwall/agent.sock           # the agent's stdio MCP server

The wire format (docs/wire.md) is in `_frame` (sans-I/O, fuzzed), the
gateway's listener in `_listener` and the agent-side relay in `_client`.
`register()` adds the listener to gateways built with `extras["frame_listen"]`.
"""

from __future__ import annotations

from mcpwall.relay._address import Address, connect, listen, parse_address, peer_of
from mcpwall.relay._client import DRAIN_GRACE_S, Relay, RelayError, parent_process_name
from mcpwall.relay._connection import BODY_TIMEOUT_S, MAX_STREAMS, ConnectionStats, FrameConnection
from mcpwall.relay._frame import (
    CLIENT_MAX,
    CLOSE,
    END,
    ERROR,
    HEADER_SIZE,
    KNOWN_FLAGS,
    MAGIC,
    MAX_FRAME,
    MAX_MESSAGE,
    MAX_NAME,
    META_PREFIX,
    MORE,
    NOTIFY_STREAM,
    SERVER_BIT,
    VERSION,
    Frame,
    FrameDecoder,
    FrameError,
    MessageAssembler,
    encode,
    encode_message,
    meta_line,
    sanitize_name,
)
from mcpwall.relay._listener import (
    MAX_CONNECTIONS,
    FrameListener,
    FrameListenerService,
    frame_listener_service,
)


def register() -> None:
    """Add the framed listener to `mcpwall.proxy.SERVICES` (idempotent)."""
    from mcpwall.proxy import SERVICES

    if frame_listener_service not in SERVICES:
        SERVICES.append(frame_listener_service)


__all__ = [
    "BODY_TIMEOUT_S",
    "CLIENT_MAX",
    "CLOSE",
    "DRAIN_GRACE_S",
    "END",
    "ERROR",
    "HEADER_SIZE",
    "KNOWN_FLAGS",
    "MAGIC",
    "MAX_CONNECTIONS",
    "MAX_FRAME",
    "MAX_MESSAGE",
    "MAX_NAME",
    "MAX_STREAMS",
    "META_PREFIX",
    "MORE",
    "NOTIFY_STREAM",
    "SERVER_BIT",
    "VERSION",
    "Address",
    "ConnectionStats",
    "Frame",
    "FrameConnection",
    "FrameDecoder",
    "FrameError",
    "FrameListener",
    "FrameListenerService",
    "MessageAssembler",
    "Relay",
    "RelayError",
    "connect",
    "encode",
    "encode_message",
    "frame_listener_service",
    "listen",
    "meta_line",
    "parent_process_name",
    "parse_address",
    "peer_of",
    "register",
    "sanitize_name",
]
