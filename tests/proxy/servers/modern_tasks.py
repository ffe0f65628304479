"""A modern-only MCP server (2026-07-28 over stdio) that runs its tool as a task of the
`io.modelcontextprotocol/tasks` extension, written with the official SDK 2.x.

Tool `research(topic)` answers "Research Report: TOPIC". A call whose per-request
`clientCapabilities.extensions` names the tasks extension gets a task handle instead
(`resultType: "task"`, `ttlMs`, `pollIntervalMs`); `tasks/get` shows it `working` for a few
polls' time and then `completed` with the report inline, as the extension says. `tasks/cancel`
cancels one. A call without the extension runs at once (a server MUST NOT return a task to a
client that did not declare support). Resource `memo://modern` can be listened to; tool `touch`
tells its listeners it changed. No npm or PyPI server implements the 2026-07-28 extension.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams
from pydantic import BaseModel, ConfigDict, Field

EXTENSION = "io.modelcontextprotocol/tasks"
TASKS: dict[str, dict[str, Any]] = {}
#: how long a task stays `working` after it was created
RUNS_S = 0.4


class TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")


def _declared(params: Any) -> bool:
    meta = (params or {}).get("_meta") or {}
    caps = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return EXTENSION in (caps.get("extensions") or {})


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _shown(tid: str) -> dict[str, Any]:
    task = TASKS.get(tid)
    if task is None:
        raise MCPError(-32602, "Failed to retrieve task: Task not found")
    if task["status"] == "working" and time.monotonic() >= task["ready"]:
        task["status"], task["updated"] = "completed", _now()
    out = {"taskId": tid, "status": task["status"], "createdAt": task["created"], "lastUpdatedAt": task["updated"],
           "ttlMs": 60_000, "pollIntervalMs": 100, "statusMessage": f"researching {task['topic']}"}
    if task["status"] == "completed":
        out["result"] = task["result"]
    return out


class Tasks(Extension):
    identifier = EXTENSION

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskParams, self.get), MethodBinding("tasks/cancel", TaskParams, self.cancel)]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if not _declared(ctx.params):
            return await call_next(ctx)
        done = await call_next(ctx)
        result = done.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(done, BaseModel) \
            else done
        tid = uuid.uuid4().hex
        TASKS[tid] = {"status": "working", "ready": time.monotonic() + RUNS_S, "created": _now(), "updated": _now(),
                      "result": result, "topic": (params.arguments or {}).get("topic", "")}
        return {"resultType": "task", **{k: v for k, v in _shown(tid).items() if k != "statusMessage"}}

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        return _shown(params.task_id)

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _shown(params.task_id)
        TASKS[params.task_id].update(status="cancelled", updated=_now())
        return {}


server = MCPServer("modern-tasks", extensions=[Tasks()])


@server.tool()
def research(topic: str) -> str:
    """Research a topic and write a report."""
    return f"Research Report: {topic}"


@server.resource("memo://modern", name="memo", mime_type="text/plain")
def memo() -> str:
    return "a memo"


@server.tool()
async def touch(ctx: Context) -> str:
    """Change memo://modern (its listeners are told)."""
    await ctx.notify_resource_updated("memo://modern")
    return "touched"


async def _stdio() -> None:
    from mcp.server.runner import _serve_modern_stream
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await _serve_modern_stream(low, read, write, lifespan_state=state, raise_exceptions=False)


if __name__ == "__main__":
    anyio.run(_stdio)
