"""Resource subscriptions shared by several clients (issue 24): the server's one subscription to a
URI is the gateway's, held while any legacy session or modern listen stream still wants it.

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token) in front of the npm
@modelcontextprotocol/server-everything over stdio, whose `toggle-subscriber-updates` tool sends
`notifications/resources/updated` every 5 s for the URIs its client (the gateway) subscribed to,
and of tests/proxy/servers/subscribing.py, whose `held` tool says which URIs the gateway holds a
subscription to and whose `touch` tool updates them (no npm server reports its subscriptions).
The official Python SDK 2.x clients drive it: legacy sessions (`resources/subscribe` and
`unsubscribe`) and a 2026-07-28 client's `subscriptions/listen`. The failure this guards against:
one client's unsubscribe (or its session's end) forwarded while another still needs the URI, so
that client silently stops hearing of changes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated

from tests.harness import build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, PERMISSIVE, script_server
from tests.proxy.test_modern_listen import listening

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120),
              # a legacy client's resources/subscribe is what is tested; the SDK warns that 2026-07-28 removed it
              pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

DOC = "demo://resource/static/document/architecture.md"
MEMO = "memo://a"
MODERN_MEMO = "memo://modern"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-subs")
    built = build_gateway(home, PERMISSIVE, {"everything": EVERYTHING, "subs": script_server("subscribing")},
                          auth=True)
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        yield {"url": base, "token": token(built), "gateway": built.gateway}


class Updates:
    """The `resources/updated` URIs one legacy session hears, as they arrive."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._arrived.set()

    async def wait_for(self, uri: str, timeout: float = 15.0) -> None:
        with anyio.fail_after(timeout):
            while uri not in self.uris:
                self._arrived = anyio.Event()
                await self._arrived.wait()


@contextlib.asynccontextmanager
async def client(gw: dict[str, Any], path: str, mode: str = "legacy", updates: Updates | None = None,
                 ) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw['token']}"},
                           timeout=httpx2.Timeout(30.0, read=60.0)) as http,
        Client(streamable_http_client(f"{gw['url']}{path}", http_client=http), mode=mode,
               message_handler=updates) as c,
    ):
        yield c


async def held(c: Client, tool: str = "subs__held") -> list[str]:
    """The URIs the server says the gateway is subscribed to."""
    answer = await c.call_tool(tool, {})
    return list(json.loads(answer.content[0].text))  # type: ignore[union-attr]


async def settled(c: Client, want: list[str]) -> list[str]:
    """`held`, once the gateway's asynchronous unsubscribe (a session's end) has reached the server."""
    with anyio.fail_after(10):
        while (got := await held(c)) != want:  # noqa: ASYNC110 (the server's state, no event to wait on)
            await anyio.sleep(0.05)
    return got


async def test_one_session_unsubscribing_leaves_the_other_hearing_server_everythings_updates(
    gw: dict[str, Any],
) -> None:
    for path, toggle in (("/mcp/everything", "toggle-subscriber-updates"),
                         ("/mcp", "everything__toggle-subscriber-updates")):
        first, second = Updates(), Updates()
        async with client(gw, path, updates=first) as a, client(gw, path, updates=second) as b:
            await a.subscribe_resource(DOC)
            await b.subscribe_resource(DOC)
            started = await a.call_tool(toggle, {})
            assert "Started" in started.content[0].text  # type: ignore[union-attr]
            try:
                await second.wait_for(DOC)
                await a.unsubscribe_resource(DOC)
                second.uris.clear()
                await second.wait_for(DOC)  # the server still sends: the unsubscribe was not forwarded
                first.uris.clear()
                second.uris.clear()
                await second.wait_for(DOC)
                assert first.uris == []  # and the session that let go hears nothing more
            finally:
                await a.call_tool(toggle, {})


async def test_the_server_is_unsubscribed_when_the_last_legacy_session_lets_go_or_ends(gw: dict[str, Any]) -> None:
    async with client(gw, "/mcp") as watcher:
        first, second = Updates(), Updates()
        async with client(gw, "/mcp", updates=first) as a:
            async with client(gw, "/mcp/subs", updates=second) as b:
                await a.subscribe_resource(MEMO)
                await b.subscribe_resource(MEMO)
                await b.unsubscribe_resource(MEMO)
                assert await held(watcher) == [MEMO]  # a still wants it
                await a.call_tool("subs__touch", {})
                await first.wait_for(MEMO)
                await b.subscribe_resource(MEMO)
            # b's session ended while subscribed: a still holds the URI
            assert await held(watcher) == [MEMO]
            await a.unsubscribe_resource(MEMO)
            assert await held(watcher) == []  # the last one let go: forwarded
            await a.subscribe_resource(MEMO)
            assert await held(watcher) == [MEMO]
        # a's session ended while subscribed and no one else holds it: the gateway unsubscribes
        assert await settled(watcher, []) == []


async def test_a_listen_stream_and_a_legacy_session_share_the_servers_subscription(gw: dict[str, Any]) -> None:
    updates = Updates()
    async with client(gw, "/mcp") as watcher, client(gw, "/mcp", updates=updates) as legacy:
        await legacy.subscribe_resource(MEMO)
        async with client(gw, "/mcp", mode="2026-07-28") as modern, \
                listening(modern, resource_subscriptions=[MEMO]) as (sub, events):
            assert sub.honored.resource_subscriptions == [MEMO]
            await legacy.unsubscribe_resource(MEMO)
            assert await held(watcher) == [MEMO]  # the stream still wants it
            await watcher.call_tool("subs__touch", {})
            await events.wait_for(ResourceUpdated(uri=MEMO))
            await legacy.subscribe_resource(MEMO)
        # the stream closed; the legacy session holds it again, so it stays
        assert await held(watcher) == [MEMO]
        updates.uris.clear()
        await watcher.call_tool("subs__touch", {})
        await updates.wait_for(MEMO)
        await legacy.unsubscribe_resource(MEMO)
        assert await held(watcher) == []


async def test_a_modern_servers_resource_updates_reach_legacy_sessions_and_listen_streams(tmp_path: Any) -> None:
    """A 2026-07-28 server has no resources/subscribe: the gateway listens to it for the URIs its
    clients hold, and lets go of one only when its last holder does."""
    built = build_gateway(tmp_path / "home", PERMISSIVE, {"mt": script_server("modern_tasks")}, auth=True)
    async with serve_http(built) as base:
        assert await built.gateway.servers["mt"].wait_ready(60), built.gateway.servers["mt"].last_error
        gw = {"url": base, "token": token(built)}
        first, second = Updates(), Updates()
        async with client(gw, "/mcp", updates=first) as a, client(gw, "/mcp/mt", updates=second) as b, \
                client(gw, "/mcp", mode="2026-07-28") as modern, \
                listening(modern, resource_subscriptions=[MODERN_MEMO]) as (sub, events):
            assert sub.honored.resource_subscriptions == [MODERN_MEMO]
            await a.subscribe_resource(MODERN_MEMO)
            await b.subscribe_resource(MODERN_MEMO)
            await modern.call_tool("mt__touch", {})
            await first.wait_for(MODERN_MEMO)
            await second.wait_for(MODERN_MEMO)
            await events.wait_for(ResourceUpdated(uri=MODERN_MEMO))
            await a.unsubscribe_resource(MODERN_MEMO)
            first.uris.clear()
            second.uris.clear()
            events.got.clear()
            await modern.call_tool("mt__touch", {})
            await second.wait_for(MODERN_MEMO)  # the others still hear it
            await events.wait_for(ResourceUpdated(uri=MODERN_MEMO))
            assert first.uris == []
