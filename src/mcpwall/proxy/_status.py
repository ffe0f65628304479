"""The HTTP frontend's status routes: `GET /health`, `GET /servers`, `GET /{server}` and
`GET /metrics` (Prometheus).

`/health` answers without a token (a supervisor's probe), though not to another origin, and
shows the gateway's whole status only to the operator's token. The others are routed past the
token and are the operator's: they show every server's command line and every principal's
counts, so an agent's named token gets 403 before it reaches them (`_http`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcpwall import __version__
from mcpwall._native import hot_path
from mcpwall.protocol import ErrorCode, error
from mcpwall.proxy._asgi import Headers, Receive, Scope, Send, reply, reply_json
from mcpwall.proxy._door import Door
from mcpwall.proxy._gateway import Gateway
from mcpwall.proxy._routes import not_found
from mcpwall.stages import AuthStage

_METRICS: Headers = [(b"content-type", b"text/plain; version=0.0.4")]


class StatusRoutes:
    """Answers the status routes for one frontend; `started` is when it was made (for uptime)."""

    def __init__(self, gateway: Gateway, auth: AuthStage, door: Door, *, base_url: str = "",
                 metrics: Callable[[], bytes] | None = None, connections: Any = None) -> None:
        self.gateway = gateway
        self.auth = auth
        self.door = door
        self.base_url = base_url
        self.metrics = metrics
        #: the server's ConnectionGuard (proxy/_conn.py), for /health
        self.connections = connections
        self.started = time.time()

    async def health(self, send: Send, headers: dict[str, str]) -> None:
        """`GET /health`: up or degraded for anyone on an allowed origin; the operator's token
        (or no auth) also gets the gateway's status and the connection counts."""
        reject, _ = self.auth.admit(headers)
        if reject is not None and reject.http_status == 403:
            await reply_json(send, 403, error(None, reject.code, reject.message))
            return
        servers = self.gateway.servers.values()
        healthy = all(s.state == "ready" for s in servers)
        out: dict[str, Any] = {"status": "ok" if healthy else "degraded", "version": __version__,
                               "uptime_s": round(time.time() - self.started, 1)}
        if self.auth.insecure_no_auth or self.auth.identify(headers.get("authorization")) == "":
            out.update(self.gateway.status())  # the operator's view; an agent's named token sees the public part
            out["hot_path"] = hot_path()
            if self.connections is not None:
                out["connections"] = {**self.connections.status(), "door_refused": self.door.refused}
        await reply_json(send, 200, out)

    async def server(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                     headers: dict[str, str], identity: str | None) -> None:
        """`/{server}` by any method but POST (the plain route): GET is the server's status; a name
        the gateway does not serve is 404 whatever the method."""
        name = parts[0]
        if name not in self.gateway.servers:
            await reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, f"Unknown server: {name!r}"))
        elif scope["method"] == "GET":
            await reply_json(send, 200, self._server_info(name, scope, headers))
        else:
            await not_found(scope, receive, send, parts, headers, identity)

    async def servers(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                      headers: dict[str, str], identity: str | None) -> None:
        """`GET /servers`: every server's status and the URLs that reach it."""
        status = self.gateway.status()
        await reply_json(send, 200, {"servers": [self._server_info(n, scope, headers) for n in self.gateway.servers],
                                     "aggregate_url": f"{self._base(scope, headers)}/mcp",
                                     "collisions": status["collisions"]})

    async def prometheus(self, scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...],
                         headers: dict[str, str], identity: str | None) -> None:
        """`GET /metrics`, routed only when the gateway has metrics."""
        assert self.metrics is not None
        await reply(send, 200, self.metrics(), _METRICS)

    def _base(self, scope: Scope, headers: dict[str, str]) -> str:
        if self.base_url:
            return self.base_url
        host = headers.get("host") or "127.0.0.1"
        return f"{scope.get('scheme', 'http')}://{host}"

    def _server_info(self, name: str, scope: Scope, headers: dict[str, str]) -> dict[str, Any]:
        base = self._base(scope, headers)
        s = self.gateway.servers[name]
        return {**s.status(), "proxy_url": f"{base}/{name}", "mcp_url": f"{base}/mcp/{name}",
                "original": s.spec.url or " ".join([s.spec.command or "", *s.spec.args]).strip(),
                "risk": _risk(s.spec)}


def _risk(spec: Any) -> Any:
    try:
        from mcpwall.discovery import risk_summary
    except ImportError:
        return None
    return risk_summary(spec)


__all__ = ["StatusRoutes"]
