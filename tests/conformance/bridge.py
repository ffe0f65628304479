"""A streamable-HTTP front for a stdio MCP server: one child process per HTTP session.

Usage: bridge.py [--spares N] PORT COMMAND [ARGS...]

The conformance suite speaks only streamable HTTP, while `mcpwall wrap` and
`mcpwall proxy --stdio` speak MCP over stdin/stdout. This bridge lets the
suite reach them the way a desktop client would: every `initialize` (a new
client) launches COMMAND afresh and that process is the client's session
until DELETE, until a newer client starts while it has no stream open (the
suite's clients close without DELETE, one scenario after the other), or
until shutdown. The bridge rewrites nothing: lines go to the child's stdin
as they came, and what the child prints goes back unchanged. A child takes
seconds to boot (Python imports, then the gateway's upstream handshake), so
`--spares N` children are kept booting ahead of the clients that will get
them.

Routing of what the child prints: a response goes to the POST that carried
its request (answered as an SSE stream); a notification or server-to-client
request goes to the newest POST still waiting, else to the session's GET
stream, else it waits there until one opens. Its test is the control path in
test_conformance.py: the suite through this bridge straight to the reference
server over stdio, with no mcpwall in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_LINE_LIMIT = 16 * 1024 * 1024


class ChildSession:
    """One client session: one child process and the HTTP streams waiting on it."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.id = secrets.token_hex(16)
        self.proc: asyncio.subprocess.Process | None = None
        self.waiting: dict[Any, asyncio.Queue[dict[str, Any] | None]] = {}
        self.get_stream: asyncio.Queue[dict[str, Any] | None] | None = None
        self.backlog: list[dict[str, Any]] = []
        self._reader: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        #: HTTP streams (POST answers and the GET stream) open on this session now
        self.streams = 0

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=_LINE_LIMIT)
        self._reader = asyncio.create_task(self._read())

    async def write(self, message: dict[str, Any]) -> None:
        assert self.proc is not None
        assert self.proc.stdin is not None
        async with self._lock:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            await self.proc.stdin.drain()

    async def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                print(f"bridge: child printed a non-JSON line: {line[:200]!r}", file=sys.stderr)
                continue
            self._route(message)
        for queue in [*self.waiting.values(), *([self.get_stream] if self.get_stream else [])]:
            queue.put_nowait(None)

    def _route(self, message: dict[str, Any]) -> None:
        is_response = "method" not in message and ("result" in message or "error" in message)
        if is_response and message.get("id") in self.waiting:
            self.waiting[message["id"]].put_nowait(message)
        elif not is_response and self.waiting:
            list(self.waiting.values())[-1].put_nowait(message)
        elif self.get_stream is not None:
            self.get_stream.put_nowait(message)
        else:
            self.backlog.append(message)

    async def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 5)


class Bridge:
    """The ASGI app: /mcp only."""

    def __init__(self, argv: list[str], spares: int = 0) -> None:
        self.argv = argv
        self.spares = spares
        self.sessions: dict[str, ChildSession] = {}
        self._booting: list[ChildSession] = []
        self._closing: set[asyncio.Task[None]] = set()

    async def _boot(self) -> None:
        while len(self._booting) < self.spares:
            child = ChildSession(self.argv)
            await child.start()
            self._booting.append(child)

    async def _new_session(self) -> ChildSession:
        if self._booting:
            session = self._booting.pop(0)
        else:
            session = ChildSession(self.argv)
            await session.start()
        await self._boot()
        for idle in [s for s in self.sessions.values() if s.streams == 0]:
            self.sessions.pop(idle.id, None)
            task = asyncio.ensure_future(idle.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self.sessions[session.id] = session
        return session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != "/mcp":
            await _reply(send, 404, b"not found")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        session = self.sessions.get(headers.get("mcp-session-id", ""))
        method = scope["method"]
        if method == "POST":
            await self._post(receive, send, session)
        elif method == "GET" and session is not None:
            await self._get(receive, send, session)
        elif method == "DELETE" and session is not None:
            self.sessions.pop(session.id, None)
            await session.close()
            await _reply(send, 200, b"")
        else:
            await _reply(send, 404 if method in ("GET", "DELETE") else 405, b"no such session or method")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await self._boot()
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await asyncio.gather(*(s.close() for s in [*self.sessions.values(), *self._booting]),
                                     return_exceptions=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _post(self, receive: Receive, send: Send, session: ChildSession | None) -> None:
        message = json.loads(await read_body(receive))
        if message.get("method") == "initialize":
            session = await self._new_session()
        if session is None:
            await _reply(send, 404, b"no such session")
            return
        extra = [(b"mcp-session-id", session.id.encode())]
        if "method" not in message or "id" not in message:
            await session.write(message)
            await _reply(send, 202, b"", extra)
            return
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        session.waiting[message["id"]] = queue
        session.streams += 1
        try:
            await session.write(message)
            await send({"type": "http.response.start", "status": 200, "headers": _SSE + extra})
            while True:
                out = await queue.get()
                if out is None:
                    break
                await send({"type": "http.response.body", "body": _event(out), "more_body": True})
                if out.get("id") == message["id"] and "method" not in out:
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            session.streams -= 1
            session.waiting.pop(message["id"], None)

    async def _get(self, receive: Receive, send: Send, session: ChildSession) -> None:
        if session.get_stream is not None:
            await _reply(send, 409, b"a GET stream is already open")
            return
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        for message in session.backlog:
            queue.put_nowait(message)
        session.backlog.clear()
        session.get_stream = queue
        session.streams += 1
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await send({"type": "http.response.start", "status": 200,
                        "headers": [*_SSE, (b"mcp-session-id", session.id.encode())]})
            await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
            while not gone.done():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                out = getter.result()
                if out is None:
                    break
                await send({"type": "http.response.body", "body": _event(out), "more_body": True})
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            session.streams -= 1
            gone.cancel()
            if session.get_stream is queue:
                session.get_stream = None


async def read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            return body


def _event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def main(argv: list[str], app: type[Bridge] = Bridge) -> None:
    spares = 0
    if argv[:1] == ["--spares"] and len(argv) > 1:
        spares, argv = int(argv[1]), argv[2:]
    if len(argv) < 2:
        sys.exit("usage: bridge.py [--spares N] PORT COMMAND [ARGS...]")
    uvicorn.run(app(argv[1:], spares), host="127.0.0.1", port=int(argv[0]), log_level="warning",
                lifespan="on", timeout_graceful_shutdown=5)


if __name__ == "__main__":
    main(sys.argv[1:])
