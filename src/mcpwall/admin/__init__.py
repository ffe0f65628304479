"""The admin MCP server (`mcpwall mcp`) and the gateway's admin API it calls.

    MCPWALL_GATEWAY_TOKEN=$(cat ~/.mcpwall/run/gateway.token) mcpwall mcp --gateway-url http://127.0.0.1:9420

The server (`_server`) is a stdio MCP server whose every tool is one HTTP
call (`_client`) to the running gateway; the gateway side of the calls it
alone needs (live rules, timeline, verify-audit) is `_api`, mounted at
`/api/admin/`. `register()` attaches that API to gateways as they are built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpwall.admin._api import PREFIX, AdminApi, AdminApiService, admin_api_service, app_wrapper
from mcpwall.admin._client import AdminCallError, GatewayClient
from mcpwall.admin._rules import ORIGIN, LiveRules, RuleConflict

if TYPE_CHECKING:
    from mcpwall.admin._server import create_server

#: Where the admin server reads its token from when --token-file is not given.
TOKEN_ENV = "MCPWALL_GATEWAY_TOKEN"


def __getattr__(name: str) -> Any:
    # The MCP server (`mcpwall mcp`) needs the mcp SDK, about 55 MiB of modules that
    # a gateway, which only mounts the admin API, never uses: import it on first use.
    if name == "create_server":
        from mcpwall.admin._server import create_server

        return create_server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register() -> None:
    """Add the admin API to `mcpwall.proxy.SERVICES` (idempotent)."""
    from mcpwall.proxy import SERVICES

    if admin_api_service not in SERVICES:
        SERVICES.append(admin_api_service)


__all__ = [
    "ORIGIN",
    "PREFIX",
    "TOKEN_ENV",
    "AdminApi",
    "AdminApiService",
    "AdminCallError",
    "GatewayClient",
    "LiveRules",
    "RuleConflict",
    "admin_api_service",
    "app_wrapper",
    "create_server",
    "register",
]
