"""Hardening matrix, telemetry: one ledger row per framed tools/call, attributed to its process.

Strategy: one real gateway for the module with its real SQLite ledger, the built-in tools
server, a server that never answers `act` (timeout) and one that exits on `act` (terminal
error). Calls go through raw framed connections named by their META line; the rows are read
back with the ledger's query API and must name the decision, the server and tool, the rule
that decided, and the process that asked.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.relay.helpers import FrameClient, Framed, builtin, framed_gateway, misbehave

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
defaultTimeoutMs: 20000
stages:
  ratelimit: {requestsPerMinute: 0}
rules:
  - {id: no-headers, tools: [http_headers], servers: [local], action: deny}
  - {id: quick-hang, servers: [hang], tools: [act], action: allow, timeoutMs: 500}
"""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Framed]:
    tmp = tmp_path_factory.mktemp("telemetry")
    markers: Path = tmp_path_factory.mktemp("markers")
    servers = {"local": builtin(), "hang": misbehave("hang", markers), "crash": misbehave("crash", markers)}
    async with framed_gateway(tmp, servers, POLICY) as framed:
        yield framed


async def _client(gw: Framed, process: str) -> FrameClient:
    c = await FrameClient.open(gw.socket, process)
    await c.initialize()
    return c


async def _row(gw: Framed, process: str, tool: str) -> dict[str, object]:
    """The one row of `process` calling `tool`, once the ledger's batched writer has committed it."""
    deadline = time.monotonic() + 10
    while True:
        rows = [r for r in await gw.rows(1, tool=tool) if r["process_name"] == process]
        if rows or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert len(rows) == 1, rows
    return rows[0]


async def test_a_successful_call_is_one_row_naming_its_process(gw: Framed) -> None:
    c = await _client(gw, "claude-code")
    await c.call("local__echo", {"text": "ok"})
    await c.close()
    row = await _row(gw, "claude-code", "echo")
    assert row["decision"] == "allow"
    assert row["server_name"] == "local"
    assert row["method"] == "tools/call"
    assert str(row["peer"]).startswith("unix pid=")
    assert row["duration_ms"] is not None


async def test_a_denied_call_is_one_row_with_its_rule(gw: Framed) -> None:
    c = await _client(gw, "denied-agent")
    answer = await c.call("local__http_headers", {"url": "https://example.com/"})
    assert answer["error"]["code"] == -32001
    await c.close()
    row = await _row(gw, "denied-agent", "http_headers")
    assert row["decision"] == "deny"
    assert "no-headers" in str(row["rule_ids"])


async def test_a_call_that_times_out_is_one_row_marked_timeout(gw: Framed) -> None:
    c = await _client(gw, "patient-agent")
    answer = await c.call("hang__act", {})
    assert answer["error"]["code"] == -32000
    assert answer["error"]["data"]["reason"] == "timeout"
    await c.close()
    row = await _row(gw, "patient-agent", "act")
    assert row["decision"] == "timeout"
    assert "did not answer" in str(row["error_message"])


async def test_a_call_whose_server_dies_is_one_row_with_the_terminal_error(gw: Framed) -> None:
    c = await _client(gw, "unlucky-agent")
    answer = await c.call("crash__act", {})
    assert answer["error"]["code"] == -32000
    await c.close()
    row = await _row(gw, "unlucky-agent", "act")
    assert row["decision"] == "failed"
    assert "exited" in str(row["error_message"])


async def test_two_connections_are_attributed_to_their_own_processes(gw: Framed) -> None:
    first, second = await _client(gw, "agent-one"), await _client(gw, "agent-two")
    await first.call("local__echo", {"text": "1"})
    await second.call("local__echo", {"text": "2"})
    await second.call("local__echo", {"text": "3"})
    await first.close()
    await second.close()
    rows = await gw.rows(5, tool="echo")
    by_process = [str(r["process_name"]) for r in rows]
    assert by_process.count("agent-one") == 1
    assert by_process.count("agent-two") == 2
    assert all(r["process_name"] for r in rows)


async def test_a_process_named_only_in_frame_headers_is_recorded(gw: Framed) -> None:
    c = await FrameClient.open(gw.socket, process=None)
    stream = c.next_stream()
    await c.send(stream, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}}}, 0, "header-named")
    await c.frame_on(stream)
    await c.send(0, {"jsonrpc": "2.0", "method": "notifications/initialized"}, 0, "header-named")
    stream = c.next_stream()
    await c.send(stream, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "local__echo", "arguments": {"text": "x"}}}, 0, "header-named")
    await c.frame_on(stream)
    await c.close()
    assert (await _row(gw, "header-named", "echo"))["decision"] == "allow"
