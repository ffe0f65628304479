"""The connection guard (proxy/_conn.py) on uvicorn's own HTTP protocols, in process.

Strategy: a real uvicorn server on a loopback port, run in the test's event loop with the
guarded protocol class (httptools and h11 both) and small limits (deadlines under a second,
caps of a few connections), in front of a tiny ASGI app that reads the body and answers with the
path it saw. Clients are asyncio sockets writing raw bytes, so each test controls exactly how
much of a request arrives and when. Issue 22: half-open connections, trickled headers and bodies,
and unauthenticated connections held open made uvicorn answer 503 to every authenticated call.
The gateway itself under a flood of 4,300 is tests/proxy/test_connections.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from mcpwall.proxy._conn import ConnectionGuard, ConnectionLimits, guarded_protocol
from mcpwall.stages import AuthStage
from tests.harness import free_port

pytestmark = pytest.mark.anyio

TOKEN = "tok-guard-1234567890"
PROTOCOLS = ["httptools", "h11"]
#: every client a test opened, closed when its server stops
_OPEN: list[Client] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return
        size += len(event.get("body", b""))
        if not event.get("more_body"):
            break
    if scope["path"] == "/slow":
        await asyncio.sleep(1.5)
    body = f"{scope['path']} {size}".encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def served(http: str, **limits: Any) -> AsyncIterator[tuple[int, ConnectionGuard]]:
    guard = ConnectionGuard(ConnectionLimits(**{"header_timeout_s": 0.5, "body_timeout_s": 0.5, **limits}),
                            AuthStage({TOKEN: ""}))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=guarded_protocol(http, guard), lifespan="off",
                            log_level="warning", limit_concurrency=None, timeout_keep_alive=30)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes only this flag
        await asyncio.sleep(0.01)
    try:
        yield port, guard
    finally:
        while _OPEN:
            _OPEN.pop().close()
        await asyncio.sleep(0)
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def request(path: str = "/", token: str | None = TOKEN, body: bytes = b"", length: int | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Length: "
            f"{len(body) if length is None else length}\r\n\r\n").encode() + body


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, data: bytes = b"") -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = cls(reader, writer)
        _OPEN.append(client)
        if data:
            await client.send(data)
        return client

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self, timeout: float = 3.0) -> bytes:
        """One response (status line to the end of its Content-Length body)."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(
            b"content-length:"))
        return head + await asyncio.wait_for(self.reader.readexactly(length), timeout)

    async def until_closed(self, timeout: float = 3.0) -> bytes:
        """Everything the server writes until it closes the connection."""
        out = b""
        with contextlib.suppress(ConnectionError):
            while chunk := await asyncio.wait_for(self.reader.read(65536), timeout):
                out += chunk
        return out

    async def trickle(self, data: bytes, interval: float = 0.05, step: int = 1) -> bytes:
        """Send `data` `step` bytes every `interval`, until the server answers or closes; what it wrote."""
        for at in range(0, len(data), step):
            try:
                await self.send(data[at:at + step])
                chunk = await asyncio.wait_for(self.reader.read(65536), interval)
            except TimeoutError:
                continue
            except ConnectionError:
                return b""
            return chunk + await self.until_closed() if chunk else b""
        return b""

    async def closed_now(self) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(1), 0.3) == b""
        except TimeoutError:
            return False
        except ConnectionError:
            return True

    def close(self) -> None:
        self.writer.close()


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_headers_never_finished_are_answered_408_and_the_connection_closed_at_the_deadline(http: str) -> None:
    async with served(http) as (port, guard):
        started = time.monotonic()
        silent = await Client.open(port)
        partial = await Client.open(port, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
        for client in (silent, partial):
            assert b" 408 " in (await client.until_closed()).split(b"\r\n")[0]
        assert 0.4 < time.monotonic() - started < 2.5
        assert guard.counts["timed_out"] == 2
        assert guard.unauthenticated == {}
        assert guard.per_peer == {}


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_headers_trickled_a_byte_at_a_time_are_cut_at_the_deadline_from_the_first_byte(http: str) -> None:
    async with served(http) as (port, _):
        client = await Client.open(port)
        started = time.monotonic()
        assert b" 408 " in await client.trickle(request(body=b"{}"))
        assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_a_trickled_body_is_cut_at_the_body_deadline_even_with_a_valid_token(http: str) -> None:
    async with served(http) as (port, guard):
        client = await Client.open(port, request(length=1000, body=b"{" * 10))
        started = time.monotonic()
        assert b" 408 " in await client.trickle(b" " * 990)
        assert 0.4 < time.monotonic() - started < 2.5
        assert guard.counts["timed_out"] == 1


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_the_next_request_on_a_kept_alive_connection_has_its_own_header_deadline(http: str) -> None:
    async with served(http) as (port, _):  # uvicorn's keep-alive timeout is 30 s here
        client = await Client.open(port, request("/one", body=b"{}"))
        assert b"/one 2" in await client.answer()
        await asyncio.sleep(0.8)  # longer than a header deadline: idle between requests is keep-alive's
        await client.send(b"POST /two HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        assert b" 408 " in await client.until_closed()
        assert 0.4 < time.monotonic() - started < 2.5


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_past_the_unauthenticated_cap_the_oldest_is_closed_and_authenticated_ones_stay(http: str) -> None:
    async with served(http, header_timeout_s=30, max_unauthenticated=4) as (port, guard):
        trusted = await Client.open(port, request("/a", body=b"{}"))
        assert b"/a 2" in await trusted.answer()
        held = [await Client.open(port, b"POST / HTTP/1.1\r\n") for _ in range(10)]
        await asyncio.sleep(0.2)
        closed = [await c.closed_now() for c in held]
        assert closed == [True] * 6 + [False] * 4, closed
        assert len(guard.unauthenticated) == 4
        assert guard.counts["evicted"] == 6
        await trusted.send(request("/b", body=b"{}"))
        assert b"/b 2" in await trusted.answer()
        # a connection with a wrong token is no better than one without
        wrong = await Client.open(port, request("/c", token="nope", length=10))
        await asyncio.sleep(0.1)
        assert await held[6].closed_now()
        assert not await wrong.closed_now()


async def test_an_unauthenticated_connection_being_answered_is_closed_after_the_idle_ones() -> None:
    async with served("httptools", header_timeout_s=30, max_unauthenticated=3) as (port, _):
        answering = await Client.open(port, request("/slow", token=None))
        await asyncio.sleep(0.1)
        idle = [await Client.open(port) for _ in range(5)]
        await asyncio.sleep(0.2)
        assert [await c.closed_now() for c in idle] == [True, True, True, False, False]
        assert b"/slow 0" in await answering.answer()


async def test_past_the_peer_cap_its_unauthenticated_connection_goes_first_then_new_ones_are_refused() -> None:
    async with served("httptools", header_timeout_s=30, max_per_peer=3) as (port, guard):
        trusted = []
        for i in range(2):
            trusted.append(await Client.open(port, request(f"/t{i}", body=b"{}")))
            assert f"/t{i} 2".encode() in await trusted[-1].answer()
        pending = await Client.open(port, b"POST / HT")
        newest = await Client.open(port, request("/n", body=b"{}"))
        assert b"/n 2" in await newest.answer()
        assert await pending.closed_now()
        refused = await Client.open(port, request("/r", body=b"{}"))
        assert await refused.closed_now()
        assert guard.counts["refused"] == 1
        assert guard.per_peer == {"127.0.0.1": 3}
        for client in trusted:
            await client.send(request("/again", body=b"{}"))
            assert b"/again 2" in await client.answer()


async def test_requests_in_flight_are_capped_and_open_connections_are_not_counted() -> None:
    async with served("httptools", header_timeout_s=30, max_requests=2) as (port, _):
        idle = [await Client.open(port) for _ in range(20)]  # uvicorn's limit_concurrency=2 would 503 now
        one = await Client.open(port, request("/x", body=b"{}"))
        assert b" 200 " in await one.answer()
        slow = [await Client.open(port, request("/slow", body=b"{}")) for _ in range(2)]
        await asyncio.sleep(0.1)
        over = await Client.open(port, request("/y", body=b"{}"))
        assert b" 503 " in await over.until_closed()
        for client in slow:
            assert b" 200 " in await client.answer()
        for client in idle:
            client.close()


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_an_absolute_form_target_reaches_the_app_whole_on_both_parsers(http: str) -> None:
    async with served(http) as (port, _):
        client = await Client.open(port, request("http://evil.example/mcp", body=b"{}"))
        assert b"http://evil.example/mcp 2" in await client.answer()


@pytest.mark.parametrize("http", PROTOCOLS)
async def test_a_request_head_past_the_bound_is_refused_431_however_it_is_split(http: str) -> None:
    async with served(http, header_timeout_s=30, max_header_bytes=4096) as (port, guard):
        whole = await Client.open(port, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 8000)
        assert b" 431 " in await whole.until_closed()
        pieces = await Client.open(port, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        pad = b"".join(b"X-Pad-%03d: %b\r\n" % (i, b"b" * 100) for i in range(100))
        assert b" 431 " in await pieces.trickle(pad, 0.01, 110)
        assert guard.counts["too_large"] == 2
        # a head under the bound with a body over it is the app's to bound, not this
        fine = await Client.open(port, request(body=b"{" * 20000))
        assert b"/ 20000" in await fine.answer()
