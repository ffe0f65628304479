"""Server-to-client traffic: which session a server's request or notification goes to, and
the client's answer back.

Messages the upstreams send on their own (notifications, sampling,
elicitation) arrive through `Gateway.on_upstream_request` and
`on_upstream_notification` and are routed to the session they belong to: the
one whose request they arrived with when the transport knows, else the one
session with requests in flight to that server (never a guess among
several). They leave only through `ServerMessages` (masked); a client's
answer passes the pipeline's `on_client_answer` hooks before it reaches the
server.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Emit, ServerRequest, Session
from mcpwall.protocol import ErrorCode, Message, error, notification, result
from mcpwall.proxy._listen import ListenHub
from mcpwall.proxy._mrtr import Holds
from mcpwall.proxy._requests import Pending, UpstreamError
from mcpwall.proxy._upstream import UpstreamServer

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

log = logging.getLogger("mcpwall.gateway")

#: `only_caller`'s answer when the requests in flight to a server come from more than one session.
_SEVERAL: tuple[Any, Any] = (None, None)
_CAPABILITY_FOR = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}


class ServerTraffic:
    """One gateway's server-to-client routing."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self._refreshing: dict[tuple[str, str], bool] = {}
        #: the modern clients' `subscriptions/listen` streams (fed by catalog refreshes and resources/updated)
        self.listen = ListenHub(gateway)
        #: modern clients' calls that may take input rounds (multi round-trip requests)
        self.mrtr = Holds(gateway)

    async def client_response(self, session: Session, msg: Message) -> None:
        rid = msg.get("id")
        req = session.server_requests.pop(rid, None) if isinstance(rid, int | str) else None
        if req is None:
            log.warning("session %s answered an unknown request id %r", session.id[:8], rid)
            return
        upstream = self.gw.servers.get(req.server)
        if upstream is not None:
            answer = dict(msg)
            answer["id"] = req.upstream_id
            refused = self.gw.pipeline.client_answer(session, answer)
            if refused is not None:
                log.warning("[%s] %s answer of session %s withheld: %s", upstream.name, req.method,
                            session.id[:8], refused)
                answer = error(req.upstream_id, ErrorCode.BLOCKED, "Blocked by mcpwall: " + refused,
                               {"reasons": [refused]})
            await upstream.respond(answer)

    def target_session(self, upstream: UpstreamServer, pending: Pending | None,
                        capability: str | None = None) -> tuple[Session, Emit | None] | None:
        if pending is not None:
            # Attributed: that request's session or nobody (it may have closed meanwhile).
            session = self.gw.sessions.get(pending.session_id or "")
            if session is None or (capability is not None and not session.supports(capability)):
                return None
            return session, pending.emit
        # Unattributed (a stdio upstream never says which request a message belongs to): only
        # when exactly one session has requests in flight to this server is it certainly that
        # session's. Guessing among several, or asking an idle one, would show one client's
        # prompt or arguments to another and give its answer to the wrong caller.
        owner = self.only_caller(upstream)
        if owner is None or owner is _SEVERAL or (capability is not None and not owner[0].supports(capability)):
            return None
        return owner

    def only_caller(self, upstream: UpstreamServer) -> tuple[Session, Emit | None] | None:
        """The one session with requests in flight to `upstream` (and its newest request's emit);
        None when no session has any (the gateway's own requests do not count); `_SEVERAL` when
        more than one has. A modern client's held call whose questions are out with it is blocked on
        their answers and not counted, as long as it is the same principal's (`Holds.waiting_principal`)."""
        found: tuple[Session, Emit | None] | None = None
        blocked: set[str] = set()  # principals of held calls blocked on their client's retry (_mrtr)
        for p in upstream.pending.values():
            session = self.gw.sessions.get(p.session_id or "")
            if session is None:
                continue
            held = self.mrtr.waiting_principal(p)
            if held is not None:
                blocked.add(held)
                continue
            if found is not None and found[0] is not session:
                return _SEVERAL
            found = (session, p.emit)
        if blocked and (found is None or not blocked <= {found[0].principal}):
            return _SEVERAL
        return found

    def on_upstream_request(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        self.gw.spawn(self.upstream_request(upstream, msg, pending))

    async def upstream_request(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        method, uid = msg["method"], msg["id"]
        if method == "ping":
            await upstream.respond(result(uid, {}))
            return
        if method == "sampling/createMessage" and not self.gw.policy.current.allow_sampling:
            log.warning("[%s] sampling/createMessage refused: allowSampling is false", upstream.name)
            await upstream.respond(error(uid, ErrorCode.BLOCKED, "Blocked by mcpwall: sampling is disabled by policy",
                                         {"reasons": ["allowSampling: false"]}))
            return
        if await self.mrtr.claim(upstream, msg, pending):
            return  # a modern client's call: asked in its InputRequiredResult (roots answered from the config)
        if method == "roots/list":
            # Never a client's answer: the upstream is shared, and its roots are its configuration's.
            await self.gw.messages.answer_roots(upstream, msg, pending)
            return
        target = self.target_session(upstream, pending, _CAPABILITY_FOR.get(method))
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
        delivered = await self.gw.messages.send(session.id, session, emit, msg, rid=downstream_id)
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
            self.gw.spawn(self.deliver(entry.session_id, entry.emit, msg, params={"progressToken": entry.progress_token}))
        elif method in ("notifications/tools/list_changed", "notifications/prompts/list_changed",
                        "notifications/resources/list_changed"):
            self.gw.spawn(self.list_changed(upstream, method))
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            self.listen.resource_updated(upstream, uri)
            for s in list(self.gw.sessions.values()):
                if uri in s.subscriptions and s.server in (None, upstream.name):
                    self.gw.spawn(self.gw.messages.send(s.id, s, None, msg))
        elif method == "notifications/tasks/status":
            self.gw.router.tasks.status_notification(upstream, msg)
        elif method == "notifications/cancelled":
            rid = params.get("requestId")
            for s in list(self.gw.sessions.values()):
                for did, req in list(s.server_requests.items()):
                    if req.server == upstream.name and req.upstream_id == rid:
                        s.server_requests.pop(did, None)
                        self.gw.spawn(self.gw.messages.send(s.id, s, None, msg, params={"requestId": did}))
        elif pending is not None:
            self.gw.spawn(self.deliver(pending.session_id, pending.emit, msg))
        elif (owner := self.only_caller(upstream)) is not None:
            # Sent while clients' requests are in flight: it may carry one caller's data (a log
            # line with its arguments), so it goes to that caller only, and nowhere when several call.
            if owner is _SEVERAL:
                log.debug("[%s] %s dropped: requests of several clients in flight", upstream.name, method)
            else:
                self.gw.spawn(self.deliver(owner[0].id, owner[1], msg))
        else:
            # Nothing in flight: the server speaks on its own (a periodic log line). A lone session
            # (`wrap`, `--stdio`) gets it; among several, log lines go to those that asked for logs.
            listeners = [s for s in self.gw.sessions.values() if s.server in (None, upstream.name) and s.kind != "plain"]
            for s in listeners:
                if method != "notifications/message" or s.log_level is not None or len(listeners) == 1:
                    self.gw.spawn(self.gw.messages.send(s.id, s, None, msg))

    async def deliver(self, session_id: str | None, emit: Emit | None, msg: Message, **changes: Any) -> None:
        """A server's message to the session `session_id` (on `emit` when it works), through the one exit."""
        await self.gw.messages.send(session_id or "", self.gw.sessions.get(session_id or ""), emit, msg, **changes)

    async def list_changed(self, upstream: UpstreamServer, method: str) -> None:
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
        for listener in self.gw.components.catalog_listeners:
            listener(upstream)
        for s in list(self.gw.sessions.values()):
            if s.server in (None, upstream.name) and s.kind != "plain" and s.initialized:
                self.gw.spawn(self.gw.messages.send(s.id, s, None, notification(method)))

    def upstream_restarted(self, upstream: UpstreamServer) -> None:
        for method in ("notifications/tools/list_changed",):
            self.gw.spawn(self.list_changed(upstream, method))


__all__ = ["ServerTraffic"]
