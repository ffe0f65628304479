"""Merging for the aggregated endpoint (`/mcp`, `--stdio`); the naming is `mcpwall.protocol.naming`.

A URI offered by two servers goes to the first server in configuration order
and the collision is reported, as is a bare tool name offered by several
servers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer


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


__all__ = ["Collisions", "collisions"]
