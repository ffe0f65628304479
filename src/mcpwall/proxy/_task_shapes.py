"""The wire shapes of tasks in both revisions, and what the gateway declares about them.

MCP 2025-11-25 shows a task as `{taskId, status, statusMessage, createdAt,
lastUpdatedAt, ttl, pollInterval}` (a `CreateTaskResult` wraps it in `task`);
the 2026-07-28 extension (`io.modelcontextprotocol/tasks`) as the same fields
with `ttlMs` and `pollIntervalMs`, flat in a `resultType: "task"` result.
`_tasks.py` keeps the table and serves the methods.
"""

from __future__ import annotations

from typing import Any

from mcpwall.protocol.modern import CLIENT_CAPABILITIES_META_KEY

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


def declares_extension(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


__all__ = ["ERA_METHODS", "EXTENSION", "RELATED", "TASK_METHODS", "TERMINAL", "declares_extension",
           "legacy_capability", "modern_extensions", "poll_ms", "shaped", "ttl_ms"]
