"""MCP 2026-07-28 clients on the gateway's HTTP frontends (issue 24, items 1 and 4).

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token) in front of
two legacy upstreams: @modelcontextprotocol/server-everything from node_modules over stdio,
and tests/proxy/servers/headers.py over streamable HTTP, whose `route` tool designates its
`region` argument for the `Mcp-Param-Region` header and reports the MCP headers it was sent.
The official Python SDK 2.x client drives it in the modern revision (pinned: no initialize, no
session; and `auto`: a `server/discover` probe it adopts) and, on the same gateway, in the
legacy one. Adversarial requests are raw POSTs: headers that disagree with the body (method,
name, parameter; case, whitespace and duplicates), an unsupported version, no token. A
counting stage at the end of the pipeline shows whether a request entered it; the ledger shows
the row a refusal leaves.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpwall.stages import RequestContext, Stage
from tests.harness import build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, http_script_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-env-dump
    description: Environment dumps are denied
    tools: [get-env]
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
"""


class Entered(Stage):
    """Counts the requests that entered the pipeline, by method and target."""

    name = "entered"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def on_request(self, ctx: RequestContext) -> None:
        self.seen.append((ctx.method, ctx.target))


def headers_server() -> contextlib.AbstractContextManager[str]:
    return http_script_server("headers")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-modern")
    entered = Entered()
    with headers_server() as url:
        built = build_gateway(
            home,
            POLICY,
            {"everything": EVERYTHING, "hdr": {"url": url, "type": "http"}},
            auth=True,
            stages=[entered],
        )
        async with serve_http(built) as base:
            for upstream in built.gateway.servers.values():
                assert await upstream.wait_ready(60), upstream.last_error
            yield {
                "url": base,
                "token": token(built),
                "entered": entered,
                "home": home,
                "gateway": built.gateway,
            }


@contextlib.asynccontextmanager
async def client(gw: dict[str, Any], path: str, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {gw['token']}"}, timeout=httpx2.Timeout(30.0, read=60.0)
        ) as http,
        Client(streamable_http_client(f"{gw['url']}{path}", http_client=http), mode=mode) as c,
    ):
        yield c


def meta(version: str = MODERN) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    }


def call_body(name: str, arguments: dict[str, Any], version: str = MODERN, rid: int = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta(version)},
    }


def std_headers(
    method: str = "tools/call", name: str | None = None, version: str = MODERN
) -> list[tuple[str, str]]:
    out = [("MCP-Protocol-Version", version), ("Mcp-Method", method)]
    if name is not None:
        out.append(("Mcp-Name", name))
    return out


async def post(
    gw: dict[str, Any], path: str, body: Any, headers: list[tuple[str, str]], auth: bool = True
) -> httpx.Response:
    base = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
    if auth:
        base.append(("Authorization", f"Bearer {gw['token']}"))
    async with httpx.AsyncClient(timeout=30.0) as http:
        return await http.post(
            f"{gw['url']}{path}", content=json.dumps(body).encode(), headers=base + headers
        )


async def ledger_codes(gw: dict[str, Any], tool: str, want: int) -> list[int]:
    """The error codes of the ledger's rows for `tool`, once one with `want` is written (the
    writer commits in the background)."""
    codes: list[int] = []
    for _ in range(100):
        with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
            codes = [
                c
                for (c,) in db.execute(
                    "SELECT error_code FROM tool_calls WHERE tool_name IN (?, ?)", (tool, f"hdr__{tool}")
                )
            ]
        if want in codes:
            break
        await anyio.sleep(0.1)
    return codes


async def test_a_pinned_modern_client_calls_through_every_http_endpoint_with_no_initialize(
    gw: dict[str, Any],
) -> None:
    before = len(gw["gateway"].sessions)
    for path, echo in (("/mcp/everything", "echo"), ("/mcp", "everything__echo")):
        async with client(gw, path, MODERN) as c:
            assert c.protocol_version == MODERN
            listed = {t.name for t in (await c.list_tools()).tools}
            assert echo in listed
            result = await c.call_tool(echo, {"message": "hello from 2026"})
            assert result.content[0].text == "Echo: hello from 2026"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as denied:
                await c.call_tool(echo.replace("echo", "get-env"), {})
            assert denied.value.error.code == -32001  # the policy decided, as for a legacy call
    assert ("initialize", "") not in gw["entered"].seen
    assert ("tools/call", "echo") in gw["entered"].seen
    # One session per endpoint and principal, not one per request or client.
    assert len(gw["gateway"].sessions) - before <= 2


async def test_an_auto_client_adopts_the_gateways_discover_answer(gw: dict[str, Any]) -> None:
    async with client(gw, "/mcp", "auto") as c:
        assert c.protocol_version == MODERN
        discovered = c.session.discover_result
        assert discovered is not None
        assert MODERN in discovered.supported_versions
        assert "2025-11-25" in discovered.supported_versions
        assert c.server_capabilities.tools is not None
        assert c.server_info is not None
        assert c.server_info.name == "mcpwall"
        prompt = await c.get_prompt("everything__simple-prompt", {})
        assert prompt.messages


async def test_a_legacy_client_on_the_same_gateway_still_initializes_and_calls(gw: dict[str, Any]) -> None:
    async with client(gw, "/mcp/everything", "legacy") as c:
        assert c.protocol_version == "2025-11-25"
        result = await c.call_tool("echo", {"message": "legacy"})
        assert result.content[0].text == "Echo: legacy"  # type: ignore[union-attr]
    # A discover without the envelope is a legacy client's: unknown, as before the revision.
    async with httpx.AsyncClient(
        timeout=30.0,
        headers={"Authorization": f"Bearer {gw['token']}", "Accept": "application/json, text/event-stream"},
    ) as http:
        opened = await http.post(
            f"{gw['url']}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "l", "version": "1"},
                },
            },
        )
        sid = opened.headers["mcp-session-id"]
        probe = await http.post(
            f"{gw['url']}/mcp",
            headers={"Mcp-Session-Id": sid},
            json={"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}},
        )
        assert probe.json()["error"]["code"] == -32601
        assert "resultType" not in json.dumps(opened.json())


async def test_the_gateway_mirrors_the_standard_headers_to_an_http_upstream(gw: dict[str, Any]) -> None:
    async with client(gw, "/mcp", MODERN) as c:
        await c.list_tools()  # the client learns which argument `route` designates for a header
        result = await c.call_tool("hdr__route", {"region": "eu west", "query": "q"})
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    # The upstream knows the tool as `route`; its 2026 headers say so, and never the envelope.
    assert seen["mcp-method"] == "tools/call"
    assert seen["mcp-name"] == "route"
    assert seen["mcp-param-region"] == "eu west"
    assert not [k for k in seen["meta"] if k.startswith("io.modelcontextprotocol/")]


MISMATCHES = [
    pytest.param(std_headers("tools/list", "everything__echo"), id="method"),
    pytest.param(std_headers("Tools/call", "everything__echo"), id="method-case"),
    pytest.param(std_headers("tools/ call", "everything__echo"), id="method-inner-space"),
    pytest.param(std_headers(name="everything__get-env"), id="name"),
    pytest.param(std_headers(name="Everything__echo"), id="name-case"),
    pytest.param(
        std_headers(name="=?base64?" + base64.b64encode(b"everything__get-env").decode() + "?="),
        id="name-base64",
    ),
    pytest.param(
        [*std_headers(name="everything__echo"), ("Mcp-Name", "everything__get-env")], id="name-twice"
    ),
    pytest.param([*std_headers(name="everything__echo"), ("mcp-method", "tools/call")], id="method-twice"),
    pytest.param([("MCP-Protocol-Version", MODERN), ("Mcp-Name", "everything__echo")], id="method-missing"),
    pytest.param(std_headers(), id="name-missing"),
    pytest.param(std_headers(name="everything__echo", version="2025-11-25"), id="version"),
]


@pytest.mark.parametrize("headers", MISMATCHES)
async def test_headers_that_disagree_with_the_body_are_refused_before_any_stage(
    gw: dict[str, Any], headers: list[tuple[str, str]]
) -> None:
    entered = len(gw["entered"].seen)
    answer = await post(gw, "/mcp", call_body("everything__echo", {"message": "x"}), headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == -32020
    assert answer.json()["id"] in (7, None)  # None: a header sent twice is refused at the door
    assert len(gw["entered"].seen) == entered  # no stage saw it


async def test_whitespace_around_a_header_value_is_not_part_of_it(gw: dict[str, Any]) -> None:
    """RFC 9110: the spaces and tabs around a field value are not the value (httpx will not send
    them, so this request is written by hand)."""
    body = json.dumps(call_body("everything__echo", {"message": "ws"})).encode()
    port = int(gw["url"].rsplit(":", 1)[1])
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {gw['token']}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method:  tools/call \t\r\nMcp-Name:\teverything__echo  \r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    stream = await anyio.connect_tcp("127.0.0.1", port)
    async with stream:
        await stream.send(head + body)
        raw = b""
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            while True:
                raw += await stream.receive()
    status, _, rest = raw.partition(b"\r\n")
    assert b" 200 " in status, raw
    headers, _, payload = rest.partition(b"\r\n\r\n")
    answer = json.loads(payload)
    assert answer["result"]["resultType"] == "complete"
    assert answer["result"]["content"][0]["text"] == "Echo: ws"
    assert b"mcp-session-id" not in headers.lower()


PARAMS = [
    pytest.param({"region": "eu", "query": "q"}, [("Mcp-Param-Region", "us")], id="param"),
    pytest.param({"region": "eu", "query": "q"}, [("Mcp-Param-Region", "EU")], id="param-case"),
    pytest.param({"region": "eu", "query": "q"}, [], id="param-missing"),
    pytest.param({"query": "q"}, [("Mcp-Param-Region", "eu")], id="param-without-argument"),
    pytest.param(
        {"region": "eu", "query": "q"},
        [("Mcp-Param-Region", "eu"), ("mcp-param-region", "eu")],
        id="param-twice",
    ),
]


@pytest.mark.parametrize(("arguments", "extra"), PARAMS)
async def test_a_designated_parameter_header_must_match_its_argument(
    gw: dict[str, Any], arguments: dict[str, Any], extra: list[tuple[str, str]]
) -> None:
    entered = len(gw["entered"].seen)
    answer = await post(
        gw, "/mcp", call_body("hdr__route", arguments), std_headers(name="hdr__route") + extra
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == -32020
    assert len(gw["entered"].seen) == entered
    assert -32020 in await ledger_codes(gw, "route", -32020)


async def test_a_matching_parameter_header_passes(gw: dict[str, Any]) -> None:
    answer = await post(
        gw,
        "/mcp/hdr",
        call_body("route", {"region": "eu", "query": "q"}),
        [*std_headers(name="route"), ("Mcp-Param-Region", "eu")],
    )
    assert answer.status_code == 200, answer.text
    assert json.loads(answer.json()["result"]["content"][0]["text"])["mcp-param-region"] == "eu"


async def test_an_unsupported_version_is_answered_with_the_versions_the_gateway_serves(
    gw: dict[str, Any],
) -> None:
    entered = len(gw["entered"].seen)
    answer = await post(
        gw,
        "/mcp",
        call_body("everything__echo", {"message": "x"}, "1900-01-01"),
        std_headers(name="everything__echo", version="1900-01-01"),
    )
    assert answer.status_code == 400
    err = answer.json()["error"]
    assert err["code"] == -32022
    assert err["data"]["requested"] == "1900-01-01"
    assert err["data"]["supported"][0] == MODERN
    assert "2025-11-25" in err["data"]["supported"]
    assert len(gw["entered"].seen) == entered


async def test_a_modern_request_without_a_token_is_refused_and_recorded(gw: dict[str, Any]) -> None:
    answer = await post(
        gw,
        "/mcp",
        call_body("everything__print-env", {}),
        std_headers(name="everything__print-env"),
        auth=False,
    )
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == -32003
    assert await ledger_codes(gw, "print-env", -32003) == [-32003]


async def test_the_plain_route_serves_a_modern_request_too(gw: dict[str, Any]) -> None:
    answer = await post(gw, "/everything", call_body("echo", {"message": "plain"}), std_headers(name="echo"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["content"][0]["text"] == "Echo: plain"
    mismatched = await post(
        gw, "/everything", call_body("echo", {"message": "plain"}), std_headers(name="get-env")
    )
    assert mismatched.json()["error"]["code"] == -32020


async def test_rotating_client_info_does_not_open_a_new_session(gw: dict[str, Any]) -> None:
    """Security state lives in the session: a modern client that names itself anew on every request
    stays in the one session of its principal and agent, and what the stages remember holds."""
    for name in ("first-name", "second-name"):
        body = call_body("everything__echo", {"message": name})
        body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": name, "version": "1"}
        answer = await post(gw, "/mcp", body, std_headers(name="everything__echo"))
        assert answer.status_code == 200, answer.text
    mine = [
        s
        for s in gw["gateway"].sessions.values()
        if s.protocol_version == MODERN and s.server is None and s.principal == "" and s.agent == ""
    ]
    assert len(mine) == 1
    assert mine[0].client_name == "second-name"


async def test_two_clients_may_use_the_same_request_id_at_once(gw: dict[str, Any]) -> None:
    """Two clients of one principal share its session; the same id in flight twice stays two
    requests (the second answered under its own id, the first still known to be in flight)."""
    slow = call_body("everything__trigger-long-running-operation", {"duration": 3, "steps": 3}, rid=5)
    fast = call_body("everything__echo", {"message": "same id"}, rid=5)
    answers: dict[str, httpx.Response] = {}

    async def send_slow() -> None:
        answers["slow"] = await post(
            gw, "/mcp", slow, std_headers(name="everything__trigger-long-running-operation")
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(send_slow)
        await anyio.sleep(0.7)
        answers["fast"] = await post(gw, "/mcp", fast, std_headers(name="everything__echo"))
        [session] = [
            s
            for s in gw["gateway"].sessions.values()
            if s.protocol_version == MODERN and s.server is None and s.principal == "" and s.agent == ""
        ]
        assert list(session.inflight) == [5]  # the slow call, still in flight after the fast one ended
    assert answers["fast"].json()["id"] == 5
    assert answers["fast"].json()["result"]["content"][0]["text"] == "Echo: same id"
    assert answers["slow"].json()["id"] == 5
    assert "Long running operation completed" in json.dumps(answers["slow"].json()["result"])
