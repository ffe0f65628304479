"""How the aggregated endpoint names what several servers offer.

Tools and prompts are presented as `server__name` (double underscore) and
routed by splitting on the first `__`; server names may not contain `__`, so
the split is unambiguous. Resources keep their URIs; `resource_owner` finds
the server that offers one. Below both the gateway and its stages, which
name things the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

SEPARATOR = "__"
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Offers(Protocol):
    """What `resource_owner` reads of a server's catalog."""

    @property
    def resources(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def templates(self) -> Sequence[Mapping[str, Any]]: ...


class _Server(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def catalog(self) -> _Offers: ...


def valid_server_name(name: str) -> bool:
    return bool(SERVER_NAME.match(name)) and SEPARATOR not in name and not name.endswith("_")


def qualify(server: str, name: str) -> str:
    return f"{server}{SEPARATOR}{name}"


def split(qualified: str) -> tuple[str, str] | None:
    server, sep, name = qualified.partition(SEPARATOR)
    return (server, name) if sep and server and name else None


def resource_owner(uri: str, servers: Mapping[str, _Server]) -> str | None:
    """The server that offers `uri`: an exact listed URI first, then a matching template."""
    for s in servers.values():
        if any(r.get("uri") == uri for r in s.catalog.resources):
            return s.name
    best: tuple[int, str] | None = None
    for s in servers.values():
        for t in s.catalog.templates:
            template = t.get("uriTemplate")
            if isinstance(template, str) and template_matches(template, uri):
                score = len(template.split("{", 1)[0])
                if best is None or score > best[0]:
                    best = (score, s.name)
    return best[1] if best else None


def template_matches(template: str, uri: str) -> bool:
    """RFC 6570 level-1 style match: each `{var}` matches one or more characters."""
    pattern = "".join("(.+)" if part.startswith("{") else re.escape(part)
                      for part in re.split(r"(\{[^}]*\})", template) if part)
    return re.fullmatch(pattern, uri) is not None


__all__ = ["SEPARATOR", "SERVER_NAME", "qualify", "resource_owner", "split", "template_matches",
           "valid_server_name"]
