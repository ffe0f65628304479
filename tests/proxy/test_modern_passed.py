"""A modern client's tools/call like its last one that passed is not checked again, and nothing
else passes for it (issue 24: `proxy/_passed.py`).

Strategy: one gateway over HTTP in front of server-everything, a counting stage at the end of the
pipeline. A call passes and is remembered (the frontend's `Passed` holds it: asserted, so the tests
below exercise the remembered path, not only the full checks); then the same call with one thing
changed (each MCP header, a header sent twice, the envelope's version, its log level, the tool's
name, another agent) must get exactly the full checks' answer, and the call as it was passes again
after each. A tool whose catalog entry comes to designate an `x-mcp-header` after its call was
remembered has its `Mcp-Param-*` header required at once. A remembered call is routed as it was
then (`_routing.REMEMBERED`), so each thing its route or its checks rest on is changed under a
remembered call: the policy (reloaded to deny the tool), the upstream (restarted: a new process and
catalog) and the server (gone): the call meets the new state, never the old route.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from mcpwall.proxy._http import HttpFrontend
from mcpwall.stages import RequestContext, Stage
from tests.harness import build_gateway, context, serve_http, token
from tests.proxy.harness import EVERYTHING

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
stages:
  ratelimit: {requestsPerMinute: 0}
  pins: false
"""


class Entered(Stage):
    """Counts the requests that entered the pipeline."""

    name = "entered"

    def __init__(self) -> None:
        self.count = 0

    async def on_request(self, ctx: RequestContext) -> None:
        self.count += 1


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-passed")
    entered = Entered()
    apps: list[HttpFrontend] = []
    built = build_gateway(home, POLICY, {"everything": EVERYTHING}, auth=True, stages=[entered])
    def keep(app: HttpFrontend) -> HttpFrontend:
        apps.append(app)
        return app

    async with serve_http(built, app_wrapper=keep) as base:
        assert await built.gateway.servers["everything"].wait_ready(60)
        yield {"url": base, "token": token(built), "entered": entered, "gateway": built.gateway,
               "frontend": apps[0], "home": home}


def body(name: str = "everything__echo", version: str = MODERN, level: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": version,
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": "passed-test", "version": "1"}}
    if level is not None:
        meta["io.modelcontextprotocol/logLevel"] = level
    return {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": name, "arguments": {"message": "hi"}, "_meta": meta}}


def headers(name: str = "everything__echo", version: str = MODERN, method: str = "tools/call") -> list[tuple[str, str]]:
    return [("MCP-Protocol-Version", version), ("Mcp-Method", method), ("Mcp-Name", name)]


async def post(gw: dict[str, Any], payload: dict[str, Any], extra: list[tuple[str, str]]) -> httpx.Response:
    base = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
            ("Authorization", f"Bearer {gw['token']}")]
    async with httpx.AsyncClient(timeout=30.0) as http:
        return await http.post(f"{gw['url']}/mcp", content=json.dumps(payload).encode(), headers=base + extra)


async def passes(gw: dict[str, Any], extra: tuple[tuple[str, str], ...] = ()) -> None:
    answer = await post(gw, body(), [*headers(), *extra])
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["content"][0]["text"] == "Echo: hi"


def remembered(gw: dict[str, Any]) -> int:
    return len(gw["frontend"].modern._passed._by)


CHANGED = [
    pytest.param(body(), headers(name="everything__printEnv"), 400, -32020, id="mcp-name"),
    pytest.param(body(), headers(name="=?base64?ZXZlcnl0aGluZ19fZWNobw==?=x"), 400, -32020, id="mcp-name-sentinel"),
    pytest.param(body(), headers(method="tools/list"), 400, -32020, id="mcp-method"),
    pytest.param(body(), headers(version="2025-11-25"), 400, -32020, id="version-header"),
    pytest.param(body(), [*headers(), ("Mcp-Name", "everything__echo")], 400, -32020, id="mcp-name-twice"),
    pytest.param(body(), [("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call")], 400, -32020,
                 id="mcp-name-missing"),
    pytest.param(body(version="2099-01-01"), headers(version="2099-01-01"), 400, -32022, id="envelope-version"),
    pytest.param(body(level="bogus"), headers(), 400, -32602, id="log-level"),
    pytest.param(body(name="everything__printEnv"), headers(), 400, -32020, id="body-name"),
]


@pytest.mark.parametrize(("payload", "extra", "status", "code"), CHANGED)
async def test_a_call_like_the_remembered_one_but_for_one_thing_gets_the_full_checks_answer(
    gw: dict[str, Any], payload: dict[str, Any], extra: list[tuple[str, str]], status: int, code: int
) -> None:
    await passes(gw)
    assert remembered(gw) >= 1  # the next call meets the remembered path
    entered = gw["entered"].count
    answer = await post(gw, payload, extra)
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code
    assert gw["entered"].count == entered  # refused before any stage
    await passes(gw)


async def test_another_agent_of_the_same_token_is_a_client_of_its_own(gw: dict[str, Any]) -> None:
    await passes(gw)
    before = remembered(gw)
    await passes(gw, (("X-Agent-Id", "other-agent"),))
    assert remembered(gw) == before + 1
    sessions = gw["frontend"].modern._by_key
    assert any(key[2] == "other-agent" for key in sessions)


async def test_a_tool_that_comes_to_designate_a_header_has_it_checked_at_once(gw: dict[str, Any]) -> None:
    await passes(gw)
    tools = gw["gateway"].servers["everything"].catalog.tools
    entry = tools["echo"]
    schema = {"type": "object", "properties": {"message": {"type": "string", "x-mcp-header": "Message"}},
              "required": ["message"]}
    tools["echo"] = {**entry, "inputSchema": schema}  # a tools/list refresh brought a new definition
    try:
        missing = await post(gw, body(), headers())
        assert missing.status_code == 400, missing.text
        assert missing.json()["error"]["code"] == -32020
        wrong = await post(gw, body(), [*headers(), ("Mcp-Param-Message", "bye")])
        assert wrong.json()["error"]["code"] == -32020
        await passes(gw, (("Mcp-Param-Message", "hi"),))
        assert (await post(gw, body(), headers())).json()["error"]["code"] == -32020  # never remembered
    finally:
        tools["echo"] = entry
    await passes(gw)


async def test_a_policy_reload_decides_the_remembered_call_anew(gw: dict[str, Any]) -> None:
    await passes(gw)
    store = gw["gateway"].policy
    policy = gw["home"] / "policy.yaml"
    policy.write_text(POLICY + "rules:\n  - {id: no-echo, tools: [echo], action: deny}\n")
    try:
        assert store.reload()
        entered = gw["entered"].count
        denied = await post(gw, body(), headers())
        assert denied.json()["error"]["code"] == -32001, denied.text
        assert "no-echo" in denied.text
        assert gw["entered"].count == entered  # denied by the policy stage, before the last stage
    finally:
        policy.write_text(POLICY)
        assert store.reload()
    await passes(gw)


async def test_a_restarted_upstream_is_the_one_a_remembered_call_reaches(gw: dict[str, Any]) -> None:
    await passes(gw)
    upstream = gw["gateway"].servers["everything"]
    old = upstream.catalog.tools["echo"]
    await upstream.stop()
    await upstream.start()
    assert await upstream.wait_ready(60)
    assert upstream.catalog.tools["echo"] is not old  # a new catalog: the remembered shape no longer holds
    await passes(gw)
    await passes(gw)  # remembered again, on the new catalog
    shape = next(s for key, s in gw["frontend"].modern._passed._by.items() if key[2] is None)  # (no X-Agent-Id)
    assert shape.upstream is upstream
    assert shape.entry is not old  # (the new process may list its tools again: not asserted to be the last)


async def test_a_server_gone_under_a_remembered_call_is_unknown_to_it(gw: dict[str, Any]) -> None:
    await passes(gw)
    await passes(gw)
    servers = gw["gateway"].servers
    gone = servers.pop("everything")
    try:
        entered = gw["entered"].count
        answer = await post(gw, body(), headers())
        assert answer.json()["error"]["code"] == -32601, answer.text
        assert "Unknown server" in answer.text
        assert gw["entered"].count == entered
    finally:
        servers["everything"] = gone
    await passes(gw)


def test_routing_checks_the_remembered_server_is_still_there(tmp_path: Path) -> None:
    """The slot alone never routes: a remembered server that is gone is looked up as any call's.
    (A real gateway's router, request and session: the router is compiled.)"""
    from mcpwall.protocol import ProtocolError
    from mcpwall.proxy import Session
    from mcpwall.proxy._routing import REMEMBERED, Router

    gateway = build_gateway(tmp_path / "home", POLICY, servers={}).gateway
    router = Router(gateway)
    session = Session(kind="http", protocol_version=MODERN)
    ctx = context(gateway, server=None, target="", session=session, params=body()["params"])
    servers = cast(dict[str, Any], gateway.servers)
    servers["other"] = object()
    REMEMBERED[0], REMEMBERED[1], REMEMBERED[2] = ctx.message, "everything", "echo"
    try:
        with pytest.raises(ProtocolError, match="Unknown server"):
            router.route(ctx)
        servers["everything"] = object()
        router.route(ctx)
        assert (ctx.server, ctx.target) == ("everything", "echo")
    finally:
        REMEMBERED[0] = REMEMBERED[1] = REMEMBERED[2] = None
