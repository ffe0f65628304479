"""Attaching the resource server to a gateway as it is built (`mcpwall proxy`).

`register_resource_server()` adds `resource_server_service` to `mcpwall.proxy.SERVICES`. For a
policy whose `auth:` section names issuers, the service is a `ResourceServer`, hung on the
gateway's `AuthStage` (`auth.oauth`), which offers it every bearer token the static tokens do not
know, and whose metadata app the frontend serves under `/.well-known/oauth-protected-resource`.
The `auth:` section is read at start: a change to it needs a restart (a live reload keeps the
issuers the gateway started with).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpwall.oauth._config import parse_auth
from mcpwall.oauth._resource import ResourceServer


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def resource_server_service(settings: Any, gateway: Any) -> ResourceServer | None:
    """The resource server the policy's `auth:` asks for, attached to the gateway's door; else None."""
    policy = gateway.policy.current
    section = policy.source.sections.get("auth")
    if section is None:
        return None
    files = list(getattr(policy.source, "files", []) or [])
    base = Path(files[0]).parent if files else settings.home
    default = f"http://{_url_host(settings.host)}:{settings.port}/mcp"
    config = parse_auth(section, default, base)
    if config is None:
        return None
    auth = gateway.service("auth")

    def local() -> list[str]:
        return list(getattr(auth, "tokens", {}).values())

    def rbac() -> Any:
        return next((s for s in gateway.pipeline.stages if s.name == "rbac"), None)

    server = ResourceServer(config, lambda: gateway.servers.keys(), local, rbac)
    if auth is not None:
        auth.oauth = server
    return server


def register_resource_server() -> None:
    """Add the resource server to `mcpwall.proxy.SERVICES` (idempotent)."""
    from mcpwall.proxy import SERVICES

    if resource_server_service not in SERVICES:
        SERVICES.append(resource_server_service)


__all__ = ["register_resource_server", "resource_server_service"]
