"""Tasks through the gateway: ids mapped per server and bound to their principal, results policed.

A server that supports tasks answers a task-augmented `tools/call` with a task
handle instead of the result (MCP 2025-11-25's experimental tasks: the call's
`task` param, then `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`;
2026-07-28's `io.modelcontextprotocol/tasks` extension: `resultType: "task"`,
then `tasks/get` with the result inline, `tasks/update`, `tasks/cancel`).

The gateway hands the client its own task id (random, unguessable) for each
upstream task, remembers which server created it and which principal's call did,
and answers every `tasks/*` request on any endpoint: another principal's id (or
one of another server on a single-server endpoint) is "not found", exactly as
an unknown id, and `tasks/list` lists only the caller's tasks.

The creating call was decided by the whole request side of the pipeline, as any
`tools/call`. Its result, when it arrives (`tasks/result`, or a terminal
`tasks/get`), passes the response side with the creating call's context (DLP,
honeytoken injection, response rules and postprocess hooks, as a `tools/call`
result would), and only then does the call complete: its one ledger row carries
the decision and the policed result. A call whose result is never fetched is
recorded when its task expires, is cancelled, or the gateway stops.

A client of 2026-07-28 reaches a legacy server's tasks through the gateway: a
call to a tool whose `execution.taskSupport` is "required" is task-augmented
upstream when the client declared the extension, and a terminal `tasks/get`
fetches the legacy `tasks/result` and inlines it. A legacy server's `input_required`
is shown to it as `working` (that input waits on a blocking `tasks/result`).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpwall.protocol import ErrorCode, Message, ProtocolError, error, result
from mcpwall.protocol.modern import is_modern
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._task_shapes import (
    ERA_METHODS,
    RELATED,
    TASK_METHODS,
    augmented,
    inline,
    polled,
    shaped,
    ttl_ms,
)
from mcpwall.stages import RequestContext
from mcpwall.transports._principal import acting_for

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway
    from mcpwall.proxy._upstream import UpstreamServer

#: How long a call whose task names no ttl waits for its result before it is recorded anyway.
DEFAULT_HOLD_S = 3600.0
MAX_HOLD_S = 86400.0
#: The most tasks one principal holds at once (the oldest is recorded and forgotten past it).
PER_PRINCIPAL = 1000
_NOT_FOUND = "Failed to retrieve task: Task not found"


@dataclass(eq=False)
class GatewayTask:
    """One upstream task as the gateway knows it."""

    id: str
    server: str
    upstream_id: str
    principal: str
    #: the `tools/call` that created it: its completion (the ledger row) waits for the result
    call: RequestContext
    #: the client that created it speaks 2026-07-28; the server answered in that revision's shape
    modern_client: bool
    modern_server: bool
    status: str = "working"
    #: the task as the server last showed it (its times, ttl and poll interval)
    shown: dict[str, Any] = field(default_factory=dict)
    #: the policed answer to the call, once fetched (under the call's id)
    final: Message | None = None
    recorded: bool = False
    timer: asyncio.TimerHandle | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created: float = field(default_factory=time.monotonic)


class Tasks:
    """The gateway's task table and the `tasks/*` methods (`Router` routes and dispatches to it)."""

    name = "tasks"

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self.by_id: dict[str, GatewayTask] = {}
        self._upstream_ids: dict[tuple[str, str], str] = {}
        self._held: dict[int, GatewayTask] = {}
        self.counts = {"created": 0, "results_policed": 0, "refused": 0, "recorded_unfetched": 0}
        self._serviced = False

    # ------------------------------------------------------------------ the creating call

    def outbound(self, ctx: RequestContext, upstream: UpstreamServer, params: dict[str, Any]) -> dict[str, Any]:
        """The call as the server gets it (`_task_shapes.augmented`)."""
        return augmented(ctx.params, params, upstream.catalog.tools.get(ctx.target), upstream.capabilities)

    def created(self, ctx: RequestContext, upstream: UpstreamServer, response: Message) -> Message:
        """The server's answer to a `tools/call`: a task handle is registered and shown under our id
        in the client's revision, and the call's completion waits for the result."""
        body = response.get("result")
        if not isinstance(body, dict):
            return response
        if body.get("resultType") == "task" and isinstance(body.get("taskId"), str):
            task, modern_server = body, True
        elif isinstance(body.get("task"), dict) and isinstance(body["task"].get("taskId"), str):
            task, modern_server = body["task"], False
        else:
            return response
        modern_client = is_modern(ctx.params)
        entry = GatewayTask(id=secrets.token_urlsafe(18), server=upstream.name, upstream_id=task["taskId"],
                            principal=ctx.session.principal, call=ctx, modern_client=modern_client,
                            modern_server=modern_server, status=str(task.get("status") or "working"),
                            shown={k: v for k, v in task.items() if k not in ("resultType", "_meta")})
        self._register(entry, ttl_ms(task))
        ctx.notes["task"] = {"id": entry.id, "status": entry.status}
        shown = shaped(task, entry.id, modern_client)
        meta = body.get("_meta")
        out: dict[str, Any] = {**shown, "resultType": "task"} if modern_client else {"task": shown}
        if isinstance(meta, dict):
            out["_meta"] = meta
        return {**response, "result": out}

    def holds(self, ctx: RequestContext) -> bool:
        """Whether this call's completion waits for its task's result (`Gateway._request`)."""
        return id(ctx) in self._held

    def _register(self, entry: GatewayTask, ttl_ms: Any) -> None:
        if not self._serviced:
            self._serviced = True
            self.gw.add_service(self)  # stopped before the stages: held calls are recorded first
        mine = [t for t in self.by_id.values() if t.principal == entry.principal]
        if len(mine) >= PER_PRINCIPAL:
            self._forget(min(mine, key=lambda t: t.created), "too many tasks held for this principal")
        self.by_id[entry.id] = entry
        self._upstream_ids[(entry.server, entry.upstream_id)] = entry.id
        self._held[id(entry.call)] = entry
        self.counts["created"] += 1
        hold = ttl_ms / 1000 if isinstance(ttl_ms, int) and ttl_ms > 0 else DEFAULT_HOLD_S
        entry.timer = asyncio.get_running_loop().call_later(min(hold, MAX_HOLD_S), self._forget, entry,
                                                            "the task expired before its result was fetched")

    def _forget(self, entry: GatewayTask, why: str) -> None:
        self.by_id.pop(entry.id, None)
        self._upstream_ids.pop((entry.server, entry.upstream_id), None)
        if entry.timer is not None:
            entry.timer.cancel()
        if not entry.recorded:
            self.counts["recorded_unfetched"] += 1
            self.gw.spawn(self._record(entry, None, why))

    async def _record(self, entry: GatewayTask, answer: Message | None, why: str | None = None) -> None:
        """The creating call completes once: its ledger row, with the result it ended with."""
        if entry.recorded:
            return
        entry.recorded = True
        self._held.pop(id(entry.call), None)
        call = entry.call
        note = call.notes.setdefault("task", {"id": entry.id})
        note["status"] = entry.status
        if why is not None:
            note["unfetched"] = why
        if answer is not None:
            call.response = answer
        elif entry.status == "cancelled":
            call.outcome = "cancelled"
        await self.gw.pipeline.complete(call)

    # ------------------------------------------------------------------ routing

    def route(self, ctx: RequestContext) -> None:
        """Which server a `tasks/*` request goes to: the one that created the task, if the caller's."""
        modern = is_modern(ctx.params)
        if ctx.method not in ERA_METHODS[modern]:
            era = "2026-07-28 (the tasks extension)" if modern else "2025-11-25"
            raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {ctx.method} is not a {era} "
                                "tasks method", ctx.id)
        if ctx.method == "tasks/list":
            ctx.server = None
            return
        gid = ctx.params.get("taskId")
        if not isinstance(gid, str) or not gid:
            raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{ctx.method} needs a string 'taskId'", ctx.id)
        entry = self.by_id.get(gid)
        if entry is not None and (entry.principal != ctx.session.principal
                                  or ctx.session.server not in (None, entry.server)):
            # Answered as an unknown id: whether someone else's task exists is not the caller's to learn.
            self.counts["refused"] += 1
            ctx.notes["task_refused"] = "the task belongs to another principal or server"
            entry = None
        if entry is None:
            raise ProtocolError(ErrorCode.INVALID_PARAMS, _NOT_FOUND, ctx.id)
        ctx.server, ctx.target = entry.server, entry.call.target
        ctx.notes["task"] = {"id": gid, "call_id": entry.call.id}

    # ------------------------------------------------------------------ the methods

    async def dispatch(self, ctx: RequestContext) -> Message:
        if ctx.method == "tasks/list":
            return await self._list(ctx)
        entry = self.by_id.get(ctx.params["taskId"])
        if entry is None:  # forgotten since it was routed
            return error(ctx.id, ErrorCode.INVALID_PARAMS, _NOT_FOUND)
        if ctx.method == "tasks/result":
            return await self._result(ctx, entry)
        if ctx.method == "tasks/cancel":
            return await self._cancel(ctx, entry)
        if ctx.method == "tasks/update":
            return await self._update(ctx, entry)
        return await self._get(ctx, entry)

    async def _ask(self, ctx: RequestContext, entry: GatewayTask, method: str, timeout: float | None = None,
                   **params: Any) -> Message:
        upstream = self.gw.servers[entry.server]
        wait = timeout or (ctx.timeout_ms or self.gw.policy.current.default_timeout_ms) / 1000
        if upstream.state != "ready" and not await upstream.wait_ready(min(self.gw.options.ready_timeout_s, wait)):
            raise UpstreamError(f"upstream {upstream.name!r} is not available ({upstream.state}: "
                                f"{upstream.last_error})", "unavailable")
        with acting_for(entry.principal):  # the creating call's upstream grant (mcpwall.oauth)
            answer = await upstream.request(method, {"taskId": entry.upstream_id, **params}, timeout=wait,
                                            session_id=ctx.session.id, downstream_id=ctx.id, emit=ctx.emit)
        return {**answer, "id": ctx.id}

    async def _get(self, ctx: RequestContext, entry: GatewayTask) -> Message:
        if entry.modern_client and entry.final is not None:
            return result(ctx.id, self._detailed(ctx, entry, entry.shown))
        answer = await self._ask(ctx, entry, "tasks/get")
        body = answer.get("result")
        if not isinstance(body, dict):
            return answer
        entry.shown = {k: v for k, v in body.items() if k not in ("result", "error", "inputRequests", "_meta")}
        status = str(body.get("status") or "working")
        if not entry.modern_client:
            entry.status = status
            if status == "cancelled":
                await self._record(entry, None)
            return result(ctx.id, shaped(body, entry.id, False))
        if status in ("completed", "failed") and entry.final is None:
            if entry.modern_server:
                await self._police(entry, {"jsonrpc": "2.0", "id": ctx.id, **inline(body)})
            else:
                await self._fetch(ctx, entry)
        elif status == "cancelled":
            entry.status = status
            await self._record(entry, None)
        elif status == "input_required" and not entry.modern_server:
            body = {**body, "status": "working"}  # a legacy server's input request is not bridged
        return result(ctx.id, self._detailed(ctx, entry, body))

    def _detailed(self, ctx: RequestContext, entry: GatewayTask, body: dict[str, Any]) -> dict[str, Any]:
        """A 2026-07-28 task, its server text masked, with the policed result (or error) inline."""
        out = shaped(body, entry.id, True)
        if entry.final is not None:
            out["status"] = entry.status
            if "error" in entry.final:
                out["error"] = entry.final["error"]
            else:
                out["result"] = entry.final.get("result")
        elif body.get("status") == "input_required" and isinstance(body.get("inputRequests"), dict):
            out["inputRequests"] = body["inputRequests"]
        # The task's own words (statusMessage) leave masked; the result was policed as a call's.
        plain = {k: v for k, v in out.items() if k not in ("result", "error")}
        masked = self.gw.pipeline.server_message(ctx.session.id, {"method": ctx.method, "params": {"body": plain}})
        ctx.notes["policed"] = True
        return {**masked["params"]["body"], **{k: out[k] for k in ("result", "error") if k in out}}

    async def _result(self, ctx: RequestContext, entry: GatewayTask) -> Message:
        """Legacy `tasks/result`: what the call returns, policed as its result, under this request's id."""
        await self._fetch(ctx, entry)
        assert entry.final is not None
        ctx.notes["policed"] = True
        out = {**entry.final, "id": ctx.id}
        body = out.get("result")
        if isinstance(body, dict):
            meta = body.get("_meta")
            out["result"] = {**body, "_meta": {**(meta if isinstance(meta, dict) else {}),
                                               RELATED: {"taskId": entry.id}}}
        return out

    async def _fetch(self, ctx: RequestContext, entry: GatewayTask) -> None:
        """The legacy server's `tasks/result` (it blocks until the task ends), or a 2026-07-28 server's
        task polled with `tasks/get` to its end, policed once."""
        async with entry.lock:
            if entry.final is not None:
                return
            left = (entry.timer.when() - asyncio.get_running_loop().time()) if entry.timer else DEFAULT_HOLD_S
            budget = max(self.gw.policy.current.default_timeout_ms / 1000, min(left, MAX_HOLD_S))
            if entry.modern_server:
                answer = await polled(lambda: self._ask(ctx, entry, "tasks/get"), ctx.id, budget)
            else:
                answer = await self._ask(ctx, entry, "tasks/result", timeout=budget)
            await self._police(entry, answer)

    async def _police(self, entry: GatewayTask, answer: Message) -> None:
        """The task's result through the response side with the creating call's context, then the
        call's one completion (its ledger row)."""
        call = entry.call
        key = "error" if "error" in answer else "result"
        body = answer.get(key)
        if key == "result" and isinstance(body, dict) and isinstance(body.get("_meta"), dict):
            # Our id replaces the server's where the client sees it; the server's is the server's.
            meta = {k: v for k, v in body["_meta"].items() if k != RELATED}
            body = {**{k: v for k, v in body.items() if k != "_meta"}, **({"_meta": meta} if meta else {})}
        message: Message = {"jsonrpc": "2.0", "id": call.id, key: body}
        call.outcome = "pending"
        policed = await self.gw.pipeline.respond(call, message)
        if call.outcome == "pending":
            call.outcome = "error" if "error" in policed else "ok"
            if "error" in policed and isinstance(policed["error"], dict):
                call.error_message = str(policed["error"].get("message"))
        entry.status = "failed" if "error" in policed else "completed"
        self.counts["results_policed"] += 1
        await self._record(entry, policed)
        entry.final = call.response  # the ledger's strict mode may have withheld it in place

    async def _cancel(self, ctx: RequestContext, entry: GatewayTask) -> Message:
        answer = await self._ask(ctx, entry, "tasks/cancel")
        body = answer.get("result")
        if not isinstance(body, dict):
            return answer
        entry.status = "cancelled"
        await self._record(entry, None)
        return result(ctx.id, {} if entry.modern_client else shaped(body, entry.id, False))

    async def _update(self, ctx: RequestContext, entry: GatewayTask) -> Message:
        if not entry.modern_server:
            return error(ctx.id, ErrorCode.INVALID_PARAMS, "this task's server takes no tasks/update: it runs "
                         "2025-11-25 tasks, whose input requests are not bridged")
        responses = ctx.params.get("inputResponses")
        return await self._ask(ctx, entry, "tasks/update", inputResponses=responses)

    async def _list(self, ctx: RequestContext) -> Message:
        """Legacy `tasks/list`: the caller's tasks only (on a single-server endpoint, that server's),
        each as its server reports it now; one page."""
        if ctx.params.get("cursor") is not None:
            return error(ctx.id, ErrorCode.INVALID_PARAMS, "Invalid cursor: this list has one page")
        session = ctx.session
        mine = [t for t in self.by_id.values() if t.principal == session.principal
                and session.server in (None, t.server)]

        async def one(entry: GatewayTask) -> dict[str, Any] | None:
            try:
                answer = await self._ask(ctx, entry, "tasks/get")
            except UpstreamError:
                return None
            body = answer.get("result")
            return shaped(body, entry.id, False) if isinstance(body, dict) else None

        listed = [t for t in await asyncio.gather(*(one(e) for e in mine[-100:])) if t is not None]
        return result(ctx.id, {"tasks": listed})

    # ------------------------------------------------------------------ the server's own word

    def status_notification(self, upstream: UpstreamServer, msg: Message) -> None:
        """A legacy server's `notifications/tasks/status`: to the creating session only, under our id."""
        params = msg.get("params")
        gid = self._upstream_ids.get((upstream.name, str(params.get("taskId")))) if isinstance(params, dict) else None
        entry = self.by_id.get(gid) if gid is not None else None
        if entry is None or entry.modern_client:
            return
        session = entry.call.session
        self.gw.spawn(self.gw.messages.send(session.id, session, None, msg, params={"taskId": entry.id}))

    # ------------------------------------------------------------------ service

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        """Held calls are recorded before the ledger closes (services stop before the stages)."""
        for entry in list(self.by_id.values()):
            if entry.timer is not None:
                entry.timer.cancel()
            if not entry.recorded:
                self.counts["recorded_unfetched"] += 1
                await self._record(entry, None, "the gateway stopped before the task's result was fetched")
        self.by_id.clear()
        self._upstream_ids.clear()

    def status(self) -> dict[str, Any]:
        return {**self.counts, "held": len(self._held)}


__all__ = ["TASK_METHODS", "GatewayTask", "Tasks"]
