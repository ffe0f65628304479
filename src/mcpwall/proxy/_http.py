"""The HTTP frontends: streamable HTTP (`/mcp`, `/mcp/{server}`), seatbelt's
plain JSON-RPC route (`POST /{server}`), and the status routes.

This is a raw ASGI app rather than Starlette routes: the relay path is the
product's hot path, and the framework's per-request objects cost about as
much as the whole relay (bench/proxy_overhead.py). The dashboard and other
non-hot routes (`/ui`, `/api/`) are a Starlette app, `Gateway.ui_app` (the dashboard service).

Every request passes the door (`_door`) first. Then, in order: the routes open without a token
(`/health`, OAuth resource metadata), the apps that check their own credentials (admin API,
dashboard), the token (static, or an identity provider's: `mcpwall.oauth`), and the route table
(`_routes`), which says which routes an agent's named token may call. Event streams are in
`_sse`, the status routes in `_status`, the ASGI plumbing (answers, bounded reads) in `_asgi`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson

from mcpwall.pipeline import Session
from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    SUPPORTED_VERSIONS,
    TOO_LARGE,
    ErrorCode,
    ProtocolError,
    error,
    parse,
    request_id,
)
from mcpwall.proxy._asgi import (
    CLOSE,
    App,
    BodyTooLarge,
    Receive,
    Scope,
    Send,
    answer,
    peer,
    read_body,
    reply,
    reply_json,
)
from mcpwall.proxy._door import Door, header_map
from mcpwall.proxy._gateway import Gateway
from mcpwall.proxy._modern import ModernSessions
from mcpwall.proxy._routes import ANY, Mount, Route, Routes, not_found, opens_in_browser, to_dashboard
from mcpwall.proxy._sse import answer_request, get_stream
from mcpwall.proxy._status import StatusRoutes
from mcpwall.stages import AuthStage, Reject
from mcpwall.telemetry import trace_headers

log = logging.getLogger("mcpwall.http")

#: The most of an unauthenticated request's body read to record it (see `_refused`).
_DOOR_BYTES = 64 * 1024
SESSION_IDLE_S = 3600.0
#: The most sessions `POST /{server}` keeps (one per server, agent and client name): past it the
#: idle half seen longest ago is closed, so clients that vary X-Agent-Id or X-Mcpwall-Client cannot
#: grow the gateway.
PLAIN_SESSIONS = 10_000
#: The most streamable-HTTP sessions one principal (token) keeps open: past it its least recently
#: used one is closed, so a client that initializes in a loop cannot grow the gateway.
SESSIONS_PER_PRINCIPAL = 64


class HttpFrontend:
    """The ASGI application the gateway serves."""

    def __init__(self, gateway: Gateway, auth: AuthStage, *, base_url: str = "",
                 extra: App | None = None, metrics: Callable[[], bytes] | None = None, door: Door | None = None,
                 sessions_per_principal: int = SESSIONS_PER_PRINCIPAL, connections: Any = None) -> None:
        self.gateway = gateway
        self.auth = auth
        self.door = door or Door(auth)
        self.sessions_per_principal = max(1, sessions_per_principal)
        #: principal -> its streamable-HTTP sessions by id
        self._owned: dict[str, dict[str, Session]] = {}
        #: the sessions of clients of the 2026-07-28 revision, which open none (`_modern`)
        self.modern = ModernSessions(gateway, self._own)
        self.extra = extra
        self.status = StatusRoutes(gateway, auth, self.door, base_url=base_url, metrics=metrics,
                                   connections=connections)
        self._plain: dict[tuple[str, str, str], Session] = {}
        self._streams: set[str] = set()
        #: Before the token, by method and the path as sent: /health is public, though not to another
        #: origin (DNS rebinding: Host and Origin hold).
        self._open: dict[tuple[str, str], Callable[[Send, dict[str, str]], Awaitable[None]]] = {
            ("GET", "/health"): self.status.health}
        #: Then the apps that check their own credentials, in order: the admin API (its bearer token),
        #: then the dashboard and its API (cookie + CSRF for the UI, bearer token for the API).
        self._mounts = (Mount(("/api/admin/",), lambda: getattr(self.gateway, "admin_api", None)),
                        Mount(("/ui/", "/api/"), lambda: self.extra, root="/ui"),
                        Mount(("/.well-known/oauth-protected-resource",), lambda: self.auth.oauth_app))
        #: Then, past the token, these. An agent's named token calls the MCP endpoints as itself
        #: (issue 22); the status routes (every server's command line, every principal's tool counts,
        #: the policy's rule trace) are the operator's. `/` is 404 for every token.
        self._routes = routes = Routes(Route(not_found))
        routes.add(ANY, "/", Route(not_found, agent=True))
        routes.add(ANY, "/mcp", Route(self._mcp, agent=True))
        routes.add(ANY, "/mcp/{server}", Route(self._mcp, agent=True))
        routes.add("GET", "/servers", Route(self.status.servers))
        if metrics is not None:
            routes.add("GET", "/metrics", Route(self.status.prometheus))
        routes.add("POST", "/{server}/explain", Route(self._explain))
        routes.add("POST", "/{server}", Route(self._plain_post, agent=True))
        routes.add(ANY, "/{server}", Route(self.status.server))  # GET, and 404 for the other methods

    # ------------------------------------------------------------------ dispatch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        headers = header_map(scope["headers"])
        reject = self.door.refusal(scope, headers)  # Host, Origin, target: before any route
        if reject is not None:
            await self._turn_away(scope, receive, send, reject)
            return
        opened = self._open.get((method, path))
        if opened is not None:
            await opened(send, headers)
            return
        if self.extra is not None and opens_in_browser(method, path, headers):
            await to_dashboard(send)  # a person at the gateway's address: the dashboard, not a JSON-RPC 401
            return
        for mount in self._mounts:
            if path.startswith(mount.prefixes) or path == mount.root:
                app = mount.app()
                if app is not None:
                    await app(scope, receive, send)
                    return
        reject, identity, receive = await self.auth.authenticate(scope, receive, headers)
        if reject is not None:
            await self._turn_away(scope, receive, send, reject)
            return
        parts = tuple(filter(None, path.split("/")))
        route = self._routes.match(method, parts)
        if identity and not route.agent:
            await reply_json(send, 403, error(None, ErrorCode.UNAUTHORIZED,
                                              f"the token of agent {identity!r} may only call the MCP endpoints"))
            return
        await route.handler(scope, receive, send, parts, headers, identity)

    async def _turn_away(self, scope: Scope, receive: Receive, send: Send, reject: Reject) -> None:
        """Answer a refusal at the door (token, Host, Origin) and close its connection (`_conn`)."""
        parts = [p for p in scope["path"].split("/") if p]
        if parts and scope["method"] == "POST" and (len(parts) == 1 or (len(parts) == 2 and parts[0] == "mcp")):
            # An unauthenticated tools/call is recorded too (an attempt is evidence), within bounds:
            # one message of a small body, no batch.
            await self._refused(receive, reject.code, reject.message, None if parts[0] == "mcp" else parts[0],
                                scope, parts[1] if len(parts) == 2 else None, limit=_DOOR_BYTES)
        extra = CLOSE + list(getattr(reject, "headers", ()))  # an OAuth challenge: WWW-Authenticate
        await reply_json(send, reject.http_status, error(None, reject.code, reject.message, reject.data), extra)

    async def _refused(self, receive: Receive, code: int, text: str, server: str | None, scope: Scope,
                       via: str | None = None, limit: int = MAX_MESSAGE_BYTES) -> Any:
        """Read a refused POST's body and record the tools/call in it (see Gateway.refused);
        returns the request's id when there is one, for the answer."""
        try:
            msg = orjson.loads(await read_body(receive, limit))
        except (orjson.JSONDecodeError, BodyTooLarge, ConnectionError):
            return None
        if limit < MAX_MESSAGE_BYTES and not isinstance(msg, dict):
            return None
        await self.gateway.refused(msg, code, text, server=server or via, peer=peer(scope))
        return request_id(msg)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                try:
                    await self.gateway.start()
                    self.gateway.spawn(self._expire_sessions())
                except Exception as exc:
                    log.exception("gateway failed to start")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                with contextlib.suppress(Exception):
                    await self.gateway.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(60)
            self.expire_idle(time.monotonic() - SESSION_IDLE_S)

    def expire_idle(self, before: float) -> None:
        """Close the HTTP frontends' sessions last seen before `before` (monotonic) with nothing in flight."""
        for session in list(self.gateway.sessions.values()):
            if session.kind in ("http", "plain") and session.last_seen < before and not session.inflight:
                self.gateway.close_session(session)
        self._plain = {key: s for key, s in self._plain.items() if not s.closed}
        self._owned = {p: left for p, owned in self._owned.items()
                       if (left := {sid: s for sid, s in owned.items() if not s.closed})}

    # ------------------------------------------------------------------ streamable HTTP

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                   headers: dict[str, str], identity: str | None) -> None:
        """`/mcp` (every server, aggregated) and `/mcp/{server}`: POST a message, GET the session's
        stream, DELETE the session."""
        server = parts[1] if len(parts) == 2 else None
        if server is not None and server not in self.gateway.servers:
            await reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {server!r}"))
            return
        method = scope["method"]
        sid = headers.get("mcp-session-id")
        session = self.gateway.sessions.get(sid) if sid else None
        if session is not None and (session.kind != "http" or session.server != server
                                    or session.principal != (identity or "")):
            # A session belongs to the token that opened it: another agent's token holding its id (from a log,
            # a shared proxy) must not call, listen or close as that agent. To the caller it does not exist.
            session = None
        if method == "DELETE":
            if session is None:
                await reply_json(send, 404, error(None, ErrorCode.INVALID_REQUEST, "Session not found"))
                return
            self.gateway.close_session(session)
            await reply(send, 200, b"")
            return
        if method == "GET":
            await get_stream(receive, send, session, headers, self._streams)
            return
        if method != "POST":
            await reply_json(send, 405, error(None, ErrorCode.INVALID_REQUEST, "Method not allowed"),
                             [(b"allow", b"GET, POST, DELETE")])
            return
        try:
            raw = await read_body(receive, MAX_MESSAGE_BYTES)
        except BodyTooLarge as exc:
            await self._too_large(send, exc, server, scope)
            return
        except ConnectionError:
            return
        try:
            msg = parse(raw)
        except ProtocolError as exc:
            await self.gateway.refused_raw(raw, exc, server=server, peer=peer(scope))
            await reply_json(send, 400, exc.to_message())
            return
        if answering := self.modern.took(scope, receive, send, msg, len(raw), server, headers, identity):
            return await answering  # a 2026-07-28 request (no session), or MCP headers that disagree
        is_init = msg.get("method") == "initialize" and "id" in msg
        if is_init:
            session = self.gateway.open_session("http", server, peer=peer(scope), principal=identity or "",
                                                agent=identity or headers.get("x-agent-id") or "",
                                                process_name=headers.get("x-mcpwall-process", ""))
            self._own(session)
        elif session is None:
            status = 404 if sid else 400
            text = "Session not found" if sid else "Bad Request: Mcp-Session-Id header is required"
            await self.gateway.refused(msg, ErrorCode.INVALID_REQUEST, text, server=server, peer=peer(scope))
            await reply_json(send, status, error(request_id(msg), ErrorCode.INVALID_REQUEST, text))
            return
        else:
            version = headers.get("mcp-protocol-version")
            if version is not None and version not in SUPPORTED_VERSIONS:
                await reply_json(send, 400, error(None, ErrorCode.INVALID_REQUEST,
                                                  f"Unsupported MCP-Protocol-Version: {version}"))
                return
        assert session is not None
        session.last_seen = time.monotonic()
        extra = [(b"mcp-session-id", session.id.encode())]
        if "method" in msg and "id" in msg:
            await answer_request(receive, send, partial(self.gateway.handle_request, session, msg,
                                                        bytes_in=len(raw), trace_headers=trace_headers(headers)),
                                 extra)
            return
        refusal = await self.gateway.handle(session, msg)
        if refusal is not None:  # an invalid message
            await reply_json(send, 400, refusal, extra)
            return
        await reply(send, 202, b"", extra)

    def _own(self, session: Session) -> None:
        """Count a new streamable-HTTP session against its principal; past the cap close the one
        used least recently, preferring one with no call in flight and no GET stream open."""
        owned = self._owned.setdefault(session.principal, {})
        if len(owned) >= self.sessions_per_principal:
            for sid in [sid for sid, s in owned.items() if s.closed]:
                del owned[sid]
        if len(owned) >= self.sessions_per_principal:
            victim = min(owned.values(), key=lambda s: (bool(s.inflight) or s.id in self._streams, s.last_seen))
            log.info("closed session %s of %r: the principal opened more than %d", victim.id[:8],
                     victim.principal, self.sessions_per_principal)
            self.gateway.close_session(victim)
            del owned[victim.id]
        owned[session.id] = session

    # ------------------------------------------------------------------ seatbelt's plain route

    def _plain_session(self, server: str, identity: str, peer: str, headers: dict[str, str]) -> Session:
        # A named token's identity wins over a header the client chose itself.
        agent = identity or headers.get("x-agent-id") or ""
        key = (server, agent, headers.get("x-mcpwall-client", ""))
        session = self._plain.get(key)
        if session is None or session.closed:
            if len(self._plain) >= PLAIN_SESSIONS:
                # Close the idle half seen longest ago (a session with a call in flight stays):
                # clients in use keep their sessions, and their per-session state, while others churn.
                idle = sorted((s for s in self._plain.values() if not s.inflight), key=lambda s: s.last_seen)
                for old in idle[: len(idle) // 2 + 1]:
                    self.gateway.close_session(old)
                self._plain = {k: s for k, s in self._plain.items() if not s.closed}
            session = self.gateway.open_session("plain", server, peer=peer, agent=agent, principal=identity,
                                                client_name=headers.get("x-mcpwall-client", ""),
                                                process_name=headers.get("x-mcpwall-process", ""))
            session.initialized = True
            self._plain[key] = session
        return session

    async def _plain_post(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                          headers: dict[str, str], identity: str | None) -> None:
        """`POST /{server}`: one JSON-RPC message in, its answer out, in the session of its server,
        agent and client name."""
        server = parts[0]
        if server not in self.gateway.servers:
            text = f"Unknown server: {server!r}"  # and its tools/call is recorded
            rid = await self._refused(receive, ErrorCode.METHOD_NOT_FOUND, text, server, scope)
            await reply_json(send, 404, error(rid, ErrorCode.METHOD_NOT_FOUND, text))
            return
        try:
            raw = await read_body(receive, MAX_MESSAGE_BYTES)
            msg = parse(raw)
        except BodyTooLarge as exc:
            await self._too_large(send, exc, server, scope)
            return
        except ConnectionError:
            return
        except ProtocolError as exc:
            await self.gateway.refused_raw(raw, exc, server=server, peer=peer(scope))
            await reply_json(send, 400, exc.to_message())
            return
        if answering := self.modern.took(scope, receive, send, msg, len(raw), server, headers, identity):
            return await answering
        session = self._plain_session(server, identity or "", peer(scope), headers)
        session.last_seen = time.monotonic()
        if "method" in msg and "id" in msg:
            try:
                response = await self.gateway.handle_request(session, msg, None, bytes_in=len(raw),
                                                             trace_headers=trace_headers(headers))
            except asyncio.CancelledError:
                # Cancelled by the client (notifications/cancelled): no answer, as for a notification.
                response = None
        else:
            response = await self.gateway.handle(session, msg)
            if response is not None:  # not a request, and refused: no call to answer under, so the HTTP says it
                await reply_json(send, 400, response)
                return
        await answer(send, response, [])

    async def _too_large(self, send: Send, exc: BodyTooLarge, server: str | None, scope: Scope) -> None:
        """413 under the request's id when its first bytes tell it; a tools/call gets its ledger row."""
        await reply_json(send, 413, await self.gateway.refused_oversized(exc.head, b"", server=server,
                                                                         peer=peer(scope)))

    async def _explain(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                       headers: dict[str, str], identity: str | None) -> None:
        """`POST /{server}/explain`: what the policy would decide for a call, and why (`_explain`)."""
        from mcpwall.proxy._explain import explain

        server = parts[0]
        try:
            body = orjson.loads(await read_body(receive, MAX_MESSAGE_BYTES))
        except BodyTooLarge:
            await reply_json(send, 413, error(None, ErrorCode.INVALID_REQUEST, TOO_LARGE))
            return
        except (orjson.JSONDecodeError, ConnectionError):
            await reply_json(send, 400, error(None, ErrorCode.PARSE_ERROR, "explain needs a JSON body"))
            return
        if server not in self.gateway.servers and server != "_":
            await reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {server!r}"))
            return
        try:
            out = explain(self.gateway, server, body, agent=identity or headers.get("x-agent-id") or "",
                          client=headers.get("x-mcpwall-client", ""))
        except ValueError as exc:
            await reply_json(send, 400, error(None, ErrorCode.INVALID_PARAMS, str(exc)))
            return
        await reply_json(send, 200, out)


__all__ = ["HttpFrontend", "Reject"]
