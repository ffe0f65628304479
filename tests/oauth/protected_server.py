"""An OAuth-protected remote MCP server written with the official SDK's auth support.

Usage: protected_server.py PORT ISSUER JWKS_URI [REQUIRED_SCOPE [TRANSPORT]]
(TRANSPORT streamable-http, the default, at /mcp, or sse, the legacy HTTP+SSE, at /sse)

It is a resource server only (`mcp.server.auth`): `AuthSettings` names the authorization
server (ISSUER, e.g. the tests' Glewlwyd) and its own resource URI
`http://127.0.0.1:PORT/mcp`; the SDK serves the protected resource metadata (RFC 9728) at
`/.well-known/oauth-protected-resource/mcp` and answers a request without a valid token with 401
and `WWW-Authenticate: Bearer resource_metadata=...`. `JwksVerifier` checks each JWT access token
against the issuer's JWKS (RS256 only), its `iss`, its `aud` (this server's resource URI: a token
for another resource is refused) and its lifetime.

Tools: `whoami` (the subject and client of the token the call came with, so a test sees whose
token the gateway sent) and `add`; `admin_op` and `introspect_op` need a scope beyond the
server's own (`TOOL_SCOPES`): over streamable HTTP, a `tools/call` of one with a token that lacks
it is answered `403` with `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."` naming
that scope alone (the MCP chapter's step-up; the client asks for the union), and the server prints
`step-up refused TOOL` on stderr each time, so a test counts the attempts.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class JwksVerifier:
    """A TokenVerifier over the issuer's JWKS (fetched and cached by PyJWT's client)."""

    def __init__(self, issuer: str, jwks_uri: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.keys = jwt.PyJWKClient(jwks_uri, cache_keys=True, lifespan=30)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = self.keys.get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(token, key.key, algorithms=["RS256"], issuer=self.issuer,
                                                audience=self.audience, leeway=5,
                                                options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWTError:
            return None
        scope = claims.get("scope") or ""
        return AccessToken(token=token, client_id=str(claims.get("client_id") or claims.get("azp") or ""),
                           scopes=scope.split() if isinstance(scope, str) else list(scope),
                           expires_at=int(claims["exp"]), resource=self.audience,
                           subject=str(claims.get("sub") or claims.get("username") or ""),
                           claims={"iss": claims.get("iss"),
                                   "username": claims.get("preferred_username") or claims.get("username")})


#: tools that need a scope beyond the server's required one
TOOL_SCOPES = {"admin_op": "mcp:admin", "introspect_op": "mcp:introspect"}


class ToolScopes:
    """ASGI: 403 insufficient_scope for a tools/call of a `TOOL_SCOPES` tool whose token lacks its scope."""

    def __init__(self, app: Any, verifier: JwksVerifier, metadata_url: str) -> None:
        self.app = app
        self.verifier = verifier
        self.metadata_url = metadata_url

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages = [await receive()]
        while messages[-1].get("more_body"):
            messages.append(await receive())
        body = b"".join(m.get("body", b"") for m in messages)

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        needed = self._needed(body)
        headers = dict(scope.get("headers") or [])
        bearer = headers.get(b"authorization", b"").decode("latin-1").removeprefix("Bearer ").strip()
        token = await self.verifier.verify_token(bearer) if needed and bearer else None
        if needed and token is not None and needed[1] not in token.scopes:
            print(f"step-up refused {needed[0]}", file=sys.stderr, flush=True)
            challenge = (f'Bearer error="insufficient_scope", scope="{needed[1]}", '
                         f'resource_metadata="{self.metadata_url}", error_description="{needed[0]} needs {needed[1]}"')
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", challenge.encode())]})
            await send({"type": "http.response.body", "body": b'{"error":"insufficient_scope"}'})
            return
        await self.app(scope, replay, send)

    @staticmethod
    def _needed(body: bytes) -> tuple[str, str] | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        name = (message.get("params") or {}).get("name")
        return (name, TOOL_SCOPES[name]) if name in TOOL_SCOPES else None


def build(port: int, issuer: str, jwks_uri: str, scope: str, transport: str = "streamable-http") -> MCPServer:
    resource = f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    server = MCPServer(
        "protected-test-server",
        token_verifier=JwksVerifier(issuer, jwks_uri, resource),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource,  # type: ignore[arg-type]
                          required_scopes=[scope] if scope else None, validate_token_resource=False),
    )

    @server.tool()
    def whoami() -> str:
        """Who the token of this call belongs to: `sub=... client=...`."""
        token = get_access_token()
        if token is None:
            return "anonymous"
        name = (token.claims or {}).get("username") or token.subject
        return f"user={name} client={token.client_id}"

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool()
    def admin_op() -> str:
        """An operation for administrators: needs the mcp:admin scope."""
        token = get_access_token()
        return f"admin done with scope {' '.join(sorted(token.scopes)) if token else '-'}"

    @server.tool()
    def introspect_op() -> str:
        """Needs mcp:introspect, which no test client may be granted by client credentials."""
        return "introspected"

    return server


if __name__ == "__main__":
    port = int(sys.argv[1])
    kind = sys.argv[5] if len(sys.argv) > 5 else "streamable-http"
    server = build(port, sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "mcp:tools", kind)
    if kind == "sse":
        server.run(kind, host="127.0.0.1", port=port)  # type: ignore[call-overload]
    else:
        import uvicorn

        verifier = JwksVerifier(sys.argv[2], sys.argv[3], f"http://127.0.0.1:{port}/mcp")
        app = ToolScopes(server.streamable_http_app(host="127.0.0.1"), verifier,
                         f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
