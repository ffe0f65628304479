"""A stopping gateway ends its `subscriptions/listen` streams gracefully (issue 24, MCP 2026-07-28
`basic/patterns/subscriptions.mdx`, Graceful Closure): each stream's last event is the listen
request's own response, `resultType: complete` with its `subscriptionId`, before the stream ends.

Strategy: `mcpwall proxy` as a subprocess (the production HTTP server, uvicorn with its 5 s drain)
in front of the npm @modelcontextprotocol/server-everything; the official Python SDK 2.x client,
pinned to 2026-07-28, listens on `/mcp`, and a raw httpx stream listens on `/mcp/everything`;
then the gateway gets SIGTERM. Over stdio, a raw listen on `mcpwall proxy --stdio` and SIGTERM. The SDK tells the two endings apart: a graceful close ends its
event loop, a dropped stream raises `SubscriptionLost`. Without the graceful close the streams
were held to the drain deadline and cut, and the process took the whole deadline to exit.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.proxy.harness import EVERYTHING, MCPWALL, PERMISSIVE, GatewayProcess, write_servers
from tests.proxy.test_modern_http import meta

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
DOC = "demo://resource/static/document/architecture.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def raw_listen(gw: GatewayProcess, opened: anyio.Event, events: list[dict[str, Any]]) -> None:
    """One listen on a raw event stream; every event's JSON kept until the stream ends."""
    body = {"jsonrpc": "2.0", "id": "raw-listen", "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}}}
    headers = {**gw.headers, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "subscriptions/listen"}
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http, \
            http.stream("POST", f"{gw.url}/mcp/everything", json=body, headers=headers) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                opened.set()


async def test_listen_streams_end_with_their_graceful_close_when_the_gateway_stops(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "home", {"everything": EVERYTHING}).start()
    try:
        raw: list[dict[str, Any]] = []
        seen: list[Any] = []
        ended = anyio.Event()
        raw_open = anyio.Event()
        async with (
            httpx2.AsyncClient(headers=gw.headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http,
            Client(streamable_http_client(f"{gw.url}/mcp", http_client=http), mode=MODERN) as c,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(raw_listen, gw, raw_open, raw)
            async with c.listen(tools_list_changed=True, resource_subscriptions=[DOC]) as sub:
                assert sub.honored.resource_subscriptions == [DOC]

                async def follow() -> None:
                    async for event in sub:  # a dropped stream raises SubscriptionLost here
                        seen.append(event)
                    ended.set()

                tg.start_soon(follow)
                with anyio.fail_after(15):
                    await raw_open.wait()
                assert gw.proc is not None
                stopped = time.monotonic()
                gw.proc.send_signal(signal.SIGTERM)
                with anyio.fail_after(4):  # well inside the 5 s drain: the gateway ended it, not the deadline
                    await ended.wait()
                with anyio.fail_after(10):
                    while gw.proc.poll() is None:  # noqa: ASYNC110 (a process, no event to wait on)
                        await anyio.sleep(0.05)
                took = time.monotonic() - stopped
            tg.cancel_scope.cancel()
        assert took < 4.0, f"the gateway took {took:.1f} s to stop: its listen streams held the drain"
        assert gw.proc is not None
        assert gw.proc.returncode in (0, -signal.SIGTERM), gw.log.read_text()[-2000:]
        assert raw[0]["method"] == "notifications/subscriptions/acknowledged"
        last = raw[-1]
        assert last["id"] == "raw-listen"
        assert last["result"]["resultType"] == "complete"
        assert last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "raw-listen"
    finally:
        gw.stop()


async def test_a_stdio_listen_stream_ends_with_its_graceful_close_when_the_gateway_gets_sigterm(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(home / "servers.json", {"everything": EVERYTHING})
    proc = await asyncio.create_subprocess_exec(
        MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers", str(servers),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        listen = {"jsonrpc": "2.0", "id": 41, "method": "subscriptions/listen",
                  "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}}}
        proc.stdin.write(json.dumps(listen).encode() + b"\n")
        await proc.stdin.drain()
        with anyio.fail_after(60):
            ack = json.loads(await proc.stdout.readline())
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(4):  # inside the stdio frontend's grace: ended by the gateway, not cut
            last = json.loads(await proc.stdout.readline())
            await proc.wait()
        assert time.monotonic() - stopped < 4.0
        assert last["id"] == 41, last
        assert last["result"]["resultType"] == "complete"
        assert last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 41
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
