"""Who may use the dashboard and its API, and the CSRF rule for browsers.

Two ways in, both needing the gateway's own token (the operator's; a named
agent token from `run/tokens/` is refused, so an agent that connects with
its own token cannot approve its own calls):

- `Authorization: Bearer <token>`: scripts, `mcpwall approve`, the admin MCP
  server. A browser never attaches this header by itself, so no CSRF check.
- the `mcpwall_session` cookie, set by the login form (`POST /ui/login` with
  the token): HttpOnly, SameSite=Strict, Path=/. Each session has a random
  CSRF token, given to the page in a `<meta>` tag; every state-changing
  request (POST, PUT, PATCH, DELETE) on a cookie must carry it in
  `X-CSRF-Token`, else 403.

Before either, the Host and Origin headers pass the gateway's DNS-rebinding
guard (`AuthStage.admit`). Sessions live in memory: a restart logs everyone
out. With `--insecure-no-auth` (loopback experiments) no token exists: the
pages open without login and API calls need no credential.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from starlette.requests import Request

from mcpwall.stages.auth import AuthStage

COOKIE = "mcpwall_session"
CSRF_HEADER = "x-csrf-token"
SESSION_TTL_S = 12 * 3600
MAX_SESSIONS = 1000
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(slots=True)
class UiSession:
    id: str
    csrf: str
    expires: float


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: through a bearer token, a login cookie, or an insecure gateway."""

    kind: Literal["bearer", "cookie", "insecure"]
    session: UiSession | None = None

    @property
    def via(self) -> str:
        return "dashboard" if self.kind == "cookie" else "api"


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    message: str


class SessionStore:
    """Login sessions of one dashboard process."""

    def __init__(self, ttl_s: float = SESSION_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._sessions: dict[str, UiSession] = {}

    def create(self) -> UiSession:
        now = time.time()
        if len(self._sessions) >= MAX_SESSIONS:
            for sid in [s.id for s in self._sessions.values() if s.expires <= now] or list(self._sessions)[:100]:
                self._sessions.pop(sid, None)
        session = UiSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self.ttl_s)
        self._sessions[session.id] = session
        return session

    def get(self, sid: str | None) -> UiSession | None:
        if not sid:
            return None
        session = self._sessions.get(sid)
        if session is None:
            return None
        if session.expires <= time.time():
            self._sessions.pop(sid, None)
            return None
        return session

    def drop(self, sid: str | None) -> None:
        if sid:
            self._sessions.pop(sid, None)


class Guard:
    """Checks every dashboard request; see the module docstring for the rules."""

    def __init__(self, auth: AuthStage, sessions: SessionStore | None = None) -> None:
        self.auth = auth
        self.sessions = sessions or SessionStore()

    @property
    def open(self) -> bool:
        return self.auth.insecure_no_auth

    def origin_ok(self, request: Request) -> Refusal | None:
        """The DNS-rebinding guard (Host, Origin), without looking at credentials."""
        headers = {k.lower(): v for k, v in request.headers.items() if k.lower() != "authorization"}
        reject, _ = self.auth.admit(headers)
        if reject is not None and reject.http_status == 403:
            return Refusal(403, reject.message)
        return None

    def token_ok(self, token: str) -> bool:
        """True for the gateway's own token (not an agent's named token)."""
        if self.open:
            return True
        return bool(token) and self.auth.identify(f"Bearer {token}") == ""

    def check(self, request: Request) -> Principal | Refusal:
        refused = self.origin_ok(request)
        if refused is not None:
            return refused
        authorization = request.headers.get("authorization")
        if authorization is not None:
            identity = self.auth.identify(authorization)
            if identity == "":
                return Principal("bearer")
            if identity is not None:
                return Refusal(403, f"the token of agent {identity!r} cannot use the dashboard API; "
                                    "use the gateway's token")
            if not self.open:
                return Refusal(401, "Unauthorized: a valid bearer token is required")
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is not None:
            if request.method in UNSAFE_METHODS:
                given = request.headers.get(CSRF_HEADER, "")
                if not given or not hmac.compare_digest(given.encode(), session.csrf.encode()):
                    return Refusal(403, "Forbidden: CSRF token missing or wrong (send X-CSRF-Token)")
            return Principal("cookie", session)
        if self.open and authorization is None:
            return Principal("insecure")
        return Refusal(401, "Unauthorized: log in at /ui/login or send a bearer token")


__all__ = ["COOKIE", "CSRF_HEADER", "SESSION_TTL_S", "Guard", "Principal", "Refusal", "SessionStore", "UiSession"]
