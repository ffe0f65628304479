"""Tasks through the gateway, every result policed (issue 24, item 5).

Strategy: one gateway (tests.harness, served by uvicorn, bearer tokens on) in front of the npm
@modelcontextprotocol/server-everything over stdio, whose `simulate-research-query` runs only as
a 2025-11-25 task (`execution.taskSupport: required`) and echoes its `topic` into the report the
task ends with. The policy lets credentials reach the server in arguments (`dlp.arguments: off`),
so a secret comes back only in the task's result; honeytokens are planted; one rule denies a
research `topic` of "forbidden" and a response rule withholds a result naming CLASSIFIED-XYZ.
Legacy clients are the TypeScript SDK's experimental tasks API
(tests/proxy/clients/tasks_client.mjs, one process and one session per step, so a task is also
reached from a session other than the one that created it); the modern client is the Python SDK
2.x pinned to 2026-07-28 with a `ClientExtension` that claims `resultType: "task"` and polls
`tasks/get`. A second principal is a named client token. The ledger is read back from SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Request, RequestParams, Result

from mcpwall._token import ensure_named_token
from tests.harness import MemoryClient, build_gateway, running, serve_http, token
from tests.proxy.harness import EVERYTHING, ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(240)]

CLIENT = ROOT / "tests" / "proxy" / "clients" / "tasks_client.mjs"
RESEARCH = "simulate-research-query"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-forbidden-topic
    description: No forbidden research
    tools: [simulate-research-query]
    argConstraints:
      - {argName: topic, constraint: notIn, values: [forbidden]}
    action: allow
  - {id: no-classified-results, target: response, match: contains, values: [CLASSIFIED-XYZ], action: deny}
dlp: {arguments: off}
honeytokens: {enabled: true, tools: [simulate-research-query]}
stages:
  ratelimit: {requestsPerMinute: 0}
"""
#: Secrets of several kinds, spelled as a server would hand them back.
SECRETS = {
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "slack-token": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-tasks")
    built = build_gateway(home, POLICY, {"everything": EVERYTHING}, auth=True)
    other, _ = ensure_named_token(home, "other-agent")
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        yield {"url": base, "token": token(built), "other": other, "home": home, "gateway": built.gateway}


async def ts(gw: dict[str, Any], path: str, op: str, *args: str, who: str = "token") -> dict[str, Any]:
    """One step of the TypeScript SDK's tasks client, in its own process and session."""
    proc = await asyncio.create_subprocess_exec(
        "node", str(CLIENT), f"{gw['url']}{path}", gw[who], op, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=str(ROOT))
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-2000:]
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def report(answer: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in answer["content"] if c.get("type") == "text")


def rows(gw: dict[str, Any], marker: str) -> list[tuple[Any, ...]]:
    """The ledger's tool_calls rows of the research tool whose request names `marker` (decision, outcome,
    response preview, error code), once the writer committed them."""
    with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
        return list(db.execute("SELECT decision, outcome, response_preview, error_code FROM tool_calls "
                               "WHERE request_preview LIKE ? AND tool_name = ?", (f"%{marker}%", RESEARCH)))


async def settled_rows(gw: dict[str, Any], marker: str, want: int = 1) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for _ in range(50):
        found = rows(gw, marker)
        if len(found) >= want:
            await anyio.sleep(0.3)  # a second row would have been written with the first
            return rows(gw, marker)
        await anyio.sleep(0.1)
    return found


async def test_a_task_call_through_both_http_endpoints_ends_with_its_result(gw: dict[str, Any]) -> None:
    for path, tool in (("/mcp", f"everything__{RESEARCH}"), ("/mcp/everything", RESEARCH)):
        caps = await ts(gw, path, "capabilities")
        assert "call" in caps["tasks"]["requests"]["tools"], caps  # declared, merged or passed through
        topic = f"plain topic via {path}"
        done = await ts(gw, path, "run", tool, json.dumps({"topic": topic}))
        assert done.get("error") is None, done
        assert done["statuses"][-1] == "completed"
        assert f"Research Report: {topic}" in report(done["result"])
        # The client holds the gateway's id, never the server's, and the result names the same one.
        mapped = gw["gateway"].router.tasks.by_id[done["created"]]
        assert mapped.upstream_id != done["created"]
        assert mapped.server == "everything"
        assert done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == done["created"]


async def test_a_task_result_carrying_secrets_is_masked_as_a_tools_call_result_is(gw: dict[str, Any]) -> None:
    topic = "leak " + " and ".join(SECRETS.values())
    done = await ts(gw, "/mcp", "run", f"everything__{RESEARCH}", json.dumps({"topic": topic}))
    text = report(done["result"])
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw['token']}"}, timeout=30.0) as http,
        Client(streamable_http_client(f"{gw['url']}/mcp", http_client=http), mode="legacy") as c,
    ):
        echoed = await c.call_tool("everything__echo", {"message": "compare " + topic})
    direct = "\n".join(getattr(item, "text", "") for item in echoed.content)
    assert "Research Report" in text
    for kind, secret in SECRETS.items():
        assert secret not in text, kind
        assert f"[REDACTED-{kind}]" in text, kind
        assert f"[REDACTED-{kind}]" in direct, kind  # as the same text in a plain call's result
    # The ledger's one row holds the masked result too.
    (row,) = await settled_rows(gw, "leak AKIA")
    assert row[0] == "allow"
    assert "[REDACTED-aws-access-key]" in row[2]
    assert SECRETS["aws-access-key"] not in row[2]


async def test_a_honeytoken_planted_in_a_task_result_trips_the_wire_when_used(gw: dict[str, Any]) -> None:
    done = await ts(gw, "/mcp", "run", f"everything__{RESEARCH}", json.dumps({"topic": "where are the keys"}))
    content = done["result"]["content"]
    assert len(content) == 2, content  # the server's report, and the decoys the gateway planted
    planted = content[-1]["text"]
    decoy = re.search(r"AKIA[0-9A-Z]{16}", planted)
    assert decoy is not None, planted  # DLP did not mask the gateway's own decoys
    (row,) = await settled_rows(gw, "where are the keys")
    assert row[0] == "allow"
    for spelling in (decoy.group(0), f"aws_access_key_id = {decoy.group(0)}", planted):
        used = await ts(gw, "/mcp", "start", f"everything__{RESEARCH}", json.dumps({"topic": spelling}))
        assert used["error"]["code"] == -32001, used
        assert "honeytoken" in used["error"]["message"]


async def test_a_response_rule_withholds_a_task_result_as_it_withholds_a_call_result(gw: dict[str, Any]) -> None:
    for spelling in ("CLASSIFIED-XYZ", "the CLASSIFIED-XYZ files"):
        done = await ts(gw, "/mcp", "run", f"everything__{RESEARCH}", json.dumps({"topic": spelling}))
        assert done.get("result") is None, done  # the report named it: not delivered
        assert done["error"]["code"] == -32001, done
        assert "withheld" in done["error"]["message"]
    found = await settled_rows(gw, "CLASSIFIED-XYZ", want=2)
    assert [(r[0], r[3]) for r in found] == [("deny", -32001), ("deny", -32001)]


async def test_another_principal_cannot_read_cancel_or_list_the_task(gw: dict[str, Any]) -> None:
    # Ambiguous: the task waits for a clarification (input_required) that nobody fetches, so it runs on.
    started = await ts(gw, "/mcp", "start", f"everything__{RESEARCH}",
                       json.dumps({"topic": "private plans", "ambiguous": True}))
    tid = started["task"]["taskId"]

    async def refused(path: str, op: str) -> None:
        answer = await ts(gw, path, op, tid, who="other")
        assert answer["error"]["code"] == -32602, (path, op, answer)
        assert "not found" in answer["error"]["message"]

    # The other principal's cancels first.
    await refused("/mcp", "cancel")
    await refused("/mcp/everything", "cancel")
    cancelled = await ts(gw, "/mcp", "cancel", tid)
    assert cancelled.get("status") == "cancelled", cancelled  # its owner's reaches the server
    for path in ("/mcp", "/mcp/everything"):
        for op in ("get", "result"):
            await refused(path, op)
        assert tid not in {t["taskId"] for t in (await ts(gw, path, "list", who="other"))["tasks"]}
    assert tid in {t["taskId"] for t in (await ts(gw, "/mcp/everything", "list"))["tasks"]}
    assert (await ts(gw, "/mcp", "get", tid))["status"] == "cancelled"
    # An unknown id is answered exactly as someone else's is.
    unknown = await ts(gw, "/mcp", "get", "no-such-task")
    assert unknown["error"]["code"] == -32602
    assert "not found" in unknown["error"]["message"]
    (row,) = await settled_rows(gw, "private plans")
    assert row[0] == "cancelled"


async def test_the_ledger_holds_one_row_per_task_call_with_its_result(gw: dict[str, Any]) -> None:
    done = await ts(gw, "/mcp", "run", f"everything__{RESEARCH}", json.dumps({"topic": "one row please"}))
    assert done["statuses"][-1] == "completed"
    found = await settled_rows(gw, "one row please")
    assert len(found) == 1, found  # not one for the handle and one for the result
    decision, outcome, preview, code = found[0]
    assert (decision, outcome, code) == ("allow", "ok", None)
    assert "Research Report: one row please" in preview  # the result, not the task handle


async def test_a_denied_tool_cannot_be_task_called(gw: dict[str, Any]) -> None:
    before = len(gw["gateway"].router.tasks.by_id)
    for path, tool in (("/mcp", f"everything__{RESEARCH}"), ("/mcp/everything", RESEARCH)):
        denied = await ts(gw, path, "start", tool, json.dumps({"topic": "forbidden"}))
        assert denied["error"]["code"] == -32001, denied
    assert len(gw["gateway"].router.tasks.by_id) == before  # no task was created upstream
    found = await settled_rows(gw, '"forbidden"', want=2)
    assert [r[0] for r in found] == ["deny", "deny"]


async def test_a_task_whose_result_is_never_fetched_still_gets_its_one_row(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Recorded when the gateway stops (or the task's ttl passes): never zero rows."""
    home = tmp_path_factory.mktemp("gw-tasks-unfetched")
    built = build_gateway(home, POLICY, {"everything": EVERYTHING}, auth=True)
    async with serve_http(built) as base:
        assert await built.gateway.servers["everything"].wait_ready(60)
        here = {"url": base, "token": token(built), "home": home}
        started = await ts(here, "/mcp", "start", f"everything__{RESEARCH}",
                           json.dumps({"topic": "left behind", "ambiguous": True}))
        assert started["task"]["status"] in ("working", "input_required"), started
        assert rows(here, "left behind") == []  # held: the result may still come
    with contextlib.closing(sqlite3.connect(home / "ledger.db")) as db:
        found = list(db.execute("SELECT decision, outcome, notes FROM tool_calls WHERE tool_name = ?", (RESEARCH,)))
    assert len(found) == 1, found
    decision, outcome, notes = found[0]
    assert (decision, outcome) == ("allow", "ok")
    assert "the gateway stopped before the task's result was fetched" in notes


async def test_tasks_on_the_stdio_frontend_are_mapped_bound_and_policed(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same table behind `--stdio` sessions (in process): two agents, one task each way."""
    home = tmp_path_factory.mktemp("gw-tasks-stdio")
    async with running(home, POLICY, {"everything": EVERYTHING}) as gw_:
        gateway = gw_.gateway
        assert await gateway.servers["everything"].wait_ready(60)
        mine = MemoryClient(gateway, principal="agent-a")
        theirs = MemoryClient(gateway, principal="agent-b")
        for c in (mine, theirs):
            await c.initialize()
        created = await mine.request("tools/call", {"name": f"everything__{RESEARCH}", "task": {"ttl": 60000},
                                                    "arguments": {"topic": "stdio " + SECRETS["slack-token"]}})
        tid = created["result"]["task"]["taskId"]
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            refused = await theirs.request(method, {"taskId": tid})
            assert refused["error"]["code"] == -32602, (method, refused)
        assert (await theirs.request("tasks/list"))["result"]["tasks"] == []
        assert [t["taskId"] for t in (await mine.request("tasks/list"))["result"]["tasks"]] == [tid]
        answer = await mine.request("tasks/result", {"taskId": tid})  # blocks until the task ends
        text = report(answer["result"])
        assert "Research Report: stdio [REDACTED-slack-token]" in text
        assert SECRETS["slack-token"] not in text
        assert (await mine.request("tasks/get", {"taskId": tid}))["result"]["status"] == "completed"
    with contextlib.closing(sqlite3.connect(home / "ledger.db")) as db:
        found = list(db.execute("SELECT decision, outcome FROM tool_calls WHERE tool_name = ?", (RESEARCH,)))
    assert found == [("allow", "ok")]


# ---------------------------------------------------------------------- the 2026-07-28 extension


class TaskHandle(Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class GetTaskParams(RequestParams):
    task_id: str


class GetTask(Request[GetTaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskParams
    name_param = "taskId"


class DetailedTask(Result):
    task_id: str
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TasksExtension(ClientExtension):
    """The client half of `io.modelcontextprotocol/tasks`: a task handle is polled to its end."""

    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.polled: list[DetailedTask] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
        for _ in range(60):
            task = await ctx.session.send_request(GetTask(params=GetTaskParams(task_id=handle.task_id)), DetailedTask)
            self.polled.append(task)
            if task.status in ("completed", "failed", "cancelled"):
                break
            await anyio.sleep(0.5)
        if task.error is not None:
            raise MCPError(task.error["code"], task.error["message"])
        assert task.result is not None, task
        return CallToolResult.model_validate(task.result)


@contextlib.asynccontextmanager
async def modern(gw: dict[str, Any], path: str, ext: TasksExtension) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {gw['token']}"},
                           timeout=httpx2.Timeout(30.0, read=60.0)) as http,
        Client(streamable_http_client(f"{gw['url']}{path}", http_client=http), mode="2026-07-28",
               extensions=[ext]) as c,
    ):
        yield c


async def test_a_modern_client_runs_a_legacy_servers_task_through_the_extension(gw: dict[str, Any]) -> None:
    topic = "modern leak " + SECRETS["github-token"]
    for path, tool in (("/mcp", f"everything__{RESEARCH}"), ("/mcp/everything", RESEARCH)):
        ext = TasksExtension()
        async with modern(gw, path, ext) as c:
            discovered = await c.session.send_discover("2026-07-28")
            assert "io.modelcontextprotocol/tasks" in discovered["capabilities"]["extensions"], discovered
            await c.list_tools()
            answer = await c.call_tool(tool, {"topic": topic})
        text = "\n".join(getattr(item, "text", "") for item in answer.content)
        assert "Research Report: modern leak [REDACTED-github-token]" in text
        assert SECRETS["github-token"] not in text
        assert ext.polled[-1].status == "completed"
        assert len(ext.polled) >= 2
        assert ext.polled[-1].task_id in gw["gateway"].router.tasks.by_id  # the gateway's id
    found = await settled_rows(gw, "modern leak", want=2)
    assert len(found) == 2
    assert {r[1] for r in found} == {"ok"}
