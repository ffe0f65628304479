"""The gateway's response writer (proxy/_respond.py) against uvicorn's own, byte for byte.

Strategy: one ASGI app answering in every shape a sender can use (the gateway's `reply`, whose start
is held for its body; a plain start with content-length; a chunked stream; an empty body; a 204; a
HEAD; `Connection: close`; a body longer or shorter than its content-length; a header uvicorn refuses;
two requests pipelined on one connection), served by a real uvicorn twice: with its stock httptools
protocol and with the gateway's guarded one. A raw socket client sends the same bytes to both and
reads until the server closes; what each wrote must be the same. Then the write count: the gateway's
`reply` reaches the client in one write, where uvicorn made two.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mcpwall.proxy._asgi import BODY_FOLLOWS, head_lines, reply
from mcpwall.proxy._conn import ConnectionGuard, ConnectionLimits, guarded_protocol
from mcpwall.proxy._respond import respond
from mcpwall.stages import AuthStage
from tests.harness import free_port

pytestmark = pytest.mark.anyio

TOKEN = "tok-respond-1234567890"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    path = scope["path"]
    if path == "/reply":
        await reply(send, 200, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    elif path == "/reply-empty":
        await reply(send, 202, b"")
    elif path == "/reply-close":
        await reply(send, 400, b'{"error":1}', [(b"connection", b"close")])
    elif path == "/reply-own-length":  # a length of its own besides reply's: uvicorn's rules decide
        await reply(send, 200, b"abc", [(b"Content-Length", b"3")])
    elif path == "/reply-mixed-close":
        await reply(send, 200, b"abc", [(b"X-Trace", b"1"), (b"Connection", b"Keep-Alive, CLOSE")])
    elif path == "/plain":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
        await send({"type": "http.response.body", "body": b"hel", "more_body": True})
        await send({"type": "http.response.body", "body": b"lo"})
    elif path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        await send({"type": "http.response.body", "body": b"data: 2\n\n"})
    elif path == "/no-content":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    elif path == "/too-long":
        await reply(send, 200, b"abc")
        await send({"type": "http.response.body", "body": b"more"})
    elif path == "/too-short":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"9")],
                    BODY_FOLLOWS: head_lines([], b"9", 9)})
        await send({"type": "http.response.body", "body": b"abc"})
    elif path.startswith("/bad-header"):  # each a header uvicorn refuses: its way, not a held line
        bad = {"": (b"x-bad", b"a\nb"), "-cr": (b"x-bad", b"a\rb"), "-nul": (b"x-bad", b"a\x00b"),
               "-del": (b"x-bad", b"a\x7fb"), "-split": (b"x-bad", b"a\r\nset-cookie: s=1"),
               "-name-space": (b"x bad", b"1"), "-name-colon": (b"x-bad:", b"1"), "-name-newline": (b"x\nbad", b"1")}
        await reply(send, 200, b"x", [bad[path[len("/bad-header"):]]])
    else:
        await reply(send, 404, b"not here", [(b"content-type", b"text/plain")])


@contextlib.asynccontextmanager
async def served(protocol: type[Any], **options: Any) -> AsyncIterator[int]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=protocol, lifespan="off", log_level="critical",
                            access_log=False, limit_concurrency=None, timeout_keep_alive=5,
                            **{"date_header": False, "server_header": False, **options})
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes only this flag
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def guarded() -> type[Any]:
    return guarded_protocol("httptools", ConnectionGuard(ConnectionLimits(), AuthStage({TOKEN: ""})))


def request(path: str, method: str = "POST", close: bool = True) -> bytes:
    last = "Connection: close\r\n" if close else ""
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Length: 2\r\n{last}\r\n{{}}").encode()


async def exchange(port: int, data: bytes) -> bytes:
    """Send `data`, then read until the server closes (or stops writing for a second)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    out = b""
    with contextlib.suppress(TimeoutError, ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), 1.0):
            out += chunk
    writer.close()
    return out


SHAPES = [
    request("/reply"), request("/reply-empty"), request("/reply-close", close=False), request("/plain"),
    request("/reply-own-length"), request("/reply-mixed-close", close=False),
    request("/stream"), request("/no-content"), request("/too-long"), request("/too-short"),
    *(request("/bad-header" + kind) for kind in ("", "-cr", "-nul", "-del", "-split", "-name-space", "-name-colon",
                                                 "-name-newline")),
    request("/missing"), request("/reply", method="HEAD"), request("/stream", method="HEAD"),
    request("/reply", close=False) + request("/plain", close=False) + request("/reply"),  # pipelined
    request("/reply", close=False).replace(b"HTTP/1.1", b"HTTP/1.0"),  # 1.0: closed after the answer
]


@pytest.mark.parametrize("data", SHAPES, ids=[s.split(b" ")[0].decode() + " " + s.split(b" ")[1].decode()
                                              + (" pipelined" if s.count(b"HTTP/1.") > 1 else "")
                                              + (" 1.0" if b"HTTP/1.0" in s else "") for s in SHAPES])
async def test_the_gateway_writes_what_uvicorn_writes(data: bytes) -> None:
    async with served(HttpToolsProtocol) as port:  # uvicorn's own: the reference
        expected = await exchange(port, data)
    async with served(guarded()) as port:
        got = await exchange(port, data)
    # every shape gets an answer (an error one too), but a header uvicorn refuses: the connection is closed
    assert expected.startswith(b"HTTP/1.") or (b"/bad-header" in data and expected == b"")
    assert b"set-cookie" not in got
    assert got == expected


async def test_a_reply_leaves_in_one_write_a_stream_at_once() -> None:
    writes: list[bytes] = []
    base = guarded()

    class Counting(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: Any) -> None:
            real = transport.write

            def write(data: bytes) -> None:
                writes.append(bytes(data))
                real(data)

            transport.write = write
            super().connection_made(transport)

    async with served(Counting) as port:
        answer = await exchange(port, request("/reply"))
        assert writes == [answer]  # status line, headers and body: one write
        writes.clear()
        await exchange(port, request("/stream"))
        # a stream's start is not held: its headers leave before its first event
        assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
        assert writes[0].endswith(b"\r\n\r\n")
        assert len(writes) == 4


async def test_a_held_start_is_dropped_when_the_client_is_gone() -> None:
    """A client that hangs up between the start and the body gets nothing written after it left."""
    class Flow:
        write_paused = False

    class Transport:
        def __init__(self) -> None:
            self.written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

    class Cycle:
        flow, disconnected, response_started, response_complete = Flow(), False, False, False
        access_log, chunked_encoding, keep_alive = False, None, True
        held = None

        def __init__(self) -> None:
            self.transport = Transport()
            self.scope = {"method": "POST"}
            self.default_headers: list[tuple[bytes, bytes]] = []

    cycle = Cycle()
    await respond(cycle, {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")],
                          BODY_FOLLOWS: head_lines([], b"2", 2)})
    assert cycle.transport.written == []
    cycle.disconnected = True
    await respond(cycle, {"type": "http.response.body", "body": b"{}"})
    assert cycle.transport.written == []


async def test_uvicorns_own_headers_lead_a_held_answer() -> None:
    """The date and server headers uvicorn adds to every answer come first, once, as uvicorn writes them."""
    answers = []
    for protocol in (HttpToolsProtocol, guarded()):
        async with served(protocol, date_header=True, server_header=True) as port:
            answer = await exchange(port, request("/reply"))
        answers.append(re.sub(rb"date: [^\r]+", b"date: -", answer))
    assert answers[0] == answers[1]
    assert answers[1].count(b"date: -\r\n") == 1
    assert answers[1].count(b"server: uvicorn\r\n") == 1
