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
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import (
    Emit,
    Inflight,
    PolicyStore,
    Service,
    Session,
    Tap,
)
from mcpwall.policy import ServerSpec
from mcpwall.protocol import ErrorCode, Message, ProtocolError, classify, error
from mcpwall.protocol.modern import PROTOCOL_VERSION_META_KEY, finish
from mcpwall.proxy._aggregate import collisions
from mcpwall.proxy._pipeline import Pipeline
from mcpwall.proxy._refusals import Refusals
from mcpwall.proxy._requests import Pending
from mcpwall.proxy._routing import ROUTED, Router
from mcpwall.proxy._server_messages import CLIENT_NOTIFICATIONS, ServerMessages
from mcpwall.proxy._server_traffic import ServerTraffic
from mcpwall.proxy._traced import TracedPipeline
from mcpwall.proxy._upstream import UpstreamServer
from mcpwall.stages import Components, RequestContext, Stage
from mcpwall.state import StateStore

if TYPE_CHECKING:
    from mcpwall.approvals import Approvals
    from mcpwall.ledger import Ledger
    from mcpwall.notify import Notifier

log = logging.getLogger("mcpwall.gateway")


@dataclass
class GatewayOptions:
    ready_timeout_s: float = 90.0
    #: how long `start` waits for the upstreams' handshakes before serving (the rest finish later)
    startup_wait_s: float = 10.0
    allow_client_elicitation_approval: bool = False


class Gateway:
    """Owns the upstream servers, the sessions and the pipeline."""

    def __init__(self, servers: Mapping[str, ServerSpec], policy: PolicyStore, stages: Sequence[Stage],
                 options: GatewayOptions | None = None, components: Components | None = None) -> None:
        self.policy = policy
        self.options = options or GatewayOptions()
        tracing = components.tracing if components is not None else None
        # Chosen once: without traces the plain pipeline runs, with no check per call or stage.
        self.pipeline = Pipeline(stages) if tracing is None else TracedPipeline(stages, tracing)
        self.servers: dict[str, UpstreamServer] = {
            name: UpstreamServer(name, spec, self) for name, spec in servers.items() if not spec.disabled}
        #: the one exit of server messages to clients (masked), and the gateway's answer to roots/list
        self.messages = ServerMessages(self)
        self.sessions: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        #: `start` has returned: upstreams ready later announce their tools with list_changed
        self._started = False
        #: the parts the stages share, built before them (stages/_components.py): durable state,
        #: ledger, approvals, webhooks, metrics, taps, tool filters, catalog listeners
        self.components = components if components is not None else Components()
        #: Observers of every message in and out of every session (forensic capture, elicitation).
        self.taps: list[Tap] = self.components.taps
        #: tools/call requests that ended since start (answered, refused, cancelled), in `/health`
        #: (what `mcpwall benchmark` reconciles)
        self.calls = {"processed": 0, "blocked": 0, "failed": 0, "unrecorded": 0}
        #: the gateway's parts by responsibility: refusals at the door, request routing,
        #: server-to-client traffic (local methods: _local.py; the one exit: ServerMessages)
        self.refusals = Refusals(self)
        self.router = Router(self)
        self.traffic = ServerTraffic(self)
        #: parts with a lifecycle and no pipeline hook, added by the app builder (`add_service`)
        self.services: list[Service] = [] if tracing is None else [tracing]  # flushed at stop
        if self.components.approvals is not None:
            self.components.approvals.bind(self)  # elicited approvals reach sessions through the gateway
        for stage in stages:
            stage.bind(self)

    # ------------------------------------------------------------------ shared parts (read only)

    @property
    def state(self) -> StateStore:
        """Durable state (pins, honeytokens, approvals): the ledger, a shared Redis, or memory."""
        return self.components.state

    @property
    def ledger(self) -> Ledger | None:
        return self.components.ledger

    @property
    def approvals(self) -> Approvals | None:
        return self.components.approvals

    @property
    def notifier(self) -> Notifier | None:
        return self.components.notifier

    @property
    def metrics_text(self) -> Callable[[], bytes] | None:
        """`GET /metrics`'s body, when the metrics stage is on."""
        metrics = self.components.metrics
        return metrics.render if metrics is not None else None

    @property
    def ui_app(self) -> Any:
        """The dashboard app (`/ui`, `/api/`), when the dashboard service runs with this gateway."""
        return getattr(self.service("dashboard"), "app", None)

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
        spec = self.servers[server].spec if server in self.servers else None
        return {"elicitation": {"form": {}, "url": {}}, **({"sampling": {}} if self.policy.current.allow_sampling else {}),
                **({"roots": {"listChanged": False}} if spec is not None and spec.roots is not None else {})}

    # ------------------------------------------------------------------ sessions

    def open_session(self, kind: str, server: str | None = None, **fields: Any) -> Session:
        session = Session(kind=kind, server=server, **fields)
        session.observer = self.tap
        self.sessions[session.id] = session
        return session

    async def refused(self, msg: Any, code: int, message: str, *, session: Session | None = None,
                      server: str | None = None, **fields: Any) -> None:
        """Record the tools/call requests in `msg` refused before the pipeline (`_refusals.py`)."""
        await self.refusals.refused(msg, code, message, session=session, server=server, **fields)

    async def refused_raw(self, raw: bytes, exc: ProtocolError, *, session: Session | None = None,
                          server: str | None = None, **fields: Any) -> None:
        await self.refusals.refused_raw(raw, exc, session=session, server=server, **fields)

    async def refused_oversized(self, head: bytes, tail: bytes, *, session: Session | None = None,
                                server: str | None = None, **fields: Any) -> Message:
        return await self.refusals.refused_oversized(head, tail, session=session, server=server, **fields)

    def close_session(self, session: Session) -> None:
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        self.traffic.listen.session_closed(session)  # its resource subscriptions no one else holds end
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
            await self.traffic.client_response(session, msg)
        return None

    async def handle_request(self, session: Session, msg: Message, emit: Emit | None = None,
                             bytes_in: int = 0, trace_headers: dict[str, str] | None = None) -> Message | None:
        """Serve one client request (checked to be one); returns the answer, or None if cancelled.
        `trace_headers`: the W3C trace context of the HTTP request that carried it."""
        try:
            kind = classify(msg)
        except ProtocolError as exc:
            if self.taps:
                self.tap(session, "in", msg)
            await self.refused(msg, exc.code, exc.message, session=session, server=session.server)
            return exc.to_message()
        if kind != "request":
            return error(None, ErrorCode.INVALID_REQUEST, "expected a request")
        return await self._request(session, msg, emit, bytes_in, trace_headers)

    async def _request(self, session: Session, msg: Message, emit: Emit | None, bytes_in: int,
                       trace_headers: dict[str, str] | None = None) -> Message | None:
        if self.taps:
            self.tap(session, "in", msg)
            if emit is not None:
                emit = self._tapped(session, emit)
        params = msg.get("params") or {}
        # By position: the compiled class called with keywords from here parses them from a dict (~5,000
        # instructions a call, against ~300)
        ctx = RequestContext(self, session, msg, msg["method"], msg["id"], params, None, "", emit, None, None,
                             bytes_in, trace_headers)
        task = asyncio.current_task()
        session.inflight[ctx.id] = Inflight(None, None, task, ctx)
        try:
            try:
                self.router.route(ctx)
            except ProtocolError as exc:
                ctx.outcome = "rejected"
                ctx.error_message = exc.message
                ctx.response = error(ctx.id, exc.code, exc.message, exc.data)
                return ctx.response
            session.inflight[ctx.id].server = ctx.server
            response = await self.pipeline.run(ctx, self.router.dispatch)
            if response is not None:
                # What the server answered, in a clean envelope and masked (ServerMessages.answer).
                response = ctx.response = self.messages.answer(ctx, response)
                meta = params.get("_meta")  # (`is_modern` inline: every answer passes here)
                if meta.__class__ is dict and PROTOCOL_VERSION_META_KEY in meta and ctx.method != "initialize":
                    response = ctx.response = finish(ctx.method, response)  # 2026-07-28's result shape
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
            if not self.router.tasks.holds(ctx):  # a task's call completes with its result (_tasks.py)
                await self.pipeline.complete(ctx)

    #: `handle_request` of a request its frontend checked as `classify` does (`_mrtr.plainly`, `_passed`)
    handle_checked = _request

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

    # ------------------------------------------------------------------ upstream -> clients (_server_traffic)

    def on_upstream_request(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        self.traffic.on_upstream_request(upstream, msg, pending)

    def on_upstream_notification(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        self.traffic.on_upstream_notification(upstream, msg, pending)

    def upstream_restarted(self, upstream: UpstreamServer) -> None:
        self.traffic.upstream_restarted(upstream)

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


__all__ = ["ROUTED", "Emit", "Gateway", "GatewayOptions"]
