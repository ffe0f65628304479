"""Connection admission for the HTTP frontend: header and body deadlines, a bounded pool of
unauthenticated connections, a cap per peer, and in-flight requests counted apart from connections.

uvicorn bounds none of this itself. Its `limit_concurrency` counts every open connection,
finished or not, and answers 503 past it, so one local process holding a few thousand half-open
connections (slowloris) made every authenticated call get 503 (issue 22). Its only timer is the
keep-alive one, armed after a response, so a connection that never completes its headers stays
open for ever. What this module adds around uvicorn's own protocol classes (httptools, or h11):

- A request's headers must be complete within `header_timeout_s` of its first byte (of the
  connection's opening, for its first request), and its body within `body_timeout_s` of its
  headers; otherwise it is answered 408 and the connection closed. Time the gateway itself holds
  the bytes (reading paused, a pipelined request waiting for the one before) does not count.
- A connection is unauthenticated until a request on it carries a valid bearer token, checked on
  its headers before the app runs. At most `max_unauthenticated` are open: past that the oldest
  one not being answered is closed. A request refused at the door is answered at once with
  `Connection: close` (`_http.py`), so a refused client does not hold its connection.
- At most `max_per_peer` connections per peer address: past that the peer's oldest
  unauthenticated connection is closed, or the new one if the peer has none. Every local process
  connects from 127.0.0.1, so on loopback this is one cap for all of them and protects little:
  the deadlines and the unauthenticated pool are what keep one local process from starving the
  others.
- In-flight requests are capped (`max_requests`, through uvicorn's own 503 path), counted as
  requests and never as open connections.

uvicorn's `timeout_keep_alive` still closes idle keep-alive connections (`_app.serve_http`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcpwall.stages import AuthStage

log = logging.getLogger("mcpwall.http")

_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: 16\r\nconnection: close\r\n\r\nRequest Timeout\n")
_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
              b"content-length: 30\r\nconnection: close\r\n\r\nRequest headers are too large\n")


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take to send a request, and how many connections it may hold."""

    header_timeout_s: float = 10.0
    #: a request line and headers past this size are refused (431): httptools sets no bound of its own
    max_header_bytes: int = 64 * 1024
    #: 4 MiB (the message bound) arrives in well under this over any link a gateway serves
    body_timeout_s: float = 30.0
    max_unauthenticated: int = 256
    max_per_peer: int = 2048
    #: requests being served at once; past it uvicorn answers 503 (what `limit_concurrency` was for)
    max_requests: int = 4096

    def fitted(self, open_files: int) -> ConnectionLimits:
        """These limits within a process allowed `open_files` descriptors: the unauthenticated pool
        must run out long before the descriptors do, or accept() fails for everyone."""
        room = max(open_files - 256, 64)  # upstream pipes, the ledger, the policy watch
        return dataclasses.replace(self, max_unauthenticated=min(self.max_unauthenticated, room // 4),
                                   max_per_peer=min(self.max_per_peer, room // 2))


class ConnectionGuard:
    """The connections one server holds, shared by their protocol instances (one per connection)."""

    def __init__(self, limits: ConnectionLimits, auth: AuthStage) -> None:
        self.limits = limits
        self.auth = auth
        #: unauthenticated connections, oldest first
        self.unauthenticated: dict[_Watch, None] = {}
        self.per_peer: dict[str, int] = {}
        self.counts = {"timed_out": 0, "evicted": 0, "refused": 0, "too_large": 0}

    def opened(self, watch: _Watch) -> bool:
        """Count a new connection; False when it must be closed (its peer is at its cap)."""
        peer = watch.peer
        if self.per_peer.get(peer, 0) >= self.limits.max_per_peer and not self._evict(watch, peer):
            self.counts["refused"] += 1
            return False
        self.per_peer[peer] = self.per_peer.get(peer, 0) + 1
        watch.counted = True
        self.unauthenticated[watch] = None
        if len(self.unauthenticated) > self.limits.max_unauthenticated:
            self._evict(watch, None)
        return True

    def authenticated(self, watch: _Watch) -> None:
        self.unauthenticated.pop(watch, None)

    def forget(self, watch: _Watch) -> None:
        """The connection is closed (or being closed): it no longer counts anywhere."""
        self.unauthenticated.pop(watch, None)
        if watch.counted:
            watch.counted = False
            left = self.per_peer.get(watch.peer, 1) - 1
            if left > 0:
                self.per_peer[watch.peer] = left
            else:
                self.per_peer.pop(watch.peer, None)

    def _evict(self, new: _Watch, peer: str | None) -> bool:
        """Close the oldest unauthenticated connection (of `peer`, when given) other than `new`,
        preferring one that is not being answered; False when there is none."""
        fallback: _Watch | None = None
        for watch in self.unauthenticated:
            if watch is new or (peer is not None and watch.peer != peer):
                continue
            if not watch.answering():
                break
            fallback = fallback or watch
        else:
            if fallback is None:
                return False
            watch = fallback
        self.counts["evicted"] += 1
        watch.drop()
        return True

    def status(self) -> dict[str, Any]:
        return {"unauthenticated": len(self.unauthenticated), "peers": len(self.per_peer), **self.counts}


class _Watch:
    """One connection's deadline and standing with the guard. `conn` is the uvicorn protocol
    instance; only attributes both of uvicorn's HTTP protocols have are used (transport, flow,
    cycle, tasks, client, loop, limit_concurrency)."""

    __slots__ = ("conn", "counted", "guard", "head", "kind", "peer", "timer", "trusted")

    def __init__(self, conn: Any, guard: ConnectionGuard) -> None:
        self.conn = conn
        self.guard = guard
        self.peer: str = conn.client[0] if conn.client else ""
        self.counted = False
        self.trusted = False
        self.timer: asyncio.TimerHandle | None = None
        self.kind = ""
        #: bytes received towards a request's head not yet complete
        self.head = 0

    def answering(self) -> bool:
        """A request on it has been read whole and its answer is not finished."""
        cycle = self.conn.cycle
        return cycle is not None and not cycle.more_body and not cycle.response_complete

    def arm(self, kind: str) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.kind = kind
        limits = self.guard.limits
        delay = limits.header_timeout_s if kind == "headers" else limits.body_timeout_s
        self.timer = self.conn.loop.call_later(delay, self._expired)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def before(self) -> None:
        # uvicorn decides 503 when it parses a request's headers, on `limit_concurrency` against
        # its open connections *or* its tasks; 0 forces that answer and None skips the check,
        # so only the tasks (requests being served) count here.
        conn = self.conn
        conn.limit_concurrency = 0 if len(conn.tasks) >= self.guard.limits.max_requests else None

    def after(self, previous: Any, in_body: bool, size: int) -> None:
        """Called after uvicorn parsed a chunk of `size` bytes; `previous` is the request cycle before
        it, `in_body` whether that cycle's body was still coming."""
        cycle = self.conn.cycle
        if cycle is not previous and cycle is not None:  # a new request's headers are complete
            self.head = 0
            self._headers(cycle.scope)
            if cycle.more_body:
                self.arm("body")
            else:
                self.disarm()
        elif in_body:
            if not cycle.more_body:
                self.disarm()  # the body is complete
            elif self.kind != "body" or self.timer is None:
                self.arm("body")
        else:
            if self.timer is None or self.kind != "headers":
                self.arm("headers")  # the first bytes of a next request on a kept-alive connection
            self.head += size
            if self.head > self.guard.limits.max_header_bytes:
                self.guard.counts["too_large"] += 1
                self.conn.transport.write(_TOO_LARGE)
                self.drop()

    def _headers(self, scope: dict[str, Any]) -> None:
        if self.trusted:
            return
        auth = self.guard.auth
        if auth.insecure_no_auth:
            trusted = True
        else:
            value = next((v for k, v in scope["headers"] if k == b"authorization"), None)
            trusted = value is not None and auth.identify(value.decode("latin-1")) is not None
        if trusted:
            self.trusted = True
            self.guard.authenticated(self)

    def _expired(self) -> None:
        self.timer = None
        conn = self.conn
        if conn.transport.is_closing():
            return
        cycle = conn.cycle
        # Not the client's delay: reading is paused (a body not yet taken by the app), or the bytes
        # are a pipelined request behind one still being answered.
        if conn.flow.read_paused or (self.kind == "headers" and cycle is not None and not cycle.response_complete):
            self.arm(self.kind)
            return
        self.guard.counts["timed_out"] += 1
        log.info("closed a connection from %s: its request's %s took longer than %.0f s", self.peer or "?",
                 self.kind, self.guard.limits.header_timeout_s if self.kind == "headers"
                 else self.guard.limits.body_timeout_s)
        if self.kind == "headers" or not cycle.response_started:  # (a cycle here is the previous request's)
            conn.transport.write(_TIMEOUT)
        self.drop()

    def drop(self) -> None:
        """Close the connection; a request still running on it sees a disconnect."""
        self.disarm()
        self.guard.forget(self)
        conn = self.conn
        cycle = conn.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # its app's later sends are dropped, as after connection_lost
            cycle.message_event.set()
        conn.transport.close()


def guarded_protocol(http: str, guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class `http` ("httptools" or "h11") with `guard` watching each
    connection: what `uvicorn.Config(http=...)` takes."""
    base: type[Any]
    respond: Any = None
    if http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base

        from mcpwall.proxy._respond import respond
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class Guarded(base):  # type: ignore[misc]
        watch: _Watch

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self.watch = _Watch(self, guard)
            if not guard.opened(self.watch):
                transport.close()
                return
            self.watch.arm("headers")

        def data_received(self, data: bytes) -> None:
            watch = self.watch
            previous = self.cycle
            in_body = previous is not None and previous.more_body
            watch.before()
            super().data_received(data)
            if not self.transport.is_closing():
                watch.after(previous, in_body, len(data))

        def on_headers_complete(self) -> None:  # httptools' parser callback (h11 has none)
            previous = self.cycle
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not previous:
                # A new request's cycle (its task has not run yet) answers through `_respond`: an attribute
                # of its own, since a class of ours for it would turn its attributes into a dict (assigning
                # `__class__`), dearer to read for every part of uvicorn that does.
                cycle.held = None
                cycle.send = partial(respond, cycle)
            if self.url[:1] != b"/":
                # httptools keeps only the path of an absolute-form target (`POST http://evil/mcp`)
                # and h11 passes the target whole: pass it whole here too, so the app refuses both.
                self.scope["path"] = self.url.decode("latin-1")
                self.scope["raw_path"] = bytes(self.url)

        def connection_lost(self, exc: Exception | None) -> None:
            self.watch.disarm()
            guard.forget(self.watch)
            super().connection_lost(exc)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


__all__ = ["ConnectionGuard", "ConnectionLimits", "guarded_protocol"]
