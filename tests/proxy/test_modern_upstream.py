"""Both protocol eras upstream, and the gateway bridging them (issue 24, item 2).

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token) aggregates three
upstreams on one `/mcp`: tests/proxy/servers/modern_only.py (the official SDK 2.x server made
modern-only: it refuses `initialize`) over stdio and over streamable HTTP, and
@modelcontextprotocol/server-everything from node_modules, legacy-only (it answers
`server/discover` with -32601). The official Python SDK 2.x client drives the gateway in both
eras (mode="legacy" and pinned 2026-07-28), over HTTP, and over stdio through `mcpwall proxy
--stdio`: every client reaches every server, the policy denies on a modern upstream before the
server runs anything (the server's own call counter shows it), DLP masks a secret in a modern
upstream's result, and the ledger has one row per call. A legacy client reaching the modern
server's `ask_name` tool, which answers with an InputRequiredResult, gets the elicitation on its
own session and the tool's final result; what it answers passes the client-answer checks.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.harness import build_gateway, running, serve_http, token
from tests.proxy.harness import EVERYTHING, HERE, MCPWALL, http_script_server, script_server, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

MODERN = "2026-07-28"
ERAS = ["legacy", MODERN]
SECRET = "AKIAQX4BZ7WD3K5N2HPL"  # modern_only.py's `leak`
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-drop
    description: Tables are never dropped
    tools: [drop_table]
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
"""
MODERN_STDIO = script_server("modern_only", "stdio")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-modern-upstream")
    with http_script_server("modern_only", "http") as url:
        built = build_gateway(
            home,
            POLICY,
            {
                "modern": {**MODERN_STDIO, "roots": ["/workspace"]},
                "mhttp": {"url": url, "type": "http"},
                "legacy": EVERYTHING,
            },
            auth=True,
        )
        async with serve_http(built) as base:
            for upstream in built.gateway.servers.values():
                assert await upstream.wait_ready(60), upstream.last_error
            yield {"url": base, "token": token(built), "home": home, "gateway": built.gateway}


@contextlib.asynccontextmanager
async def client(gw: dict[str, Any], mode: str, path: str = "/mcp", **callbacks: Any) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {gw['token']}"}, timeout=httpx2.Timeout(30.0, read=60.0)
        ) as http,
        Client(streamable_http_client(f"{gw['url']}{path}", http_client=http), mode=mode, **callbacks) as c,
    ):
        yield c


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def _rows(home: Path, server: str, tool: str) -> int:
    with contextlib.closing(sqlite3.connect(home / "ledger.db")) as db:
        ((count,),) = db.execute(
            "SELECT count(*) FROM tool_calls WHERE server_name = ? AND tool_name IN (?, ?)",
            (server, tool, f"{server}__{tool}"),
        )
    return int(count)


async def ledger_rows(home: Path, server: str, tool: str, want: int) -> int:
    """The ledger's tool_calls rows for `server`'s `tool`, once at least `want` are written (the
    writer commits in the background), and a moment more so that an extra one would show."""
    for _ in range(100):
        if _rows(home, server, tool) >= want:
            break
        await anyio.sleep(0.1)
    await anyio.sleep(0.3)
    return _rows(home, server, tool)


async def test_each_upstream_is_opened_in_its_own_era_and_shows_it(gw: dict[str, Any]) -> None:
    servers = gw["gateway"].servers
    assert servers["modern"].era == "modern"
    assert servers["mhttp"].era == "modern"
    assert servers["legacy"].era == "legacy"
    assert servers["modern"].init_result["serverInfo"]["name"] == "modern-only"
    # Stateless: the gateway keeps no protocol session with the modern HTTP server.
    assert servers["mhttp"].transport.session_id is None
    async with httpx.AsyncClient(timeout=30.0) as http:
        listed = (
            await http.get(f"{gw['url']}/servers", headers={"Authorization": f"Bearer {gw['token']}"})
        ).json()
    eras = {s["name"]: (s["era"], s["protocol_version"]) for s in listed["servers"]}
    assert eras["modern"] == ("modern", MODERN)
    assert eras["mhttp"] == ("modern", MODERN)
    assert eras["legacy"][0] == "legacy"
    assert eras["legacy"][1] != MODERN


@pytest.mark.parametrize("mode", ERAS)
async def test_clients_of_both_eras_reach_servers_of_both_eras_through_one_endpoint(
    gw: dict[str, Any], mode: str
) -> None:
    async with client(gw, mode) as c:
        assert c.protocol_version == (MODERN if mode == MODERN else "2025-11-25")
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {"modern__add", "mhttp__add", "legacy__echo"} <= listed
        for name in ("modern__add", "mhttp__add"):
            result = await c.call_tool(name, {"a": 2, "b": 3})
            assert not result.is_error
            assert result.structured_content == {"result": 5.0}, name
        echoed = await c.call_tool("legacy__echo", {"message": f"from {mode}"})
        assert text(echoed) == f"Echo: from {mode}"


@pytest.mark.parametrize("mode", ERAS)
async def test_the_policy_denies_a_modern_upstreams_tool_before_the_server_runs_it(
    gw: dict[str, Any], mode: str
) -> None:
    async with client(gw, mode) as c:
        for server in ("modern", "mhttp"):
            before = (await c.call_tool(f"{server}__count_calls", {})).structured_content
            with pytest.raises(MCPError) as denied:
                await c.call_tool(f"{server}__drop_table", {"name": "users"})
            assert denied.value.error.code == -32001
            assert "no-drop" in json.dumps(denied.value.error.data)
            after = (await c.call_tool(f"{server}__count_calls", {})).structured_content
            assert after == before, server  # the call never reached the server


@pytest.mark.parametrize("mode", ERAS)
async def test_dlp_masks_a_secret_in_a_modern_upstreams_result(gw: dict[str, Any], mode: str) -> None:
    async with client(gw, mode) as c:
        for server in ("modern", "mhttp"):
            result = await c.call_tool(f"{server}__leak", {})
            shown = json.dumps(result.model_dump(mode="json"))
            assert SECRET not in shown
            assert "deploy with key" in shown  # masked, not dropped
            assert "REDACTED" in shown


async def test_the_ledger_has_one_row_per_call_to_a_modern_upstream(gw: dict[str, Any]) -> None:
    before = {s: await ledger_rows(gw["home"], s, "add", 0) for s in ("modern", "mhttp")}
    for mode in ERAS:
        async with client(gw, mode) as c:
            for server in ("modern", "mhttp"):
                await c.call_tool(f"{server}__add", {"a": 1, "b": 1})
    for server in ("modern", "mhttp"):
        assert await ledger_rows(gw["home"], server, "add", before[server] + 2) == before[server] + 2


class Asked:
    """An elicitation callback that answers with `name` and remembers what it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.messages.append(params.message)
        return types.ElicitResult(action="accept", content={"name": self.name})


@pytest.mark.parametrize("server", ["modern", "mhttp"])
async def test_a_legacy_client_answers_a_modern_servers_input_request_on_its_own_session(
    gw: dict[str, Any], server: str
) -> None:
    asked = Asked("Ada")
    before = await ledger_rows(gw["home"], server, "ask_name", 0)
    for path, tool in (("/mcp", f"{server}__ask_name"), (f"/mcp/{server}", "ask_name")):
        async with client(gw, "legacy", path, elicitation_callback=asked) as c:
            result = await c.call_tool(tool, {"greeting": "Hello"})
        assert not result.is_error, result
        # The retry carried the answer and the server's own state back: the server finished the call.
        assert text(result) == "Hello, Ada (state asked-for-name, action accept)"
    assert asked.messages == ["What is your name?", "What is your name?"]
    # One row per call: the rounds with the server are the gateway's, inside the call.
    assert await ledger_rows(gw["home"], server, "ask_name", before + 2) == before + 2


async def test_a_secret_in_a_legacy_clients_answer_never_reaches_the_modern_server(gw: dict[str, Any]) -> None:
    async with client(gw, "legacy", elicitation_callback=Asked(f"key {SECRET}")) as c:
        try:
            shown = text(await c.call_tool("modern__ask_name", {"greeting": "Hello"}))
        except MCPError as refused:
            shown = json.dumps(refused.error.model_dump(mode="json"))
    # The server echoes the name it got: the client-answer checks masked the key before it left.
    assert SECRET not in shown
    assert "REDACTED" in shown


async def test_a_client_that_cannot_elicit_gets_a_clear_error_and_the_server_no_answer(gw: dict[str, Any]) -> None:
    async with client(gw, "legacy") as c:  # no elicitation callback: the capability is not declared
        with pytest.raises(MCPError) as refused:
            await c.call_tool("modern__ask_name", {"greeting": "Hello"})
    assert "elicitation/create" in refused.value.error.message


@pytest.mark.parametrize("mode", ERAS)
async def test_a_single_server_endpoint_serves_a_modern_upstream_to_both_eras(gw: dict[str, Any], mode: str) -> None:
    async with client(gw, mode, "/mcp/mhttp") as c:
        assert "add" in {t.name for t in (await c.list_tools()).tools}
        result = await c.call_tool("add", {"a": 4, "b": 5})
        assert result.structured_content == {"result": 9.0}
        if mode == "legacy":
            assert c.server_info is not None
            assert c.server_info.name == "modern-only"  # the upstream's own identity, as for a legacy one


@pytest.mark.parametrize("mode", ERAS)
async def test_stdio_clients_of_both_eras_reach_both_eras_through_mcpwall_proxy_stdio(
    tmp_path: Path, mode: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(POLICY)
    servers = write_servers(home / "servers.json", {"modern": MODERN_STDIO, "legacy": EVERYTHING})
    args = ["proxy", "--stdio", "--home", str(home), "--servers", str(servers)]
    async with Client(
        StdioServerParameters(command=MCPWALL, args=args), mode=mode, elicitation_callback=Asked("Grace")
    ) as c:
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {"modern__add", "legacy__echo"} <= listed
        assert (await c.call_tool("modern__add", {"a": 1, "b": 2})).structured_content == {"result": 3.0}
        assert text(await c.call_tool("legacy__echo", {"message": "hi"})) == "Echo: hi"
        with pytest.raises(MCPError) as denied:
            await c.call_tool("modern__drop_table", {"name": "users"})
        assert denied.value.error.code == -32001
        assert SECRET not in json.dumps((await c.call_tool("modern__leak", {})).model_dump(mode="json"))
        if mode == "legacy":
            greeted = await c.call_tool("modern__ask_name", {"greeting": "Hi"})
            assert text(greeted) == "Hi, Grace (state asked-for-name, action accept)"


async def test_a_pinned_era_is_kept_a_legacy_pin_fails_a_modern_only_server_with_its_reason(tmp_path: Path) -> None:
    servers = {
        "pinned": {**MODERN_STDIO, "era": "legacy"},
        # a dual-era server (the SDK's), spoken to in 2026-07-28 because the configuration says so
        "forced": {"command": sys.executable, "args": [str(HERE.parent / "trust" / "servers" / "copycat.py")],
                   "era": "modern"},
    }
    async with running(tmp_path, POLICY, servers) as gw:
        pinned, forced = gw.gateway.servers["pinned"], gw.gateway.servers["forced"]
        assert not await pinned.wait_ready(5, until_failure=True)
        assert "2026-07-28" in str(pinned.last_error)  # the server's refusal names the version it speaks
        assert pinned.era is None
        assert await forced.wait_ready(30)
        assert forced.era == "modern"


async def test_a_modern_client_answers_a_modern_servers_input_request_through_the_gateway(gw: dict[str, Any]) -> None:
    asked = Asked("Lin")
    async with client(gw, MODERN, elicitation_callback=asked) as c:
        result = await c.call_tool("mhttp__ask_name", {"greeting": "Hey"})
    assert text(result) == "Hey, Lin (state asked-for-name, action accept)"
    assert asked.messages == ["What is your name?"]


@pytest.mark.parametrize("server", ["modern", "mhttp"])
async def test_a_modern_servers_list_change_reaches_a_legacy_client_through_the_gateways_listen(
    gw: dict[str, Any], server: str
) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    name = f"grown_{server}"
    async with client(gw, "legacy", message_handler=on_message) as c:
        await c.call_tool(f"{server}__grow", {"name": name})
        with anyio.fail_after(20):
            await changed.wait()
        assert f"{server}__{name}" in {t.name for t in (await c.list_tools()).tools}
        assert text(await c.call_tool(f"{server}__{name}", {})) == "grown"


async def sampled(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sampled ok"), model="m", stop_reason="endTurn"
    )


async def client_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult.model_validate({"roots": [{"uri": "file:///home/alice/.ssh"}]})


async def test_a_legacy_client_samples_for_a_modern_server_and_its_roots_stay_the_configured_ones(
    gw: dict[str, Any],
) -> None:
    async with client(gw, "legacy", sampling_callback=sampled, list_roots_callback=client_roots) as c:
        assert text(await c.call_tool("modern__summarize", {"topic": "eras"})) == "summary: sampled ok"
        # roots/list is answered from the server's configuration, never by a client (issue 22)
        assert json.loads(text(await c.call_tool("modern__where", {}))) == ["file:///workspace"]


async def test_sampling_for_a_modern_server_is_refused_when_the_policy_forbids_it(tmp_path: Path) -> None:
    async with running(tmp_path, POLICY + "allowSampling: false\n", {"modern": MODERN_STDIO}) as gw:
        answer = await gw.call("modern__summarize", {"topic": "eras"})
    assert answer["error"]["code"] == -32001
    assert "sampling is disabled by policy" in answer["error"]["message"]


async def test_a_modern_server_that_never_stops_asking_gets_a_bounded_number_of_rounds(gw: dict[str, Any]) -> None:
    async with client(gw, "legacy") as c:
        with anyio.fail_after(30), pytest.raises(MCPError) as stuck:
            await c.call_tool("mhttp__nag", {})
    assert stuck.value.error.code == -32000
    assert "kept asking for input after 8 rounds" in stuck.value.error.message
