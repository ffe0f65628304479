"""The dashboard's login of an OAuth-protected upstream (`POST /api/servers/{name}/login`).

What `mcpwall login SERVER` does, started from the servers page: the gateway runs the SDK's
authorization code flow (`mcpwall.oauth._client.login`) for the owner's grant, its redirect on a
loopback callback of the gateway's own (`http://127.0.0.1:PORT/callback`, one response for one
`state`), and answers at once with the authorization URL, which the page opens for the person. When
the authorization server redirects back, the grant is stored (encrypted, as the CLI's) and the
upstream, if it was waiting for one, is started again, so its tools come without a restart.

Only an administrator starts one: the route is behind the dashboard's `Guard` (the gateway's token
or a login cookie with the CSRF token; an agent's named token is refused), and the callback takes
nothing but the redirect for the state it was opened for. One login per upstream at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcpwall.errors import MCPWallError
from mcpwall.transports._principal import auth_for

log = logging.getLogger("mcpwall.dashboard")

#: how long the flow may wait for its authorization URL (discovery and registration), and for the person
DISCOVERY_TIMEOUT_S = 30.0
LOGIN_TIMEOUT_S = 300.0


class LoginRefused(MCPWallError):
    """The upstream cannot be logged in to from here (unknown, not remote, no OAuth, one already running)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class UpstreamLogins:
    """The logins the dashboard started, one per upstream."""

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self._running: dict[str, asyncio.Task[None]] = {}
        self.last: dict[str, str] = {}

    async def start(self, name: str, scope: str | None = None) -> dict[str, Any]:
        """Begin the owner's browser login of upstream `name`; returns {"server", "authorize": URL}."""
        upstream = self.gateway.servers.get(name)
        if upstream is None:
            raise LoginRefused(404, f"no server {name!r}")
        url = getattr(upstream.spec, "url", None)
        # the transport's grants; a transport closed after a failed start: the ones it would be given
        store = getattr(getattr(upstream.transport, "auth", None) or auth_for(name), "store", None)
        if not url or store is None:
            raise LoginRefused(400, f"server {name!r} is not a remote server the gateway logs in to")
        running = self._running.get(name)
        if running is not None and not running.done():
            raise LoginRefused(409, f"a login of {name!r} is already waiting for its authorization")
        from mcpwall.oauth import OWNER
        from mcpwall.oauth._client import LoginOptions, login

        held = store.index().get(name, {}).get(OWNER) or {}
        options = LoginOptions(principal=OWNER, browser=False, scope=scope or held.get("step_up"),
                               timeout_s=LOGIN_TIMEOUT_S)
        authorize: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        def given(authorization_url: str) -> None:
            if not authorize.done():
                authorize.set_result(authorization_url)

        async def run() -> None:
            try:
                await login(name, url, store, options, say=lambda line: log.info("[%s] %s", name, line),
                            authorize=given)
            except Exception as exc:  # the person is told on the page (`last`), the log has it
                self.last[name] = f"login failed: {exc}"
                log.warning("[%s] dashboard login failed: %s", name, exc)
                if not authorize.done():
                    authorize.set_exception(LoginRefused(502, f"the login of {name!r} failed: {exc}"))
                return
            self.last[name] = "authorized"
            log.info("[%s] dashboard login stored the owner's grant", name)
            await self._reconnect(upstream)

        task = asyncio.create_task(run())
        self._running[name] = task
        try:
            authorization_url = await asyncio.wait_for(asyncio.shield(authorize), DISCOVERY_TIMEOUT_S)
        except TimeoutError:
            task.cancel()
            raise LoginRefused(504, f"the authorization server of {name!r} did not answer in time") from None
        self.last[name] = "waiting for the authorization"
        return {"server": name, "authorize": authorization_url}

    async def _reconnect(self, upstream: Any) -> None:
        """An upstream that failed for want of the grant starts again now, not at its next retry."""
        if upstream.state == "ready":
            return
        with contextlib.suppress(Exception):
            await upstream.stop()
        await upstream.start()
        if upstream.state == "ready":
            upstream.restarts = 0
            self.gateway.upstream_restarted(upstream)

    async def close(self) -> None:
        for task in self._running.values():
            task.cancel()


__all__ = ["LoginRefused", "UpstreamLogins"]
