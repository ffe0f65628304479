"""The wire shapes of tasks in both revisions, and what the gateway declares about them.

MCP 2025-11-25 shows a task as `{taskId, status, statusMessage, createdAt,
lastUpdatedAt, ttl, pollInterval}` (a `CreateTaskResult` wraps it in `task`);
the 2026-07-28 extension (`io.modelcontextprotocol/tasks`) as the same fields
with `ttlMs` and `pollIntervalMs`, flat in a `resultType: "task"` result.
`_tasks.py` keeps the table and serves the methods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mcpwall.protocol import ErrorCode, Message, RequestId, error
from mcpwall.protocol.modern import CLIENT_CAPABILITIES_META_KEY, is_modern

EXTENSION = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
#: Every method of either era; which era may use which is `ERA_METHODS`.
TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"})
ERA_METHODS = {False: frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}),
                True: frozenset({"tasks/get", "tasks/update", "tasks/cancel"})}
TERMINAL = frozenset({"completed", "failed", "cancelled"})

def ttl_ms(task: dict[str, Any]) -> Any:
    return task["ttlMs"] if "ttlMs" in task else task.get("ttl")


def poll_ms(task: dict[str, Any]) -> Any:
    return task["pollIntervalMs"] if "pollIntervalMs" in task else task.get("pollInterval")


def shaped(task: dict[str, Any], gid: str, modern: bool) -> dict[str, Any]:
    """A server's task (either revision's shape) as the client's revision shows it, under our id."""
    out: dict[str, Any] = {"taskId": gid, "status": task.get("status", "working")}
    for key in ("statusMessage", "createdAt", "lastUpdatedAt"):
        if key in task:
            out[key] = task[key]
    ttl, poll = ttl_ms(task), poll_ms(task)
    if modern:
        out["ttlMs"] = ttl if isinstance(ttl, int) else None
        if isinstance(poll, int):
            out["pollIntervalMs"] = poll
    else:
        out["ttl"] = ttl if isinstance(ttl, int) else None
        if isinstance(poll, int):
            out["pollInterval"] = poll
    return out


def legacy_capability(caps: list[dict[str, Any]]) -> dict[str, Any]:
    """The `tasks` capability an aggregated endpoint declares in `initialize`: task-augmented
    `tools/call` when a server takes it; `tasks/list` is the gateway's own (the caller's tasks)."""
    takes = [c["tasks"] for c in caps if isinstance(c.get("tasks"), dict)
             and isinstance((c["tasks"].get("requests") or {}).get("tools"), dict)
             and "call" in c["tasks"]["requests"]["tools"]]
    if not takes:
        return {}
    out: dict[str, Any] = {"list": {}, "requests": {"tools": {"call": {}}}}
    if any("cancel" in t for t in takes):
        out["cancel"] = {}
    return {"tasks": out}


def modern_extensions(caps: list[dict[str, Any]], single: bool) -> dict[str, Any]:
    """The `extensions` a 2026-07-28 client is offered in `server/discover`: a single server's own
    (passed through) and, merged over an aggregated endpoint's servers, the tasks extension when a
    server runs tasks in either revision (a legacy server's are bridged)."""
    out: dict[str, Any] = {}
    for c in caps:
        given = c.get("extensions")
        if single and isinstance(given, dict):
            out.update(given)
        if (isinstance(given, dict) and EXTENSION in given) or legacy_capability([c]):
            out[EXTENSION] = {}
    return {"extensions": out} if out else {}


def augmented(client_params: dict[str, Any], params: dict[str, Any], tool: Any,
              server_capabilities: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 client's call that declared the extension, to a legacy server's tool that
    runs only as a task: augmented with `task`, as that server requires."""
    if "task" in params:
        return params
    # (the tool first: most run without a task, and every tools/call passes here)
    execution = tool.get("execution") if isinstance(tool, dict) else None
    if isinstance(execution, dict) and execution.get("taskSupport") == "required" \
            and is_modern(client_params) and declares_extension(client_params) \
            and legacy_capability([server_capabilities]):
        return {**params, "task": {}}
    return params


def asks_tasks(server_capabilities: dict[str, Any], params: dict[str, Any] | None) -> bool:
    """Whether a `tools/call` to a 2026-07-28 server declares the tasks extension (the gateway's
    envelope replaces the client's): its client declared it, or a legacy client asked for a task
    (`task`), and the server offers it. A task is mapped by the gateway like any other."""
    offered = server_capabilities.get("extensions")
    return isinstance(offered, dict) and EXTENSION in offered and params is not None \
        and (declares_extension(params) or isinstance(params.get("task"), dict))


def inline(task: dict[str, Any]) -> dict[str, Any]:
    """A finished 2026-07-28 task's outcome as a response's `result` or `error`."""
    if isinstance(task.get("error"), dict):
        return {"error": task["error"]}
    return {"result": task.get("result") if isinstance(task.get("result"), dict) else {}}


async def polled(get: Callable[[], Awaitable[Message]], rid: RequestId, budget: float) -> Message:
    """A 2026-07-28 server's task polled with `tasks/get` (at its `pollIntervalMs`, 50 ms to 5 s) to
    its end or `budget` seconds, as the answer to the call that created it (under `rid`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget
    while "result" in (answer := await get()):
        if answer["result"].get("status") in TERMINAL or loop.time() > deadline:
            break
        await asyncio.sleep(min(max(poll_ms(answer["result"]) or 500, 50), 5000) / 1000)
    if "result" not in answer:
        return answer
    if answer["result"].get("status") in ("completed", "failed"):
        return {"jsonrpc": "2.0", "id": rid, **inline(answer["result"])}
    return error(rid, ErrorCode.INTERNAL_ERROR, f"the task ended {answer['result'].get('status')} without a result")


def declares_extension(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


__all__ = ["ERA_METHODS", "EXTENSION", "RELATED", "TASK_METHODS", "TERMINAL", "asks_tasks", "augmented",
           "declares_extension", "inline", "legacy_capability", "modern_extensions", "poll_ms", "polled", "shaped",
           "ttl_ms"]
