"""Connections held open by an attacker do not starve authenticated clients (issue 22).

Strategy: a real gateway process (`mcpwall proxy`, its default limits) in front of the real
@modelcontextprotocol/server-memory. The test process plays a local attacker with no token: it
raises its own open-file limit, opens 4,300 TCP connections and holds them, each in one state a
slowloris client leaves a server in (nothing sent; half a request line; headers without their
end; an unauthenticated request's headers with a body that never arrives; the same with a wrong
token), and keeps opening new ones while an authenticated client calls tools/call on
`POST /memory` and `/mcp/memory`. Before the fix uvicorn's `limit_concurrency` (4,096) counted
the held connections and answered 503 to every call. The deadlines themselves are timed here on
the real gateway; their variants (trickled bytes, bodies, kept-alive connections, h11) are in
tests/proxy/test_connection_guard.py.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.proxy.harness import MEMORY, PERMISSIVE, GatewayProcess

pytestmark = pytest.mark.integration

HELD = 4300
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path / "home", {"memory": MEMORY}, PERMISSIVE).start()
    yield g
    g.stop()


def _fd_room(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted + 200 and (hard == resource.RLIM_INFINITY or hard > soft):
        soft = wanted + 200 if hard == resource.RLIM_INFINITY else min(hard, wanted + 200)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return min(wanted, soft - 200)


def _openings(port: int) -> list[bytes]:
    host = f"Host: 127.0.0.1:{port}\r\n".encode()
    head = b"POST /mcp/memory HTTP/1.1\r\n" + host + b"Content-Type: application/json\r\nContent-Length: 100000\r\n"
    return [b"", b"POST /memo", b"POST /memory HTTP/1.1\r\n" + host + b"X-Agent-Id: a",
            head + b"\r\n" + b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", ',
            head + b"Authorization: Bearer wrong\r\n\r\n{"]


class Attacker:
    """Holds `count` half-open connections and, while running, replaces those the gateway closes."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.held: list[socket.socket] = []
        self.opened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._refill, daemon=True)

    def open_one(self) -> None:
        s = socket.socket()
        s.setblocking(True)
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", self.port))
            first = _openings(self.port)[self.opened % 5]
            if first:
                s.sendall(first)
        except OSError:
            s.close()
            return
        self.opened += 1
        self.held.append(s)

    def fill(self, deadline: float) -> None:
        while len(self.held) < self.count and time.monotonic() < deadline:
            self.open_one()

    def _refill(self) -> None:
        while not self.stop.is_set():
            # drop what the gateway closed, open as many again
            alive = []
            for s in self.held:
                try:
                    s.setblocking(False)
                    gone = s.recv(1, socket.MSG_PEEK) == b""
                except BlockingIOError:
                    gone = False
                except OSError:
                    gone = True
                if gone:
                    s.close()
                else:
                    s.setblocking(True)
                    alive.append(s)
            self.held = alive
            self.fill(time.monotonic() + 0.5)

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(10)
        for s in self.held:
            with contextlib.suppress(OSError):
                s.close()


def _mcp_call(client: httpx.Client, url: str, headers: dict[str, str]) -> tuple[int, float]:
    started = time.monotonic()
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {**headers, "Accept": "application/json, text/event-stream"}
    r = client.post(f"{url}/mcp/memory", json=init, headers=accept)
    if r.status_code != 200:
        return r.status_code, time.monotonic() - started
    sid = {"Mcp-Session-Id": r.headers["mcp-session-id"]}
    client.post(f"{url}/mcp/memory", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**accept, **sid})
    r = client.post(f"{url}/mcp/memory", json=CALL, headers={**accept, **sid})
    return r.status_code, time.monotonic() - started


def test_4300_half_open_unauthenticated_connections_do_not_starve_authenticated_calls_issue_22(
        gw: GatewayProcess) -> None:
    attacker = Attacker(gw.port, _fd_room(HELD))
    try:
        attacker.fill(time.monotonic() + 60)
        assert attacker.opened >= min(HELD, 3000), attacker.opened
        attacker.thread.start()  # and keeps opening new ones while the calls are made
        time.sleep(0.5)
        for _ in range(3):
            # a new connection each time: the pool of unauthenticated connections must not crowd it out
            with httpx.Client(timeout=10.0) as client:
                started = time.monotonic()
                r = client.post(f"{gw.url}/memory", json=CALL, headers=gw.headers)
                took = time.monotonic() - started
                assert r.status_code == 200, (r.status_code, r.text[:200])
                assert "result" in r.json()
                assert took < 5.0
            with httpx.Client(timeout=10.0) as client:
                status, took = _mcp_call(client, gw.url, gw.headers)
                assert status == 200, (status, took)
                assert took < 5.0, (status, took)
        health = httpx.get(f"{gw.url}/health", headers=gw.headers, timeout=10.0).json()
        counts = health["connections"]
        assert counts["evicted"] > 1000, counts
        assert counts["unauthenticated"] <= 256, counts
    finally:
        attacker.close()
    # the gateway is still whole once the attacker is gone
    assert gw.post("/memory", CALL).status_code == 200


def test_a_request_refused_at_the_door_is_answered_at_once_and_its_connection_closed(gw: GatewayProcess) -> None:
    body = json.dumps(CALL).encode()
    for auth in (b"", b"Authorization: Bearer wrong\r\n"):
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as s:
            s.sendall(b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%bContent-Length: %d\r\n"
                      b"Connection: keep-alive\r\n\r\n%b" % (gw.port, auth, len(body), body))
            out = b""
            while chunk := s.recv(65536):  # ends when the gateway closes the connection
                out += chunk
        head = out.split(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 401")
        assert b"connection: close" in head


def test_headers_never_finished_are_closed_with_408_at_the_gateways_ten_second_deadline(gw: GatewayProcess) -> None:
    started = time.monotonic()
    answers = []
    for first in (b"", b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bea" % gw.port):
        s = socket.create_connection(("127.0.0.1", gw.port), timeout=20)
        s.sendall(first)
        answers.append(s)
    for s in answers:
        with s:
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            assert out.startswith(b"HTTP/1.1 408")
    assert 9.0 < time.monotonic() - started < 15.0
