"""The DNS-rebinding guard on a request as it came: the raw header list and request target.

`AuthStage.admit` checks the Host and Origin it is given in a mapping, one value a name. By the
time a mapping exists, two copies of a header have become one (the last), a missing Host looks
like no Host to check, and httptools has reduced `POST http://evil/mcp` to the path `/mcp`.
Each of those passed the guard (issue 22). Here, before any route (the status routes, the
dashboard and the admin API included):

- Host, Origin and the headers that say who is calling (Authorization, Mcp-Session-Id, the MCP
  and mcpwall headers) must appear at most once; Host must appear;
- the request target must be a path (origin-form), never `http://host/...`;
- Host must be a loopback name or address (or `--allow-host`), and a loopback Host must name
  the port this gateway serves (`--allow-host NAME:PORT` admits a forwarded one);
- Origin, when present, must be `http(s)://` + a loopback host [+ port] exactly, or an
  `--allow-origin`; `null` and anything with a path, user info or another form is refused.

Refusals are 403 with -32003, as the bad Host always was, except a repeated header that is not
Host or Origin (400, -32600).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mcpwall.protocol import ErrorCode
from mcpwall.stages import AuthStage, Reject
from mcpwall.stages.auth import LOOPBACK_HOSTS

#: Headers a request may carry once: a second copy is read by one parser and not by another.
SINGLE = frozenset({"host", "origin", "authorization", "cookie", "mcp-session-id", "mcp-protocol-version",
                    "mcp-method", "mcp-name", "last-event-id", "x-agent-id", "x-mcpwall-client",
                    "x-mcpwall-process", "x-csrf-token"})
_MIRRORS = frozenset({"mcp-protocol-version", "mcp-method", "mcp-name"})
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::([0-9]{1,5}))?")
#: an origin as browsers serialise it: scheme://host[:port], nothing else
_ORIGIN = re.compile(r"https?://(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::[0-9]{1,5})?")


#: the last request's raw headers (a copy of the list) and their map: a client sends the same headers
#: call after call, so an equal list (compared in C) is mapped by a copy, not decoded again
_LAST: list[Any] = [None, {}]


def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """A request's headers by lower-cased name, latin-1 as ASGI gives them (a name sent twice: its
    last value; `Door.refusal` looks at the raw list for those). Each caller gets a map of its own."""
    if raw == _LAST[0]:
        return dict(_LAST[1])
    pairs = list(raw)  # once: an iterator read by the map would leave an empty list remembered
    made = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in pairs}
    _LAST[0], _LAST[1] = pairs, dict(made)
    return made


def _forbidden(text: str) -> Reject:
    return Reject(ErrorCode.UNAUTHORIZED, f"Forbidden: {text} (DNS rebinding guard)", http_status=403,
                  outcome="rejected")


class Door:
    """Checks every HTTP request's Host, Origin and target before it is routed."""

    def __init__(self, auth: AuthStage, allowed_hosts: Iterable[str] = ()) -> None:
        self.auth = auth
        #: `--allow-host NAME:PORT` entries, accepted as written whatever port we serve
        self.exact = frozenset(h.strip().lower() for h in allowed_hosts
                               if (m := _HOST.fullmatch(h.strip().lower())) is not None and m.group(2) is not None)
        self.refused = 0
        #: (Host, port served, scheme) and Origin values already accepted: clients send the same ones on
        #: every request, so the parse is paid once (cleared past 1,024 entries)
        self._good: set[tuple[str, Any, Any] | str] = set()

    def refusal(self, scope: dict[str, Any], headers: dict[str, str]) -> Reject | None:
        """Why this request is turned away at the door, or None. `headers` is the lower-cased
        mapping the frontend built from `scope["headers"]`."""
        reject = self._check(scope, headers)
        if reject is not None:
            self.refused += 1
        return reject

    def _check(self, scope: dict[str, Any], headers: dict[str, str]) -> Reject | None:
        raw = scope["headers"]
        if len(raw) != len(headers):  # some header came more than once
            seen: set[str] = set()
            for key, _ in raw:
                name = key.decode("latin-1").lower()
                if name in seen and name in SINGLE:
                    if name in ("host", "origin"):
                        return _forbidden(f"{name.capitalize()} is sent more than once")
                    if name in _MIRRORS:  # MCP 2026-07-28: headers that mirror the body
                        return Reject(ErrorCode.HEADER_MISMATCH, f"Header mismatch: {name} header appears more "
                                      "than once", http_status=400, outcome="rejected")
                    return Reject(ErrorCode.INVALID_REQUEST, f"Bad Request: header {name!r} is sent more than once",
                                  http_status=400, outcome="rejected")
                seen.add(name)
        if scope["path"][:1] != "/":
            return _forbidden("the request target must be a path, not an absolute URL")
        host = headers.get("host")
        if host is None:
            return _forbidden("a Host header is required")
        server = scope.get("server")
        key = (host, server[1] if server else None, scope.get("scheme"))
        if key not in self._good:
            reject = self._host(host, scope)
            if reject is not None:
                return reject
            self._remember(key)
        origin = headers.get("origin")
        if origin is not None and origin not in self._good:
            if not self._origin_ok(origin):
                return _forbidden(f"Origin {origin!r} is not allowed")
            self._remember(origin)
        return None

    def _remember(self, value: tuple[str, Any, Any] | str) -> None:
        if len(self._good) >= 1024:
            self._good.clear()
        self._good.add(value)

    def _host(self, host: str, scope: dict[str, Any]) -> Reject | None:
        value = host.lower()
        if value in self.exact:
            return None
        m = _HOST.fullmatch(value)
        if m is None or m.group(1) not in self.auth.allowed_hosts:
            return _forbidden(f"Host {host!r} is not allowed")
        server = scope.get("server")
        if m.group(1) in LOOPBACK_HOSTS and server and server[1] is not None:
            port = int(m.group(2)) if m.group(2) else 443 if scope.get("scheme") == "https" else 80
            if port != server[1]:
                return _forbidden(f"Host {host!r} names port {port}; this gateway serves port {server[1]} "
                                  f"(--allow-host {host} admits it)")
        return None

    def _origin_ok(self, origin: str) -> bool:
        value = origin.lower()
        if value.rstrip("/") in self.auth.allowed_origins:
            return True
        m = _ORIGIN.fullmatch(value)
        return m is not None and m.group(1) in LOOPBACK_HOSTS


__all__ = ["SINGLE", "Door", "header_map"]
