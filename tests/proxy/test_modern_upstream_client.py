"""The gateway as the 2026-07-28 client of a modern upstream (issue 24: the suite's client scenarios).

Strategy: tests/proxy/servers/strict_modern.py, a modern-only streamable-HTTP server on raw ASGI
that records every request it is sent (method, `MCP-Protocol-Version`, the `_meta` envelope
keys, `Mcp-Param-*` headers) and, by its mode, refuses a version it serves, is the upstream of
a real in-process gateway (build_gateway, the in-memory client of tests.harness). Checked:
with `era: modern` every request the gateway sends carries the envelope and the header, from
the first; an UnsupportedProtocolVersionError that names the version sent is retried once on
the same start (not by a restart), one that names no version in common is not retried; the
server's identity reaches a handshake-era client of `/mcp/{server}` whether the server stamps
it in `_meta` or beside its capabilities (or not at all: then the configured name); a tool whose
`x-mcp-header` designation is invalid (empty, on an object property) is not offered on either
endpoint and a call naming it never reaches the server, while the valid tool's designated
arguments are mirrored into headers and an absent or null one is left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpwall.protocol.modern import standard_headers
from tests.harness import MemoryClient, build_gateway, started, text_of
from tests.proxy.harness import http_script_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
ENVELOPE = ["io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
            "io.modelcontextprotocol/clientInfo"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def seen(url: str) -> list[dict[str, Any]]:
    """What the server recorded, request by request."""
    return list(httpx.get(url.removesuffix("/mcp") + "/seen", timeout=10.0).json())


@pytest.fixture
def strict(request: pytest.FixtureRequest) -> Iterator[str]:
    with http_script_server("strict_modern", request.param) as url:
        yield url


@contextlib.asynccontextmanager
async def _gateway(home: Path, url: str, era: str, name: str = "strict") -> AsyncIterator[Any]:
    built = build_gateway(home, servers={name: {"url": url, "type": "http", "era": era}})
    async with started(built):
        yield built.gateway


async def _settled(upstream: Any, timeout: float = 30.0) -> None:
    """Until the upstream's first start attempt has ended, ready or failed."""
    for _ in range(int(timeout / 0.05)):
        if upstream.state == "ready" or upstream.last_error:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{upstream.name} neither started nor failed")


@pytest.mark.parametrize("strict", ["first"], indirect=True)
async def test_a_refused_version_the_server_names_is_retried_once_on_the_same_start(tmp_path: Path,
                                                                                     strict: str) -> None:
    async with _gateway(tmp_path, strict, "modern") as gateway:
        upstream = gateway.servers["strict"]
        assert await upstream.wait_ready(30), upstream.last_error
        assert upstream.era == "modern"
        assert upstream._generation == 1, "the refusal cost a restart instead of a retry"
        log = seen(strict)
        assert [r["method"] for r in log[:2]] == ["server/discover", "server/discover"]
        # Every request, the first included, in the 2026-07-28 envelope with its header.
        assert all(r["envelope"] == ENVELOPE and r["version"] == MODERN for r in log), log
        assert "initialize" not in [r["method"] for r in log]


@pytest.mark.parametrize("strict", ["first"], indirect=True)
async def test_auto_opens_with_initialize_and_then_speaks_2026_07_28_to_a_modern_only_server(
        tmp_path: Path, strict: str) -> None:
    """`auto` keeps the handshake era for a dual-era server, so its first request is `initialize`
    (refused here), which is why a user facing a modern server, and the suite's driver at
    2026-07-28, names `era: modern`."""
    async with _gateway(tmp_path, strict, "auto") as gateway:
        upstream = gateway.servers["strict"]
        assert await upstream.wait_ready(30), upstream.last_error
        assert upstream.era == "modern"
        log = seen(strict)
        assert log[0]["method"] == "initialize"
        assert log[0]["envelope"] == []
        assert all(r["envelope"] == ENVELOPE and r["version"] == MODERN for r in log[1:]), log


@pytest.mark.parametrize(("strict", "sent"), [("always", 2), ("other", 1)], indirect=["strict"])
async def test_a_version_refusal_is_retried_at_most_once_and_only_for_a_version_in_common(
        tmp_path: Path, strict: str, sent: int) -> None:
    async with _gateway(tmp_path, strict, "modern") as gateway:
        upstream = gateway.servers["strict"]
        await _settled(upstream)
        log = seen(strict)  # the restart waits a second: this is the first attempt's
        assert upstream.state != "ready"
        assert [r["method"] for r in log] == ["server/discover"] * sent


@pytest.mark.parametrize(("strict", "name", "info"), [
    ("plain", "strict", {"name": "strict", "version": "1.0"}),
    ("anonymous", "anon", {"name": "anon", "version": "unknown"}),
], indirect=["strict"])
async def test_a_handshake_era_client_of_the_server_endpoint_gets_the_servers_identity(
        tmp_path: Path, strict: str, name: str, info: dict[str, str]) -> None:
    async with _gateway(tmp_path, strict, "modern", name) as gateway:
        assert await gateway.servers[name].wait_ready(30), gateway.servers[name].last_error
        client = MemoryClient(gateway, name)
        answer = await client.initialize()
        assert answer["result"]["serverInfo"] == info, answer


@pytest.mark.parametrize("strict", ["plain"], indirect=True)
async def test_a_tool_with_an_invalid_x_mcp_header_is_not_offered_and_not_called(tmp_path: Path,
                                                                                strict: str) -> None:
    async with _gateway(tmp_path, strict, "modern") as gateway:
        assert await gateway.servers["strict"].wait_ready(30), gateway.servers["strict"].last_error
        single, aggregated = MemoryClient(gateway, "strict"), MemoryClient(gateway)
        for client in (single, aggregated):
            assert "result" in await client.initialize(initialized=True)
        listed = (await single.request("tools/list"))["result"]["tools"]
        assert [t["name"] for t in listed] == ["route"]
        merged = (await aggregated.request("tools/list"))["result"]["tools"]
        assert [t["name"] for t in merged] == ["strict__route"]
        assert list(gateway.servers["strict"].catalog.tools) == ["route"]
        before = len(seen(strict))
        for tool, args in (("blank", {"value": "x"}), ("boxed", {"data": {"a": 1}})):
            answer = await single.call(tool, args)
            assert "error" in answer, answer
            answer = await aggregated.call(f"strict__{tool}", args)
            assert "error" in answer, answer
        assert [r for r in seen(strict)[before:] if r["method"] == "tools/call"] == []
        # The valid tool's designated arguments are mirrored; an absent one is left out.
        answer = await single.call("route", {"region": "eu-west1", "query": "q"})
        assert json.loads(text_of(answer)) == {"mcp-param-region": "eu-west1"}


def test_a_null_designated_argument_is_left_out_of_the_headers() -> None:
    """http-custom-headers' null parameter: the header is omitted as for an absent one (the
    gateway's schema stage refuses a null its tool's schema does not admit before any header is
    made, so the driver leaves it out; this is the header code given one)."""
    schema = {"type": "object", "properties": {"verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                                               "region": {"type": "string", "x-mcp-header": "Region"}}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "route", "arguments": {"verbose": None, "region": "us-east1"}}}
    headers = standard_headers(message, schema)
    assert headers["Mcp-Param-Region"] == "us-east1"
    assert not any(k.lower() == "mcp-param-verbose" for k in headers)
