"""The upstream token on each request: whose it is, renewed before it expires.

The gateway multiplexes many downstream sessions over one upstream connection, so the token is
chosen per request, for the principal the request is made for (`acting_for`, set where the
gateway forwards a client's request). Which grant a principal gets (`UpstreamAuth.key_for`):

1. its own (`mcpwall login SERVER --principal P`);
2. else the server's service credential (`mcpwall login SERVER --service`), shared by all;
3. else, for the gateway's own requests (handshake, lists) and for *local* principals (the
   gateway token's "" and the named tokens `init` gives this machine's clients, all the person
   who owns the machine), the owner's grant (`mcpwall login SERVER`);
4. else none: the request is not sent and fails with `LoginRequired`, naming the command.

A principal authenticated by an identity provider (another person) never falls back to the
owner's grant or to another principal's: alice's token is never sent for bob.

A grant within `REFRESH_MARGIN_S` of its expiry is renewed first (refresh token, or a new
client-credentials grant), one renewal at a time per grant, and stored back. A 401 from the
server after that is the server's answer: the transport reports it with the login command.

Step-up (the MCP chapter's incremental consent): a `403` with `WWW-Authenticate: Bearer
error="insufficient_scope", scope="S"` asks for the union of the grant's scopes and S. A service
credential gets a new client-credentials grant for the union and the request is sent again, once;
a person's grant cannot be widened without them, so the grant is marked (`Grant.step_up`: status
and the dashboard say "login needed for scope ...") and the call fails with `LoginRequired`
naming `mcpwall login SERVER --scope "..."`. Nothing is retried twice: a second refusal is the
call's error.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import re
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from mcpwall.errors import MCPWallError
from mcpwall.oauth._store import OWNER, SERVICE, Grant, TokenStore, TokenStoreError
from mcpwall.transports import TransportError
from mcpwall.transports._principal import (
    acting_for,
    current_principal,
    login_command,
    login_required,
    set_auth_factory,
)

log = logging.getLogger("mcpwall.upstream")

REFRESH_MARGIN_S = 60.0


class LoginRequired(TransportError):
    """The upstream needs an OAuth grant the gateway does not hold for this principal (a transport
    error: the request is never sent, and fails with the login command)."""

    def __init__(self, server: str, principal: str | None, detail: str = "", scope: str | None = None) -> None:
        self.server = server
        self.principal = principal
        self.command = login_command(server, principal)
        if scope is None:
            super().__init__(login_required(server, principal, detail))
            return
        self.command += f' --scope "{scope}"'
        who = f" for principal {principal!r}" if principal else ""
        super().__init__(f"upstream {server!r} requires authorization{who} for scope {scope!r}: run "
                         f"`{self.command}`" + (f" ({detail})" if detail else ""))


def use_home(home: Path) -> None:
    """The gateway's home, whose grants its remote upstreams' transports carry."""
    home = Path(home)
    set_auth_factory(lambda server: UpstreamAuth(server, home))


def upstream_auth_service(settings: Any, gateway: Any) -> None:
    """A `mcpwall.proxy.SERVICES` entry: a gateway being built gives its remote upstreams the grants of its
    home (its upstreams connect after the services are made). No service of its own: returns None."""
    use_home(settings.home)


def register_upstream_auth() -> None:
    """Give every gateway built from now on its home's upstream grants (idempotent)."""
    from mcpwall.proxy import SERVICES

    if upstream_auth_service not in SERVICES:
        SERVICES.append(upstream_auth_service)


def insufficient_scope(response: httpx.Response) -> str | None:
    """The scope a `403 insufficient_scope` challenge asks for ("" when it names none); None for any
    other response."""
    if response.status_code != 403:
        return None
    challenge = response.headers.get("www-authenticate", "")
    if challenge[:7].lower() != "bearer ":
        return None
    fields = {m[0].lower(): m[1] or m[2] for m in re.findall(r'([A-Za-z_]+)=(?:"([^"]*)"|([^\s,]*))', challenge[7:])}
    if fields.get("error") != "insufficient_scope":
        return None
    scope = fields.get("scope", "")
    # RFC 6749 3.3 scope-tokens only: a server does not get to put quotes or controls in a command line
    return scope if re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e ]*", scope) else None


def union_scopes(held: str | None, wanted: str) -> str:
    """`held`'s scopes, then those of `wanted` it lacks (the MCP chapter: ask for the union)."""
    merged = (held or "").split()
    merged += [s for s in dict.fromkeys(wanted.split()) if s not in merged]
    return " ".join(merged)


class UpstreamAuth(httpx.Auth):
    """An httpx auth flow for one upstream server, over the home's `TokenStore`."""

    requires_request_body = True  # a step-up sends the request again

    def __init__(self, server: str, home: Path, store: TokenStore | None = None) -> None:
        self.server = server
        self.home = Path(home)
        self.store = store or TokenStore(self.home)
        self._renewing: dict[str, asyncio.Lock] = {}

    def active(self) -> bool:
        """Whether any grant is held for this server (else requests pass through untouched)."""
        return bool(self.store.index().get(self.server))

    def _local(self, principal: str) -> bool:
        """The gateway token's principal, or a named token of this machine (`run/tokens/P.token`)."""
        return principal == OWNER or (self.home / "run" / "tokens" / f"{principal}.token").is_file()

    def key_for(self, principal: str | None) -> str | None:
        """Whose grant a request for `principal` carries (see the module docstring); None when no grant
        applies, or when the server has none at all."""
        held = self.store.index().get(self.server) or {}
        if not held:
            return None
        if principal is not None and principal != OWNER and principal in held:
            return principal
        if SERVICE in held:
            return SERVICE
        if (principal is None or self._local(principal)) and OWNER in held:
            return OWNER
        return None

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        principal = request.extensions.get("mcpwall_principal", current_principal())
        if not self.active():
            yield request
            return
        key = self.key_for(principal)
        if key is None:
            raise LoginRequired(self.server, principal)
        try:
            grant = self.store.get(self.server, key)
        except TokenStoreError as exc:
            raise LoginRequired(self.server, principal, str(exc)) from exc
        if grant is None:
            raise LoginRequired(self.server, principal)
        if grant.expires_within(REFRESH_MARGIN_S) and grant.kind != "static":
            grant = await self._renew(key, grant, principal)
        request.headers.update(grant.headers)
        if grant.access_token:
            request.headers["Authorization"] = f"Bearer {grant.access_token}"
        response = yield request
        wanted = insufficient_scope(response)
        if wanted is None:
            return
        scope = union_scopes(grant.scope, wanted)
        who = None if key in (OWNER, SERVICE) else principal
        if grant.kind != "service":
            if grant.kind == "static":
                raise TransportError(f"upstream {self.server!r} needs scope {wanted!r} for this call, which its "
                                     "static credential lacks")
            self.store.put(self.server, key, dataclasses.replace(grant, step_up=scope))
            log.warning("[%s] the server asks for scope %r: a login is needed", self.server, scope)
            raise LoginRequired(self.server, who, f"the server asked for {wanted!r}", scope=scope)
        if set(scope.split()) <= set((grant.scope or "").split()):
            raise TransportError(f"upstream {self.server!r} refuses the service credential's scope {grant.scope!r} "
                                 f"(it asks for {wanted!r})")
        grant = await self._widen(key, grant, scope)
        request.headers["Authorization"] = f"Bearer {grant.access_token}"
        response = yield request
        if insufficient_scope(response) is not None:
            raise TransportError(f"upstream {self.server!r} needs scope {scope!r}; the authorization server granted "
                                 f"the service credential {grant.scope!r}")

    async def _widen(self, key: str, grant: Grant, scope: str) -> Grant:
        """A client-credentials grant for `scope` (a service's step-up), stored for every later request."""
        async with self._renewing.setdefault(key, asyncio.Lock()):
            current = self.store.get(self.server, key) or grant
            if set(scope.split()) <= set((current.scope or "").split()):
                return current  # another request widened it meanwhile
            try:
                fresh = await renew(dataclasses.replace(current, scope=scope))
            except RenewalFailed as exc:
                raise TransportError(f"upstream {self.server!r} needs scope {scope!r}, which the service credential "
                                     f"could not get: {exc}") from exc
            self.store.put(self.server, key, fresh)
            log.info("[%s] service credential widened to scope %r", self.server, fresh.scope)
            return fresh

    async def _renew(self, key: str, grant: Grant, principal: str | None) -> Grant:
        lock = self._renewing.setdefault(key, asyncio.Lock())
        async with lock:
            current = self.store.get(self.server, key) or grant
            if not current.expires_within(REFRESH_MARGIN_S):
                return current  # another request renewed it meanwhile
            try:
                fresh = await renew(current)
            except RenewalFailed as exc:
                if not current.expires_within(0):
                    log.warning("[%s] renewing the upstream token failed (%s); using it until it expires",
                                self.server, exc)
                    return current
                raise LoginRequired(self.server, None if key in (OWNER, SERVICE) else principal, str(exc)) from exc
            self.store.put(self.server, key, fresh)
            log.info("[%s] upstream token renewed (%s grant)", self.server, fresh.kind)
            return fresh


class RenewalFailed(MCPWallError):
    """The token endpoint did not renew a grant."""


def client_auth(client: dict[str, Any], data: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A token request's client authentication (RFC 6749 2.3.1) as the registration says."""
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    client_id = str(client.get("client_id") or "")
    secret = client.get("client_secret")
    method = client.get("token_endpoint_auth_method") or ("client_secret_basic" if secret else "none")
    if method == "client_secret_basic" and secret:
        pair = f"{quote(client_id, safe='')}:{quote(str(secret), safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif method == "client_secret_post" and secret:
        data = {**data, "client_id": client_id, "client_secret": str(secret)}
    else:
        data = {**data, "client_id": client_id}
    return data, headers


async def renew(grant: Grant, *, timeout: float = 30.0) -> Grant:
    """A fresh grant from the token endpoint: refresh_token, or client_credentials for a service."""
    if not grant.token_endpoint:
        raise RenewalFailed("no token endpoint recorded")
    if grant.kind == "service":
        data = {"grant_type": "client_credentials"}
        if grant.scope:
            data["scope"] = grant.scope
    elif grant.refresh_token:
        data = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    else:
        raise RenewalFailed("the grant has no refresh token")
    if grant.resource:
        data["resource"] = grant.resource
    data, headers = client_auth(grant.client, data)
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as http:
            response = await http.post(grant.token_endpoint, data=data, headers=headers)
    except httpx.HTTPError as exc:
        raise RenewalFailed(f"token endpoint unreachable: {exc.__class__.__name__}") from exc
    return grant_from_response(response, grant)


def grant_from_response(response: httpx.Response, previous: Grant) -> Grant:
    """The grant a token endpoint's answer gives, keeping what it may omit (RFC 6749 5.1, 6)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        error = body.get("error") if isinstance(body, dict) else None
        raise RenewalFailed(f"token endpoint answered HTTP {response.status_code}" + (f" ({error})" if error else ""))
    expires_in = body.get("expires_in")
    return Grant(
        access_token=body["access_token"],
        token_type=str(body.get("token_type") or "Bearer"),
        refresh_token=body.get("refresh_token") or previous.refresh_token,
        expires_at=time.time() + float(expires_in) if isinstance(expires_in, int | float) else None,
        scope=body.get("scope") or previous.scope,
        kind=previous.kind, issuer=previous.issuer, token_endpoint=previous.token_endpoint,
        resource=previous.resource, client=previous.client)


__all__ = [
    "REFRESH_MARGIN_S",
    "LoginRequired",
    "RenewalFailed",
    "UpstreamAuth",
    "acting_for",
    "current_principal",
    "grant_from_response",
    "insufficient_scope",
    "login_command",
    "register_upstream_auth",
    "renew",
    "union_scopes",
    "use_home",
]
