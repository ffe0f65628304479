"""`subscriptions/listen` (MCP 2026-07-28): a modern client's long-lived stream of change notices.

A 2026-07-28 client has no session to receive `list_changed` or `resources/updated` on: it
opens a stream with `subscriptions/listen`, naming the notices it wants (`toolsListChanged`,
`promptsListChanged`, `resourcesListChanged`, `resourceSubscriptions`). The gateway answers
with `notifications/subscriptions/acknowledged` (the subset it honours) and then, on the same
stream, only those notices, each carrying the listen request's id under
`io.modelcontextprotocol/subscriptionId`. The stream ends when the client closes it (HTTP) or
cancels it (`notifications/cancelled`, stdio); nothing is replayed.

What feeds it is what feeds legacy sessions: the upstreams' own notifications. A `list_changed`
makes the gateway refresh that server's catalog and then call its catalog listeners; `ListenHub`
is one of them. For each stream of that server's endpoint (every server's on `/mcp`, one on
`/mcp/{server}`) it works out the list the stream's client would be shown now, after the list
filter (policy, RBAC, pins, poisoning: `listfilter`), and announces a change only when that list
changed. A tool that is denied to the client, or held by a pin, can come, go or change its
description without the client hearing of it, and nothing of the server's notice (its `_meta`)
is passed on. A resource URI is honoured only when the policy would list it to this client and
its server supports subscriptions; the gateway subscribes upstream once per URI, however many
streams want it, and unsubscribes when the last one (and no legacy session) is left.
A `resources/updated` goes to the streams that honoured its URI (or a URI it lies under), masked
like every server message.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.pipeline import RequestContext, Session
from mcpwall.protocol import ErrorCode, Message, ProtocolError, RequestId, error, notification, result
from mcpwall.protocol.modern import is_modern
from mcpwall.protocol.naming import qualify, resource_owner
from mcpwall.proxy._asgi import Receive, Send, answer
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._sse import KEEPALIVE_S, SSE, sse_event

if TYPE_CHECKING:
    from mcpwall.pipeline import UpstreamView
    from mcpwall.proxy._gateway import Gateway
    from mcpwall.proxy._upstream import UpstreamServer

log = logging.getLogger("mcpwall.listen")

SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: filter flag -> (capability and list key, the list method, the notice it asks for)
KINDS: dict[str, tuple[str, str, str]] = {
    "toolsListChanged": ("tools", "tools/list", "notifications/tools/list_changed"),
    "promptsListChanged": ("prompts", "prompts/list", "notifications/prompts/list_changed"),
    "resourcesListChanged": ("resources", "resources/list", "notifications/resources/list_changed"),
}
#: resource URIs one stream may name (each may cost an upstream subscription)
MAX_URIS = 256
_SUBSCRIBE_TIMEOUT_S = 10.0
#: put on a stream's queue when the gateway stops: the stream ends with its graceful close
_END: Message = {"jsonrpc": "2.0", "method": "notifications/subscriptions/ended"}


@dataclass(eq=False)
class Stream:
    """One open listen stream: whose, under which id, what it honoured, what it last showed."""

    session: Session
    sid: RequestId
    #: the list keys it follows: "tools", "prompts", "resources"
    kinds: tuple[str, ...]
    #: resource URI -> the server that offers it
    uris: dict[str, str] = field(default_factory=dict)
    queue: asyncio.Queue[Message] = field(default_factory=asyncio.Queue)
    #: (server, list key) -> digest of the list its client would be shown
    seen: dict[tuple[str, str], bytes] = field(default_factory=dict)
    #: notices queued and not yet sent (a burst of changes is one notice)
    queued: set[str] = field(default_factory=set)

    def stamp(self, method: str, params: dict[str, Any] | None = None) -> Message:
        return notification(method, {**(params or {}), "_meta": {SUBSCRIPTION_ID_META_KEY: self.sid}})

    def put(self, msg: Message, key: str | None = None) -> None:
        if key is not None:
            if key in self.queued:
                return
            self.queued.add(key)
        self.queue.put_nowait(msg)


class ListenHub:
    """One gateway's listen streams (`ServerTraffic.listen`), fed by its catalog refreshes and the
    upstreams' `resources/updated`."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self.streams: set[Stream] = set()
        #: (server, uri) -> streams that hold the gateway's upstream subscription to it
        self._held: dict[tuple[str, str], int] = {}
        #: the gateway is stopping: every stream ends with the spec's graceful close (`close_all`)
        self.closing = False
        #: a 2026-07-28 server's subscribed URIs, and the gateway's own listen that asks for them
        self._followed: dict[str, tuple[frozenset[str], asyncio.Task[None] | None]] = {}
        gateway.components.catalog_listeners.append(self.catalog_changed)

    # ------------------------------------------------------------------ the request

    async def serve(self, ctx: RequestContext) -> Message:
        """Answer a `subscriptions/listen`: acknowledge, then deliver until cancelled."""
        if not is_modern(ctx.params):
            # A legacy client has its session's notifications; the method is 2026-07-28's.
            return error(ctx.id, ErrorCode.METHOD_NOT_FOUND, "Method not found: subscriptions/listen")
        wanted = ctx.params.get("notifications")
        if not isinstance(wanted, dict):
            raise ProtocolError(ErrorCode.INVALID_PARAMS, "subscriptions/listen needs a 'notifications' object",
                                ctx.id)
        uris = wanted.get("resourceSubscriptions") or []
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris) or len(uris) > MAX_URIS:
            raise ProtocolError(ErrorCode.INVALID_PARAMS,
                                f"resourceSubscriptions must be a list of at most {MAX_URIS} URI strings", ctx.id)
        session = ctx.session
        servers = self._servers(session)
        offered = {key for s in servers for key in ("tools", "prompts", "resources") if key in s.capabilities}
        if session.aggregated:
            offered.add("tools")  # the gateway's own list changes as upstreams come and go
        flags = [f for f, (key, _, _) in KINDS.items() if wanted.get(f) is True and key in offered]
        stream = Stream(session, ctx.id, tuple(KINDS[f][0] for f in flags))
        for s in servers:
            for key in stream.kinds:
                stream.seen[(s.name, key)] = await self._digest(stream, s, key)
        honored: dict[str, Any] = {f: True for f in flags}
        self.streams.add(stream)
        try:
            for uri in dict.fromkeys(uris):
                owner = await self._honour(stream, uri)
                if owner is not None:
                    stream.uris[uri] = owner
            if stream.uris:
                honored["resourceSubscriptions"] = list(stream.uris)
            emit = ctx.emit
            assert emit is not None  # a modern request always has one (Router.route)
            ctx.notes["listen"] = {"honored": honored}
            await emit(stream.stamp(ACKNOWLEDGED, {"notifications": honored}))
            if self.closing:
                stream.put(_END)
            while (msg := await stream.queue.get()) is not _END:
                stream.queued.discard(str(msg.get("method")))
                await emit(msg)
            # The spec's graceful close: the listen request's own response, stamped like its notices.
            return result(ctx.id, {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_META_KEY: stream.sid}})
        finally:
            self.streams.discard(stream)
            for uri, owner in stream.uris.items():
                self.gw.spawn(self._release(owner, uri))

    def close_all(self) -> None:
        """The gateway is stopping (before the HTTP server drains its connections, and in
        `Gateway.stop`): every open stream ends with the listen request's response, so its client
        sees a graceful close rather than a dropped stream, and the gateway lets go upstream."""
        self.closing = True
        for stream in self.streams:
            stream.put(_END)
        for _, task in self._followed.values():
            if task is not None:
                task.cancel()

    def _servers(self, session: Session) -> list[UpstreamServer]:
        if session.server is not None:
            found = self.gw.servers.get(session.server)
            return [found] if found is not None else []
        return list(self.gw.servers.values())

    # ------------------------------------------------------------------ list changes

    def catalog_changed(self, upstream: UpstreamView) -> None:
        """A server's catalog was refreshed: tell the streams whose client's view of it changed."""
        if any(s.kinds and s.session.server in (None, upstream.name) for s in self.streams):
            self.gw.spawn(self._announce(self.gw.servers[upstream.name]))

    async def _announce(self, upstream: UpstreamServer) -> None:
        for stream in list(self.streams):
            if stream.session.server not in (None, upstream.name):
                continue
            for key in stream.kinds:
                digest = await self._digest(stream, upstream, key)
                if stream.seen.get((upstream.name, key)) != digest:
                    stream.seen[(upstream.name, key)] = digest
                    method = next(n for k, _, n in KINDS.values() if k == key)
                    stream.put(stream.stamp(method), method)

    async def _digest(self, stream: Stream, upstream: UpstreamServer, key: str) -> bytes:
        """What the stream's client would be shown of `upstream`'s `key` list now, as a digest."""
        items = await self._shown(stream.session, upstream, key, self._listed(stream.session, upstream, key))
        return hashlib.sha256(orjson.dumps(items, option=orjson.OPT_SORT_KEYS, default=str)).digest()

    @staticmethod
    def _listed(session: Session, upstream: UpstreamServer, key: str) -> list[Any]:
        catalog = upstream.catalog
        if key == "resources":
            return list(catalog.resources)
        found = catalog.tools if key == "tools" else catalog.prompts
        if not session.aggregated:
            return list(found.values())
        return [{**item, "name": qualify(upstream.name, name)} for name, item in found.items()]

    async def _shown(self, session: Session, upstream: UpstreamServer, key: str, items: list[Any]) -> list[Any]:
        """`items` after the list filter, as a `<key>/list` answer to this session would carry them."""
        stage = next((s for s in self.gw.pipeline.stages if s.name == "listfilter"), None)
        if stage is None or not items:
            return items
        method = "resources/list" if key == "resources" else f"{key}/list"
        ctx = RequestContext(self.gw, session, {"jsonrpc": "2.0", "id": 0, "method": method}, method, 0, {},
                             server=upstream.name)
        hidden = getattr(stage, "hidden", None)
        shown = await stage.on_response(ctx, result(0, {key: items}))
        if hidden is not None:
            stage.hidden = hidden  # type: ignore[attr-defined]  # a look, not a list a client was sent
        body = shown.get("result")
        return list(body.get(key) or []) if isinstance(body, dict) else []

    # ------------------------------------------------------------------ resource updates

    async def _honour(self, stream: Stream, uri: str) -> str | None:
        """The server whose updates of `uri` this stream will get (subscribed upstream), or None when
        no server behind the endpoint offers it with subscriptions or the client may not see it."""
        session = stream.session
        owner = session.server or resource_owner(uri, self.gw.servers)
        upstream = self.gw.servers.get(owner or "")
        caps = upstream.capabilities.get("resources") if upstream is not None else None
        if upstream is None or not isinstance(caps, dict) or caps.get("subscribe") is not True:
            return None
        if not await self._shown(session, upstream, "resources", [{"uri": uri, "name": uri}]):
            log.info("listen %r: %s not honoured: the policy does not show it to this client", stream.sid, uri)
            return None
        held = self._held.get((upstream.name, uri), 0)
        if held == 0 and not self._legacy_holds(upstream.name, uri):
            try:
                got = await upstream.request("resources/subscribe", {"uri": uri}, timeout=_SUBSCRIBE_TIMEOUT_S)
            except UpstreamError as exc:
                log.info("[%s] resources/subscribe %s failed: %s", upstream.name, uri, exc)
                return None
            if "result" not in got:
                return None
        self._held[(upstream.name, uri)] = held + 1
        return upstream.name

    def _legacy_holds(self, server: str, uri: str, but: Session | None = None) -> bool:
        return any(uri in s.subscriptions and s.server in (None, server) and s is not but
                   for s in self.gw.sessions.values())

    def kept(self, ctx: RequestContext) -> bool:
        """A legacy `resources/unsubscribe` (routed to `ctx.server`): True, and the session lets go
        of the URI here, when another session or a listen stream still needs the server's updates
        of it (the server's subscription is one for all of them); False: forward it."""
        assert ctx.server is not None
        if self._held.get((ctx.server, ctx.target), 0) == 0 \
                and not self._legacy_holds(ctx.server, ctx.target, but=ctx.session):
            return False
        ctx.session.subscriptions.discard(ctx.target)
        return True

    def session_closed(self, session: Session) -> None:
        """A legacy session ended (`Gateway.close_session`): the server's subscriptions no one else
        holds are let go, as if it had unsubscribed."""
        for uri in session.subscriptions:
            owner = session.server or resource_owner(uri, self.gw.servers)
            if owner is not None and self._held.get((owner, uri), 0) == 0 \
                    and not self._legacy_holds(owner, uri, but=session):
                self._held[(owner, uri)] = 1  # `_release` takes it back to none, and unsubscribes
                self.gw.spawn(self._release(owner, uri))
        session.subscriptions.clear()

    async def _release(self, server: str, uri: str) -> None:
        left = self._held.get((server, uri), 1) - 1
        if left > 0:
            self._held[(server, uri)] = left
            return
        self._held.pop((server, uri), None)
        upstream = self.gw.servers.get(server)
        if upstream is not None and upstream.state == "ready" and not self._legacy_holds(server, uri):
            with contextlib.suppress(UpstreamError):
                await upstream.request("resources/unsubscribe", {"uri": uri}, timeout=_SUBSCRIBE_TIMEOUT_S)

    def follow(self, upstream: UpstreamServer, method: str, uri: Any) -> None:
        """A `resources/subscribe` or `unsubscribe` for a 2026-07-28 server, which has neither: the
        URIs it is subscribed to are one `subscriptions/listen` of the gateway's own, opened again
        (the old one cancelled) whenever that set changes; its updates come as any server's."""
        uris, task = self._followed.get(upstream.name, (frozenset(), None))
        wanted = uris | {str(uri)} if method == "resources/subscribe" else uris - {str(uri)}
        if wanted == uris and (not wanted or (task is not None and not task.done())):
            return
        if task is not None:
            task.cancel()
        task = asyncio.ensure_future(self._watch(upstream, sorted(wanted))) if wanted else None
        self._followed[upstream.name] = (frozenset(wanted), task)

    async def _watch(self, upstream: UpstreamServer, uris: list[str]) -> None:
        sent: list[int] = []
        try:
            answer = await upstream.request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}},
                                            timeout=86_400.0, on_sent=sent.append)
            if "error" in answer:
                log.info("[%s] resource subscriptions refused: %s", upstream.name, answer["error"])
        except UpstreamError as exc:
            log.info("[%s] resource subscriptions ended: %s", upstream.name, exc)
        except asyncio.CancelledError:
            if sent and upstream.state == "ready":  # stdio's way to end a listen (HTTP closes the stream)
                self.gw.spawn(upstream.cancel(sent[0], "the gateway's resource subscriptions changed"))
            raise

    def resource_updated(self, upstream: UpstreamServer, uri: Any) -> None:
        """A server said `uri` changed: the streams that honoured it (or a URI it lies under) hear it."""
        if not isinstance(uri, str):
            return
        for stream in list(self.streams):
            if any(owner == upstream.name and (uri == u or uri.startswith(u.rstrip("/") + "/"))
                   for u, owner in stream.uris.items()):
                msg = self.gw.messages.mask(stream.session.id, stream.stamp("notifications/resources/updated",
                                                                            {"uri": uri}))
                stream.put(msg)


# ---------------------------------------------------------------------- the HTTP side

Call = Callable[[Callable[[Message], Awaitable[None]]], Awaitable[Message | None]]


async def serve_stream(receive: Receive, send: Send, call: Call, sid: RequestId) -> None:
    """A listen POST's answer over streamable HTTP: an event stream from the acknowledgment on, a
    comment every `KEEPALIVE_S` so that nothing between closes a quiet stream, until the client
    goes (the request is cancelled). Refused before the acknowledgment, it is a JSON answer.
    `sid` is the client's id for the request (the gateway may have used another inside)."""
    lock = asyncio.Lock()
    started = False
    handler = asyncio.current_task()

    async def start() -> None:
        nonlocal started
        if not started:
            started = True
            await send({"type": "http.response.start", "status": 200, "headers": SSE})

    def restamped(msg: Message, key: str) -> Message:
        body = msg.get(key)
        if isinstance(body, dict) and isinstance(body.get("_meta"), dict):
            return {**msg, key: {**body, "_meta": {**body["_meta"], SUBSCRIPTION_ID_META_KEY: sid}}}
        return msg

    async def emit(msg: Message) -> None:
        msg = restamped(msg, "params")
        async with lock:
            await start()
            await send({"type": "http.response.body", "body": sse_event(msg), "more_body": True})

    async def keepalive() -> None:
        while True:
            await asyncio.sleep(KEEPALIVE_S)
            async with lock:
                if started:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})

    gone = False

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass
        gone = True
        if handler is not None:
            handler.cancel()

    helpers = [asyncio.ensure_future(watch()), asyncio.ensure_future(keepalive())]
    try:
        response = await call(emit)
    except asyncio.CancelledError:
        if gone:
            return
        raise
    finally:
        for helper in helpers:
            helper.cancel()
    async with lock:
        if not started:
            await answer(send, response, [])
        else:
            body = sse_event(restamped(response, "result")) if response is not None else b""
            await send({"type": "http.response.body", "body": body, "more_body": False})


__all__ = ["ACKNOWLEDGED", "KINDS", "SUBSCRIPTION_ID_META_KEY", "ListenHub", "Stream", "serve_stream"]
