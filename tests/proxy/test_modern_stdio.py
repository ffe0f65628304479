"""MCP 2026-07-28 clients on the gateway's stdio frontends and its session-bound paths (issue 24, item 1).

Strategy: the official Python SDK 2.x client launches `mcpwall proxy --stdio` and `mcpwall wrap`
in front of @modelcontextprotocol/server-everything (npm) as a desktop client would, pinned to
2026-07-28 (no initialize) and in `auto` (a `server/discover` probe it adopts). The rest drives
an in-process gateway through the in-memory transport, on a relay-frame session and a stdio
one, in front of tests/proxy/servers/chatty.py, whose `caps` tool reports the `_meta` it was
sent: what a modern request's envelope makes of its answer and of what reaches the legacy
server, the checks of the envelope, and that a legacy session is answered as before. The
constants and header codec written out in `mcpwall.protocol.modern` are checked against the
SDK's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import mcp_types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared import inbound
from mcp_types import methods, version

from mcpwall.protocol import ErrorCode, modern
from tests.harness import MemoryClient, running
from tests.proxy.harness import EVERYTHING, MCPWALL, PERMISSIVE, script_server, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
SECRET = "not-a-secret-just-a-marker"


def envelope(version: Any = MODERN, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "2"},
        **extra,
    }


@pytest.mark.integration
@pytest.mark.parametrize("mode", [MODERN, "auto"])
async def test_an_sdk_client_of_2026_calls_through_the_stdio_frontends(tmp_path: Path, mode: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(PERMISSIVE)
    servers = write_servers(home / "servers.json", {"everything": EVERYTHING})
    if mode == MODERN:
        args, echo = ["proxy", "--stdio", "--home", str(home), "--servers", str(servers)], "everything__echo"
    else:
        args, echo = (
            [
                "wrap",
                "--name",
                "everything",
                "--home",
                str(home),
                "--",
                EVERYTHING["command"],
                *EVERYTHING["args"],
            ],
            "echo",
        )
    async with Client(StdioServerParameters(command=MCPWALL, args=args), mode=mode) as c:
        assert c.protocol_version == MODERN
        if mode == "auto":
            discovered = c.session.discover_result
            assert discovered is not None
            assert discovered.capabilities.tools is not None
            assert c.server_info is not None
            assert c.server_info.name == "mcpwall"
        assert echo in {t.name for t in (await c.list_tools()).tools}
        result = await c.call_tool(echo, {"message": "stdio 2026"})
        assert result.content[0].text == "Echo: stdio 2026"  # type: ignore[union-attr]


@pytest.mark.integration
async def test_a_modern_request_on_a_frame_session_is_shaped_and_reaches_the_server_without_its_envelope(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, servers={"c": script_server("chatty", SECRET)}) as gw:
        frame = MemoryClient(gw.gateway, kind="frame")
        answer = await frame.request(
            "tools/call", {"name": "c__caps", "arguments": {}, "_meta": envelope(progressToken="p1", other=1)}
        )
        body = answer["result"]
        assert body["resultType"] == "complete"
        assert body["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpwall"
        seen = json.loads(body["content"][0]["text"])["meta"]
        assert not [k for k in seen if k.startswith("io.modelcontextprotocol/")], (
            seen
        )  # a legacy server's view
        assert seen["other"] == 1
        assert frame.session.client_name == "modern-test"
        assert frame.session.protocol_version == MODERN
        listed = await frame.request("tools/list", {"_meta": envelope()})
        assert listed["result"]["cacheScope"] == "private"
        assert listed["result"]["ttlMs"] >= 0
        discovered = (await frame.request("server/discover", {"_meta": envelope()}))["result"]
        assert discovered["supportedVersions"][0] == MODERN
        assert "tools" in discovered["capabilities"]
        # served through subscriptions/listen (tests/proxy/test_modern_listen.py)
        assert discovered["capabilities"]["tools"]["listChanged"] is True
        # The legacy session beside it sees what it saw before the revision.
        legacy = gw.client
        assert "resultType" not in (await legacy.call("c__caps"))["result"]
        assert (await legacy.request("server/discover"))["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
        assert (await legacy.request("ping")) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        frame.close()


ENVELOPES = [
    pytest.param(
        "tools/call", {"name": "c__caps", "_meta": envelope("1900-01-01")}, -32022, id="unsupported"
    ),
    pytest.param(
        "tools/call",
        {"name": "c__caps", "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}},
        -32602,
        id="no-capabilities",
    ),
    pytest.param("tools/call", {"name": "c__caps", "_meta": envelope(7)}, -32602, id="version-not-a-string"),
    pytest.param(
        "tools/call",
        {"name": "c__caps", "_meta": envelope(**{"io.modelcontextprotocol/logLevel": "loud"})},
        -32602,
        id="log-level",
    ),
    pytest.param("ping", {"_meta": envelope()}, -32601, id="ping-removed"),
    pytest.param("logging/setLevel", {"level": "info", "_meta": envelope()}, -32601, id="set-level-removed"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("method", "params", "code"), ENVELOPES)
async def test_an_envelope_the_gateway_cannot_serve_is_refused_on_a_session_that_never_initialized(
    tmp_path: Path, method: str, params: dict[str, Any], code: int
) -> None:
    async with running(tmp_path, servers={"c": script_server("chatty", SECRET)}) as gw:
        fresh = MemoryClient(gw.gateway)  # stdio, no initialize
        answer = await fresh.request(method, params)
        assert answer["error"]["code"] == code, answer
        if code == -32022:
            assert answer["error"]["data"] == {
                "supported": list(modern.ALL_VERSIONS),
                "requested": "1900-01-01",
            }
        fresh.close()


def test_the_retired_and_reserved_codes_never_reach_a_modern_client() -> None:
    circuit = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32002, "message": "circuit open", "data": {"server": "s", "retry_after_s": 30}},
    }
    fixed = modern.finish("tools/call", circuit)["error"]
    assert fixed["code"] == -32000
    assert fixed["data"] == {"server": "s", "retry_after_s": 30, "reason": "circuit_open"}
    missing = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found"}}
    assert modern.upstream_error(missing, "s")["error"]["code"] == -32602
    url = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32042, "message": "visit", "data": {"url": "x"}}}
    assert modern.upstream_error(url, "s")["error"] == {
        "code": -32000,
        "message": "visit",
        "data": {"server": "s", "reason": "error", "upstream_code": -32042, "upstream_data": {"url": "x"}},
    }
    blocked = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Blocked"}}
    assert modern.finish("tools/call", blocked) == blocked


def test_the_constants_written_out_are_the_sdks() -> None:
    assert modern.PROTOCOL_VERSION_META_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert modern.CLIENT_INFO_META_KEY == mcp_types.CLIENT_INFO_META_KEY
    assert modern.CLIENT_CAPABILITIES_META_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert modern.LOG_LEVEL_META_KEY == mcp_types.LOG_LEVEL_META_KEY
    assert modern.SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY
    assert modern.MODERN_PROTOCOL_VERSIONS == version.MODERN_PROTOCOL_VERSIONS
    assert modern.HANDSHAKE_PROTOCOL_VERSIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert modern.CACHEABLE_METHODS == methods.CACHEABLE_METHODS
    assert set(get_args(mcp_types.LoggingLevel)) == modern.LOG_LEVELS
    assert dict(inbound.NAME_BEARING_METHODS) == modern.NAME_OF
    assert (
        ErrorCode.HEADER_MISMATCH,
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
    ) == (
        mcp_types.HEADER_MISMATCH,
        mcp_types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        mcp_types.UNSUPPORTED_PROTOCOL_VERSION,
    )


@pytest.mark.parametrize(
    "value",
    [
        "us-west1",
        "Hello, 世界",
        " padded ",
        "line1\nline2",
        "=?base64?literal?=",
        "",
        "=?base64?SGk=?=",
        "=?base64?SGl=?=",
        "=?base64?!!?=",
        "=?base64?/w==?=",
        "a\tb",
    ],
)
def test_the_header_codec_is_the_sdks(value: str) -> None:
    assert modern.encode_header_value(value) == inbound.encode_header_value(value)
    assert modern.decode_header_value(value) == inbound.decode_header_value(value)
    assert modern.decode_header_value(modern.encode_header_value(value)) == value


@pytest.mark.integration
async def test_a_modern_request_gets_log_lines_only_at_the_level_it_asked_for(tmp_path: Path) -> None:
    """2026-07-28: no notifications/message for a request whose `_meta` names no logLevel."""
    async with running(tmp_path, servers={"c": script_server("chatty", SECRET)}) as gw:
        fresh = MemoryClient(gw.gateway)
        for level in (None, "error", "info"):
            extra = {"io.modelcontextprotocol/logLevel": level} if level else {}
            params = {"name": "c__emit", "arguments": {"kind": "message"}, "_meta": envelope(**extra)}
            assert "result" in await fresh.request("tools/call", params)
        line = await fresh.next_message(lambda m: m.get("method") == "notifications/message")
        assert line["params"]["level"] == "info"  # chatty logs at info: only the last call asked for that
        assert [m for m in fresh.received if m.get("method") == "notifications/message"] == [line]
        fresh.close()
