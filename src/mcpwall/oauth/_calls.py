"""Which scopes a request's tool calls need that its token lacks (`auth.tools`, incremental consent).

The door decides before the frontend reads the body, so for a POST this reads it (within the
message size bound), looks at each `tools/call` in it (a batch too) by its `server__tool` name
(the bare name on `/mcp/NAME` and `POST /NAME`, qualified with that server), and hands back a
`receive` that replays what it read, so the frontend reads the same body as if untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcpwall.oauth._config import AuthConfig
from mcpwall.protocol import MAX_MESSAGE_BYTES

Receive = Callable[[], Awaitable[dict[str, Any]]]


def _server_of(path: str) -> str | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) == 2 and parts[0] == "mcp":
        return parts[1]
    if len(parts) == 1 and parts[0] != "mcp":
        return parts[0]
    return None


def missing_in(config: AuthConfig, body: bytes, server: str | None, held: frozenset[str]) -> list[str]:
    """The scopes the tool calls in `body` need and `held` lacks, in the order `auth.tools` names them."""
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []  # the frontend answers the parse error
    missing: list[str] = []
    for item in msg if isinstance(msg, list) else [msg]:
        if not isinstance(item, dict) or item.get("method") != "tools/call":
            continue
        params = item.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str):
            continue
        qualified = f"{server}__{name}" if server else name
        missing.extend(s for s in config.scopes_for_tool(qualified) if s not in held and s not in missing)
    return missing


async def missing_tool_scopes(config: AuthConfig, held: frozenset[str], path: str,
                              receive: Receive) -> tuple[Receive, list[str]]:
    """(a receive replaying the body, the scopes its tool calls lack); a body over the bound is
    left to the frontend's own size check."""
    events: list[dict[str, Any]] = []
    size = 0
    while True:
        event = await receive()
        events.append(event)
        size += len(event.get("body", b""))
        if event["type"] != "http.request" or not event.get("more_body") or size > MAX_MESSAGE_BYTES:
            break
    missing = [] if size > MAX_MESSAGE_BYTES else \
        missing_in(config, b"".join(e.get("body", b"") for e in events), _server_of(path), held)

    async def replay() -> dict[str, Any]:
        return events.pop(0) if events else await receive()

    return replay, missing


__all__ = ["missing_in", "missing_tool_scopes"]
