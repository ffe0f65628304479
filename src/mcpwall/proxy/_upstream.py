"""One upstream MCP server: its era, request ids, timeouts, breaker, restarts.

The gateway is the upstream's one client: it opens it in its protocol era
(`_probe`: the `initialize` handshake, which mcp-seatbelt skipped, or the
2026-07-28 `server/discover`, whose requests `_upstream_modern` stamps),
keeps the tool, resource and prompt lists it gets back, and multiplexes every
downstream session over this one connection. Request ids are ours (integers
per upstream), so ids from different sessions never collide; `Pending`
remembers whose request each is.

When a stdio server dies, every pending request fails at once with an
UPSTREAM_ERROR and the server is restarted with exponential backoff, at most
`MAX_RESTARTS` times in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpwall.policy import ServerSpec
from mcpwall.protocol import Message, RequestId, notification
from mcpwall.proxy._breaker import BREAKER_OPEN_S, CircuitBreaker
from mcpwall.proxy._bridge import answered
from mcpwall.proxy._catalog import Catalog, fetch_catalog, list_pages
from mcpwall.proxy._probe import older_transport, open_upstream
from mcpwall.proxy._requests import Pending, UpstreamError, expire, settled
from mcpwall.proxy._unanswered import given_up, still_running
from mcpwall.proxy._upstream_modern import Outgoing, incoming, listen, outgoing, settle
from mcpwall.proxy._upstream_modern import settled as final
from mcpwall.transports import Transport, TransportError, transport_for

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

log = logging.getLogger("mcpwall.upstream")

MAX_RESTARTS = 5


class UpstreamServer:
    """A named upstream and its single connection."""

    def __init__(self, name: str, spec: ServerSpec, gateway: Gateway,
                 transport_factory: Callable[[], Transport] | None = None) -> None:
        self.name = name
        self.spec = spec
        self.gateway = gateway
        self._factory = transport_factory or (lambda: transport_for(name, spec))
        self.transport: Transport | None = None
        self.state = "stopped"
        self.last_error: str | None = None
        self.init_result: dict[str, Any] = {}
        #: "legacy" (opened by initialize) or "modern" (2026-07-28), once known; kept across restarts
        self.era: str | None = None
        #: tools a modern server listed with an invalid x-mcp-header designation, refused by name
        #: (`_upstream_modern.without_invalid_headers`: a client may still know the name)
        self.excluded_tools: set[str] = set()
        #: the last narrowing of the gateway's capabilities to a client's (`calling_capabilities`)
        self.calling_memo: tuple[Any, ServerSpec, dict[str, Any], dict[str, Any]] | None = None
        #: the gateway's bridged input requests of a modern server, waiting for a client's answer (`_bridge`)
        self.inputs: dict[RequestId, asyncio.Future[Message]] = {}
        self.catalog = Catalog()
        self.breaker = CircuitBreaker()
        self.restarts = 0
        self._ids = itertools.count(1)
        self.pending: dict[RequestId, Pending] = {}
        self.progress: dict[str, Pending] = {}
        self._ready = asyncio.Event()
        #: set when a start attempt fails / when restarts are given up (cleared by the next start)
        self._failed = asyncio.Event()
        self._down = asyncio.Event()
        self._down_since: float | None = None
        #: a streamable-HTTP URL was refused and the older HTTP+SSE transport tried instead
        self._fell_back = False
        self._stopping = False
        self._restart_task: asyncio.Task[None] | None = None
        self._generation = 0
        self.started_at: float | None = None
        #: tools/calls the gateway stopped waiting for (cancelled, timed out) that the server has not
        #: answered: it may still run them (uid -> generation, deadline or None, label)
        self.unanswered: dict[RequestId, tuple[int, float | None, str]] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def capabilities(self) -> dict[str, Any]:
        caps = self.init_result.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    async def start(self) -> None:
        """Connect and handshake; on failure, schedule a restart and return."""
        self._stopping = False
        self._generation += 1
        generation = self._generation
        self.state = "starting"
        self._ready.clear()
        self._failed.clear()
        self._down.clear()
        self._down_since = None
        transport = self._factory()
        self.transport = transport
        try:
            await transport.connect(lambda m, r: self._on_message(m, r, generation),
                                    lambda exc: self._on_closed(exc, generation))
            if hasattr(transport, "schema_of"):
                # Streamable HTTP mirrors the arguments a tool designates into Mcp-Param-* headers.
                transport.schema_of = self._input_schema
            await open_upstream(self, transport)
            self.state = "ready"
            self.started_at = time.time()
            self.last_error = None
            await self.refresh_catalog()
            self._ready.set()
            if self.era == "modern":
                self.gateway.spawn(listen(self, generation))
            log.info("[%s] ready (%s, %s) %s", self.name, transport.description, self.init_result.get("protocolVersion"),
                     self.init_result.get("serverInfo", {}))
        except (TransportError, UpstreamError, OSError) as exc:
            if older_transport(self, transport, exc):
                await self._close_transport()
                await self.start()
                return
            self.last_error = str(exc)
            log.error("[%s] failed to start: %s", self.name, exc)
            self.state = "failed"
            self._failed.set()
            await self._close_transport()
            self._schedule_restart()

    async def wait_ready(self, timeout: float, *, until_failure: bool = False) -> bool:
        """Whether the server is (or becomes, within `timeout`) ready to take requests.

        Returns False at once for a server given up on (and, if it has been down a while,
        starts it again for the next caller), and when restarts are given up while waiting.
        `until_failure`: also give up at the first failed start (a client waiting to
        initialize is better told now why the server is not there than after every retry).
        """
        if self.state == "ready":
            return True
        if self.state == "down":
            self._revive()
            return False
        # Early only for a server that never came up: one restarting after a crash is waited for.
        until_failure = until_failure and self.started_at is None
        if until_failure and self.state == "failed":
            return False
        events = (self._ready, self._down, self._failed) if until_failure else (self._ready, self._down)
        waiters = [asyncio.ensure_future(e.wait()) for e in events]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()
        return self.state == "ready"

    def _revive(self) -> None:
        """A server given up on is tried again when asked for, at most once per breaker pause."""
        if self._stopping or self._down_since is None or time.monotonic() - self._down_since < BREAKER_OPEN_S:
            return
        log.info("[%s] was given up on %.0f s ago; trying to start it again", self.name,
                 time.monotonic() - self._down_since)
        self._down_since = None
        self.restarts = 0
        self.state = "failed"
        self._schedule_restart()

    async def stop(self) -> None:
        self._stopping = True
        if self._restart_task is not None:
            self._restart_task.cancel()
        self._fail_all("gateway is shutting down", "stopped")
        await self._close_transport()
        self.state = "stopped"

    async def _close_transport(self) -> None:
        transport, self.transport = self.transport, None
        if transport is not None:
            with contextlib.suppress(Exception):
                await transport.close()

    def _on_closed(self, reason: BaseException | None, generation: int) -> None:
        if generation != self._generation or self._stopping:
            return
        self.last_error = str(reason) if reason else "connection closed"
        log.warning("[%s] upstream connection lost: %s", self.name, self.last_error)
        self.state = "failed"
        self._ready.clear()
        self._failed.set()
        self._fail_all(f"upstream {self.name!r} exited: {self.last_error}", "exited")
        self.breaker.failure()
        self._schedule_restart()

    def _schedule_restart(self) -> None:
        if self._stopping or (self._restart_task is not None and not self._restart_task.done()):
            return
        if self.restarts >= MAX_RESTARTS:
            log.error("[%s] giving up after %d restarts", self.name, self.restarts)
            self.state = "down"
            self._down_since = time.monotonic()
            self._down.set()
            return
        delay = min(2.0 ** self.restarts, 30.0)
        self.restarts += 1
        self._restart_task = asyncio.create_task(self._restart_after(delay))

    async def _restart_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._close_transport()
        if not self._stopping:
            log.info("[%s] restarting (attempt %d of %d)", self.name, self.restarts, MAX_RESTARTS)
            self._restart_task = None  # this attempt is under way: if it fails, start() schedules the next
            await self.start()
            if self.state == "ready":
                self.restarts = 0
                self.gateway.upstream_restarted(self)

    # ------------------------------------------------------------------ requests

    def _fail_all(self, message: str, reason: str) -> None:
        pending, self.pending = self.pending, {}
        self.progress.clear()
        if not self.spec.url:
            self.unanswered.clear()  # a stdio server that exited runs nothing more
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(UpstreamError(message, reason))

    async def _call(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """A request of the gateway's own (handshake, lists); returns the result or raises."""
        response = await self.request(method, params, timeout=timeout)
        if "error" in response:
            err = response["error"]
            raise UpstreamError(f"{method} failed: {err.get('message', err)}", "error")
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    async def request(self, method: str, params: dict[str, Any] | None, *, timeout: float,
                      session_id: str | None = None, downstream_id: RequestId | None = None,
                      emit: Any = None, on_sent: Callable[[int], None] | None = None, raw: bool = False) -> Message:
        """Send a request and wait for its response message (result or error).

        Progress tokens are replaced by our request id so that two sessions using
        the same token cannot collide; the original is restored on the way back.
        To a modern upstream it goes stamped and comes back plain (`_upstream_modern`; `raw`: a
        request it stamped already), in this one coroutine.
        """
        sent: Outgoing | None = None
        asked = params
        if self.era == "modern" and not raw:
            out = outgoing(self, method, params, session_id, downstream_id)
            if not isinstance(out, Outgoing):
                return out
            sent, params = out, out.params
        transport = self.transport
        if transport is None or self.state not in ("ready", "starting"):
            raise UpstreamError(f"upstream {self.name!r} is not available ({self.state}: {self.last_error})",
                                "unavailable")
        uid = next(self._ids)
        if on_sent is not None:
            on_sent(uid)
        loop = asyncio.get_running_loop()
        entry = Pending(loop.create_future(), method, session_id, downstream_id, emit=emit, timeout=timeout)
        out_params = params
        meta = params.get("_meta") if params else None
        if isinstance(meta, dict) and "progressToken" in meta:
            entry.progress_token = meta["progressToken"]
            out_params = {**params, "_meta": {**meta, "progressToken": f"mcpwall-{uid}"}}  # type: ignore[dict-item]
            self.progress[f"mcpwall-{uid}"] = entry
        message: Message = {"jsonrpc": "2.0", "id": uid, "method": method}
        if out_params is not None:
            message["params"] = out_params
        self.pending[uid] = entry
        # A timer on the future itself: `asyncio.wait_for` costs a waiter future and two
        # callbacks more per call, on the path every proxied request takes.
        timer = loop.call_later(timeout, expire, entry.future)
        try:
            await transport.send(message)
            response = await entry.future
        except TimeoutError:
            await self.cancel(uid, "timed out")
            raise UpstreamError(f"upstream {self.name!r} did not answer {method} within {timeout:g} s",
                                "timeout") from None
        except TransportError as exc:
            raise UpstreamError(str(exc), "transport") from exc
        finally:
            timer.cancel()
            self.pending.pop(uid, None)
            if entry.progress_token is not None:
                self.progress.pop(f"mcpwall-{uid}", None)
            if method == "tools/call" and not settled(entry.future):
                given_up(self, uid, entry, params)
        if sent is None:
            return response
        if final(response, sent.version):
            return incoming(self, method, response)
        return await settle(self, method, asked, response, sent, timeout=timeout, session_id=session_id,
                            downstream_id=downstream_id, emit=emit, on_sent=on_sent)

    async def cancel(self, uid: RequestId, reason: str) -> None:
        """Tell the upstream we no longer want request `uid`."""
        entry = self.pending.pop(uid, None)
        if entry is not None and not entry.future.done():
            entry.future.cancel()
        await self.notify("notifications/cancelled", {"requestId": uid, "reason": reason})

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self.transport is None:
            return
        with contextlib.suppress(TransportError):
            await self.transport.send(notification(method, params))

    async def respond(self, message: Message) -> None:
        """Send our answer to a server-to-client request (a bridged input request's stays here)."""
        if self.inputs and answered(self, message):
            return
        if self.transport is not None:
            with contextlib.suppress(TransportError):
                await self.transport.send(message)

    def _on_message(self, msg: Message, related: RequestId | None, generation: int) -> None:
        if generation != self._generation:
            return
        if "method" in msg:
            if msg["method"] == "notifications/subscriptions/acknowledged":
                return  # the gateway's own subscriptions/listen opened (`_upstream_modern.listen`)
            if "id" in msg:
                self.gateway.on_upstream_request(self, msg, self.pending.get(related) if related is not None
                                                 else None)
            else:
                self.gateway.on_upstream_notification(self, msg, self.pending.get(related)
                                                      if related is not None else None)
            return
        rid = msg.get("id")
        entry = self.pending.get(rid) if isinstance(rid, int | str) else None
        if entry is None and isinstance(rid, int | str) and self.unanswered.pop(rid, None) is not None:
            log.info("[%s] late answer to call %r, which the gateway stopped waiting for", self.name, rid)
            return
        if entry is None:
            log.warning("[%s] dropped a response with unknown id %r", self.name, rid)
            return
        if not entry.future.done():
            entry.future.set_result(msg)

    def unanswered_call(self) -> str | None:
        """A tools/call the server may still be running although the gateway no longer waits for it."""
        return still_running(self)

    # ------------------------------------------------------------------ catalog

    def _input_schema(self, tool: str) -> Any:
        entry = self.catalog.tools.get(tool)
        return entry.get("inputSchema") if isinstance(entry, dict) else None

    async def refresh_catalog(self) -> None:
        """Fetch tools, resources, templates and prompts (every page) the server offers."""
        self.catalog = await fetch_catalog(self._call, self.capabilities)

    async def list_all(self, method: str, key: str, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Every page of one list (`tools/list`...), the items under `key`."""
        return await list_pages(self._call, method, key, timeout)

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "transport": self.transport.description if self.transport else None,
            "server_info": self.init_result.get("serverInfo"),
            "protocol_version": self.init_result.get("protocolVersion"),
            "era": self.era,
            "tools": len(self.catalog.tools),
            "resources": len(self.catalog.resources),
            "prompts": len(self.catalog.prompts),
            "circuit": self.breaker.state,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "pending": len(self.pending),
        }


__all__ = ["MAX_RESTARTS", "UpstreamServer"]
