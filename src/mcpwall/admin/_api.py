"""The gateway's admin API under `/api/admin/`: what the admin MCP server needs and nobody else serves.

    GET    /api/admin/policy                 the policy in force, its live rules, revision, mode
    POST   /api/admin/policy/rules           {"rule": {...}} -> add a live rule (201), 409 on a taken id
    DELETE /api/admin/policy/rules/{id}      remove a live rule
    POST   /api/admin/policy/reload          load the policy files now, releasing a held reload
                                             (`mcpwall policy reload`): {"loaded", "revision", "error"}
    GET    /api/admin/timeline?...           ledger rows: server, tool, decision (comma list), process,
                                             session, since, until, cursor, limit (<= 500)
    POST   /api/admin/verify-audit           the ledger's HMAC chain check

Every route needs the gateway's own bearer token (an agent's named token gets
403) and passes its Host/Origin checks: the same `AuthStage.admit` the MCP
endpoints use. Bodies and
answers are JSON; errors are `{"error": message}` with a 4xx/5xx status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import orjson

from mcpwall.admin._rules import LiveRules, RuleConflict
from mcpwall.errors import ConfigError, InternalError, MCPWallError
from mcpwall.stages import AuthStage

if TYPE_CHECKING:
    from mcpwall.proxy import Gateway

log = logging.getLogger("mcpwall.admin")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
PREFIX = "/api/admin/"
MAX_BODY = 256 * 1024
MAX_TIMELINE = 500


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AdminApi:
    """An ASGI app for the routes above, bound to one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.live = LiveRules(gateway.policy)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        auth = self.gateway.service("auth")
        if not isinstance(auth, AuthStage):
            await _json(send, 503, {"error": "the gateway has no authentication stage"})
            return
        reject, identity = auth.admit(headers)
        if reject is not None:
            await _json(send, reject.http_status if reject.http_status != 200 else 401, {"error": reject.message})
            return
        if identity:
            # A named token is an agent: it must not read other agents' ledger rows or change the policy
            # that governs it. Administration takes the gateway's own token, as the dashboard API does.
            await _json(send, 403, {"error": f"the token of agent {identity!r} cannot use the admin API; "
                                             "use the gateway's token"})
            return
        try:
            status, body = await self._route(scope["method"], scope["path"], scope.get("query_string", b""),
                                             receive)
        except _HttpError as exc:
            status, body = exc.status, {"error": str(exc)}
        except RuleConflict as exc:
            status, body = 409, {"error": str(exc)}
        except InternalError:
            raise  # not the request's fault: a 500, as for any other exception (mcpwall.errors)
        except MCPWallError as exc:
            status, body = 400, {"error": str(exc)}
        await _json(send, status, body)

    async def _route(self, method: str, path: str, query: bytes, receive: Receive) -> tuple[int, Any]:
        parts = [unquote(p) for p in path[len(PREFIX):].split("/") if p]
        if parts == ["policy"] and method == "GET":
            return 200, self._policy()
        if parts == ["policy", "rules"] and method == "POST":
            body = await _body(receive)
            rule = body.get("rule", body) if isinstance(body, dict) else body
            return 201, self.live.add(rule)
        if parts == ["policy", "reload"] and method == "POST":
            return 200, self._reload()
        if len(parts) == 3 and parts[:2] == ["policy", "rules"] and method == "DELETE":
            return 200, self.live.remove(parts[2])
        if parts == ["timeline"] and method == "GET":
            return 200, await self._timeline(parse_qs(query.decode("latin-1")))
        if parts == ["verify-audit"] and method == "POST":
            return 200, await self._verify()
        raise _HttpError(404, f"no admin route {method} {path}")

    def _policy(self) -> dict[str, Any]:
        current = self.gateway.policy.current
        source = current.source
        return {
            **self.gateway.policy.status(),
            "default_action": source.default_action,
            "rules": [{**p.rule.model_dump(exclude_none=True), "origin": p.origin.file} for p in source.rules],
            "corp_rules": [p.rule.model_dump(exclude_none=True) for p in source.corp_rules],
            "live_rules": self.live.describe(),
            "allowlist": source.allowlist.model_dump(),
        }

    def _reload(self) -> dict[str, Any]:
        store = self.gateway.policy
        held = store.held
        before = store.current.revision
        loaded = store.load_now(by="a person (mcpwall policy reload)")
        out = {"loaded": loaded, "revision": store.current.revision, "previous_revision": before,
               "error": None if loaded else store.last_error, "released": held}
        ledger = getattr(self.gateway, "ledger", None)
        if ledger is not None:
            import time

            from mcpwall.ledger import Event

            reason = (f"policy reloaded by a person: revision {before} -> {store.current.revision}" if loaded
                      else f"policy reload by a person failed: {store.last_error}")
            ledger.submit(Event(method="policy/reload", decision="allow" if loaded else "error",
                                outcome="ok" if loaded else "error", ts=time.time(),
                                policy_revision=store.current.revision, reasons=(reason,),
                                error_message=None if loaded else store.last_error))
        return out

    def _ledger(self) -> Any:
        ledger = getattr(self.gateway, "ledger", None)
        if ledger is None:
            raise _HttpError(503, "this gateway has no ledger")
        return ledger

    async def _timeline(self, q: dict[str, list[str]]) -> dict[str, Any]:
        from mcpwall.ledger import LedgerQuery, parse_time

        def one(key: str) -> str | None:
            values = q.get(key)
            return values[-1] if values else None

        try:
            limit = max(1, min(int(one("limit") or 50), MAX_TIMELINE))
        except ValueError as exc:
            raise _HttpError(400, "limit must be an integer") from exc
        query = LedgerQuery(
            since=parse_time(one("since") or "") if one("since") else None,
            until=parse_time(one("until") or "") if one("until") else None,
            server=one("server"), tool=one("tool"), session=one("session"), client=one("client"),
            decision=tuple(d for d in (one("decision") or "").split(",") if d),
            cursor=one("cursor"), limit=limit)
        ledger = self._ledger()
        page = await asyncio.to_thread(ledger.query, query)
        rows = page.rows
        process = one("process")
        if process:
            rows = [r for r in rows if r.get("process_name") == process]
        return {"rows": rows, "next_cursor": page.next_cursor, "order": page.order}

    async def _verify(self) -> dict[str, Any]:
        ledger = self._ledger()
        report = await asyncio.to_thread(ledger.verify)
        out: dict[str, Any] = report.as_dict()
        return out


async def _body(receive: Receive) -> Any:
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            raise _HttpError(400, "client disconnected")
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise _HttpError(413, f"body over {MAX_BODY} bytes")
        chunks.append(chunk)
        if not event.get("more_body", False):
            break
    try:
        return orjson.loads(b"".join(chunks) or b"null")
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"the body is not JSON: {exc}") from exc


async def _json(send: Send, status: int, value: Any) -> None:
    body = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


def app_wrapper(api: AdminApi) -> Callable[[Any], Any]:
    """For `serve_http(built, app_wrapper=...)`: `/api/admin/` goes to the admin API, the rest to the gateway."""

    def wrap(frontend: Any) -> Any:
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"].startswith(PREFIX):
                await api(scope, receive, send)
            else:
                await frontend(scope, receive, send)

        return app

    return wrap


class AdminApiService:
    """The admin API as a gateway service (`Gateway.admin_api`): no request hook, counters in /health."""

    name = "admin_api"

    def __init__(self, gateway: Gateway) -> None:
        self.api = AdminApi(gateway)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {"live_rules": len(self.api.live.rules)}


def admin_api_service(settings: Any, gateway: Gateway) -> AdminApiService:
    """A `mcpwall.proxy.SERVICES` entry: every HTTP gateway gets the admin API."""
    return AdminApiService(gateway)


__all__ = ["PREFIX", "AdminApi", "AdminApiService", "admin_api_service", "app_wrapper"]
