"""A request the client cancels, or whose session it ends, closes its HTTP exchange cleanly.

Strategy: a gateway process in front of the real server-everything; a long
tool call is cancelled mid-way with `notifications/cancelled` (answered as
JSON, or already streaming progress), or its session is deleted, or it is
cancelled on seatbelt's plain route. Each exchange must end with a complete
HTTP response (no 500, no connection cut mid-body), carry no answer (MCP: a
cancelled request gets none), and the gateway must log no ASGI error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.harness import EVERYTHING, GatewayProcess

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[GatewayProcess]:
    """A gateway per test; after the test, its log must hold no ASGI error."""
    g = GatewayProcess(tmp_path, {"everything": EVERYTHING}).start()
    yield g
    g.stop()
    text = g.log.read_text(errors="replace")
    assert "Exception in ASGI application" not in text
    assert "without completing response" not in text


def long_call(rid: int, name: str, progress: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {"duration": 4, "steps": 4}}
    if progress:
        params["_meta"] = {"progressToken": progress}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def open_session(c: httpx.AsyncClient, gw: GatewayProcess) -> dict[str, str]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    r = await c.post(f"{gw.url}/mcp", json=init, headers={**gw.headers, **ACCEPT})
    headers = {**gw.headers, **ACCEPT, "Mcp-Session-Id": r.headers["mcp-session-id"]}
    await c.post(f"{gw.url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


async def cancel_after(c: httpx.AsyncClient, url: str, headers: dict[str, str], rid: int, delay: float) -> None:
    await asyncio.sleep(delay)
    r = await c.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                 "params": {"requestId": rid, "reason": "changed my mind"}})
    assert r.status_code == 202


async def test_a_cancelled_request_answered_as_json_ends_as_an_empty_stream(gw: GatewayProcess) -> None:
    async with httpx.AsyncClient(timeout=30) as c:
        headers = await open_session(c, gw)
        call = c.post(f"{gw.url}/mcp", json=long_call(5, "everything__trigger-long-running-operation"),
                      headers=headers)
        r, _ = await asyncio.gather(call, cancel_after(c, f"{gw.url}/mcp", headers, 5, 0.8))
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert "data:" not in r.text  # no answer to a cancelled request
        ping = await c.post(f"{gw.url}/mcp", json={"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers=headers)
        assert ping.json() == {"jsonrpc": "2.0", "id": 6, "result": {}}


async def test_a_cancelled_request_that_was_streaming_progress_ends_its_stream(gw: GatewayProcess) -> None:
    async with httpx.AsyncClient(timeout=30) as c:
        headers = await open_session(c, gw)
        call = c.post(f"{gw.url}/mcp", json=long_call(7, "everything__trigger-long-running-operation", "tok"),
                      headers=headers)
        r, _ = await asyncio.gather(call, cancel_after(c, f"{gw.url}/mcp", headers, 7, 1.6))
        assert r.status_code == 200
        assert "notifications/progress" in r.text  # what came before the cancel
        assert '"result"' not in r.text


async def test_ending_the_session_mid_request_ends_the_request_cleanly(gw: GatewayProcess) -> None:
    async with httpx.AsyncClient(timeout=30) as c:
        headers = await open_session(c, gw)

        async def delete() -> None:
            await asyncio.sleep(0.8)
            assert (await c.delete(f"{gw.url}/mcp", headers=headers)).status_code == 200

        call = c.post(f"{gw.url}/mcp", json=long_call(8, "everything__trigger-long-running-operation"),
                      headers=headers)
        r, _ = await asyncio.gather(call, delete())
        assert r.status_code == 200
        assert "data:" not in r.text


async def test_a_request_cancelled_on_the_plain_route_gets_no_answer(gw: GatewayProcess) -> None:
    async with httpx.AsyncClient(timeout=30) as c:
        headers = {**gw.headers, "Content-Type": "application/json"}
        call = c.post(f"{gw.url}/everything", json=long_call(9, "trigger-long-running-operation"), headers=headers)
        r, _ = await asyncio.gather(call, cancel_after(c, f"{gw.url}/everything", headers, 9, 0.8))
        assert r.status_code == 202
        assert r.content == b""

