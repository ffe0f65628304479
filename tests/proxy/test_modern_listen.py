"""`subscriptions/listen` through the gateway (issue 24, item 1): a 2026-07-28 client's change notices.

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token) in front of the
npm @modelcontextprotocol/server-everything over stdio, whose `toggle-subscriber-updates` tool
makes it send `notifications/resources/updated` for the URIs its client (the gateway) subscribed
to and whose `gzip-file-as-resource` tool adds a resource (a real `resources/list_changed`), and
of tests/proxy/servers/shifting.py, whose tool list changes when it is asked to (no npm server
does that on demand). The official Python SDK 2.x client, pinned to 2026-07-28, opens listen
streams on `/mcp` and `/mcp/{server}` and reads typed events from them; over stdio it launches
`mcpwall proxy --stdio`. What must not reach a client: a change to a tool the policy denies it,
a change on another server than its endpoint's, the server's own `_meta` on a notice (read off a
raw event stream), a subscription to a resource the policy hides.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent, ToolsListChanged

from tests.harness import MemoryClient, build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, MCPWALL, PERMISSIVE, script_server, write_servers
from tests.proxy.test_modern_http import client as modern_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
DOC = "demo://resource/static/document/architecture.md"
MARKER = "shifting-server-private-marker"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-secret-tools
    description: Tools named secret_* are denied
    tools: [secret_*]
    action: deny
  - id: no-features-doc
    description: The features document is not for agents
    target: resource
    match: contains
    values: [features.md]
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-listen")
    built = build_gateway(home, POLICY, {"everything": EVERYTHING, "shift": script_server("shifting")}, auth=True)
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        yield {"url": base, "token": token(built), "gateway": built.gateway}


def client(gw: dict[str, Any], path: str) -> contextlib.AbstractAsyncContextManager[Client]:
    """The official client pinned to 2026-07-28 on `path`, with the gateway's token."""
    return modern_client(gw, path, MODERN)


class Events:
    """The events of one listen stream, collected in the background as they arrive."""

    def __init__(self) -> None:
        self.got: list[ServerEvent] = []
        self._arrived = anyio.Event()

    async def collect(self, sub: Any) -> None:
        async for event in sub:
            self.got.append(event)
            self._arrived.set()

    async def wait_for(self, event: ServerEvent, timeout: float = 15.0) -> None:
        with anyio.fail_after(timeout):
            while event not in self.got:
                self._arrived = anyio.Event()
                await self._arrived.wait()


@contextlib.asynccontextmanager
async def listening(c: Client, **filters: Any) -> AsyncIterator[tuple[Any, Events]]:
    events = Events()
    async with c.listen(**filters) as sub, anyio.create_task_group() as tg:
        tg.start_soon(events.collect, sub)
        yield sub, events
        tg.cancel_scope.cancel()


async def test_a_modern_client_hears_the_updates_of_a_resource_it_listens_to_on_both_endpoints(
    gw: dict[str, Any],
) -> None:
    for path, toggle in (("/mcp/everything", "toggle-subscriber-updates"),
                         ("/mcp", "everything__toggle-subscriber-updates")):
        async with client(gw, path) as c, listening(c, resource_subscriptions=[DOC]) as (sub, events):
            assert sub.honored.resource_subscriptions == [DOC]
            assert not sub.honored.tools_list_changed  # not asked for, not honoured
            started = await c.call_tool(toggle, {})
            try:
                assert "Started" in started.content[0].text  # type: ignore[union-attr]
                await events.wait_for(ResourceUpdated(uri=DOC))
            finally:
                await c.call_tool(toggle, {})  # the server's updates stop again
        hub = gw["gateway"].traffic.listen
        with anyio.fail_after(10):  # the client closed its stream: the gateway lets go of it upstream too
            while hub.streams or hub._held:  # noqa: ASYNC110 (state of another task, no event to wait on)
                await anyio.sleep(0.05)


async def test_a_resource_the_policy_hides_is_not_honoured_and_a_stream_is_no_legacy_method(
    gw: dict[str, Any],
) -> None:
    hidden = "demo://resource/static/document/features.md"
    for path in ("/mcp/everything", "/mcp"):
        async with client(gw, path) as c, listening(c, resource_subscriptions=[hidden, DOC]) as (sub, _):
            assert sub.honored.resource_subscriptions == [DOC]
    async with client(gw, "/mcp") as c, listening(c, resource_subscriptions=["other://x/1", DOC]) as (sub, _):
        assert sub.honored.resource_subscriptions == [DOC]  # no server behind /mcp offers other://
    legacy = MemoryClient(gw["gateway"], "everything")
    try:
        assert "result" in await legacy.initialize()
        answer = await legacy.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    finally:
        legacy.close()
    assert answer["error"]["code"] == -32601  # a handshake-era session has its notifications already


async def test_a_tool_list_change_is_announced_only_when_the_client_may_see_it_and_only_on_its_endpoint(
    gw: dict[str, Any],
) -> None:
    async with client(gw, "/mcp") as caller, client(gw, "/mcp") as c, \
            client(gw, "/mcp/everything") as other, \
            listening(c, tools_list_changed=True) as (sub, events), \
            listening(other, tools_list_changed=True) as (_, elsewhere):
        assert sub.honored.tools_list_changed is True
        await caller.call_tool("shift__add_tool", {"name": "secret_exporter", "description": "denied"})
        await caller.call_tool("shift__add_tool", {"name": "secret_exporter", "description": "changed, still denied"})
        await anyio.sleep(1.5)
        assert events.got == []  # a denied tool came and changed: nothing to tell the client
        await caller.call_tool("shift__add_tool", {"name": "weather", "description": "Weather for a city"})
        await events.wait_for(ToolsListChanged())
        assert "shift__weather" in {t.name for t in (await c.list_tools()).tools}
        assert "shift__secret_exporter" not in {t.name for t in (await c.list_tools()).tools}
        assert elsewhere.got == []  # /mcp/everything does not hear of another server's tools


async def test_a_resource_list_change_of_server_everything_reaches_a_listener(gw: dict[str, Any]) -> None:
    async with client(gw, "/mcp/everything") as c, listening(c, resources_list_changed=True) as (sub, events):
        assert sub.honored.resources_list_changed is True
        await c.call_tool("gzip-file-as-resource", {"name": "listen-test", "data": "data:text/plain,hello"})
        await events.wait_for(ResourcesListChanged())


async def test_a_notice_on_the_raw_stream_carries_the_listen_id_and_nothing_the_server_put_in_it(
    gw: dict[str, Any],
) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    headers = {"Authorization": f"Bearer {gw['token']}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "subscriptions/listen"}
    body = {"jsonrpc": "2.0", "id": "raw-listen", "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": True, "promptsListChanged": True}}}
    frames: list[dict[str, Any]] = []
    async with client(gw, "/mcp/shift") as caller, httpx.AsyncClient(timeout=30.0) as http, \
            http.stream("POST", f"{gw['url']}/mcp/shift", headers=headers, json=body) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.aiter_lines()
        with anyio.fail_after(15):
            async for line in lines:
                if line.startswith("data: "):
                    frames.append(json.loads(line[6:]))
                    if len(frames) == 1:
                        await caller.call_tool("add_tool", {"name": "forecast", "description": "Forecasts"})
                    else:
                        break
    ack, notice = frames
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}  # shifting has no prompts
    assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "raw-listen"}
    assert notice == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "raw-listen"}}}
    assert MARKER not in json.dumps(frames)


@pytest.mark.parametrize("frontend", ["proxy", "wrap"])
async def test_a_modern_client_listens_through_the_stdio_frontends(tmp_path: Path, frontend: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(home / "servers.json", {"everything": EVERYTHING})
    if frontend == "proxy":
        args, toggle = ["proxy", "--stdio", "--home", str(home), "--servers", str(servers)], \
            "everything__toggle-subscriber-updates"
    else:
        args, toggle = ["wrap", "--name", "everything", "--home", str(home), "--", EVERYTHING["command"],
                        *EVERYTHING["args"]], "toggle-subscriber-updates"
    async with Client(StdioServerParameters(command=MCPWALL, args=args), mode=MODERN) as c, \
            listening(c, resource_subscriptions=[DOC]) as (sub, events):
        assert sub.honored.resource_subscriptions == [DOC]
        await c.call_tool(toggle, {})
        await events.wait_for(ResourceUpdated(uri=DOC))


async def test_a_quiet_listen_stream_gets_keep_alive_comments(gw: dict[str, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import mcpwall.proxy._listen as listen_module

    monkeypatch.setattr(listen_module, "KEEPALIVE_S", 0.3)
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"Authorization": f"Bearer {gw['token']}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}
    body = {"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}}
    seen: list[str] = []
    async with httpx.AsyncClient(timeout=30.0) as http, \
            http.stream("POST", f"{gw['url']}/mcp", headers=headers, json=body) as stream:
        with anyio.fail_after(10):
            async for line in stream.aiter_lines():
                seen.append(line)
                if line.startswith(":"):
                    break
    assert seen[0] == "event: message"
    assert "notifications/subscriptions/acknowledged" in seen[1]
    assert seen[-1] == ": keepalive"  # an SSE comment: no event, nothing a client must parse
