"""The TypeScript SDK v2 (`@modelcontextprotocol/client`, the 2026-07-28 line) drives the gateway
in both eras (issue 24, acceptance: real clients of each era).

Strategy: tests/proxy/clients/ts_v2_client.mjs, the official v2 client (installed in tests/tools,
pinned), in its two negotiation modes, `legacy` (initialize) and pinned to 2026-07-28
(server/discover, no session), over streamable HTTP (a gateway served by uvicorn with its bearer
token) and over stdio (it launches `mcpwall proxy --stdio`). Both gateways aggregate a
modern-only server (tests/proxy/servers/modern_only.py, the Python SDK 2.x made to refuse
`initialize`) and a legacy-only one (the npm @modelcontextprotocol/server-everything, which
answers `server/discover` with -32601) on the same endpoint, with PyPI's mcp-server-time. Each run calls a tool of each
server, a tool the policy denies (refused with -32001 before the server runs it) and one whose
result holds an AWS key (masked). The Python SDK 2.x, in both eras, reaches the PyPI server on the
same endpoint beside the two eras.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, MCPWALL, ROOT, TIME, write_servers
from tests.proxy.test_modern_upstream import MODERN_STDIO, POLICY, SECRET, client, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

CLIENT = ROOT / "tests" / "proxy" / "clients" / "ts_v2_client.mjs"
SDK = ROOT / "tests" / "tools" / "node_modules" / "@modelcontextprotocol" / "client"
SERVERS = {"modern": MODERN_STDIO, "legacy": EVERYTHING, "time": TIME}
CALLS = [["modern__add", {"a": 2, "b": 3}], ["legacy__echo", {"message": "hi"}],
         ["modern__drop_table", {"name": "users"}], ["modern__leak", {}],
         ["time__get_current_time", {"timezone": "UTC"}]]
MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    if not SDK.exists():
        pytest.fail("the TypeScript SDK v2 is not installed: run `npm ci` in tests/tools (make setup does)")
    built = build_gateway(tmp_path_factory.mktemp("gw-ts-v2"), POLICY, SERVERS, auth=True)
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        eras = {s.name: s.era for s in built.gateway.servers.values()}
        assert (eras["modern"], eras["legacy"]) == ("modern", "legacy"), eras
        yield {"url": base, "token": token(built)}


async def ts(mode: str, *transport: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec("node", str(CLIENT), mode, json.dumps(CALLS), *transport,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    finally:
        if proc.returncode is None:
            proc.kill()
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-3000:]
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def check(answer: dict[str, Any], mode: str) -> None:
    assert answer["era"] == ("legacy" if mode == "legacy" else "modern"), answer
    if mode != "legacy":
        assert answer["version"] == mode
    assert {"modern__add", "legacy__echo"} <= set(answer["tools"])
    added, echoed, dropped, leaked, now = answer["results"]
    assert added == "5.0"
    assert echoed == "Echo: hi"
    assert dropped["code"] == -32001, dropped  # denied by the policy
    assert "no-drop" in dropped["message"] or "denied" in dropped["message"].lower(), dropped
    assert isinstance(leaked, str), leaked
    assert SECRET not in leaked
    assert "REDACTED" in leaked
    assert json.loads(now)["timezone"] == "UTC", now  # PyPI's mcp-server-time


@pytest.mark.parametrize("mode", MODES)
async def test_the_typescript_v2_client_reaches_both_eras_over_http(gw: dict[str, Any], mode: str) -> None:
    check(await ts(mode, "http", f"{gw['url']}/mcp", gw["token"]), mode)


@pytest.mark.parametrize("mode", MODES)
async def test_the_typescript_v2_client_reaches_both_eras_over_stdio(tmp_path: Path, mode: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(POLICY)
    servers = write_servers(home / "servers.json", SERVERS)
    check(await ts(mode, "stdio", MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers", str(servers)), mode)


@pytest.mark.parametrize("mode", MODES)
async def test_the_python_sdk_reaches_the_pypi_server_beside_both_eras_on_the_same_endpoint(
    gw: dict[str, Any], mode: str
) -> None:
    async with client(gw, mode) as c:  # the Python SDK 2.x, over HTTP
        now = text(await c.call_tool("time__get_current_time", {"timezone": "UTC"}))
        added = await c.call_tool("modern__add", {"a": 1, "b": 2})
        echoed = text(await c.call_tool("legacy__echo", {"message": "hi"}))
    assert json.loads(now)["timezone"] == "UTC"
    assert added.structured_content == {"result": 3.0}
    assert echoed == "Echo: hi"
