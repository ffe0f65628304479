"""The dashboard's JSON API under `/api/` (the pages use it; so do scripts and the admin MCP server).

    GET  /api/stats                        cards and chart: calls, blocked, redacted, asks pending, p50/p99
    GET  /api/calls?server=&tool=&decision=a,b&client=&since=&cursor=&limit=   recent tool calls, newest first
    GET  /api/events                       Server-Sent Events: call, approvals, stats
    GET  /api/approvals                    pending asks: [{id, server, tool, arguments (redacted), created, expires, ...}]
    GET  /api/approvals/history            answered asks, newest first
    POST /api/approvals/{id}/approve       {"similar_minutes"?: int, "call_hash"?: str}
    POST /api/approvals/{id}/deny          {"reason"?: str}
    GET  /api/grants                       active "approve similar" grants
    POST /api/grants/{id}/revoke           (also DELETE /api/grants/{id})
    GET  /api/pins[?server=S]              tool-definition pins and their state (a pending change with its diff)
    POST /api/pins/accept                  {"server", "kind", "name", "hash"}: the pending definition becomes the pin
    POST /api/servers/{name}/login         {"scope"?}: start the owner's OAuth login of a remote upstream
                                           -> {"server", "authorize": URL to open} (`_upstream_login`)
    GET  /api/servers/{name}/login         {"server", "state"}: none, waiting..., authorized, login failed: ...
    GET  /api/servers                      servers, risk level, circuit, tools, pin state
    GET  /api/status                       policy (revision, mode, refused or held reload) and ledger integrity
    POST /api/ledger/verify                check the ledger's chain now (`verify-audit`)
    GET  /api/sessions, /api/timeline?session=ID   the per-session timeline (`_timeline`)
    POST /api/simulate                     {"server", "tool", "args", "client"?, "agent"?} -> decision and rule trace

Every route passes the `Guard` (token or login cookie, CSRF on state changes).
Errors are `{"error": message}` with a 4xx status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mcpwall.approvals import ApprovalError, mask_secrets
from mcpwall.dashboard._auth import Principal, Refusal
from mcpwall.dashboard._console import PinRefused
from mcpwall.dashboard._timeline import MAX_EVENTS, sessions, timeline
from mcpwall.dashboard._upstream_login import LoginRefused
from mcpwall.errors import InternalError, MCPWallError
from mcpwall.ledger import LedgerQuery, parse_time

if TYPE_CHECKING:
    from mcpwall.dashboard._app import Dashboard

MAX_BODY = 256 * 1024
MAX_LIMIT = 200
KEEPALIVE_S = 15.0


def _sse(kind: str, data: Any) -> bytes:
    payload = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)
    return b"event: " + kind.encode() + b"\ndata: " + payload + b"\n\n"


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def json_response(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str), status,
                    media_type="application/json", headers={"cache-control": "no-store"})


async def read_json(request: Request) -> dict[str, Any]:
    body = await request.body()
    if len(body) > MAX_BODY:
        raise HttpError(413, f"body over {MAX_BODY} bytes")
    if not body.strip():
        return {}
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise HttpError(400, f"the body is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise HttpError(400, "the body must be a JSON object")
    return value


def _limit(request: Request, default: int, most: int) -> int:
    """The `limit` query parameter, 1..most."""
    text = (request.query_params.get("limit") or "").strip()
    try:
        return max(1, min(int(text or default), most))
    except ValueError as exc:
        raise HttpError(400, "limit must be an integer") from exc


class Api:
    """Route handlers bound to one dashboard."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.d = dashboard

    async def handle(self, request: Request) -> Response:
        who = self.d.guard.check(request)
        if isinstance(who, Refusal):
            return json_response({"error": who.message}, who.status)
        parts = [p for p in request.url.path[len("/api/"):].split("/") if p]
        try:
            return await self._route(request, request.method, parts, who)
        except HttpError as exc:
            return json_response({"error": str(exc)}, exc.status)
        except (ApprovalError, PinRefused, LoginRefused) as exc:
            return json_response({"error": str(exc)}, exc.status)
        except (MCPWallError, ValueError) as exc:
            if isinstance(exc, InternalError) and not isinstance(exc, ValueError):
                raise  # not the request's fault (the shared state is down...): a 500 (mcpwall.errors)
            return json_response({"error": str(exc)}, 400)

    async def _route(self, request: Request, method: str, parts: list[str], who: Principal) -> Response:
        d = self.d
        if method == "GET":
            if parts == ["stats"]:
                stats = await d.feed.stats_now()
                if isinstance(stats, dict):
                    stats = {**stats, "ledger_head": await asyncio.to_thread(self._ledger_head)}
                return json_response(stats)
            if parts == ["ledger", "head"]:
                return json_response(await asyncio.to_thread(self._ledger_head))
            if parts == ["calls"]:
                return json_response(await self._calls(request))
            if parts == ["events"]:
                return self._events(request)
            if parts == ["approvals"]:
                return json_response(d.console.book.pending())
            if parts == ["approvals", "history"]:
                return json_response([r for r in d.console.book.all() if r.get("status") != "pending"][:200])
            if parts == ["grants"]:
                return json_response(d.console.book.grants())
            if parts == ["pins"]:
                return json_response(self._pins(request.query_params.get("server")))
            if parts == ["servers"]:
                return json_response({"servers": await asyncio.to_thread(d.console.servers), "mode": d.console.mode})
            if len(parts) == 3 and parts[0] == "servers" and parts[2] == "login" and d.upstream_logins is not None:
                return json_response({"server": parts[1], "state": d.upstream_logins.last.get(parts[1], "none")})
            if parts == ["status"]:
                return json_response(await self._status())
            if parts == ["sessions"]:
                return json_response(await sessions(d.feed, _limit(request, 50, 200)))
            if parts == ["timeline"]:
                session = (request.query_params.get("session") or "").strip()
                cursor = request.query_params.get("cursor") or None
                return json_response(await timeline(d.feed, session, cursor,
                                                              _limit(request, 500, MAX_EVENTS)))
        elif method == "POST":
            if len(parts) == 3 and parts[0] == "approvals" and parts[2] in ("approve", "deny"):
                return json_response(await self._answer(request, parts[1], parts[2], who))
            if len(parts) == 3 and parts[0] == "grants" and parts[2] == "revoke":
                return json_response(d.console.revoke(parts[1]))
            if parts == ["simulate"]:
                return json_response(d.console.simulate(await read_json(request)))
            if len(parts) == 3 and parts[0] == "servers" and parts[2] == "login":
                return json_response(await self._upstream_login(request, parts[1]))
            if parts == ["pins", "accept"]:
                return json_response(await self._accept_pin(request))
            if parts == ["ledger", "verify"]:
                return json_response({"ledger": await d.integrity.verify()})
        elif method == "DELETE" and len(parts) == 2 and parts[0] == "grants":
            return json_response(d.console.revoke(parts[1]))
        if parts and parts[0] == "admin":
            raise HttpError(404, "the admin API is not enabled on this gateway")
        raise HttpError(404 if method in ("GET", "POST", "DELETE") else 405, f"no route {method} /api/{'/'.join(parts)}")

    async def _status(self) -> dict[str, Any]:
        """What the overview shows besides the figures: the policy in force and the ledger's integrity."""
        policy = await asyncio.to_thread(self.d.console.policy_status)
        if policy is not None:
            policy = {**policy, "last_error": mask_secrets(policy.get("last_error"))}
        return {"mode": self.d.console.mode, "policy": policy, "ledger": self.d.integrity.status()}

    async def _upstream_login(self, request: Request, name: str) -> dict[str, Any]:
        logins = self.d.upstream_logins
        if logins is None:
            raise HttpError(404, "upstream logins are the gateway's: this dashboard has no upstreams")
        scope = (await read_json(request)).get("scope")
        if scope is not None and not isinstance(scope, str):
            raise HttpError(400, "scope must be a string of space-separated scopes")
        return await logins.start(name, scope or None)

    async def _accept_pin(self, request: Request) -> dict[str, Any]:
        body = await read_json(request)
        fields = {k: body.get(k) for k in ("server", "kind", "name")}
        for key, value in fields.items():
            if not isinstance(value, str) or not value:
                raise HttpError(400, f"{key} must be a non-empty string")
        seen = body.get("hash")
        if seen is not None and not isinstance(seen, str):
            raise HttpError(400, "hash must be a string")
        return await asyncio.to_thread(self.d.console.accept_pin, str(fields["server"]), str(fields["kind"]),
                                       str(fields["name"]), seen)

    def _ledger_head(self) -> dict[str, Any] | None:
        """The ledger's head (`SEQ:MAC-PREFIX`, issue 22): note it, then `verify-audit --expect-head` it."""
        ledger = self.d.console.ledger
        return None if ledger is None else ledger.published_head()

    async def _answer(self, request: Request, approval_id: str, verb: str, who: Principal) -> dict[str, Any]:
        body = await read_json(request)
        via = who.via
        hint = request.headers.get("x-mcpwall-via", "")
        if who.kind == "bearer" and hint in ("cli", "admin-mcp"):
            via = hint
        if verb == "deny":
            reason = body.get("reason")
            if reason is not None and not isinstance(reason, str):
                raise HttpError(400, "reason must be a string")
            return self.d.console.deny(approval_id, via=via, reason=reason)
        minutes = body.get("similar_minutes")
        if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, int)):
            raise HttpError(400, "similar_minutes must be an integer")
        expected = body.get("call_hash")
        if expected is not None and not isinstance(expected, str):
            raise HttpError(400, "call_hash must be a string")
        return self.d.console.approve(approval_id, via=via, similar_minutes=minutes or None, expected_hash=expected)

    async def _calls(self, request: Request) -> dict[str, Any]:
        params = request.query_params

        def one(key: str) -> str | None:
            value = params.get(key)
            return value.strip() if value and value.strip() else None

        limit = _limit(request, 50, MAX_LIMIT)
        since = one("since")
        query = LedgerQuery(table="tool_calls", server=one("server"), tool=one("tool"), client=one("client"),
                            decision=tuple(x for x in (one("decision") or "").split(",") if x),
                            since=parse_time(since) if since else None, cursor=one("cursor"), limit=limit)
        rows, cursor = await self.d.feed.query(query)
        return {"rows": rows, "next_cursor": cursor}

    def _pins(self, server: str | None) -> dict[str, Any]:
        from mcpwall.dashboard._console import pin_rows

        rows = pin_rows(self.d.console.store, server or None)
        return {"pins": rows, "pending": sum(1 for r in rows if r["state"] == "pending")}

    def _events(self, request: Request) -> Response:
        feed = self.d.feed

        async def stream() -> AsyncIterator[bytes]:
            queue = feed.subscribe()
            try:
                yield b"retry: 2000\n\n"
                await feed.refresh_quietly()
                yield _sse("stats", feed.snapshot())
                while True:
                    try:
                        item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                    except TimeoutError:
                        yield b": keepalive\n\n"
                        continue
                    if item is None:
                        return
                    yield _sse(*item)
            finally:
                feed.unsubscribe(queue)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})


__all__ = ["Api", "HttpError", "json_response", "read_json"]
