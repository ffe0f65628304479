"""The device authorization grant (RFC 8628) for `mcpwall login SERVER --device`.

For a gateway on a machine without a browser: the person opens the verification URI anywhere,
types the code shown, and the login polls the token endpoint until they have. Discovery uses
the SDK's own URL builders and parsers (the same order as `OAuthClientProvider`); the
authorization server's metadata is read raw as well, because the SDK's model drops
`device_authorization_endpoint`. The client is the one `--client-id` names (registered beforehand
with the device grant, as most identity providers want it: Keycloak, Entra ID, Glewlwyd), else one
registered dynamically (RFC 7591) with the device grant, else an earlier login's.

The poll ends on the token, or with a `LoginFailed` that says what happened: the person denied it
(`access_denied`), the code expired before it was entered (`expired_token`, or the login's own
`--timeout`), or the server refused the client (`invalid_client`, ...).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_protected_resource_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata
from mcp.shared.auth_utils import resource_url_from_server_url

from mcpwall.oauth._auth import client_auth
from mcpwall.oauth._flow import LoginFailed
from mcpwall.oauth._store import Grant

if TYPE_CHECKING:
    from mcpwall.oauth._client import LoginOptions

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


async def _discover(http: httpx2.AsyncClient, url: str) -> tuple[dict[str, Any], str, str | None]:
    """(authorization server metadata as served, the resource to ask for, the scopes the server's
    challenge or its resource metadata names, in the MCP chapter's order)."""
    from mcpwall.oauth._client import _initialize_body

    probe = await http.post(url, json=_initialize_body(),
                            headers={"Accept": "application/json, text/event-stream"})
    if probe.status_code != 401:
        raise LoginFailed(f"{url} did not ask for authorization (HTTP {probe.status_code})")
    prm = None
    for candidate in build_protected_resource_metadata_discovery_urls(
            extract_resource_metadata_from_www_auth(probe), url):
        prm = await handle_protected_resource_response(await http.get(candidate))
        if prm is not None:
            break
    issuer = str(prm.authorization_servers[0]) if prm is not None and prm.authorization_servers else None
    for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, url):
        response = await http.get(candidate)
        if response.status_code == 200:
            raw = response.json()
            metadata = OAuthMetadata.model_validate(raw)
            if issuer is not None:
                validate_metadata_issuer(metadata, issuer)
            resource = str(prm.resource) if prm is not None and prm.resource else resource_url_from_server_url(url)
            return raw, resource, get_client_metadata_scopes(extract_scope_from_www_auth(probe), prm)
    raise LoginFailed(f"no authorization server metadata found for {url}")


async def device_login(url: str, client: OAuthClientInformationFull | None, options: LoginOptions,
                       say: Callable[[str], None]) -> Grant:
    async with httpx2.AsyncClient(timeout=30.0) as http:
        meta, resource, offered = await _discover(http, url)
        scope = options.scope or offered
        endpoint = meta.get("device_authorization_endpoint")
        if not isinstance(endpoint, str):
            raise LoginFailed("the authorization server offers no device authorization grant: log in "
                              "without --device")
        if options.client_id:
            record: dict[str, Any] = {"client_id": options.client_id, "token_endpoint_auth_method":
                                      "client_secret_basic" if options.client_secret else "none",
                                      **({"client_secret": options.client_secret} if options.client_secret else {})}
        else:
            if client is None or DEVICE_GRANT not in (client.grant_types or []):
                client = await _register(http, meta, options)
            record = client.model_dump(mode="json", exclude_none=True)
        data, headers = client_auth(record, {"resource": resource, **({"scope": scope} if scope else {})})
        started = await http.post(endpoint, data=data, headers=headers)
        if started.status_code != 200:
            raise LoginFailed(f"device authorization refused (HTTP {started.status_code}): {started.text[:200]}")
        begun = started.json()
        say(f"To authorize mcpwall, visit {begun['verification_uri']}")
        say(f"  and enter the code: {begun['user_code']}")
        if begun.get("verification_uri_complete"):
            say(f"  (or open {begun['verification_uri_complete']})")
        interval = float(begun.get("interval") or 5)
        lifetime = float(begun.get("expires_in") or 600)
        # past the code's lifetime by one interval, so the server's own expired_token is what ends it
        deadline = time.monotonic() + min(lifetime + interval, options.timeout_s)
        token_endpoint = str(meta["token_endpoint"])
        while time.monotonic() < deadline:
            await asyncio.sleep(interval)
            data, headers = client_auth(record, {"grant_type": DEVICE_GRANT, "device_code": begun["device_code"],
                                                 "resource": resource})
            polled = await http.post(token_endpoint, data=data, headers=headers)
            body = polled.json() if polled.headers.get("content-type", "").startswith("application/json") else {}
            if polled.status_code == 200 and isinstance(body.get("access_token"), str):
                expires = body.get("expires_in")
                return Grant(access_token=body["access_token"], token_type=str(body.get("token_type") or "Bearer"),
                             refresh_token=body.get("refresh_token"),
                             expires_at=time.time() + float(expires) if expires else None,
                             scope=body.get("scope") or scope, kind="user", issuer=str(meta.get("issuer")),
                             token_endpoint=token_endpoint, resource=resource, client=record)
            error = body.get("error")
            if error == "slow_down":
                interval += 5
            elif error != "authorization_pending":
                raise LoginFailed(_poll_failure(error, body.get("error_description"), polled.status_code))
    if options.timeout_s < lifetime + interval:
        raise LoginFailed(f"the device code was not entered within {options.timeout_s:g} s: run the login again")
    raise LoginFailed(_EXPIRED)


_EXPIRED = "the device code expired before it was entered: run the login again"


def _poll_failure(error: object, description: object, status: int) -> str:
    """What a refused poll means, in the words of RFC 8628 section 3.5."""
    detail = f" ({description})" if isinstance(description, str) and description else ""
    if error == "access_denied":
        return f"the authorization was denied at the authorization server{detail}"
    if error == "expired_token":
        return _EXPIRED
    return f"device authorization failed: {error or f'HTTP {status}'}{detail}"


async def _register(http: httpx2.AsyncClient, meta: dict[str, Any], options: LoginOptions
                    ) -> OAuthClientInformationFull:
    """A public client with the device grant, registered dynamically (RFC 7591)."""
    registration = meta.get("registration_endpoint")
    if not isinstance(registration, str):
        raise LoginFailed("the authorization server offers no dynamic registration: register a client with "
                          "the device grant there and pass --client-id")
    answer = await http.post(registration, json={
        "client_name": "mcpwall", "grant_types": [DEVICE_GRANT, "refresh_token"], "response_types": [],
        "token_endpoint_auth_method": "none", **({"scope": options.scope} if options.scope else {})})
    if answer.status_code not in (200, 201):
        raise LoginFailed(f"the authorization server refused to register a device client (HTTP "
                          f"{answer.status_code}: {answer.text[:200]}): register one with the device grant "
                          f"there and pass --client-id")
    return OAuthClientInformationFull.model_validate(answer.json())


__all__ = ["DEVICE_GRANT", "device_login"]
