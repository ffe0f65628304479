"""The dashboard as one Starlette app: `/ui/...` pages, `/ui/static/...` assets, `/api/...` JSON.

Mounted in the gateway as `Gateway.ui_app` (`DashboardService`) (the HTTP frontend hands it every
path under `/ui` and `/api/`, except `/api/admin/`), or served alone by
`mcpwall dashboard`. Every response carries the security headers of
`_views.SECURITY_HEADERS` (a strict CSP among them).
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpwall.dashboard._api import Api, json_response
from mcpwall.dashboard._auth import COOKIE, Guard, Principal, Refusal, SessionStore
from mcpwall.dashboard._console import Console
from mcpwall.dashboard._feed import Feed
from mcpwall.dashboard._integrity import Integrity
from mcpwall.dashboard._upstream_login import UpstreamLogins
from mcpwall.dashboard._views import PATHS, SECURITY_HEADERS, login_page, page
from mcpwall.stages.auth import AuthStage

STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8",
          "favicon.svg": "image/svg+xml"}
_FAILED_LOGIN_DELAY_S = 0.5


class _SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class Dashboard:
    """One dashboard: its console (what it shows), guard (who may see it) and feed (what is new)."""

    def __init__(self, console: Console, auth: AuthStage, *, secure_cookie: bool = False) -> None:
        self.console = console
        self.guard = Guard(auth, SessionStore())
        self.feed = Feed(console)
        self.integrity = Integrity(console)
        self.secure_cookie = secure_cookie
        gateway = getattr(console, "gateway", None)
        #: the OAuth logins of upstreams the servers page starts (a gateway's dashboard only)
        self.upstream_logins = UpstreamLogins(gateway) if gateway is not None else None
        self.api = Api(self)
        routes = [
            Route("/ui", self._to_overview, methods=["GET"]),
            Route("/", self._to_overview, methods=["GET"]),  # `mcpwall dashboard` alone: its address
            Route("/ui/login", self._login_form, methods=["GET"]),
            Route("/ui/login", self._login, methods=["POST"]),
            Route("/ui/logout", self._logout, methods=["POST"]),
            Route("/ui/static/{name}", self._static, methods=["GET"]),
            *[Route(path, self._page, methods=["GET"], name=name) for name, path in PATHS.items()],
            Route("/api/{rest:path}", self.api.handle, methods=["GET", "POST", "DELETE", "PUT", "PATCH"]),
        ]
        self.starlette = Starlette(routes=routes)
        self.app: ASGIApp = _SecurityHeaders(self.starlette)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    async def close(self) -> None:
        await self.feed.close()
        await self.integrity.close()
        if self.upstream_logins is not None:
            await self.upstream_logins.close()

    # ------------------------------------------------------------------ pages

    async def _to_overview(self, request: Request) -> Response:
        return RedirectResponse("/ui/", 308)

    async def _page(self, request: Request) -> Response:
        refused = self.guard.origin_ok(request)
        if refused is not None:
            return HTMLResponse(refused.message, refused.status)
        who = self.guard.check(request)
        name = request.scope["route"].name
        session = who.session if isinstance(who, Principal) else None
        if session is None and self.guard.open:
            # No token to log in with: give the browser a session so its requests carry a CSRF token.
            session = self.guard.sessions.create()
            response = HTMLResponse(page(name, session.csrf, self.console.mode, logout=False))
            self._set_cookie(response, session.id)
            return response
        if session is None:
            return RedirectResponse("/ui/login", 303)
        return HTMLResponse(page(name, session.csrf, self.console.mode, logout=True),
                            headers={"cache-control": "no-store"})

    async def _login_form(self, request: Request) -> Response:
        refused = self.guard.origin_ok(request)
        if refused is not None:
            return HTMLResponse(refused.message, refused.status)
        if self.guard.open:
            return RedirectResponse("/ui/", 303)
        return HTMLResponse(login_page(), headers={"cache-control": "no-store"})

    async def _login(self, request: Request) -> Response:
        refused = self.guard.origin_ok(request)
        if refused is not None:
            return HTMLResponse(refused.message, refused.status)
        body = await request.body()
        if len(body) > 16 * 1024:
            return HTMLResponse(login_page("That is not a token."), 413)
        token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()
        if not self.guard.token_ok(token):
            await asyncio.sleep(_FAILED_LOGIN_DELAY_S)
            return HTMLResponse(login_page("Wrong token."), 401, headers={"cache-control": "no-store"})
        session = self.guard.sessions.create()
        response = RedirectResponse("/ui/", 303)
        self._set_cookie(response, session.id)
        return response

    async def _logout(self, request: Request) -> Response:
        who = self.guard.check(request)
        if isinstance(who, Refusal):
            return json_response({"error": who.message}, who.status)
        if who.session is not None:
            self.guard.sessions.drop(who.session.id)
        response = json_response({"ok": True})
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def _set_cookie(self, response: Response, value: str) -> None:
        response.set_cookie(COOKIE, value, max_age=int(self.guard.sessions.ttl_s), path="/", httponly=True,
                            samesite="strict", secure=self.secure_cookie)

    async def _static(self, request: Request) -> Response:
        name = request.path_params["name"]
        media = STATIC.get(name)
        if media is None:
            return Response("not found", 404, media_type="text/plain")
        data = resources.files("mcpwall.dashboard").joinpath("static").joinpath(name).read_bytes()
        return Response(data, media_type=media, headers={"cache-control": "public, max-age=3600"})


def create_app(console: Console, auth: AuthStage, **options: Any) -> Dashboard:
    """A dashboard over `console`, guarded by `auth` (the gateway's AuthStage, or one for the token)."""
    return Dashboard(console, auth, **options)


__all__ = ["STATIC", "Dashboard", "create_app"]
