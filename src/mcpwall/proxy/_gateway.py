"""The gateway: sessions on one side, upstream servers on the other, the pipeline between.

Frontends (HTTP, stdio, framed relay) turn bytes into messages and call
`Gateway.handle(session, message, emit)`. Requests run through the pipeline
and are either answered here (initialize, ping, merged lists) or routed to an
upstream. Messages the upstreams send on their own (notifications, sampling,
elicitation) come back through `on_upstream_request` and
`on_upstream_notification` and are routed to the session they belong to:
the one whose request they arrived with when the transport knows, else the
session with the most recent request in flight to that server. They, and the
answers to clients' requests, leave only through `ServerMessages`
(_server_messages.py), which masks them; a server's `roots/list` is answered
there from its configuration, never by a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from mcpwall import __version__
from mcpwall.pipeline import Inflight, PolicyStore, ServerRequest, Service, Session, keep_capabilities
from mcpwall.policy import ServerSpec
from mcpwall.protocol import (
    LATEST_VERSION,
    MAX_MESSAGE_BYTES,
    SUPPORTED_VERSIONS,
    TOO_LARGE,
    ErrorCode,
    Message,
    ProtocolError,
    RequestId,
    classify,
    error,
    notification,
    oversized_id,
    request_id,
    result,
)
from mcpwall.protocol.naming import qualify, resource_owner, split
from mcpwall.proxy._aggregate import collisions
from mcpwall.proxy._budget import MinuteBudget
from mcpwall.proxy._pipeline import Pipeline
from mcpwall.proxy._server_messages import CLIENT_CAPABILITIES_META, CLIENT_NOTIFICATIONS, ServerMessages
from mcpwall.proxy._upstream import Pending, UpstreamError, UpstreamServer
from mcpwall.stages import RequestContext, Stage
from mcpwall.state import MemoryStateStore, StateStore

log = logging.getLogger("mcpwall.gateway")

Emit = Callable[[Message], Awaitable[None]]

#: Methods routed to the upstream that owns the named tool, prompt or resource.
ROUTED = frozenset({"tools/call", "prompts/get", "resources/read", "resources/subscribe",
                    "resources/unsubscribe", "completion/complete"})
_LIST_KEYS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
              "resources/templates/list": "resourceTemplates"}
#: Calls refused at the door (no token, unknown server...) one peer may add to the ledger a minute.
DOOR_ROWS_PER_MINUTE = 120
#: `_only_caller`'s answer when the requests in flight to a server come from more than one session.
_SEVERAL: tuple[Any, Any] = (None, None)
#: In the edges of a message too long to parse: a tools/call (its method named there), and its tool.
_TOP_CALL = re.compile(rb'"method"\s*:\s*"tools/call"')
_CALL_NAME = re.compile(rb'"params"\s*:\s*\{\s*"name"\s*:\s*"([^"\\]{1,200})"')
_CAPABILITY_FOR = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}


@dataclass
class GatewayOptions:
    ready_timeout_s: float = 90.0
    #: how long `start` waits for the upstreams' handshakes before serving (the rest finish later)
    startup_wait_s: float = 10.0
    allow_client_elicitation_approval: bool = False


class Gateway:
    """Owns the upstream servers, the sessions and the pipeline."""

    def __init__(self, servers: Mapping[str, ServerSpec], policy: PolicyStore, stages: Sequence[Stage],
                 options: GatewayOptions | None = None) -> None:
        self.policy = policy
        self.options = options or GatewayOptions()
        self.pipeline = Pipeline(stages)
        #: the stages that also screen what passes outside calls (server messages, client answers)
        self._dlp: Any = self.pipeline.find("dlp")
        self._tripwire: Any = self.pipeline.find("honeytoken_tripwire")
        self.servers: dict[str, UpstreamServer] = {
            name: UpstreamServer(name, spec, self) for name, spec in servers.items() if not spec.disabled}
        #: the one exit of server messages to clients (masked), and the gateway's answer to roots/list
        self.messages = ServerMessages(self)
        self.sessions: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        #: `start` has returned: upstreams ready later announce their tools with list_changed
        self._started = False
        #: Shared durable state (honeytokens, pins, approvals): the ledger when one is
        #: configured, else memory (see mcpwall.state).
        self.state: StateStore = MemoryStateStore()
        #: Observers of every message in and out of every session (forensic capture).
        self.taps: list[Callable[[Session, str, Message], None]] = []
        self._refreshing: dict[tuple[str, str], bool] = {}
        #: tools/call requests that ended since start (answered, refused, cancelled), in `/health`
        #: (what `mcpwall benchmark` reconciles)
        self.calls = {"processed": 0, "blocked": 0, "failed": 0, "unrecorded": 0}
        #: calls refused at the door recorded per peer (see _door_budget)
        self._door = MinuteBudget(DOOR_ROWS_PER_MINUTE)
        self._door_warned = 0.0
        # Set by stages in bind() when they are in the pipeline (see each stage's module).
        self.approvals: Any = None
        self.ui_app: Any = None
        self.metrics_text: Callable[[], bytes] | None = None
        self.notifier: Any = None
        self.ledger: Any = None
        self.tool_filters: list[Any] = []
        self.on_catalog_changed: Callable[[UpstreamServer], None] | None = None
        #: parts with a lifecycle and no pipeline hook, added by the app builder (`add_service`)
        self.services: list[Service] = []
        for stage in stages:
            stage.bind(self)

    def add_service(self, service: Service) -> None:
        """A service runs with the gateway: started after the stages, stopped before them."""
        self.services.append(service)

    def service(self, name: str) -> Service | None:
        return next((s for s in self.services if s.name == name), None)

    @property
    def admin_api(self) -> Any:
        """The admin API (`mcpwall.admin`) when it runs with this gateway, for the HTTP frontend."""
        return getattr(self.service("admin_api"), "api", None)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        for stage in self.pipeline.stages:
            await stage.start()
        for service in self.services:
            await service.start()
        # One server slow to answer `initialize` must not keep the others (and `ping`) waiting:
        # those not started within `startup_wait_s` go on in the background, and their tools
        # join the lists with a list_changed notification when they are ready.
        starting = [asyncio.ensure_future(self._start_upstream(s)) for s in self.servers.values()]
        if not starting:
            return
        done, late = await asyncio.wait(starting, timeout=self.options.startup_wait_s)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("an upstream failed to start: %s", task.exception())
        for task in late:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if late:
            slow = sorted(s.name for s in self.servers.values() if s.state == "starting")
            log.warning("still starting after %.0f s: %s; serving the others meanwhile",
                        self.options.startup_wait_s, ", ".join(slow) or "(none)")
        self._started = True

    async def _start_upstream(self, upstream: UpstreamServer) -> None:
        await upstream.start()
        if self._started and upstream.state == "ready":
            self.upstream_restarted(upstream)  # sessions listed tools without it: tell them

    async def stop(self) -> None:
        for session in list(self.sessions.values()):
            self.close_session(session)
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        parts: list[Service | Stage] = [*reversed(self.services), *reversed(self.pipeline.stages)]
        for part in parts:
            try:
                await part.stop()
            except Exception:
                log.exception("stage %s failed to stop", part.name)

    def spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def upstream_capabilities(self, server: str) -> dict[str, Any]:
        """What the gateway declares to an upstream: what it can route to some client."""
        caps: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
        if self.policy.current.allow_sampling:
            caps["sampling"] = {}
        spec = self.servers[server].spec if server in self.servers else None
        if spec is not None and spec.roots is not None:
            caps["roots"] = {"listChanged": False}
        return caps

    # ------------------------------------------------------------------ sessions

    def open_session(self, kind: str, server: str | None = None, **fields: Any) -> Session:
        session = Session(kind=kind, server=server, **fields)
        session.observer = self.tap
        self.sessions[session.id] = session
        return session

    async def refused(self, msg: Any, code: int, message: str, *, session: Session | None = None,
                      server: str | None = None, **fields: Any) -> None:
        """Record the tools/call requests in `msg` (a message or a batch) that were refused before
        they could enter the pipeline: no token, an unknown server or session, a bad envelope.

        SPEC 5: every tools/call the gateway sees has its ledger row, and these are the ones an
        attacker probing the gateway sends. They pass only the pipeline's completion (ledger,
        metrics, dashboard), as `rejected`, never a stage's checks or an upstream. A server name
        that is not configured goes into the row's notes, not its server (nor a metrics label).
        """
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict) or m.get("method") != "tools/call":
                continue
            if session is None and not self._door_budget(str(fields.get("peer", ""))):
                continue
            params = m.get("params") if isinstance(m.get("params"), dict) else {}
            assert params is not None
            rid = request_id(m)
            name = params.get("name")
            target = name[:200] if isinstance(name, str) else ""
            where = server
            qualified = split(target) if where is None and (session is None or session.server is None) else None
            if qualified is not None:
                where, target = qualified
            ctx = RequestContext(self, session or Session(kind="plain", **fields), m, "tools/call",
                                 rid if rid is not None else "", params,
                                 server=where if where in self.servers else None, target=target)
            if where is not None and where not in self.servers:
                ctx.notes["unknown_server"] = where[:200]
            ctx.outcome = "rejected"
            ctx.error_message = message
            ctx.response = error(rid, code, message)
            await self.pipeline.complete(ctx)

    def _door_budget(self, peer: str) -> bool:
        """Whether one more call refused at the door may be recorded for `peer` this minute.

        Anyone who can reach the port can be refused: beyond DOOR_ROWS_PER_MINUTE a peer's refused
        calls are only counted (`/health` calls.unrecorded), so it cannot fill the ledger's disk.
        """
        if self._door.take(peer):
            return True
        now = time.monotonic()
        self.calls["unrecorded"] += 1
        if now - self._door_warned > 10.0:
            self._door_warned = now
            log.warning("peer %s: over %d refused calls a minute; the rest are counted, not recorded",
                        peer or "(unknown)", DOOR_ROWS_PER_MINUTE)
        return False

    async def refused_raw(self, raw: bytes, exc: ProtocolError, *, session: Session | None = None,
                          server: str | None = None, **fields: Any) -> None:
        """`refused` for a body `parse` could not take (a batch...), when it holds a tools/call."""
        if len(raw) > MAX_MESSAGE_BYTES:
            await self.refused_oversized(raw[:256], raw[-256:], session=session, server=server, **fields)
            return
        if b"tools/call" not in raw:
            return
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        await self.refused(value, exc.code, exc.message, session=session, server=server, **fields)

    async def refused_oversized(self, head: bytes, tail: bytes, *, session: Session | None = None,
                                server: str | None = None, **fields: Any) -> Message:
        """The answer to a message over the size bound, of which only its edges were kept (-32600
        under its id when they tell it); a tools/call (its method named at either edge) gets its
        row, with its tool name when the edges tell it (`refused`)."""
        answer = error(oversized_id(head, tail), ErrorCode.INVALID_REQUEST, TOO_LARGE)
        if _TOP_CALL.search(head) or _TOP_CALL.search(tail):
            named = _CALL_NAME.search(head)
            params = {"name": named.group(1).decode("utf-8", "replace")} if named else {}
            stub = {"jsonrpc": "2.0", "id": answer["id"], "method": "tools/call", "params": params}
            await self.refused(stub, ErrorCode.INVALID_REQUEST, TOO_LARGE, session=session, server=server, **fields)
        return answer

    def close_session(self, session: Session) -> None:
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        for rid, inflight in list(session.inflight.items()):
            if inflight.task is not None and not inflight.task.done():
                inflight.task.cancel()
            self._cancel_upstream(inflight, f"session {session.id[:8]} closed")
            session.inflight.pop(rid, None)
        for req in session.server_requests.values():
            upstream = self.servers.get(req.server)
            if upstream is not None:
                self.spawn(upstream.respond(error(req.upstream_id, ErrorCode.INTERNAL_ERROR,
                                                  "the client session closed")))
        session.server_requests.clear()

    # ------------------------------------------------------------------ client -> gateway

    def _tapped(self, session: Session, emit: Emit) -> Emit:
        async def emit_and_tap(msg: Message) -> None:
            self.tap(session, "out", msg)
            await emit(msg)

        return emit_and_tap

    def tap(self, session: Session, direction: str, msg: Message) -> None:
        """Show one message to the taps (forensic capture): direction "in" (client to gateway) or "out"."""
        for tap in self.taps:
            try:
                tap(session, direction, msg)
            except Exception:
                log.exception("tap failed")

    async def handle(self, session: Session, msg: Message, emit: Emit | None = None) -> Message | None:
        """Handle one message from a client; returns the response to a request, else None."""
        try:
            kind = classify(msg)
        except ProtocolError as exc:
            if self.taps:
                self.tap(session, "in", msg)
            await self.refused(msg, exc.code, exc.message, session=session, server=session.server)
            return exc.to_message()
        if self.taps and kind != "request":
            self.tap(session, "in", msg)
        if kind == "request":
            return await self._request(session, msg, emit, 0)
        if kind == "notification":
            if not msg["method"].startswith("notifications/"):
                # A request's method without an id (`tools/call` as a notification) would reach the server
                # outside the pipeline: no policy decision, no ledger row. It is refused, and loudly.
                text = f"{msg['method']} is a request and needs an id; only notifications/* may come without one"
                await self.refused(msg, ErrorCode.INVALID_REQUEST, text, session=session, server=session.server)
                return error(None, ErrorCode.INVALID_REQUEST, text)
            await self._client_notification(session, msg)
        else:
            await self._client_response(session, msg)
        return None

    async def handle_request(self, session: Session, msg: Message, emit: Emit | None = None,
                             bytes_in: int = 0) -> Message | None:
        """Serve one client request (checked to be one); returns the answer, or None if cancelled."""
        try:
            kind = classify(msg)
        except ProtocolError as exc:
            if self.taps:
                self.tap(session, "in", msg)
            await self.refused(msg, exc.code, exc.message, session=session, server=session.server)
            return exc.to_message()
        if kind != "request":
            return error(None, ErrorCode.INVALID_REQUEST, "expected a request")
        return await self._request(session, msg, emit, bytes_in)

    async def _request(self, session: Session, msg: Message, emit: Emit | None, bytes_in: int) -> Message | None:
        if self.taps:
            self.tap(session, "in", msg)
            if emit is not None:
                emit = self._tapped(session, emit)
        params = msg.get("params") or {}
        ctx = RequestContext(self, session, msg, msg["method"], msg["id"], params, emit=emit, bytes_in=bytes_in)
        task = asyncio.current_task()
        session.inflight[ctx.id] = Inflight(server=None, task=task)
        try:
            try:
                self._route(ctx)
            except ProtocolError as exc:
                ctx.outcome = "rejected"
                ctx.error_message = exc.message
                ctx.response = error(ctx.id, exc.code, exc.message, exc.data)
                return ctx.response
            session.inflight[ctx.id].server = ctx.server
            response = await self.pipeline.run(ctx, self._dispatch)
            if response is not None:
                # What the server answered, in a clean envelope and masked (ServerMessages.answer).
                response = ctx.response = self.messages.answer(ctx, response)
            return response
        except asyncio.CancelledError:
            ctx.outcome = "cancelled"
            raise
        finally:
            session.inflight.pop(ctx.id, None)
            if ctx.method == "tools/call":
                self._count_call(ctx.outcome)
            if ctx.response is not None and self.taps:
                self.tap(session, "out", ctx.response)
            await self.pipeline.complete(ctx)

    def _route(self, ctx: RequestContext) -> None:
        """Resolve which upstream a request goes to, and the name it knows the target by."""
        session, method, params = ctx.session, ctx.method, ctx.params
        if method == "logging/setLevel":
            # Remembered for every session, forwarded or answered here: the server's unsolicited log
            # lines go to the sessions that asked for logs (on_upstream_notification).
            level = params.get("level")
            session.log_level = str(level) if level else None
        if method.startswith("notifications/"):
            # A notification's name sent as a request would reach the server as one (roots/list_changed
            # with an id): what the gateway does with a client's notifications applies to it either way.
            raise ProtocolError(ErrorCode.INVALID_REQUEST, f"{method} is a notification: it takes no id", ctx.id)
        if method not in ROUTED:
            ctx.server = session.server if method not in _ALWAYS_LOCAL else None
            return
        if method in ("tools/call", "prompts/get"):
            name = params.get("name")
            if not isinstance(name, str) or not name:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{method} needs a string 'name'", ctx.id)
            ctx.server, ctx.target = self._split(session, name, ctx.id)
        elif method == "completion/complete":
            given = params.get("ref")
            ref: dict[str, Any] = given if isinstance(given, dict) else {}
            if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
                ctx.server, ctx.target = self._split(session, ref["name"], ctx.id)
            elif isinstance(ref.get("uri"), str):
                ctx.target = ref["uri"]
                ctx.server = session.server or resource_owner(ref["uri"], self.servers)
            else:
                ctx.server = session.server
            if ctx.server is None:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, "completion reference matches no server", ctx.id)
        else:
            uri = params.get("uri")
            if not isinstance(uri, str) or not uri:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{method} needs a string 'uri'", ctx.id)
            ctx.target = uri
            ctx.server = session.server or resource_owner(uri, self.servers)
            if ctx.server is None:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, f"no server offers resource {uri!r}", ctx.id,
                                    {"uri": uri})
        if ctx.server not in self.servers:
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {ctx.server!r}", ctx.id)

    def _split(self, session: Session, name: str, rid: RequestId) -> tuple[str, str]:
        if session.server is not None:
            return session.server, name
        parts = split(name)
        if parts is None:
            raise ProtocolError(ErrorCode.INVALID_PARAMS,
                                f"{name!r} is not a server__name; this endpoint aggregates several servers", rid)
        if parts[0] not in self.servers:
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {parts[0]!r}", rid)
        return parts

    async def _dispatch(self, ctx: RequestContext) -> Message | None:
        local = _LOCAL.get(ctx.method)
        if local is not None and (ctx.session.aggregated or ctx.method in _ALWAYS_LOCAL):
            return await local(self, ctx)
        if ctx.server is None:
            if local is not None:
                return await local(self, ctx)
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {ctx.method}", ctx.id)
        return await self.forward(ctx)

    async def forward(self, ctx: RequestContext, params: dict[str, Any] | None = None) -> Message | None:
        """Send the request to its upstream and return the answer under the client's id."""
        assert ctx.server is not None
        upstream = self.servers[ctx.server]
        breaker = upstream.breaker
        timeout = (ctx.timeout_ms or self.policy.current.default_timeout_ms) / 1000
        if upstream.state != "ready" and not await upstream.wait_ready(min(self.options.ready_timeout_s, timeout)):
            if upstream.state != "starting":
                breaker.failure()  # a server that is not there fails fast once its circuit opens
            raise UpstreamError(f"upstream {upstream.name!r} is not available ({upstream.state}: "
                                f"{upstream.last_error})", "unavailable")
        if params is None:
            params = ctx.params
            if ctx.method in ("tools/call", "prompts/get") and params.get("name") != ctx.target:
                params = {**params, "name": ctx.target}
            elif ctx.method == "completion/complete" and ctx.session.aggregated:
                ref = params.get("ref")
                if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
                    params = {**params, "ref": {**ref, "name": ctx.target}}
        meta = params.get("_meta")
        if meta.__class__ is dict and CLIENT_CAPABILITIES_META in meta:
            params = self.messages.own_capabilities(upstream.name, params)
        inflight = ctx.session.inflight.get(ctx.id)
        try:
            response = await upstream.request(ctx.method, params, timeout=timeout, session_id=ctx.session.id,
                                              downstream_id=ctx.id, emit=ctx.emit,
                                              on_sent=(lambda uid: setattr(inflight, "upstream_id", uid))
                                              if inflight else None)
        except UpstreamError as exc:
            # A crash is counted once, when the connection is lost (UpstreamServer._on_closed),
            # not once more for every call that was in flight; a shutdown is no failure.
            if exc.reason not in ("exited", "stopped"):
                breaker.failure()
            raise
        except asyncio.CancelledError:
            if inflight is not None and inflight.upstream_id is not None:
                self.spawn(upstream.cancel(inflight.upstream_id, "client cancelled"))
            raise
        breaker.success()
        response = dict(response)
        response["id"] = ctx.id
        if "result" in response:
            self._after_forward(ctx, upstream, response)
        return response

    def _after_forward(self, ctx: RequestContext, upstream: UpstreamServer, response: Message) -> None:
        """Keep the catalog and subscriptions in step with what passed through."""
        body = response["result"]
        if not isinstance(body, dict):
            return
        if ctx.method == "tools/list" and isinstance(body.get("tools"), list):
            upstream.catalog.tools.update({t["name"]: t for t in body["tools"]
                                           if isinstance(t, dict) and isinstance(t.get("name"), str)})
        elif ctx.method == "prompts/list" and isinstance(body.get("prompts"), list):
            upstream.catalog.prompts.update({p["name"]: p for p in body["prompts"]
                                             if isinstance(p, dict) and isinstance(p.get("name"), str)})
        elif ctx.method == "resources/subscribe":
            ctx.session.subscriptions.add(ctx.target)
        elif ctx.method == "resources/unsubscribe":
            ctx.session.subscriptions.discard(ctx.target)

    def _cancel_upstream(self, inflight: Inflight, reason: str) -> None:
        if inflight.server and inflight.upstream_id is not None and inflight.server in self.servers:
            self.spawn(self.servers[inflight.server].cancel(inflight.upstream_id, reason))
            inflight.upstream_id = None  # told once: the cancelled task must not tell it again

    async def _client_notification(self, session: Session, msg: Message) -> None:
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "notifications/initialized":
            session.initialized = True
        elif method == "notifications/cancelled":
            rid = params.get("requestId")
            inflight = session.inflight.get(rid) if isinstance(rid, int | str) else None
            if inflight is not None:
                self._cancel_upstream(inflight, str(params.get("reason") or "cancelled by client"))
                if inflight.task is not None:
                    inflight.task.cancel()
        elif method == "notifications/roots/list_changed":
            await self.messages.client_roots_changed(session, msg)
        elif method in CLIENT_NOTIFICATIONS and session.server is not None and session.server in self.servers:
            # Progress of a server's request to this client passes through; anything else a client
            # announces would reconfigure a server every session shares.
            await self.servers[session.server].notify(method, params or None)
        else:
            log.debug("session %s: %s not forwarded", session.id[:8], method)

    async def _client_response(self, session: Session, msg: Message) -> None:
        rid = msg.get("id")
        req = session.server_requests.pop(rid, None) if isinstance(rid, int | str) else None
        if req is None:
            log.warning("session %s answered an unknown request id %r", session.id[:8], rid)
            return
        upstream = self.servers.get(req.server)
        if upstream is not None:
            answer = dict(msg)
            answer["id"] = req.upstream_id
            refused = self._answer_refused(session, answer)
            if refused is not None:
                log.warning("[%s] %s answer of session %s withheld: %s", upstream.name, req.method,
                            session.id[:8], refused)
                answer = error(req.upstream_id, ErrorCode.BLOCKED, "Blocked by mcpwall: " + refused,
                               {"reasons": [refused]})
            await upstream.respond(answer)

    def _answer_refused(self, session: Session, answer: Message) -> str | None:
        """The request-side checks that apply to a client's answer to a server (sampling output,
        elicited input): a decoy credential, or a secret the session was shown, must not reach
        the server this way either."""
        body = answer.get("result", answer.get("error"))
        why = self._tripwire.tripped(body) if self._tripwire is not None else None
        always = why is not None and self._tripwire.config.blockInAudit  # a decoy blocks in audit mode too
        if why is None and self._dlp is not None:
            why = self._dlp.exfiltrating(session.id, body)
        if why is not None and not always and self.policy.current.mode != "enforce":
            log.warning("AUDIT MODE: a client's answer to a server let through although %s", why)
            return None  # recorded (the log line), as audit mode does for a call
        return why

    def _mask(self, session_id: str | None, msg: Message) -> Message:
        """A server's own message to a client, with secrets masked (DLP), as results are."""
        return self.messages.mask(session_id or "", msg)

    # ------------------------------------------------------------------ upstream -> clients

    def _target_session(self, upstream: UpstreamServer, pending: Pending | None,
                        capability: str | None = None) -> tuple[Session, Emit | None] | None:
        if pending is not None:
            # Attributed: that request's session or nobody (it may have closed meanwhile).
            session = self.sessions.get(pending.session_id or "")
            if session is None or (capability is not None and not session.supports(capability)):
                return None
            return session, pending.emit
        # Unattributed (a stdio upstream never says which request a message belongs to): only
        # when exactly one session has requests in flight to this server is it certainly that
        # session's. Guessing among several, or asking an idle one, would show one client's
        # prompt or arguments to another and give its answer to the wrong caller.
        owner = self._only_caller(upstream)
        if owner is None or owner is _SEVERAL or (capability is not None and not owner[0].supports(capability)):
            return None
        return owner

    def _only_caller(self, upstream: UpstreamServer) -> tuple[Session, Emit | None] | None:
        """The one session with requests in flight to `upstream` (and its newest request's emit);
        None when no session has any (the gateway's own requests do not count); `_SEVERAL` when
        more than one has."""
        found: tuple[Session, Emit | None] | None = None
        for p in upstream.pending.values():
            session = self.sessions.get(p.session_id or "")
            if session is None:
                continue
            if found is not None and found[0] is not session:
                return _SEVERAL
            found = (session, p.emit)
        return found

    def on_upstream_request(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        self.spawn(self._upstream_request(upstream, msg, pending))

    async def _upstream_request(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        method, uid = msg["method"], msg["id"]
        if method == "ping":
            await upstream.respond(result(uid, {}))
            return
        if method == "roots/list":
            # Never a client's answer: the upstream is shared, and its roots are its configuration's.
            await self.messages.answer_roots(upstream, msg, pending)
            return
        if method == "sampling/createMessage" and not self.policy.current.allow_sampling:
            log.warning("[%s] sampling/createMessage refused: allowSampling is false", upstream.name)
            await upstream.respond(error(uid, ErrorCode.BLOCKED, "Blocked by mcpwall: sampling is disabled by policy",
                                         {"reasons": ["allowSampling: false"]}))
            return
        target = self._target_session(upstream, pending, _CAPABILITY_FOR.get(method))
        if target is None:
            log.warning("[%s] %s refused: no single calling client that declared it could be told apart",
                        upstream.name, method)
            await upstream.respond(error(uid, ErrorCode.METHOD_NOT_FOUND,
                                         f"mcpwall cannot route {method}: the calling client did not declare it, "
                                         "or requests of several clients are in flight to this server"))
            return
        session, emit = target
        downstream_id = session.next_id()
        session.server_requests[downstream_id] = ServerRequest(upstream.name, uid, method)
        delivered = await self.messages.send(session.id, session, emit, msg, rid=downstream_id)
        if not delivered and session.send is None and session.kind == "plain":
            session.server_requests.pop(downstream_id, None)
            await upstream.respond(error(uid, ErrorCode.METHOD_NOT_FOUND, f"client cannot receive {method}"))

    def on_upstream_notification(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        method = msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert params is not None
        if method == "notifications/progress":
            entry = upstream.progress.get(str(params.get("progressToken")))
            if entry is None:
                return
            self.spawn(self._deliver(entry.session_id, entry.emit, msg, params={"progressToken": entry.progress_token}))
        elif method in ("notifications/tools/list_changed", "notifications/prompts/list_changed",
                        "notifications/resources/list_changed"):
            self.spawn(self._list_changed(upstream, method))
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            for s in list(self.sessions.values()):
                if uri in s.subscriptions and s.server in (None, upstream.name):
                    self.spawn(self.messages.send(s.id, s, None, msg))
        elif method == "notifications/cancelled":
            rid = params.get("requestId")
            for s in list(self.sessions.values()):
                for did, req in list(s.server_requests.items()):
                    if req.server == upstream.name and req.upstream_id == rid:
                        s.server_requests.pop(did, None)
                        self.spawn(self.messages.send(s.id, s, None, msg, params={"requestId": did}))
        elif pending is not None:
            self.spawn(self._deliver(pending.session_id, pending.emit, msg))
        elif (owner := self._only_caller(upstream)) is not None:
            # Sent while clients' requests are in flight: it may carry one caller's data (a log
            # line with its arguments), so it goes to that caller only, and nowhere when several call.
            if owner is _SEVERAL:
                log.debug("[%s] %s dropped: requests of several clients in flight", upstream.name, method)
            else:
                self.spawn(self._deliver(owner[0].id, owner[1], msg))
        else:
            # Nothing in flight: the server speaks on its own (a periodic log line). A lone session
            # (`wrap`, `--stdio`) gets it; among several, log lines go to those that asked for logs.
            listeners = [s for s in self.sessions.values() if s.server in (None, upstream.name) and s.kind != "plain"]
            for s in listeners:
                if method != "notifications/message" or s.log_level is not None or len(listeners) == 1:
                    self.spawn(self.messages.send(s.id, s, None, msg))

    async def _deliver(self, session_id: str | None, emit: Emit | None, msg: Message, **changes: Any) -> None:
        """A server's message to the session `session_id` (on `emit` when it works), through the one exit."""
        await self.messages.send(session_id or "", self.sessions.get(session_id or ""), emit, msg, **changes)

    async def _list_changed(self, upstream: UpstreamServer, method: str) -> None:
        # Coalesce bursts: while a refresh runs, further notices only ask for one more.
        key = (upstream.name, method)
        if key in self._refreshing:
            self._refreshing[key] = True
            return
        self._refreshing[key] = False
        try:
            while True:
                with contextlib.suppress(UpstreamError):
                    await upstream.refresh_catalog()
                if not self._refreshing[key]:
                    break
                self._refreshing[key] = False
        finally:
            del self._refreshing[key]
        hook = getattr(self, "on_catalog_changed", None)
        if callable(hook):
            hook(upstream)
        for s in list(self.sessions.values()):
            if s.server in (None, upstream.name) and s.kind != "plain" and s.initialized:
                self.spawn(self.messages.send(s.id, s, None, notification(method)))

    def upstream_restarted(self, upstream: UpstreamServer) -> None:
        for method in ("notifications/tools/list_changed",):
            self.spawn(self._list_changed(upstream, method))

    # ------------------------------------------------------------------ status

    def _count_call(self, outcome: str | None) -> None:
        counts = self.calls
        counts["processed"] += 1
        if outcome in ("deny", "ask-denied"):  # both answered -32001
            counts["blocked"] += 1
        elif outcome in ("error", "failed", "timeout"):
            counts["failed"] += 1

    def status(self) -> dict[str, Any]:
        return {
            "calls": dict(self.calls),
            "servers": {name: s.status() for name, s in self.servers.items()},
            "sessions": len(self.sessions),
            "collisions": collisions(self.servers.values()).as_dict(),
            "policy": self.policy.status(),
            # services beside the stages, as /health showed them when they rode the stage lifecycle
            "stages": {**{s.name: s.status() for s in self.pipeline.stages},
                       **{s.name: s.status() for s in self.services}},
            "stage_seconds": {k: round(v, 6) for k, v in self.pipeline.timings.items()},
        }


# ---------------------------------------------------------------------- local methods

async def _initialize(gw: Gateway, ctx: RequestContext) -> Message:
    session, params = ctx.session, ctx.params
    info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
    assert info is not None
    session.client_name = str(info.get("name", ""))[:200]
    session.client_version = str(info.get("version", ""))[:100]
    caps = params.get("capabilities")
    session.capabilities = keep_capabilities(caps)  # only what the gateway reads, bounded (issue 22)
    asked = params.get("protocolVersion")
    version = asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
    session.protocol_version = version
    if session.server is not None:
        upstream = gw.servers[session.server]
        if not await upstream.wait_ready(gw.options.ready_timeout_s, until_failure=True):
            return error(ctx.id, ErrorCode.UPSTREAM_ERROR,
                         f"upstream {upstream.name!r} is not available: {upstream.last_error}",
                         {"server": upstream.name, "reason": "unavailable"})
        body = dict(upstream.init_result)
        body["protocolVersion"] = version
        return result(ctx.id, body)
    caps_out: dict[str, Any] = {"tools": {"listChanged": True}, "logging": {}}
    upstream_caps = [s.capabilities for s in gw.servers.values()]
    if any("resources" in c for c in upstream_caps) or not upstream_caps:
        caps_out["resources"] = {"subscribe": True, "listChanged": True}
    if any("prompts" in c for c in upstream_caps) or not upstream_caps:
        caps_out["prompts"] = {"listChanged": True}
    if any("completions" in c for c in upstream_caps):
        caps_out["completions"] = {}
    names = ", ".join(gw.servers) or "none"
    return result(ctx.id, {
        "protocolVersion": version,
        "capabilities": caps_out,
        "serverInfo": {"name": "mcpwall", "version": __version__},
        "instructions": f"mcpwall gateway. Tools and prompts are named server__name. Servers: {names}.",
    })


async def _ping(gw: Gateway, ctx: RequestContext) -> Message:
    return result(ctx.id, {})


def _known(s: UpstreamServer, key: str) -> list[dict[str, Any]]:
    """What the server listed last time (its catalog), for when it cannot list now."""
    known: Any = {"tools": s.catalog.tools, "prompts": s.catalog.prompts, "resources": s.catalog.resources,
                  "resourceTemplates": s.catalog.templates}[key]
    return list(known.values()) if isinstance(known, dict) else list(known)


async def _list(gw: Gateway, ctx: RequestContext) -> Message:
    """Merged lists from every ready server (each fetched fresh, every page)."""
    key = _LIST_KEYS[ctx.method]
    servers = [s for s in gw.servers.values() if s.state == "ready"]
    timeout = (ctx.timeout_ms or gw.policy.current.default_timeout_ms) / 1000

    async def one(s: UpstreamServer) -> list[dict[str, Any]]:
        if key == "tools" and "tools" not in s.capabilities:
            return []
        if key != "tools" and key.startswith(("resource", "prompt")) and \
                ("resources" if key.startswith("resource") else "prompts") not in s.capabilities:
            return []
        # The request's own timeout (the policy's), and the server's circuit breaker: a server
        # that hangs on lists must not hold every client's merged list for long, again and again.
        # When it fails, its last known items stand in, so its tools do not silently vanish.
        if not s.breaker.allow():
            log.warning("[%s] %s skipped: circuit open; listing its last known items", s.name, ctx.method)
            items = _known(s, key)
        else:
            alive = False
            try:
                items = await s._list_all(ctx.method, key, timeout)
                alive = True
            except UpstreamError as exc:
                alive = exc.reason == "error"  # an error answer is an answer; silence or a crash is not
                log.warning("[%s] %s failed: %s; listing its last known items", s.name, ctx.method, exc)
                items = _known(s, key)
            finally:
                # Always settled, so a half-open breaker's probe never stays taken (cancelled too).
                if alive:
                    s.breaker.success()
                else:
                    s.breaker.failure()
        if key == "tools":
            s.catalog.tools = {t["name"]: t for t in items if isinstance(t.get("name"), str)}
        elif key == "prompts":
            s.catalog.prompts = {p["name"]: p for p in items if isinstance(p.get("name"), str)}
        elif key == "resources":
            s.catalog.resources = items
        else:
            s.catalog.templates = items
        if key in ("tools", "prompts"):
            return [{**i, "name": qualify(s.name, i["name"])} for i in items if isinstance(i.get("name"), str)]
        return items

    lists = await asyncio.gather(*(one(s) for s in servers))
    merged: list[dict[str, Any]] = []
    seen_uris: set[str] = set()
    for items in lists:
        for item in items:
            uri = item.get("uri") or item.get("uriTemplate")
            if key.startswith("resource") and isinstance(uri, str):
                if uri in seen_uris:
                    continue  # a collision: the first server in configuration order keeps it
                seen_uris.add(uri)
            merged.append(item)
    return result(ctx.id, {key: merged})


async def _set_level(gw: Gateway, ctx: RequestContext) -> Message:
    level = ctx.params.get("level")
    targets = [gw.servers[ctx.session.server]] if ctx.session.server else list(gw.servers.values())
    for s in targets:
        if s.state == "ready" and "logging" in s.capabilities:
            with contextlib.suppress(UpstreamError):
                await s.request("logging/setLevel", {"level": level}, timeout=10.0)
    return result(ctx.id, {})


async def _discover(gw: Gateway, ctx: RequestContext) -> Message:
    # We speak the initialize-handshake era to clients; clients fall back on -32601.
    return error(ctx.id, ErrorCode.METHOD_NOT_FOUND, "Method not found: server/discover")


_Local = Callable[[Gateway, RequestContext], Awaitable[Message]]
_LOCAL: dict[str, _Local] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _list,
    "prompts/list": _list,
    "resources/list": _list,
    "resources/templates/list": _list,
    "logging/setLevel": _set_level,
    "server/discover": _discover,
}
#: answered by the gateway even on single-server sessions
_ALWAYS_LOCAL = frozenset({"initialize", "ping", "server/discover"})


__all__ = ["ROUTED", "Emit", "Gateway", "GatewayOptions"]
