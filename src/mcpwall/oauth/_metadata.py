"""Protected resource metadata (RFC 9728) and the `WWW-Authenticate` challenges that point to it.

The gateway's resources: `/mcp` (every server, aggregated; the configured `resource`) and
`/mcp/NAME` (one server). Their metadata is served, without a token, at
`/.well-known/oauth-protected-resource` + the resource's path, and the bare
`/.well-known/oauth-protected-resource` describes `/mcp`. Each document names the resource exactly
as the path it was fetched for (RFC 9728 section 3.3), the trusted issuers, the scopes and
`bearer_methods_supported: ["header"]`.

A 401 carries `Bearer resource_metadata="...", scope="..."` (and `error="invalid_token"` when a
token was presented, RFC 6750); a 403 for a call that needs more scope carries
`error="insufficient_scope"` and the scopes to ask for, so a client can step up (MCP incremental
consent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from mcpwall.oauth._config import AuthConfig
from mcpwall.pipeline import Reject
from mcpwall.protocol import ErrorCode

PREFIX = "/.well-known/oauth-protected-resource"

Scope = dict[str, Any]


@dataclass(slots=True)
class Challenge(Reject):
    """A refusal with the HTTP headers of an OAuth challenge (the frontend sends `headers`)."""

    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class Metadata:
    """Resource URIs, metadata documents and challenges for one `auth:` configuration."""

    def __init__(self, config: AuthConfig, servers: Callable[[], Iterable[str]]) -> None:
        self.config = config
        self.servers = servers
        parts = urlsplit(config.resource)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        #: the path the configured resource names (`/mcp` by default): its sub-paths are per server
        self.base_path = parts.path.rstrip("/") or ""

    def resource_for(self, path: str) -> str:
        """The resource URI a request on `path` is for: `/mcp/NAME` has its own, the rest the gateway's."""
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "mcp" and parts[1] in set(self.servers()):
            return f"{self.config.resource}/{parts[1]}" if self.base_path == "/mcp" else \
                f"{self.origin}/mcp/{parts[1]}"
        return self.config.resource

    def audiences_for(self, path: str) -> list[str]:
        """The `aud` values a token may carry on `path`: the resource of the path, or the gateway's own."""
        out = [self.resource_for(path), self.config.resource]
        for issuer in self.config.issuers:
            out.extend(issuer.audience)
        return list(dict.fromkeys(out))

    def metadata_url(self, resource: str) -> str:
        path = urlsplit(resource).path.rstrip("/")
        return f"{self.origin}{PREFIX}{path}"

    def document(self, resource: str) -> dict[str, Any]:
        return {"resource": resource,
                "authorization_servers": [i.issuer for i in self.config.issuers],
                "scopes_supported": self.config.scopes_supported,
                "bearer_methods_supported": ["header"],
                "resource_name": "mcpwall gateway"}

    def challenge(self, path: str, *, status: int = 401, error: str | None = None, description: str = "",
                  scopes: Iterable[str] = ()) -> Challenge:
        """The refusal of a request on `path`, with its `WWW-Authenticate` header."""
        resource = self.resource_for(path)
        wanted = list(dict.fromkeys(scopes)) or [s for i in self.config.issuers for s in i.scopes]
        fields = [f'resource_metadata="{_quoted(self.metadata_url(resource))}"']
        if wanted:
            fields.append(f'scope="{_quoted(" ".join(wanted))}"')
        if error:
            fields.append(f'error="{error}"')
            if description:
                fields.append(f'error_description="{_quoted(description)}"')
        header = "Bearer " + ", ".join(fields)
        text = {401: "Unauthorized: a valid bearer token is required",
                403: "Forbidden: the token lacks a scope this call needs"}.get(status, "Unauthorized")
        if description:
            text = f"{text} ({description})"
        data: dict[str, Any] = {"resource_metadata": self.metadata_url(resource)}
        if wanted:
            data["scope"] = " ".join(wanted)
        if error:
            data["error"] = error
        return Challenge(ErrorCode.UNAUTHORIZED, text, data, http_status=status, outcome="rejected",
                         headers=[(b"www-authenticate", header.encode("latin-1", "replace"))])

    async def app(self, scope: Scope, receive: Any, send: Any) -> None:
        """The ASGI app of `/.well-known/oauth-protected-resource[...]` (no token needed)."""
        path: str = scope["path"]
        rest = path[len(PREFIX):].rstrip("/")
        if scope["method"] not in ("GET", "HEAD") or (rest and not rest.startswith("/")):
            await _send(send, 404 if scope["method"] in ("GET", "HEAD") else 405, {"error": "not found"})
            return
        if not rest:
            resource = self.config.resource
        elif rest == self.base_path or rest == "/mcp":
            resource = self.config.resource if rest == self.base_path else self.resource_for("/mcp")
        else:
            resource = self.resource_for(rest)
            if urlsplit(resource).path.rstrip("/") != rest:
                await _send(send, 404, {"error": f"no protected resource at {rest}"})
                return
        await _send(send, 200, self.document(resource))


async def _send(send: Any, status: int, body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"cache-control", b"max-age=300"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


__all__ = ["PREFIX", "Challenge", "Metadata"]
