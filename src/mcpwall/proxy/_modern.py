"""Streamable HTTP of the 2026-07-28 revision on `/mcp`, `/mcp/{server}` and `POST /{server}`.

A modern POST is one exchange: no `initialize`, no `Mcp-Session-Id` (one sent is
ignored and none is minted), the request's `_meta` says who speaks. Its headers
mirror its body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and the
`Mcp-Param-*` a tool's `inputSchema` designates with `x-mcp-header`) so that
what stands in front of the gateway can route on them; `_mcp_headers.mismatch` checks them
against the body before anything else runs, so no stage decides on one value
while the server acts on another. A disagreement is HeaderMismatch (-32020,
HTTP 400), and a tools/call refused so gets its ledger row like any refusal at
the door. On a legacy request the headers are checked when sent (a legacy
client sends none).

Who a modern request is: the principal its token authenticated, as for any
request, and the agent it names (X-Agent-Id, overridden by a named token). Its
session (`ModernSessions`) is the one of that endpoint, principal and agent,
kept between requests so that what the stages remember per session (toxic
flows, attack chains, pins) holds for a client that never opens one; the
client's self-reported `clientInfo` updates the session's client name but does
not choose the session, so rotating it sheds nothing. Two clients of one
principal may use the same request id at once: the second is given a distinct
one inside the gateway and answered under its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode, Message, ProtocolError, request_id
from mcpwall.protocol.modern import (
    CHECKED,
    LATEST_MODERN,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META_KEY,
    checked_envelope,
    designates,
)
from mcpwall.protocol.mrtr import INPUT_REQUIRED_METHODS
from mcpwall.protocol.naming import split
from mcpwall.proxy._asgi import Receive, Scope, Send, peer, reply, reply_json
from mcpwall.proxy._bound import Plainly, Served
from mcpwall.proxy._listen import serve_stream
from mcpwall.proxy._mcp_headers import METHOD_HEADER, NAME_HEADER, VERSION_HEADER, mismatch, no_schema
from mcpwall.proxy._mrtr import Holds
from mcpwall.proxy._passed import Key, Passed, Signature
from mcpwall.proxy._routing import REMEMBERED
from mcpwall.proxy._sse import Call, answer_request

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

#: Past this many sessions remembered, the closed ones are forgotten (the live ones are capped
#: per principal by the frontend).
_PRUNE_AT = 1024
#: HTTP status of a modern request's error answer (the SDK's ERROR_CODE_HTTP_STATUS, and the
#: gateway's own: 401, 429); anything else is 200.
_STATUS: dict[int, int] = {
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.RATE_LIMITED: 429,
}


class ModernSessions:
    """The session of each (endpoint, principal, agent) that speaks the modern revision."""

    def __init__(self, gateway: Gateway, own: Callable[[Session], None]) -> None:
        self.gateway = gateway
        #: counts a new session against its principal's cap (`HttpFrontend._own`)
        self._own = own
        self._by_key: dict[tuple[str, str, str], Session] = {}
        self._dups = itertools.count(1)
        #: (endpoint, tool name) -> (its server's name, the tool's name there, the server, its catalog
        #: entry, the schema when it designates a header): what `_designated` found, good while the
        #: gateway holds that very server and its catalog that very entry
        self._designated_by: dict[tuple[str | None, str], tuple[str, str, Any, Any, Any]] = {}
        #: each client's last tools/call that passed the checks below (_passed.py)
        self._passed = Passed(gateway)
        # Read at a fixed offset on every modern call, not looked up: the gateway's held calls (its Python
        # attributes: two lookups), and the lists the door leaves for routing (module globals: a dict each).
        self._holds: Holds = gateway.traffic.mrtr
        self._checked: list[Any] = CHECKED
        self._remembered: list[Any] = REMEMBERED

    def _designated(self, server: str | None, name: str) -> Any:
        """`schema_lookup`'s schema of the tool a client of this endpoint calls `name`, when it
        designates a header (else None): remembered per catalog entry, since every modern tools/call
        asks and most tools designate none."""
        servers = self.gateway.servers
        hit = self._designated_by.get((server, name))
        if hit is not None and hit[2].catalog.tools.get(hit[1]) is hit[3] and servers.get(hit[0]) is hit[2]:
            return hit[4]
        at = _catalog_entry(self.gateway, server, name)
        if at is None:
            return None
        owner, tool, upstream, entry = at
        found = entry.get("inputSchema") if isinstance(entry, dict) else None
        schema = found if isinstance(found, dict) and designates(found) else None
        if entry is not None:
            if len(self._designated_by) >= 4096:
                self._designated_by.clear()
            self._designated_by[(server, name)] = (owner, tool, upstream, entry, schema)
        return schema

    def session(self, server: str | None, identity: str, headers: dict[str, str], scope: Scope) -> Session:
        """The session of this endpoint, principal and agent: the one it had, or a new one counted
        against the principal's cap (an evicted or expired one is replaced, its memory gone)."""
        agent = identity or headers.get("x-agent-id") or ""
        key = (server or "", identity, agent)
        found = self._by_key.get(key)
        if found is None or found.closed:
            if len(self._by_key) >= _PRUNE_AT:
                self._by_key = {k: s for k, s in self._by_key.items() if not s.closed}
            found = self.gateway.open_session(
                "http",
                server,
                peer=peer(scope),
                principal=identity,
                agent=agent,
                process_name=headers.get("x-mcpwall-process", ""),
                protocol_version=LATEST_MODERN,
            )
            self._own(found)
            self._by_key[key] = found
        found.last_seen = monotonic()
        return found

    def took(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        msg: Message,
        size: int,
        server: str | None,
        headers: dict[str, str],
        identity: str | None,
    ) -> Awaitable[None] | None:
        """What answers a POST of the modern revision: its envelope and headers checked first, then
        the request through the gateway in its principal's session, as JSON or an event stream. For a
        legacy request, the refusal when the MCP headers it sent disagree with its body, else None
        (the frontend answers it). (What to await, not a coroutine of its own: every modern call
        passes here, and each level of coroutines is paid again at every suspension of the call.)"""
        # `claims`, `is_modern` and `request_id` as one pass over the message: every modern call is
        # taken apart here, so each look is made once
        params: Any = msg.get("params")
        body: dict[str, Any] = params if type(params) is dict else _NONE  # (a dict's own `get`, in C)
        meta: Any = body.get("_meta")
        enveloped = type(meta) is dict and PROTOCOL_VERSION_META_KEY in meta
        if not enveloped and (msg.get("method") == "initialize" or headers.get(VERSION_HEADER) not in MODERN_VERSIONS):
            # a legacy request (a handshake client's `initialize`; one in the 2026-07-28 envelope is
            # refused as removed)
            why = mismatch(scope["headers"], headers, msg, modern=False, schema_of=no_schema)
            if why is None:
                return None
            text = f"Header mismatch: {why}"
            return self._refuse(scope, send, msg, server or server_of(msg),
                                ProtocolError(ErrorCode.HEADER_MISMATCH, text, request_id(msg)))
        if "method" not in msg or "id" not in msg:
            # 2026-07-28 defines no client-to-server notification over HTTP (closing a response
            # stream cancels its request), and a client sends no responses: accepted, unread.
            if "method" in msg:
                return reply(send, 202, b"")
            return self._refuse(scope, send, msg, server, ProtocolError(
                ErrorCode.INVALID_REQUEST, "a 2026-07-28 client sends requests only", request_id(msg)))
        if not enveloped:
            return self._refuse(scope, send, msg, server or server_of(msg), ProtocolError(
                ErrorCode.INVALID_PARAMS,
                f"params._meta is missing the required envelope key(s): {PROTOCOL_VERSION_META_KEY}",
                request_id(msg)))
        # A tools/call like the client's last one that passed is answered as that one was (_passed.py).
        name: Any = body.get("name")
        if msg["method"] == "tools/call" and type(name) is str and len(scope["headers"]) == len(headers):
            client: Key = (server, identity or "", headers.get("x-agent-id"))
            sig: Signature = (headers.get(VERSION_HEADER), headers.get(METHOD_HEADER), headers.get(NAME_HEADER), name)
            shape = self._passed.same(client, sig, meta)
            if shape is not None:
                checked = self._checked  # routing reads it again (`remember_envelope`, inline)
                checked[0], checked[1] = meta, shape.env
                session = shape.session
                session.last_seen = monotonic()
                if (rid := msg["id"]) in session.inflight:
                    return self._answer(receive, send, msg, size, session)
                # `_answer` of a tools/call whose id is free: straight to `Holds.serve`, or, for a first call of a
                # client that can be asked nothing, past it (its look made when the shape was kept), routed as
                # then and, when `classify` would pass it, without that look again
                remembered = self._remembered
                remembered[0], remembered[1], remembered[2] = msg, shape.owner, shape.tool
                run: Call = (Plainly(self._holds, session, msg, size, msg.get("jsonrpc") == "2.0" and (
                    type(rid) is str or type(rid) is int)) if not shape.askable
                             and body.get("requestState") is None and body.get("inputResponses") is None
                             else Served(self._holds, session, msg, size))
                return answer_request(receive, send, run, [], _status_of)
            key: Key | None = client
        else:
            key = None
        rid = msg["id"]  # (the remembered call needs none: read here, not before)
        if type(rid) is not str and type(rid) is not int:
            rid = request_id(msg)  # (a bool, a float, an object: no id an answer can carry)
        try:
            why = mismatch(scope["headers"], headers, msg, modern=True, schema_of=partial(self._designated, server))
            if why is not None:
                raise ProtocolError(ErrorCode.HEADER_MISMATCH, f"Header mismatch: {why}", rid)
            env = checked_envelope(rid, body)  # routing reads it again (`envelope_of`)
        except ProtocolError as exc:
            return self._refuse(scope, send, msg, server or server_of(msg), exc)
        session = self.session(server, identity or "", headers, scope)
        if key is not None:
            self._passed.remember(key, sig, meta, env, session, self._designated_by.get((server, name)))
        return self._answer(receive, send, msg, size, session)

    async def _refuse(self, scope: Scope, send: Send, msg: Message, server: str | None, exc: ProtocolError) -> None:
        """A request refused before any stage: its ledger row, and the error as HTTP 400."""
        await self.gateway.refused(msg, exc.code, exc.message, server=server, peer=peer(scope))
        await reply_json(send, 400, exc.to_message())

    def _answer(self, receive: Receive, send: Send, msg: Message, size: int, session: Session) -> Awaitable[None]:
        """The request through the gateway in `session`, answered as JSON or an event stream (what to
        await: no coroutine level of its own, which each suspension of the call would pay again)."""
        original = msg["id"]
        inner = msg
        if original in session.inflight:
            inner = {**msg, "id": f"{original}#{next(self._dups)}"}
        if inner["method"] in INPUT_REQUIRED_METHODS:  # a call that may take input rounds (_mrtr.py)
            run: Call = Served(self._holds, session, inner, size)
        else:
            run = partial(self.gateway.handle_request, session, inner, bytes_in=size)
        if inner is not msg:
            run = _answered_as(run, original)
        if msg["method"] == "subscriptions/listen":
            status: list[int] = []

            async def call(emit: Any) -> Message | None:
                answer = await run(emit)
                if answer is not None:
                    status.append(_status_of(answer))
                return answer

            async def send_status(event: dict[str, Any]) -> None:
                if event["type"] == "http.response.start" and status and event["status"] == 200:
                    event = {**event, "status": status[0]}
                await send(event)

            return serve_stream(receive, send_status, call, original)  # long-lived, with keep-alives
        return answer_request(receive, send, run, [], _status_of)


#: `params` of a request without any (a mapping to read, never written)
_NONE: dict[str, Any] = {}


def _status_of(answer: Message) -> int:
    """The HTTP status of a modern request's answer (`_STATUS`, else 200)."""
    err = answer.get("error")
    if err is None:  # (a result)
        return 200
    code = err.get("code") if isinstance(err, dict) else None
    return _STATUS.get(code, 200) if type(code) is int else 200


def _answered_as(run: Call, original: Any) -> Call:
    """`run`, whose request the gateway renamed (its id was in flight already), answered under the
    client's own id."""

    async def call(emit: Any) -> Message | None:
        answer = await run(emit)
        return {**answer, "id": original} if answer is not None else None

    return call



def server_of(msg: Message) -> str | None:
    """The server a call on the aggregated endpoint names (`server__tool`), for its ledger row."""
    params = msg.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    parts = split(name) if isinstance(name, str) else None
    return parts[0] if parts else None


def schema_lookup(gateway: Gateway, server: str | None) -> Callable[[str], Any]:
    """A tool's inputSchema by the name a client of this endpoint calls it (None when unknown)."""

    def schema_of(name: str) -> Any:
        at = _catalog_entry(gateway, server, name)
        entry = at[3] if at is not None else None
        return entry.get("inputSchema") if isinstance(entry, dict) else None

    return schema_of


def _catalog_entry(gateway: Gateway, server: str | None, name: str) -> tuple[str, str, Any, Any] | None:
    """(server's name, the tool's name there, the server, its catalog entry or None) of the tool a client
    of this endpoint calls `name`; None when no server is named so."""
    if server is not None:
        owner, tool = server, name
    else:
        parts = split(name)
        if parts is None:
            return None
        owner, tool = parts
    upstream = gateway.servers.get(owner)
    return (owner, tool, upstream, upstream.catalog.tools.get(tool)) if upstream is not None else None


__all__ = ["ModernSessions", "schema_lookup", "server_of"]
