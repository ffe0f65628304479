"""Routing a client's request: which upstream it goes to, under which name, and the forward.

`route` resolves the server and the name the upstream knows the target by
(`server__tool` on an aggregated session, the URI's owner for resources);
`dispatch` answers locally (`_local.py`) or forwards; `forward` sends the
request upstream with the gateway's own id, its timeout and circuit breaker,
and returns the answer under the client's id.

A request of the stateless revision (2026-07-28: its `_meta` names its protocol
version, `protocol.modern`) is admitted here, before any stage: its envelope is
checked (invalid params, UnsupportedProtocolVersionError), a method the revision
removed is unknown, and the session it arrived on learns the client's version
and name unless an `initialize` already told them. It then takes the same
pipeline as any request. The upstreams speak the handshake era (the gateway
opened them with `initialize`), so the envelope is taken out of what is
forwarded, and an upstream's error codes that 2026-07-28 retired or reserved
are translated on the way back.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Emit, Session
from mcpwall.protocol import SUPPORTED_VERSIONS, ErrorCode, Message, ProtocolError, RequestId
from mcpwall.protocol.modern import (
    CHECKED,
    LOG_FLOORS,
    PROTOCOL_VERSION_META_KEY,
    REMOVED,
    envelope,
    filtered,
    legacy_params,
    upstream_error,
)
from mcpwall.protocol.naming import resource_owner, split
from mcpwall.proxy._local import ALWAYS_LOCAL, LOCAL
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._server_messages import CLIENT_CAPABILITIES_META
from mcpwall.proxy._tasks import TASK_METHODS, Tasks
from mcpwall.proxy._upstream import UpstreamServer
from mcpwall.stages import RequestContext
from mcpwall.transports._principal import acting_for

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

def _pushing(session: Session) -> Emit:
    async def push(msg: Message) -> None:
        await session.push(msg)

    return push


#: what a 2026-07-28 request may not call: the methods it removed, and the handshake
_NOT_MODERN = REMOVED | {"initialize"}

#: (the message, its server, the tool's name there) of a tools/call like its client's last one that passed
#: the door (`_passed`; set by the HTTP frontend): routed as that one was. The route of a tools/call is
#: read from its endpoint's server (the session's) and its name alone, both the same as then, so only the
#: server's presence is looked at again. A slot holding the message keeps its identity from being reused.
REMEMBERED: list[Any] = [None, None, None]

#: Methods routed to the upstream that owns the named tool, prompt or resource.
ROUTED = frozenset({"tools/call", "prompts/get", "resources/read", "resources/subscribe",
                    "resources/unsubscribe", "completion/complete"})


class Router:
    """One gateway's request routing (`Gateway._request` calls `route`, then the pipeline `dispatch`)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        #: task ids mapped per server and bound to their principal; task results policed (_tasks.py)
        self.tasks = Tasks(gateway)

    def route(self, ctx: RequestContext) -> None:
        """Resolve which upstream a request goes to, and the name it knows the target by."""
        session, method, params = ctx.session, ctx.method, ctx.params
        meta = params.get("_meta")
        if type(meta) is dict and PROTOCOL_VERSION_META_KEY in meta:
            # A 2026-07-28 request: its envelope checked (raises ProtocolError), and its session told who
            # speaks, unless the session was opened by `initialize` (that client's word stands). (Here,
            # not in a helper of its own: every modern request passes.)
            # checked by the HTTP frontend already (`envelope_at`, inline), or here
            env = CHECKED[1] if CHECKED[0] is meta else envelope(ctx.id, params)
            if method in _NOT_MODERN:
                raise ProtocolError(ErrorCode.METHOD_NOT_FOUND,
                                    f"Method not found: {method} (removed in {env.version})", ctx.id)
            # Log lines reach a modern request only at the level its `_meta` asked for, else none
            # (`log_filter`, inline).
            ctx.emit = partial(filtered, ctx.emit or _pushing(session), LOG_FLOORS[env.log_level])
            if session.protocol_version not in SUPPORTED_VERSIONS:
                session.protocol_version = env.version
                if env.client_name:
                    session.client_name, session.client_version = env.client_name, env.client_version
            if REMEMBERED[0] is ctx.message and REMEMBERED[1] in self.gw.servers:
                ctx.server, ctx.target = REMEMBERED[1], REMEMBERED[2]
                return
        if method == "logging/setLevel":
            # Remembered for every session, forwarded or answered here: the server's unsolicited log
            # lines go to the sessions that asked for logs (on_upstream_notification).
            level = params.get("level")
            session.log_level = str(level) if level else None
        if method.startswith("notifications/"):
            # A notification's name sent as a request would reach the server as one (roots/list_changed
            # with an id): what the gateway does with a client's notifications applies to it either way.
            raise ProtocolError(ErrorCode.INVALID_REQUEST, f"{method} is a notification: it takes no id", ctx.id)
        if method in TASK_METHODS:
            self.tasks.route(ctx)
            return
        if method not in ROUTED:
            ctx.server = session.server if method not in ALWAYS_LOCAL else None
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
                ctx.server = session.server or resource_owner(ref["uri"], self.gw.servers)
            else:
                ctx.server = session.server
            if ctx.server is None:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, "completion reference matches no server", ctx.id)
        else:
            uri = params.get("uri")
            if not isinstance(uri, str) or not uri:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{method} needs a string 'uri'", ctx.id)
            ctx.target = uri
            ctx.server = session.server or resource_owner(uri, self.gw.servers)
            if ctx.server is None:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, f"no server offers resource {uri!r}", ctx.id,
                                    {"uri": uri})
        if ctx.server not in self.gw.servers:
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {ctx.server!r}", ctx.id)

    def _split(self, session: Session, name: str, rid: RequestId) -> tuple[str, str]:
        if session.server is not None:
            return session.server, name
        parts = split(name)
        if parts is None:
            raise ProtocolError(ErrorCode.INVALID_PARAMS,
                                f"{name!r} is not a server__name; this endpoint aggregates several servers", rid)
        if parts[0] not in self.gw.servers:
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {parts[0]!r}", rid)
        return parts

    async def dispatch(self, ctx: RequestContext) -> Message | None:
        if ctx.method in TASK_METHODS:
            return await self.tasks.dispatch(ctx)
        local = LOCAL.get(ctx.method)
        if local is not None and (ctx.session.aggregated or ctx.method in ALWAYS_LOCAL):
            return await local(self.gw, ctx)
        if ctx.server is None:
            if local is not None:
                return await local(self.gw, ctx)
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {ctx.method}", ctx.id)
        if ctx.method == "resources/unsubscribe" and self.gw.traffic.listen.kept(ctx):
            return {"jsonrpc": "2.0", "id": ctx.id, "result": {}}  # others still need the server's updates
        return await self.forward(ctx)

    async def forward(self, ctx: RequestContext, params: dict[str, Any] | None = None) -> Message | None:
        """Send the request to its upstream and return the answer under the client's id."""
        assert ctx.server is not None
        upstream = self.gw.servers[ctx.server]
        breaker = upstream.breaker
        timeout = (ctx.timeout_ms or self.gw.policy.current.default_timeout_ms) / 1000
        if upstream.state != "ready" and not await upstream.wait_ready(min(self.gw.options.ready_timeout_s, timeout)):
            if upstream.state != "starting":
                breaker.failure()  # a server that is not there fails fast once its circuit opens
            raise UpstreamError(f"upstream {upstream.name!r} is not available ({upstream.state}: "
                                f"{upstream.last_error})", "unavailable")
        renamed = False  # (`params` a copy of this call's own: the envelope is taken out of it in place)
        if params is None:
            params = ctx.params
            if ctx.method in ("tools/call", "prompts/get") and params.get("name") != ctx.target:
                params, renamed = {**params, "name": ctx.target}, True
            elif ctx.method == "completion/complete" and ctx.session.aggregated:
                ref = params.get("ref")
                if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
                    params = {**params, "ref": {**ref, "name": ctx.target}}
        meta = params.get("_meta")
        modern = type(meta) is dict and PROTOCOL_VERSION_META_KEY in meta
        if modern and upstream.era != "modern":
            # a handshake-era upstream (a modern one gets the gateway's envelope)
            params = legacy_params(params, renamed)
        elif not modern and type(meta) is dict and CLIENT_CAPABILITIES_META in meta:
            params = self.gw.messages.own_capabilities(upstream.name, params)
        if ctx.method == "tools/call":
            params = self.tasks.outbound(ctx, upstream, params)
        inflight = ctx.session.inflight.get(ctx.id)
        try:
            with acting_for(ctx.session.principal):  # whose upstream OAuth grant it carries (mcpwall.oauth)
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
                self.gw.spawn(upstream.cancel(inflight.upstream_id, "client cancelled"))
            raise
        breaker.success()
        response = dict(response)
        response["id"] = ctx.id
        if "result" in response:
            self._after_forward(ctx, upstream, response)
            if ctx.method == "tools/call":
                response = self.tasks.created(ctx, upstream, response)
        elif modern and upstream.era != "modern":  # a modern upstream's codes already mean what 2026-07-28 says
            response = upstream_error(response, upstream.name)
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


__all__ = ["REMEMBERED", "ROUTED", "Router"]
