"""Logging the gateway in to an OAuth-protected upstream (`mcpwall login SERVER`).

The flow is the MCP authorization chapter's, run by the official SDK's `OAuthClientProvider`
(`mcp.client.auth`, an httpx2 auth flow) rather than by code of ours: an `initialize` POST to the
server, and on its 401 the discovery from `WWW-Authenticate`'s `resource_metadata` (protected
resource metadata, RFC 9728, with the well-known fallbacks), the authorization server's metadata
(RFC 8414 or OIDC discovery, its `issuer` checked), registration by Client ID Metadata Document
where the server says `client_id_metadata_document_supported` and `--client-metadata-url` names
one, dynamic client registration (RFC 7591) otherwise, then authorization code with PKCE S256 and
the `resource` parameter (RFC 8707), the redirect's `state` and `iss` (RFC 9207) checked.
`login_service` does the client-credentials grant of a service credential the same way
(`ClientCredentialsOAuthProvider`), and `_device` the device authorization grant (RFC 8628),
which the SDK lacks, over the metadata the SDK's discovery found.

What the SDK leaves in its `TokenStorage` becomes one `Grant` (tokens, the token endpoint, the
resource, the client registration) in the home's `TokenStore`; the gateway renews it from there
without the SDK (`_auth.renew`). Importing this module imports the SDK: only the CLI does.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from mcpwall import __version__
from mcpwall.oauth._device import device_login
from mcpwall.oauth._flow import LoginFailed, LoopbackCallback, show_authorization_url
from mcpwall.oauth._store import SERVICE, Grant, TokenStore
from mcpwall.protocol.modern import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LATEST_MODERN,
    PROTOCOL_VERSION_META_KEY,
)

_PROTOCOL_VERSION = "2025-11-25"


class _Held:
    """The SDK's TokenStorage, in memory for one login (the store gets the result whole)."""

    def __init__(self, client: OAuthClientInformationFull | None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _Provider(OAuthClientProvider):
    """The SDK's provider, asking for the scopes `--scope` names as well as those the server's challenge
    names (the SDK's scope selection takes the challenge's alone, so a step-up login would get no
    more than the grant it replaces)."""

    def __init__(self, *args: Any, wanted: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wanted = wanted

    async def _perform_authorization(self) -> httpx2.Request:
        if self._wanted:
            self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self._wanted)
        return await super()._perform_authorization()


@dataclass(frozen=True)
class LoginOptions:
    """How `mcpwall login` runs: whose grant, which flow, how the person is reached."""

    principal: str = ""
    browser: bool = True
    device: bool = False
    scope: str | None = None
    client_metadata_url: str | None = None
    #: how a dynamically registered client authenticates at the token endpoint: a secret minted for
    #: it (kept in the token store), or "none" for a public client (PKCE alone)
    client_auth: str = "client_secret_basic"
    timeout_s: float = 300.0
    #: a client registered beforehand at the authorization server (no dynamic registration), and its
    #: secret (none for a public client)
    client_id: str | None = None
    client_secret: str | None = None


def _initialize_body() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": "mcpwall-login", "method": "initialize",
            "params": {"protocolVersion": _PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "mcpwall", "version": __version__}}}


#: a stateless (2026-07-28) server's first request: `server/discover` with the per-request envelope
_DISCOVER_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                     "MCP-Protocol-Version": LATEST_MODERN, "Mcp-Method": "server/discover"}


def _discover_body() -> dict[str, Any]:
    meta = {PROTOCOL_VERSION_META_KEY: LATEST_MODERN, CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: {"name": "mcpwall", "version": __version__}}
    return {"jsonrpc": "2.0", "id": "mcpwall-login", "method": "server/discover", "params": {"_meta": meta}}


async def _probe(url: str, auth: httpx2.Auth, logged_in: Callable[[], bool] = lambda: False) -> None:
    """The request whose 401 starts the SDK's flow; the session it opens is closed at once.

    A legacy HTTP+SSE server (`/sse`) takes no POST there (405): its event stream is opened instead,
    and once the flow has its token the stream, which never ends, is given up on after a quiet moment."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": _PROTOCOL_VERSION}
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30.0, read=60.0)) as http:
        try:
            response = await http.post(url, json=_initialize_body(), headers=headers)
            if response.status_code in (400, 404, 405) and not logged_in():
                try:
                    response = await http.get(url, headers={"Accept": "text/event-stream"},
                                              timeout=httpx2.Timeout(30.0, read=3.0))
                except httpx2.ReadTimeout:
                    if not logged_in():
                        raise
                    return  # the stream is open: authorized
                if response.status_code in (400, 404, 405) and not logged_in():
                    # a 2026-07-28 server refuses `initialize`: its `server/discover` asks for the token
                    response = await http.post(url, json=_discover_body(), headers=_DISCOVER_HEADERS)
            session = response.headers.get("mcp-session-id")
            if response.status_code == 200 and not logged_in():
                # a server may let `initialize` through and want a token for everything else (the
                # conformance suite's step-up servers): its first request after the handshake asks
                response = await _after_handshake(http, url, headers, session)
        except httpx2.HTTPError as exc:
            raise LoginFailed(f"cannot reach {url}: {exc.__class__.__name__}: {exc}") from exc
        if response.status_code in (401, 403):
            raise LoginFailed(f"{url} still refuses the token (HTTP {response.status_code})")
        if session:
            with contextlib.suppress(httpx2.HTTPError):
                await http.delete(url, headers={**headers, "Mcp-Session-Id": session})


async def _after_handshake(http: httpx2.AsyncClient, url: str, headers: dict[str, str],
                           session: str | None) -> httpx2.Response:
    """`notifications/initialized` and a `tools/list` on the session `initialize` opened."""
    if session:
        headers = {**headers, "Mcp-Session-Id": session}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return await http.post(url, json={"jsonrpc": "2.0", "id": "mcpwall-login-2", "method": "tools/list"},
                           headers=headers)


def _grant(provider: OAuthClientProvider, held: _Held, kind: str, previous_scope: str | None) -> Grant:
    tokens = held.tokens
    if tokens is None:
        raise LoginFailed("the server accepted the request without a token: it needs no login")
    ctx = provider.context
    client = held.client.model_dump(mode="json", exclude_none=True) if held.client is not None else {}
    resource = ctx.get_resource_url() if ctx.should_include_resource_param(_PROTOCOL_VERSION) else None
    return Grant(
        access_token=tokens.access_token, token_type=tokens.token_type or "Bearer",
        refresh_token=tokens.refresh_token,
        expires_at=time.time() + tokens.expires_in if tokens.expires_in else None,
        scope=tokens.scope or previous_scope, kind=kind,
        issuer=str(ctx.oauth_metadata.issuer) if ctx.oauth_metadata else None,
        token_endpoint=provider._get_token_endpoint(), resource=resource, client=client)


def _previous_client(store: TokenStore, server: str, principal: str) -> OAuthClientInformationFull | None:
    """The registration an earlier login made (reused; the SDK re-registers if the issuer moved)."""
    grant = store.get(server, principal)
    if grant is None or not grant.client.get("client_id"):
        return None
    try:
        return OAuthClientInformationFull.model_validate(grant.client)
    except ValueError:
        return None


async def login(server: str, url: str, store: TokenStore, options: LoginOptions,
                say: Callable[[str], None], authorize: Callable[[str], None] | None = None) -> Grant:
    """Run the person's login for `server` at `url` and store the grant for `options.principal`.
    `authorize` is given the authorization URL instead of the browser and `say` (the dashboard's
    login hands it to the person's page)."""
    if options.device:
        grant = await device_login(url, _previous_client(store, server, options.principal), options, say)
        store.put(server, options.principal, grant)
        return grant
    async with LoopbackCallback() as callback:
        metadata = OAuthClientMetadata(
            client_name="mcpwall", redirect_uris=[callback.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method=options.client_auth, scope=options.scope)  # type: ignore[arg-type]
        held = _Held(_previous_client(store, server, options.principal))
        if held.client is not None and callback.redirect_uri not in [str(u) for u in held.client.redirect_uris or []]:
            held.client = None  # registered for another loopback port: register again
        if options.client_id:
            held.client = OAuthClientInformationFull(
                client_id=options.client_id, client_secret=options.client_secret,
                redirect_uris=[callback.redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method="client_secret_basic" if options.client_secret else "none")

        async def redirect(authorization_url: str) -> None:
            if authorize is not None:
                authorize(authorization_url)
            else:
                show_authorization_url(authorization_url, browser=options.browser, say=say)

        async def answer() -> AuthorizationCodeResult:
            result = await callback.wait(options.timeout_s)
            if result.error:
                raise LoginFailed(f"the authorization server refused: {result.error}"
                                  + (f" ({result.error_description})" if result.error_description else ""))
            if not result.code:
                raise LoginFailed("the authorization response carried no code")
            return AuthorizationCodeResult(code=result.code, state=result.state, iss=result.iss)

        provider = _Provider(url, metadata, held, redirect_handler=redirect, callback_handler=answer,
                             client_metadata_url=options.client_metadata_url, wanted=options.scope)
        await _run(url, provider, held)
    grant = _grant(provider, held, "user", options.scope)
    store.put(server, options.principal, grant)
    return grant


async def login_service(server: str, url: str, store: TokenStore, *, client_id: str, client_secret: str,
                        issuer: str | None, scope: str | None = None,
                        auth_method: str = "client_secret_basic") -> Grant:
    """A client-credentials grant shared by every principal (a service credential)."""
    held = _Held(None)
    provider = ClientCredentialsOAuthProvider(url, held, client_id, client_secret,
                                              token_endpoint_auth_method=auth_method,  # type: ignore[arg-type]
                                              scope=scope, issuer=issuer)
    await _run(url, provider, held)
    held.client = provider._fixed_client_info
    grant = _grant(provider, held, "service", scope)
    store.put(server, SERVICE, grant)
    return grant


async def _run(url: str, provider: OAuthClientProvider, held: _Held) -> None:
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
    from pydantic import ValidationError

    try:
        await _probe(url, provider, lambda: held.tokens is not None)
    except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as exc:
        raise LoginFailed(str(exc)) from exc
    except ValidationError as exc:  # metadata or a token answer that is not what the RFCs describe
        raise LoginFailed(f"the server's OAuth metadata or answer is malformed: {exc.errors()[0]['msg']}") from exc


__all__ = ["LoginOptions", "login", "login_service"]
