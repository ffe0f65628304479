"""The HTTP frontend's route table: exact paths, then path templates in the order they were added.

A path is matched by its non-empty segments, so `//mcp/` is `/mcp`, as the frontend always read
it. A template names a segment that may be anything as `{name}`; the handler gets the segments
and reads the names itself. Every route says whether an agent's named token may call it (issue
22): the MCP endpoints, yes; the status routes, which show every server's command line and every
principal's counts, are the operator's.

An exact path always wins over a template, whatever the order; among templates the first added
that fits wins. Lookup is two dict probes for an exact path and, past them, a scan of the few
templates with the path's number of segments: the frontend asks it on every call.

A `Mount` is an app the frontend hands a whole path prefix to before the token is checked (the
admin API, the dashboard): the path as sent, not its segments.

A person who opens the gateway's address in a browser (`GET /`, HTML accepted) is sent to the
dashboard (`to_dashboard`) before the token is asked for; any other request to `/` gets what it
always got (401 without the token, then 404): an MCP client's GET asks for `text/event-stream`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcpwall.protocol import ErrorCode, error
from mcpwall.proxy._asgi import App, Receive, Scope, Send, reply, reply_json

#: A route's method for "whatever the method is"; the handler answers the ones it does not serve.
ANY = "*"

#: Answers one request: its scope, receive and send, its path's segments, its headers and the
#: token's identity (None without auth, "" for the gateway's token, else the agent's name).
Handler = Callable[[Scope, Receive, Send, tuple[str, ...], dict[str, str], str | None], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Route:
    """What answers a request once it is routed, and who may call it."""

    handler: Handler
    #: an agent's named token may call it (otherwise 403 for that token)
    agent: bool = False


@dataclass(frozen=True, slots=True)
class Mount:
    """An app served under path prefixes before the token is checked, because it checks its own
    credentials. `app()` is None while there is none to serve: the path goes on to the next mount,
    then to the routes."""

    prefixes: tuple[str, ...]
    app: Callable[[], App | None]
    #: a path it serves as written besides the prefixes (`/ui` for `/ui/`)
    root: str | None = None


class Routes:
    """Routes by method and path segments; `fallback` for a path nothing serves."""

    def __init__(self, fallback: Route) -> None:
        self.fallback = fallback
        self._exact: dict[tuple[str, tuple[str, ...]], Route] = {}
        #: number of segments -> (method, the segments that are not names by position, route), in order added
        self._templates: dict[int, list[tuple[str, tuple[tuple[int, str], ...], Route]]] = {}

    def add(self, method: str, template: str, route: Route) -> None:
        segments = tuple(s for s in template.split("/") if s)
        fixed = tuple((i, s) for i, s in enumerate(segments) if s[:1] != "{")
        if len(fixed) == len(segments):
            self._exact[(method, segments)] = route
        else:
            self._templates.setdefault(len(segments), []).append((method, fixed, route))

    def match(self, method: str, parts: tuple[str, ...]) -> Route:
        """The route for a request: an exact path for its method, then for any method, then the
        first template that fits."""
        route = self._exact.get((method, parts)) or self._exact.get((ANY, parts))
        if route is not None:
            return route
        for want, fixed, route in self._templates.get(len(parts), ()):
            if want in (method, ANY):
                for i, segment in fixed:
                    if parts[i] != segment:
                        break
                else:
                    return route
        return self.fallback


async def not_found(scope: Scope, receive: Receive, send: Send, parts: tuple[str, ...], headers: dict[str, str],
                    identity: str | None) -> None:
    """The answer for a path nothing serves (and for `/`)."""
    await reply_json(send, 404, error(None, ErrorCode.METHOD_NOT_FOUND, "Not found"))


def opens_in_browser(method: str, path: str, headers: dict[str, str]) -> bool:
    """A browser opening the gateway's root: `GET /` that accepts HTML (no MCP client asks for it)."""
    return method == "GET" and path == "/" and "text/html" in headers.get("accept", "").lower()


async def to_dashboard(send: Send) -> None:
    """Send the browser to the dashboard, which asks it to log in if it must."""
    await reply(send, 303, b"", [(b"location", b"/ui/"), (b"cache-control", b"no-store")])


__all__ = ["ANY", "Handler", "Mount", "Route", "Routes", "not_found", "opens_in_browser", "to_dashboard"]
