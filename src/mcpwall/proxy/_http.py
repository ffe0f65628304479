"""The HTTP frontends: streamable HTTP (`/mcp`, `/mcp/{server}`), seatbelt's
plain JSON-RPC route (`POST /{server}`), and the status routes.

This is a raw ASGI app rather than Starlette routes: the relay path is the
product's hot path, and the framework's per-request objects cost about as
much as the whole relay (bench/proxy_overhead.py). The dashboard and other
non-hot routes (`/ui`, `/api/`) are a Starlette app set as `gateway.ui_app`.

A POST carrying a request is answered with `application/json` when the answer
comes before anything else; if the upstream first sends something related to
the request (progress, a log message, a sampling or elicitation request), the
response switches to `text/event-stream` and carries those events, then the
answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcpwall import __version__
from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    SUPPORTED_VERSIONS,
    TOO_LARGE,
    ErrorCode,
    Message,
    ProtocolError,
    error,
    parse,
    request_id,
)
from mcpwall.proxy._door import Door
from mcpwall.proxy._gateway import Gateway
from mcpwall.pipeline import Session
from mcpwall.stages import AuthStage, Reject

log = logging.getLogger("mcpwall.http")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]
_CLOSE = [(b"connection", b"close")]
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
_KEEPALIVE_S = 15.0
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


async def _reply(send: Send, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None,
                 ) -> None:
    await send({"type": "http.response.start", "status": status, "headers": (headers or _JSON) + [
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _reply_json(send: Send, status: int, value: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _reply(send, status, orjson.dumps(value), _JSON + (headers or []))


def _sse_event(msg: Message) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(msg) + b"\n\n"


class _BodyTooLarge(Exception):
    """A body over the size bound; `head` is its first bytes (enough to tell whose request it was)."""

    def __init__(self, head: bytes = b"") -> None:
        super().__init__("body too large")
        self.head = head


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            raise ConnectionError("client disconnected")
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge(b"".join(chunks)[:256] if chunks else chunk[:256])
        chunks.append(chunk)
        if not event.get("more_body", False):
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]


class HttpFrontend:
    """The ASGI application the gateway serves."""

    def __init__(self, gateway: Gateway, auth: AuthStage, *, base_url: str = "",
                 extra: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None,
                 metrics: Callable[[], bytes] | None = None, door: Door | None = None,
                 sessions_per_principal: int = SESSIONS_PER_PRINCIPAL, connections: Any = None) -> None:
        self.gateway = gateway
        self.auth = auth
        self.door = door or Door(auth)
        self.sessions_per_principal = max(1, sessions_per_principal)
        #: the server's ConnectionGuard (proxy/_conn.py), for /health
        self.connections = connections
        #: principal -> its streamable-HTTP sessions by id
        self._owned: dict[str, dict[str, Session]] = {}
        self.base_url = base_url
        self.extra = extra
        self.metrics = metrics
        self.started = time.time()
        self._plain: dict[tuple[str, str, str], Session] = {}
        self._streams: set[str] = set()

    # ------------------------------------------------------------------ dispatch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        reject = self.door.refusal(scope, headers)  # Host, Origin, target: before any route
        if reject is not None:
            await self._turn_away(scope, receive, send, reject)
            return
        if path == "/health" and method == "GET":
            # Public without a token, but not to another origin (DNS rebinding): Host and Origin hold.
            reject, _ = self.auth.admit(headers)
            if reject is not None and reject.http_status == 403:
                await _reply_json(send, 403, error(None, reject.code, reject.message))
                return
            await self._health(send, headers)
            return
        admin = getattr(self.gateway, "admin_api", None)
        if admin is not None and path.startswith("/api/admin/"):
            await admin(scope, receive, send)  # checks the bearer token itself
            return
        if self.extra is not None and (path == "/ui" or path.startswith(("/ui/", "/api/"))):
            # The dashboard and the admin API: a Starlette app that checks its own
            # credentials (cookie + CSRF for the UI, bearer token for the API).
            await self.extra(scope, receive, send)
            return
        reject, identity = self.auth.admit(headers)
        if reject is not None:
            await self._turn_away(scope, receive, send, reject)
            return
        parts = [p for p in path.split("/") if p]
        if not parts:
            await _reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, "Not found"))
            return
        if identity and not ((parts[0] == "mcp" and len(parts) <= 2) or (len(parts) == 1 and method == "POST")):
            # A named token is an agent (issue 22): it calls the MCP endpoints as itself. The status routes
            # (every server's command line, every principal's tool counts, the policy's rule trace) are
            # the operator's, as are the dashboard and admin APIs.
            await _reply_json(send, 403, error(None, ErrorCode.UNAUTHORIZED,
                                               f"the token of agent {identity!r} may only call the MCP endpoints"))
            return
        if parts[0] == "mcp" and len(parts) <= 2:
            server = parts[1] if len(parts) == 2 else None
            if server is not None and server not in self.gateway.servers:
                await _reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {server!r}"))
                return
            await self._mcp(scope, receive, send, headers, identity, server)
            return
        if len(parts) == 1 and parts[0] == "servers" and method == "GET":
            await _reply_json(send, 200, self._servers(scope, headers))
            return
        if len(parts) == 1 and parts[0] == "metrics" and method == "GET" and self.metrics is not None:
            await _reply(send, 200, self.metrics(), [(b"content-type", b"text/plain; version=0.0.4")])
            return
        if len(parts) == 2 and parts[1] == "explain" and method == "POST":
            await self._explain(receive, send, parts[0], headers, identity)
            return
        if len(parts) == 1:
            if parts[0] not in self.gateway.servers:
                text = f"Unknown server: {parts[0]!r}"
                rid = None
                if method == "POST":
                    rid = await self._refused(receive, ErrorCode.METHOD_NOT_FOUND, text, parts[0], scope)
                await _reply_json(send, 404, error(rid, ErrorCode.METHOD_NOT_FOUND, text))
                return
            if method == "POST":
                await self._plain_post(scope, receive, send, parts[0], headers, identity)
                return
            if method == "GET":
                await _reply_json(send, 200, self._server_info(parts[0], scope, headers))
                return
        await _reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, "Not found"))

    async def _turn_away(self, scope: Scope, receive: Receive, send: Send, reject: Reject) -> None:
        """Answer a request refused at the door (token, Host, Origin) and close its connection:
        a refused client gets nothing to hold open (see `_conn`)."""
        parts = [p for p in scope["path"].split("/") if p]
        if parts and scope["method"] == "POST" and (len(parts) == 1 or (len(parts) == 2 and parts[0] == "mcp")):
            # An unauthenticated tools/call is recorded too (an attempt is evidence), within bounds:
            # one message of a small body, no batch.
            await self._refused(receive, reject.code, reject.message, None if parts[0] == "mcp" else parts[0],
                                scope, parts[1] if len(parts) == 2 else None, limit=_DOOR_BYTES)
        await _reply_json(send, reject.http_status, error(None, reject.code, reject.message), _CLOSE)

    async def _refused(self, receive: Receive, code: int, text: str, server: str | None, scope: Scope,
                       via: str | None = None, limit: int = MAX_MESSAGE_BYTES) -> Any:
        """Read a refused POST's body and record the tools/call in it (see Gateway.refused);
        returns the request's id when there is one, for the answer."""
        try:
            msg = orjson.loads(await _read_body(receive, limit))
        except (orjson.JSONDecodeError, _BodyTooLarge, ConnectionError):
            return None
        if limit < MAX_MESSAGE_BYTES and not isinstance(msg, dict):
            return None
        await self.gateway.refused(msg, code, text, server=server or via, peer=_peer(scope))
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

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                   identity: str | None, server: str | None) -> None:
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
                await _reply_json(send, 404, error(None, ErrorCode.INVALID_REQUEST, "Session not found"))
                return
            self.gateway.close_session(session)
            await _reply(send, 200, b"")
            return
        if method == "GET":
            await self._get_stream(receive, send, session, headers)
            return
        if method != "POST":
            await _reply_json(send, 405, error(None, ErrorCode.INVALID_REQUEST, "Method not allowed"),
                              [(b"allow", b"GET, POST, DELETE")])
            return
        try:
            raw = await _read_body(receive, MAX_MESSAGE_BYTES)
        except _BodyTooLarge as exc:
            await self._too_large(send, exc, server, scope)
            return
        except ConnectionError:
            return
        try:
            msg = parse(raw)
        except ProtocolError as exc:
            await self.gateway.refused_raw(raw, exc, server=server, peer=_peer(scope))
            await _reply_json(send, 400, exc.to_message())
            return
        is_init = msg.get("method") == "initialize" and "id" in msg
        if is_init:
            session = self.gateway.open_session("http", server, peer=_peer(scope), principal=identity or "",
                                                agent=identity or headers.get("x-agent-id") or "",
                                                process_name=headers.get("x-mcpwall-process", ""))
            self._own(session)
        elif session is None:
            status = 404 if sid else 400
            text = "Session not found" if sid else "Bad Request: Mcp-Session-Id header is required"
            await self.gateway.refused(msg, ErrorCode.INVALID_REQUEST, text, server=server, peer=_peer(scope))
            await _reply_json(send, status, error(request_id(msg), ErrorCode.INVALID_REQUEST, text))
            return
        else:
            version = headers.get("mcp-protocol-version")
            if version is not None and version not in SUPPORTED_VERSIONS:
                await _reply_json(send, 400, error(None, ErrorCode.INVALID_REQUEST,
                                                   f"Unsupported MCP-Protocol-Version: {version}"))
                return
        assert session is not None
        session.last_seen = time.monotonic()
        extra = [(b"mcp-session-id", session.id.encode())]
        if "method" in msg and "id" in msg:
            await self._serve_request(receive, send, session, msg, len(raw), extra)
            return
        reply = await self.gateway.handle(session, msg)
        if reply is not None:  # an invalid message
            await _reply_json(send, 400, reply, extra)
            return
        await _reply(send, 202, b"", extra)

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

    async def _serve_request(self, receive: Receive, send: Send, session: Session, msg: Message, size: int,
                             extra: list[tuple[bytes, bytes]]) -> None:
        """Answer with JSON, or upgrade to SSE as soon as a related message must go first."""
        streaming = False
        disconnected = False
        # Made by the first related message: most requests have none, and answer without it.
        lock: asyncio.Lock | None = None
        handler = asyncio.current_task()
        watcher: asyncio.Task[None] | None = None

        async def watch_disconnect() -> None:
            nonlocal disconnected
            while True:
                event = await receive()
                if event["type"] == "http.disconnect":
                    disconnected = True
                    if handler is not None:
                        handler.cancel()
                    return

        async def emit(related: Message) -> None:
            nonlocal streaming, watcher, lock
            if lock is None:
                lock = asyncio.Lock()
            async with lock:
                if not streaming:
                    streaming = True
                    await send({"type": "http.response.start", "status": 200, "headers": _SSE + extra})
                    watcher = asyncio.ensure_future(watch_disconnect())
                await send({"type": "http.response.body", "body": _sse_event(related), "more_body": True})

        try:
            response = await self.gateway.handle_request(session, msg, emit, bytes_in=size)
        except asyncio.CancelledError:
            if disconnected:
                return  # nobody is listening any more
            # The client cancelled this request (notifications/cancelled) or ended its session
            # (DELETE): per MCP no answer follows, so the exchange ends as an event stream with
            # no response in it, instead of an error status or a cut connection.
            async with lock or contextlib.nullcontext():  # after any progress event being written
                if not streaming:
                    await send({"type": "http.response.start", "status": 200, "headers": _SSE + extra})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        finally:
            if watcher is not None:
                watcher.cancel()
        if lock is None:
            await self._answer(send, response, extra)
            return
        async with lock:
            if streaming:
                body = _sse_event(response) if response is not None else b""
                await send({"type": "http.response.body", "body": body, "more_body": False})
            else:
                await self._answer(send, response, extra)

    @staticmethod
    async def _answer(send: Send, response: Message | None, extra: list[tuple[bytes, bytes]]) -> None:
        if response is None:
            await _reply(send, 202, b"", extra)
        else:
            await _reply(send, _status_for(response), orjson.dumps(response), _JSON + extra)

    async def _get_stream(self, receive: Receive, send: Send, session: Session | None,
                          headers: dict[str, str]) -> None:
        if session is None:
            status = 404 if headers.get("mcp-session-id") else 400
            await _reply_json(send, status, error(None, ErrorCode.INVALID_REQUEST, "Session not found"))
            return
        if "text/event-stream" not in headers.get("accept", "text/event-stream"):
            await _reply_json(send, 406, error(None, ErrorCode.INVALID_REQUEST, "Accept: text/event-stream needed"))
            return
        if session.id in self._streams:
            await _reply_json(send, 409, error(None, ErrorCode.INVALID_REQUEST,
                                               "a GET stream is already open for this session"))
            return
        self._streams.add(session.id)
        queue: asyncio.Queue[Message] = asyncio.Queue()

        async def push(msg: Message) -> None:
            queue.put_nowait(msg)

        disconnected = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            await send({"type": "http.response.start", "status": 200,
                        "headers": [*_SSE, (b"mcp-session-id", session.id.encode())]})
            await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
            for msg in session.drain_buffer():
                await send({"type": "http.response.body", "body": _sse_event(msg), "more_body": True})
            session.send = push
            while not disconnected.done() and not session.closed:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, disconnected}, timeout=_KEEPALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    await send({"type": "http.response.body", "body": _sse_event(getter.result()),
                                "more_body": True})
                else:
                    getter.cancel()
                    if not done:
                        await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
        except (OSError, RuntimeError):
            pass
        finally:
            if session.send is push:
                session.send = None
            self._streams.discard(session.id)
            disconnected.cancel()
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

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

    async def _plain_post(self, scope: Scope, receive: Receive, send: Send, server: str, headers: dict[str, str],
                          identity: str | None) -> None:
        try:
            raw = await _read_body(receive, MAX_MESSAGE_BYTES)
            msg = parse(raw)
        except _BodyTooLarge as exc:
            await self._too_large(send, exc, server, scope)
            return
        except ConnectionError:
            return
        except ProtocolError as exc:
            await self.gateway.refused_raw(raw, exc, server=server, peer=_peer(scope))
            await _reply_json(send, 400, exc.to_message())
            return
        session = self._plain_session(server, identity or "", _peer(scope), headers)
        session.last_seen = time.monotonic()
        if "method" in msg and "id" in msg:
            try:
                response = await self.gateway.handle_request(session, msg, None, bytes_in=len(raw))
            except asyncio.CancelledError:
                # Cancelled by the client (notifications/cancelled): no answer, as for a notification.
                await _reply(send, 202, b"")
                return
        else:
            response = await self.gateway.handle(session, msg)
            if response is not None:  # not a request, and refused: no call to answer under, so the HTTP says it
                await _reply_json(send, 400, response)
                return
        if response is None:
            await _reply(send, 202, b"")
        else:
            await _reply(send, _status_for(response), orjson.dumps(response))

    async def _too_large(self, send: Send, exc: _BodyTooLarge, server: str | None, scope: Scope) -> None:
        """413 under the request's id when its first bytes tell it; a tools/call gets its ledger row."""
        await _reply_json(send, 413, await self.gateway.refused_oversized(exc.head, b"", server=server,
                                                                          peer=_peer(scope)))

    async def _explain(self, receive: Receive, send: Send, server: str, headers: dict[str, str],
                       identity: str | None) -> None:
        from mcpwall.proxy._explain import explain

        try:
            body = orjson.loads(await _read_body(receive, MAX_MESSAGE_BYTES))
        except _BodyTooLarge:
            await _reply_json(send, 413, error(None, ErrorCode.INVALID_REQUEST, TOO_LARGE))
            return
        except (orjson.JSONDecodeError, ConnectionError):
            await _reply_json(send, 400, error(None, ErrorCode.PARSE_ERROR, "explain needs a JSON body"))
            return
        if server not in self.gateway.servers and server != "_":
            await _reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {server!r}"))
            return
        try:
            out = explain(self.gateway, server, body, agent=identity or headers.get("x-agent-id") or "",
                          client=headers.get("x-mcpwall-client", ""))
        except ValueError as exc:
            await _reply_json(send, 400, error(None, ErrorCode.INVALID_PARAMS, str(exc)))
            return
        await _reply_json(send, 200, out)

    # ------------------------------------------------------------------ status

    def _base(self, scope: Scope, headers: dict[str, str]) -> str:
        if self.base_url:
            return self.base_url
        host = headers.get("host") or "127.0.0.1"
        return f"{scope.get('scheme', 'http')}://{host}"

    def _server_info(self, name: str, scope: Scope, headers: dict[str, str]) -> dict[str, Any]:
        base = self._base(scope, headers)
        s = self.gateway.servers[name]
        return {**s.status(), "proxy_url": f"{base}/{name}", "mcp_url": f"{base}/mcp/{name}",
                "original": s.spec.url or " ".join([s.spec.command or "", *s.spec.args]).strip(),
                "risk": _risk(s.spec)}

    def _servers(self, scope: Scope, headers: dict[str, str]) -> dict[str, Any]:
        status = self.gateway.status()
        return {"servers": [self._server_info(n, scope, headers) for n in self.gateway.servers],
                "aggregate_url": f"{self._base(scope, headers)}/mcp", "collisions": status["collisions"]}

    async def _health(self, send: Send, headers: dict[str, str]) -> None:
        servers = self.gateway.servers.values()
        healthy = all(s.state == "ready" for s in servers)
        out: dict[str, Any] = {"status": "ok" if healthy else "degraded", "version": __version__,
                               "uptime_s": round(time.time() - self.started, 1)}
        if self.auth.insecure_no_auth or self.auth.identify(headers.get("authorization")) == "":
            out.update(self.gateway.status())  # the operator's view; an agent's named token sees the public part
            if self.connections is not None:
                out["connections"] = {**self.connections.status(), "door_refused": self.door.refused}
        await _reply_json(send, 200, out)


def _risk(spec: Any) -> Any:
    try:
        from mcpwall.discovery import risk_summary
    except ImportError:
        return None
    return risk_summary(spec)


def _status_for(response: Message) -> int:
    """HTTP status of a JSON-RPC answer: 200, except for rejections that carry their own."""
    err = response.get("error")
    if not isinstance(err, dict):
        return 200
    code = err.get("code")
    return 401 if code == ErrorCode.UNAUTHORIZED else 429 if code == ErrorCode.RATE_LIMITED else 200


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}" if client else ""


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return


__all__ = ["HttpFrontend", "Reject"]
