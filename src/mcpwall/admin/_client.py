"""The admin MCP server's only way in: the gateway's authenticated HTTP API.

The admin server holds the bearer token and nothing else: no ledger, no
policy file, no socket of the gateway's. Every answer is the gateway's JSON;
every failure becomes `AdminCallError` with the HTTP status and a message
from which the token has been removed (it must never reach the agent, the
logs or stdout).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from mcpwall.errors import MCPWallError


class AdminCallError(MCPWallError):
    """The gateway refused or failed an admin call."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GatewayClient:
    """Typed calls to one gateway."""

    def __init__(self, base_url: str, token: str | None, *, timeout_s: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token or ""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout_s,
                                       trust_env=False, transport=transport)

    async def aclose(self) -> None:
        await self._http.aclose()

    def scrub(self, text: str) -> str:
        """Remove the token from any text leaving this process."""
        return text.replace(self._token, "[REDACTED]") if self._token else text

    async def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None) -> Any:
        clean = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
        try:
            response = await self._http.request(method, path, json=json, params=clean or None)
        except httpx.HTTPError as exc:
            raise AdminCallError(self.scrub(f"cannot reach the gateway at {self.base_url}: "
                                            f"{exc.__class__.__name__}: {exc}")) from None
        try:
            body = response.json()
        except ValueError:
            body = {"error": response.text[:500]}
        if response.status_code >= 400:
            message = body.get("error") if isinstance(body, dict) else None
            if isinstance(message, dict):
                message = message.get("message")
            if response.status_code == 404 and path.startswith("/api/"):
                message = f"this gateway does not offer {method} {path} ({message or 'not found'})"
            raise AdminCallError(self.scrub(f"HTTP {response.status_code}: {message or body}"),
                                 response.status_code)
        return body

    # ---------------------------------------------------------------- the routes

    async def status(self) -> Any:
        return await self.call("GET", "/health")

    async def servers(self) -> Any:
        return await self.call("GET", "/servers")

    async def simulate(self, server: str, body: dict[str, Any]) -> Any:
        return await self.call("POST", f"/{quote(server or '_', safe='')}/explain", json=body)

    async def policy(self) -> Any:
        return await self.call("GET", "/api/admin/policy")

    async def add_rule(self, rule: dict[str, Any]) -> Any:
        return await self.call("POST", "/api/admin/policy/rules", json={"rule": rule})

    async def reload_policy(self) -> Any:
        return await self.call("POST", "/api/admin/policy/reload")

    async def remove_rule(self, rule_id: str) -> Any:
        return await self.call("DELETE", f"/api/admin/policy/rules/{quote(rule_id, safe='')}")

    async def timeline(self, **filters: Any) -> Any:
        return await self.call("GET", "/api/admin/timeline", params=filters)

    async def verify_audit(self) -> Any:
        return await self.call("POST", "/api/admin/verify-audit")

    async def approvals(self) -> Any:
        return await self.call("GET", "/api/approvals")

    async def approve(self, approval_id: str, similar_minutes: int | None = None) -> Any:
        body = {"similar_minutes": similar_minutes} if similar_minutes else {}
        return await self.call("POST", f"/api/approvals/{quote(approval_id, safe='')}/approve", json=body)

    async def deny(self, approval_id: str, reason: str | None = None) -> Any:
        return await self.call("POST", f"/api/approvals/{quote(approval_id, safe='')}/deny",
                               json={"reason": reason} if reason else {})

    async def pins(self, server: str | None = None) -> Any:
        return await self.call("GET", "/api/pins", params={"server": server})


__all__ = ["AdminCallError", "GatewayClient"]
