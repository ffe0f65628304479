"""Downstream sessions: one per connected client (HTTP session, stdio, or plain route).

A session knows who the client is (clientInfo, agent id, process name), what
it negotiated (protocol version, capabilities), which server it is bound to
(None for the aggregated `/mcp`), and how to reach it outside a request
(`send`: the GET stream of streamable HTTP, or stdout).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcpwall.protocol import Message, RequestId

log = logging.getLogger("mcpwall.session")

Send = Callable[[Message], Awaitable[None]]
#: messages buffered for a session whose outbound channel is not open
MAX_BUFFERED = 200


#: The client capabilities the gateway acts on, and the flags of each it reads (MCP 2025-11-25):
#: whether to send a session roots/list, sampling/createMessage or elicitation/create.
KEPT_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "roots": ("listChanged",),
    "sampling": ("context", "tools"),
    "elicitation": ("form", "url"),
}


def keep_capabilities(caps: Any) -> dict[str, Any]:
    """What a session keeps of an initialize's `capabilities`: the keys in KEPT_CAPABILITIES and,
    of each, its known flags as `true` or `{}`. A client's object is otherwise kept as long as its
    session (an hour idle), whatever its size (issue 22: 3 MB an initialize)."""
    if not isinstance(caps, dict):
        return {}
    kept: dict[str, Any] = {}
    for key, flags in KEPT_CAPABILITIES.items():
        value = caps.get(key)
        if value is None or value is False:
            continue
        given = value if isinstance(value, dict) else {}
        kept[key] = {f: (True if given[f] is True else {}) for f in flags
                     if given.get(f) is not None and given.get(f) is not False}
    return kept


class Inflight:
    """A client request currently being served (one a call: its `__init__` written out, see `Session`)."""

    server: str | None
    upstream_id: RequestId | None
    task: asyncio.Task[Any] | None
    #: its RequestContext, for what joins the call's ledger row later (the input rounds, _mrtr)
    ctx: Any

    def __init__(self, server: str | None, upstream_id: RequestId | None = None, task: asyncio.Task[Any] | None = None,
                 ctx: Any = None) -> None:
        self.server = server
        self.upstream_id = upstream_id
        self.task = task
        self.ctx = ctx

    def __repr__(self) -> str:
        return f"Inflight(server={self.server!r}, upstream_id={self.upstream_id!r}, task={self.task!r})"


@dataclass
class ServerRequest:
    """A server-to-client request we forwarded to this session."""

    server: str
    upstream_id: RequestId
    method: str


@dataclass
class Session:
    """One downstream client's session. Compiled (`_native.MODULES`): every stage reads it on every call,
    and a compiled stage reads a compiled class's field at a fixed offset where a Python object's is a
    generic attribute lookup. So a field's declared type is checked when it is set, from Python too, and
    no attribute it does not declare can be set on it."""

    kind: str  # "http", "stdio", "plain", "frame"
    server: str | None = None
    id: str = field(default_factory=lambda: secrets.token_hex(16))
    client_name: str = ""
    client_version: str = ""
    agent: str = ""
    #: who the gateway authenticated: a named token's identity, "" for the gateway token (or no
    #: auth), the launcher's --agent on stdio. Unlike `agent` (X-Agent-Id) and `client_name`
    #: (clientInfo, X-Mcpwall-Client), never chosen by the client; the rate limit counts by it.
    principal: str = ""
    process_name: str = ""
    peer: str = ""
    protocol_version: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    send: Send | None = None
    inflight: dict[RequestId, Inflight] = field(default_factory=dict)
    server_requests: dict[RequestId, ServerRequest] = field(default_factory=dict)
    subscriptions: set[str] = field(default_factory=set)
    log_level: str | None = None
    created: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.monotonic)
    closed: bool = False
    #: sees every message pushed to the client (the gateway's taps)
    observer: Callable[[Session, str, Message], None] | None = None
    #: the name of its history in the chain stage once it was asked for (`stages.chain.session_flow`):
    #: a 2026-07-28 client's is built from its principal and agent, which never change
    flow: str = ""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _buffer: deque[Message] = field(default_factory=lambda: deque(maxlen=MAX_BUFFERED))

    @property
    def aggregated(self) -> bool:
        return self.server is None

    def next_id(self) -> str:
        """Ids for requests the gateway sends this client; never clash with the client's own."""
        return f"mcpwall-{next(self._ids)}"

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities

    async def push(self, message: Message) -> bool:
        """Deliver a message outside any request; buffer it if no channel is open."""
        if self.closed:
            return False
        if self.observer is not None:
            self.observer(self, "out", message)
        if self.send is None:
            self._buffer.append(message)
            return False
        try:
            await self.send(message)
            return True
        except Exception as exc:
            log.info("session %s: outbound channel failed: %s", self.id[:8], exc)
            self.send = None
            self._buffer.append(message)
            return False

    def drain_buffer(self) -> list[Message]:
        items = list(self._buffer)
        self._buffer.clear()
        return items

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "server": self.server, "client": self.client_name,
                "agent": self.agent, "process": self.process_name, "protocol_version": self.protocol_version,
                "inflight": len(self.inflight), "created": self.created}


__all__ = ["KEPT_CAPABILITIES", "Inflight", "ServerRequest", "Session", "keep_capabilities"]
