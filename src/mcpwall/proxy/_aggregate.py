"""Naming and merging for the aggregated endpoint (`/mcp`, `--stdio`).

Tools and prompts are presented as `server__name` (double underscore) and
routed by splitting on the first `__`; server names may not contain `__`, so
the split is unambiguous. Resources keep their URIs (clients open them by
URI); a URI offered by two servers goes to the first server in configuration
order and the collision is reported, as is a bare tool name offered by
several servers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer

SEPARATOR = "__"
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def valid_server_name(name: str) -> bool:
    return bool(SERVER_NAME.match(name)) and SEPARATOR not in name and not name.endswith("_")


def qualify(server: str, name: str) -> str:
    return f"{server}{SEPARATOR}{name}"


def split(qualified: str) -> tuple[str, str] | None:
    server, sep, name = qualified.partition(SEPARATOR)
    return (server, name) if sep and server and name else None


@dataclass
class Collisions:
    tools: dict[str, list[str]] = field(default_factory=dict)
    prompts: dict[str, list[str]] = field(default_factory=dict)
    resources: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"tools": self.tools, "prompts": self.prompts, "resources": self.resources}


def collisions(servers: Iterable[UpstreamServer]) -> Collisions:
    seen_tools: dict[str, list[str]] = {}
    seen_prompts: dict[str, list[str]] = {}
    seen_uris: dict[str, list[str]] = {}
    for s in servers:
        for t in s.catalog.tools:
            seen_tools.setdefault(t, []).append(s.name)
        for p in s.catalog.prompts:
            seen_prompts.setdefault(p, []).append(s.name)
        for r in s.catalog.resources:
            uri = r.get("uri")
            if isinstance(uri, str):
                seen_uris.setdefault(uri, []).append(s.name)
    return Collisions(
        tools={k: v for k, v in seen_tools.items() if len(v) > 1},
        prompts={k: v for k, v in seen_prompts.items() if len(v) > 1},
        resources={k: v for k, v in seen_uris.items() if len(v) > 1},
    )


def resource_owner(uri: str, servers: Mapping[str, UpstreamServer]) -> str | None:
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


__all__ = ["SEPARATOR", "Collisions", "collisions", "qualify", "resource_owner", "split", "template_matches",
           "valid_server_name"]
