"""Authentication: a bearer token on every HTTP request, and Origin/Host checks.

The token comes from `MCPWALL_TOKEN`, `--token-file`, or is generated on first
start into `<home>/run/gateway.token` (mode 0600); see `mcpwall._token`.
Host and Origin are checked even without a token, against DNS rebinding: a
browser page on another origin must not reach a loopback gateway.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Reject
from mcpwall.protocol import ErrorCode

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


#: A Host header is `host` or `host:port`, the host a name, an IPv4 or a bracketed IPv6 literal.
_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::[0-9]{1,5})?$")


def _host_only(value: str) -> str:
    """The host part of a Host header, lower-case; "" (never allowed) for anything else, such as
    `localhost:80@evil.com`."""
    m = _HOST.match(value.strip().lower())
    return m.group(1) if m else ""


def _allowed_form(host: str) -> str:
    """A configured host (`--host`, `--allow-host`: a name, an IP, maybe a port) as `_host_only`
    gives it for a Host header."""
    host = host.strip().lower()
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host.strip("[]")).version == 6:
            return f"[{host.strip('[]')}]"  # an IPv6 literal is bracketed in Host headers
    found = _host_only(host)
    if not found:
        raise ConfigError(f"not a host name or address: {host!r}")
    return found


class AuthStage:
    """The frontends' door check: Host and Origin, then the bearer token (`admit`). A gateway
    service, not a pipeline stage: it decides before a message exists."""

    name = "auth"

    def __init__(self, tokens: Mapping[str, str] | None = None, *, insecure_no_auth: bool = False,
                 allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()) -> None:
        #: token -> identity (the agent id a token stands for; "" for the gateway token)
        self.tokens = dict(tokens or {})
        self.insecure_no_auth = insecure_no_auth
        self.allowed_hosts = LOOPBACK_HOSTS | {_allowed_form(h) for h in allowed_hosts}
        self.allowed_origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.rejected = 0
        #: polled for the named tokens when their folder changes (`mcpwall._token.NamedTokenWatch`)
        self.named: Any = None
        #: the OAuth resource server (`mcpwall.oauth`), offered the bearer tokens not in `tokens`
        self.oauth: Any = None

    @property
    def oauth_app(self) -> Any:
        """The ASGI app of the OAuth protected resource metadata, None without `auth:` issuers."""
        return None if self.oauth is None else self.oauth.metadata.app

    def identify(self, authorization: str | None) -> str | None:
        """The identity of a valid bearer token, else None."""
        if self.named is not None:
            fresh = self.named.poll()
            if fresh is not None:  # a token created or revoked while the gateway runs (issue 22)
                own = {t: i for t, i in self.tokens.items() if i == ""}
                self.tokens = {**own, **{t: i for i, t in fresh.items()}}
        if not authorization or authorization[:7].lower() != "bearer ":
            return None
        presented = authorization[7:].strip().encode()
        for token, identity in self.tokens.items():
            if hmac.compare_digest(presented, token.encode()):
                return identity
        return None

    def admit(self, headers: Mapping[str, str]) -> tuple[Reject | None, str | None]:
        """Check one HTTP request's headers: (rejection or None, token identity)."""
        host = headers.get("host")
        if host is not None and _host_only(host) not in self.allowed_hosts:
            self.rejected += 1
            return Reject(ErrorCode.UNAUTHORIZED, f"Forbidden: Host {host!r} is not allowed (DNS rebinding guard)",
                          http_status=403, outcome="rejected"), None
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin):
            self.rejected += 1
            return Reject(ErrorCode.UNAUTHORIZED, f"Forbidden: Origin {origin!r} is not allowed",
                          http_status=403, outcome="rejected"), None
        if self.insecure_no_auth:
            return None, None
        identity = self.identify(headers.get("authorization"))
        if identity is None:
            self.rejected += 1
            return Reject(ErrorCode.UNAUTHORIZED, "Unauthorized: a valid bearer token is required",
                          http_status=401, outcome="rejected"), None
        return None, identity

    async def authenticate(self, scope: Any, receive: Any,
                           headers: Mapping[str, str]) -> tuple[Any, str | None, Any]:
        """`admit`, then, with `auth:` issuers, a token that is no static one is an identity provider's
        (`mcpwall.oauth.ResourceServer`): (rejection or None, identity, the receive to read the body from)."""
        reject, identity = self.admit(headers)
        if reject is None or reject.http_status != 401 or self.oauth is None:
            return reject, identity, receive
        reject, identity, receive = await self.oauth.authenticate(scope, receive, headers)
        if reject is None:
            self.rejected -= 1  # counted by admit; the identity provider's token was good
        return reject, identity, receive

    def _origin_ok(self, origin: str) -> bool:
        if origin.rstrip("/").lower() in self.allowed_origins:
            return True
        try:
            host = urlsplit(origin).hostname or ""
        except ValueError:
            return False
        return host.lower() in LOOPBACK_HOSTS

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {"rejected": self.rejected, "auth": "off (insecure)" if self.insecure_no_auth else "bearer"}


__all__ = ["LOOPBACK_HOSTS", "AuthStage"]
