"""A 2026-07-28 server's tasks (the `io.modelcontextprotocol/tasks` extension) through the gateway
(issue 24, item 5): mapped to the gateway's ids, bound to their principal, every result policed.

Strategy: one gateway (tests.harness, served by uvicorn, bearer tokens on) aggregating
tests/proxy/servers/modern_tasks.py (the official Python SDK 2.x server, modern-only over stdio,
whose `research` tool runs as a task of the extension and echoes its `topic` into the report the
task ends with; no npm or PyPI server implements the extension) next to the npm
@modelcontextprotocol/server-everything (a legacy server, whose tasks test_tasks.py covers). The
policy lets credentials reach the server in arguments (`dlp.arguments: off`), so a secret comes
back only in the task's result; honeytokens are planted in `research` results; a response rule
withholds a report naming CLASSIFIED-XYZ. The client is the SDK 2.x pinned to 2026-07-28 with
test_tasks.py's `TasksExtension` (claims `resultType: "task"`, polls `tasks/get`). A second
principal is a named client token. The ledger is read back from SQLite.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcpwall._token import ensure_named_token
from tests.harness import MemoryClient, build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, script_server
from tests.proxy.test_modern_http import meta
from tests.proxy.test_tasks import SECRETS, TasksExtension, modern

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

EXTENSION = "io.modelcontextprotocol/tasks"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - {id: no-classified-results, target: response, match: contains, values: [CLASSIFIED-XYZ], action: deny}
dlp: {arguments: off}
honeytokens: {enabled: true, tools: [research]}
stages:
  ratelimit: {requestsPerMinute: 0}
"""
ENDPOINTS = (("/mcp", "mt__research"), ("/mcp/mt", "research"))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-modern-tasks")
    built = build_gateway(home, POLICY, {"mt": script_server("modern_tasks"), "everything": EVERYTHING}, auth=True)
    other, _ = ensure_named_token(home, "other-agent")
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        assert built.gateway.servers["mt"].era == "modern"
        yield {"url": base, "token": token(built), "other": other, "home": home, "gateway": built.gateway}


def text(answer: Any) -> str:
    return "\n".join(getattr(item, "text", "") for item in answer.content)


async def run(gw: dict[str, Any], path: str, tool: str, topic: str) -> tuple[str, TasksExtension]:
    ext = TasksExtension()
    async with modern(gw, path, ext) as c:
        answer = await c.call_tool(tool, {"topic": topic})
    return text(answer), ext


async def refused(gw: dict[str, Any], path: str, tool: str, topic: str) -> MCPError:
    """The error a call (or the task it created) ends with, caught inside the client's session."""
    async with modern(gw, path, TasksExtension()) as c:
        with pytest.raises(MCPError) as caught:
            await c.call_tool(tool, {"topic": topic})
    return caught.value


async def rows(gw: dict[str, Any], marker: str, want: int) -> list[tuple[Any, ...]]:
    """The ledger's rows of the research tool whose request names `marker` (decision, outcome,
    response preview), once the writer committed `want` of them (and a moment for any more)."""
    found: list[tuple[Any, ...]] = []
    for _ in range(60):
        with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
            found = list(db.execute("SELECT decision, outcome, response_preview FROM tool_calls WHERE "
                                    "request_preview LIKE ? AND tool_name = 'research'", (f"%{marker}%",)))
        if len(found) >= want:
            await anyio.sleep(0.3)
            with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
                return list(db.execute("SELECT decision, outcome, response_preview FROM tool_calls WHERE "
                                       "request_preview LIKE ? AND tool_name = 'research'", (f"%{marker}%",)))
        await anyio.sleep(0.1)
    return found


async def raw(gw: dict[str, Any], path: str, method: str, params: dict[str, Any], who: str = "token",
              ) -> dict[str, Any]:
    """One 2026-07-28 request as raw JSON-RPC with `who`'s token (declaring the tasks extension)."""
    envelope = {**meta(), "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}}
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": envelope}}
    headers = {"Authorization": f"Bearer {gw[who]}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(f"{gw['url']}{path}", json=body, headers=headers)
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(answer.json())


async def test_a_modern_servers_task_runs_under_the_gateways_id_and_its_result_is_masked(gw: dict[str, Any]) -> None:
    for path, tool in ENDPOINTS:
        topic = f"modern task via {path} " + " and ".join(SECRETS.values())
        report, ext = await run(gw, path, tool, topic)
        assert f"Research Report: modern task via {path} [REDACTED-" in report
        for secret in SECRETS.values():
            assert secret not in report
        assert [t.status for t in ext.polled][-1] == "completed"
        assert len(ext.polled) >= 2  # the server kept it working for a few polls
        mapped = gw["gateway"].router.tasks.by_id[ext.polled[-1].task_id]  # the gateway's id
        assert mapped.server == "mt"
        assert mapped.modern_server
        assert mapped.upstream_id != ext.polled[-1].task_id
        # One ledger row for the call, written when its result was policed, with that result.
        (row,) = await rows(gw, f"modern task via {path}", want=1)
        assert row[:2] == ("allow", "ok")
        assert "[REDACTED-github-token]" in row[2]
        assert SECRETS["github-token"] not in row[2]


async def test_a_modern_servers_task_is_not_found_for_another_principal_and_the_creator_still_gets_it(
    gw: dict[str, Any],
) -> None:
    for path, tool in ENDPOINTS:
        created = await raw(gw, path, "tools/call", {"name": tool, "arguments": {"topic": f"private {path}"}})
        assert created["result"]["resultType"] == "task", created
        tid = created["result"]["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            stolen = await raw(gw, path, method, {"taskId": tid}, who="other")
            assert stolen["error"]["code"] == -32602, stolen
            assert "not found" in stolen["error"]["message"].lower()
        upstream_id = gw["gateway"].router.tasks.by_id[tid].upstream_id
        guessed = await raw(gw, path, "tasks/get", {"taskId": upstream_id})  # the server's id is no id here
        assert "not found" in guessed["error"]["message"].lower()
        with anyio.fail_after(15):
            while (got := await raw(gw, path, "tasks/get", {"taskId": tid}))["result"]["status"] != "completed":  # noqa: ASYNC110
                await anyio.sleep(0.1)  # polling a task, as its client does
        assert got["result"]["taskId"] == tid
        assert "Research Report: private" in got["result"]["result"]["content"][0]["text"]


async def test_a_honeytoken_planted_in_a_modern_task_result_trips_the_wire_when_used(gw: dict[str, Any]) -> None:
    report, _ = await run(gw, "/mcp", "mt__research", "where are the modern keys")
    decoy = re.search(r"AKIA[0-9A-Z]{16}", report)
    assert decoy is not None, report  # the gateway planted decoys in the task's result
    for spelling in (decoy.group(0), f"aws_access_key_id = {decoy.group(0)}"):
        used = await refused(gw, "/mcp", "mt__research", spelling)
        assert used.error.code == -32001
        assert "honeytoken" in used.error.message


async def test_a_response_rule_withholds_a_modern_task_result(gw: dict[str, Any]) -> None:
    for spelling in ("CLASSIFIED-XYZ", "the CLASSIFIED-XYZ files"):
        withheld = await refused(gw, "/mcp/mt", "research", spelling)
        assert withheld.error.code == -32001
        assert "Research Report" not in withheld.error.message
    found = await rows(gw, "CLASSIFIED-XYZ", want=2)
    assert [r[0] for r in found] == ["deny", "deny"], found


async def test_a_legacy_client_runs_a_modern_servers_task_and_gets_its_result_policed(gw: dict[str, Any]) -> None:
    """A 2025-11-25 client (the stdio frontend's in-memory session) asks for a task; the gateway
    declares the extension to the modern server, and `tasks/result` polls its `tasks/get` to the end."""
    mine = MemoryClient(gw["gateway"], principal="agent-a")
    theirs = MemoryClient(gw["gateway"], principal="agent-b")
    for c in (mine, theirs):
        await c.initialize()
    created = await mine.request("tools/call", {"name": "mt__research", "task": {"ttl": 60000},
                                                "arguments": {"topic": "legacy " + SECRETS["slack-token"]}})
    task = created["result"]["task"]
    assert task["status"] == "working"
    assert "ttl" in task  # the legacy shape
    assert "ttlMs" not in task
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        stolen = await theirs.request(method, {"taskId": task["taskId"]})
        assert stolen["error"]["code"] == -32602, (method, stolen)
    answer = await mine.request("tasks/result", {"taskId": task["taskId"]})
    report = answer["result"]["content"][0]["text"]
    assert report == "Research Report: legacy [REDACTED-slack-token]"
    assert answer["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task["taskId"]
    assert (await mine.request("tasks/get", {"taskId": task["taskId"]}))["result"]["status"] == "completed"
    (row,) = await rows(gw, "legacy xoxb", want=1)
    assert row[:2] == ("allow", "ok")
