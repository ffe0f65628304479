"""The DNS-rebinding guard reads Host, Origin and the request target as they came (issue 22).

Strategy: a real gateway process in front of the real @modelcontextprotocol/server-memory, and
requests written byte for byte on a raw socket, because httpx (like every client library)
normalises what matters here: it sends one Host, always, and origin-form targets. Each spelling
is sent as an authenticated tools/call, so a spelling that passes the guard is answered 200 with
the tool's result and one that does not gets 403 with -32003, the status a foreign Host always
had. Two copies of Host (either order), no Host, another port, and an absolute-form target passed
before the fix, as did two Origins; the trailing dot, nip.io and `null` spellings already held.
The guard's unit is proxy/_door.py; the same requests also go to the status, dashboard and admin
routes, which the guard covers before any route.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.proxy.harness import MEMORY, PERMISSIVE, GatewayProcess

pytestmark = pytest.mark.integration

CALL = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "read_graph", "arguments": {}}}).encode()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    g = GatewayProcess(Path(tmp_path_factory.mktemp("rebinding")) / "home", {"memory": MEMORY}, PERMISSIVE).start()
    yield g
    g.stop()


def send(gw: GatewayProcess, head: bytes, body: bytes = CALL) -> tuple[int, bytes]:
    """Write one request (`head`: request line and headers, without the token, length and end)."""
    data = (head + b"Authorization: Bearer " + gw.token.encode() + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    status = int(out.split(b" ", 2)[1])
    return status, out.split(b"\r\n\r\n", 1)[1]


def host(value: str) -> bytes:
    return f"Host: {value}\r\n".encode()


def refused_hosts(port: int) -> dict[str, bytes]:
    good = host(f"127.0.0.1:{port}")
    return {
        "two Hosts, evil first": host("evil.example") + good,
        "two Hosts, good first": good + host("evil.example"),
        "two Hosts, both good": good + good,
        "two Hosts, evil first, same port": host(f"evil.example:{port}") + host(f"localhost:{port}"),
        "no Host": b"",
        "an empty Host": host(""),
        "a trailing dot": host(f"localhost.:{port}"),
        "a trailing dot on the address": host(f"127.0.0.1.:{port}"),
        "another port": host("127.0.0.1:8080"),
        "no port (80)": host("127.0.0.1"),
        "localhost, another port": host("localhost:1"),
        "127.0.0.1.nip.io": host(f"127.0.0.1.nip.io:{port}"),
        "localtest.me": host(f"localtest.me:{port}"),
        "another loopback address": host(f"127.0.0.2:{port}"),
        "IPv4-mapped IPv6": host(f"[::ffff:127.0.0.1]:{port}"),
        "a decimal address": host(f"2130706433:{port}"),
        "a short address": host(f"127.1:{port}"),
        "the any address": host(f"0.0.0.0:{port}"),
        "user info": host(f"localhost:{port}@evil.example"),
        "a list": host(f"127.0.0.1:{port}, evil.example"),
    }


def test_every_host_that_is_not_the_loopback_host_and_port_we_serve_is_refused_with_403(gw: GatewayProcess) -> None:
    for name, headers in refused_hosts(gw.port).items():
        status, body = send(gw, b"POST /memory HTTP/1.1\r\n" + headers)
        assert status == 403, (name, status, body[:200])
        assert json.loads(body)["error"]["code"] == -32003, name
        assert b"DNS rebinding guard" in body, name


def test_an_absolute_form_target_is_refused_whatever_its_host(gw: GatewayProcess) -> None:
    good = host(f"127.0.0.1:{gw.port}")
    for target in (b"http://evil.example/memory", f"http://127.0.0.1:{gw.port}/memory".encode(),
                   b"http://evil.example/mcp/memory", b"HTTP://EVIL/memory", b"//evil.example/memory"):
        status, body = send(gw, b"POST " + target + b" HTTP/1.1\r\n" + good)
        assert status in (403, 404), (target, status, body[:200])
        assert status == 403 or target.startswith(b"//"), target
        assert b'"result"' not in body


def test_loopback_hosts_of_our_port_pass_in_any_letter_case(gw: GatewayProcess) -> None:
    for value in (f"127.0.0.1:{gw.port}", f"localhost:{gw.port}", f"LOCALHOST:{gw.port}", f"LocalHost:{gw.port}",
                  f"[::1]:{gw.port}"):
        status, body = send(gw, b"POST /memory HTTP/1.1\r\n" + host(value))
        assert status == 200, (value, status, body[:200])
        assert b'"result"' in body, value


def test_every_origin_that_is_not_a_loopback_origin_is_refused_with_403(gw: GatewayProcess) -> None:
    good = host(f"127.0.0.1:{gw.port}")

    def origin(value: str) -> bytes:
        return f"Origin: {value}\r\n".encode()

    spellings = {
        "two Origins, evil first": origin("http://evil.example") + origin(f"http://127.0.0.1:{gw.port}"),
        "two Origins, good first": origin(f"http://127.0.0.1:{gw.port}") + origin("http://evil.example"),
        "two good Origins": origin("http://localhost") + origin("http://localhost"),
        "null": origin("null"),
        "a backslash before user info": origin("http://evil.example\\@localhost"),
        "user info": origin("http://localhost@evil.example"),
        "a trailing dot": origin(f"http://localhost.:{gw.port}"),
        "nip.io": origin("http://127.0.0.1.nip.io"),
        "a path": origin("http://localhost/x"),
        "file": origin("file://"),
        "an extension": origin("chrome-extension://abcdefghijklmnop"),
        "another scheme": origin("ftp://localhost"),
        "IPv4-mapped IPv6": origin("http://[::ffff:7f00:1]"),
        "empty": origin(""),
    }
    for name, headers in spellings.items():
        status, body = send(gw, b"POST /memory HTTP/1.1\r\n" + good + headers)
        assert status == 403, (name, status, body[:200])
    for value in ("http://localhost:5173", f"http://127.0.0.1:{gw.port}", "https://LOCALHOST", "http://[::1]:3000"):
        status, body = send(gw, b"POST /memory HTTP/1.1\r\n" + good + origin(value))
        assert status == 200, (value, status, body[:200])


def test_headers_that_say_who_calls_may_come_only_once(gw: GatewayProcess) -> None:
    good = host(f"127.0.0.1:{gw.port}")
    for header in (b"Authorization: Bearer wrong\r\n", b"Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n",
                   b"X-Agent-Id: alice\r\nX-Agent-Id: bob\r\n"):
        status, body = send(gw, b"POST /memory HTTP/1.1\r\n" + good + header)
        assert status == 400, (header, status, body[:200])
        assert b"more than once" in body, header


def test_the_guard_stands_before_every_route(gw: GatewayProcess) -> None:
    two = host("evil.example") + host(f"127.0.0.1:{gw.port}")
    for line in (b"GET /health HTTP/1.1\r\n", b"GET /servers HTTP/1.1\r\n", b"GET /metrics HTTP/1.1\r\n",
                 b"GET /ui/ HTTP/1.1\r\n", b"GET /api/admin/status HTTP/1.1\r\n", b"POST /mcp/memory HTTP/1.1\r\n",
                 b"POST /mcp HTTP/1.1\r\n", b"POST /memory/explain HTTP/1.1\r\n"):
        for headers in (two, b"", host("127.0.0.1:1")):
            status, body = send(gw, line + headers, b"{}")
            assert status == 403, (line, headers, status, body[:200])
