"""The methods the gateway answers itself: initialize, ping, merged lists, logging, discovery.

On an aggregated session (`/mcp`, `--stdio`) the lists are every ready
server's, fetched fresh (each page) and merged under `server__name`; a server
that cannot list now shows its last known items. `initialize`, `ping` and
`server/discover` are answered here on every session.

`server/discover` (MCP 2026-07-28) is answered from what the gateway offers a
client of that revision: the capabilities of the servers behind the endpoint
(all of them on an aggregated one, merged as `initialize` merges them; the one
server's otherwise), without what a modern client cannot use through the
gateway (no logging, no tasks; `listChanged` and `subscribe` are served through
`subscriptions/listen`, `_listen.py`), every version the gateway serves, and the
gateway's identity. A `server/discover` without the revision's `_meta` is a
legacy client's, and is answered as before the revision: an unknown method.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcpwall import __version__
from mcpwall.pipeline import keep_capabilities
from mcpwall.protocol import LATEST_VERSION, SUPPORTED_VERSIONS, ErrorCode, Message, error, result
from mcpwall.protocol.modern import (
    ALL_VERSIONS,
    MODERN_VERSIONS,
    SERVER_INFO,
    SERVER_INFO_META_KEY,
    is_modern,
)
from mcpwall.protocol.naming import qualify
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._task_shapes import legacy_capability, modern_extensions
from mcpwall.proxy._upstream import UpstreamServer
from mcpwall.stages import RequestContext

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

log = logging.getLogger("mcpwall.gateway")

LIST_KEYS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
             "resources/templates/list": "resourceTemplates"}


async def _initialize(gw: Gateway, ctx: RequestContext) -> Message:
    session, params = ctx.session, ctx.params
    info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
    assert info is not None
    session.client_name = str(info.get("name", ""))[:200]
    session.client_version = str(info.get("version", ""))[:100]
    caps = params.get("capabilities")
    session.capabilities = keep_capabilities(caps)  # only what the gateway reads, bounded (issue 22)
    asked = params.get("protocolVersion")
    version = asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
    session.protocol_version = version
    if session.server is not None:
        upstream = gw.servers[session.server]
        if not await upstream.wait_ready(gw.options.ready_timeout_s, until_failure=True):
            return error(ctx.id, ErrorCode.UPSTREAM_ERROR,
                         f"upstream {upstream.name!r} is not available: {upstream.last_error}",
                         {"server": upstream.name, "reason": "unavailable"})
        body = dict(upstream.init_result)
        body["protocolVersion"] = version
        return result(ctx.id, body)
    caps_out: dict[str, Any] = {"tools": {"listChanged": True}, "logging": {}}
    upstream_caps = [s.capabilities for s in gw.servers.values()]
    if any("resources" in c for c in upstream_caps) or not upstream_caps:
        caps_out["resources"] = {"subscribe": True, "listChanged": True}
    if any("prompts" in c for c in upstream_caps) or not upstream_caps:
        caps_out["prompts"] = {"listChanged": True}
    if any("completions" in c for c in upstream_caps):
        caps_out["completions"] = {}
    caps_out.update(legacy_capability(upstream_caps))  # tasks: the gateway maps and lists them
    names = ", ".join(gw.servers) or "none"
    return result(ctx.id, {
        "protocolVersion": version,
        "capabilities": caps_out,
        "serverInfo": {"name": "mcpwall", "version": __version__},
        "instructions": f"mcpwall gateway. Tools and prompts are named server__name. Servers: {names}.",
    })


async def _ping(gw: Gateway, ctx: RequestContext) -> Message:
    return result(ctx.id, {})


def _known(s: UpstreamServer, key: str) -> list[dict[str, Any]]:
    """What the server listed last time (its catalog), for when it cannot list now."""
    known: Any = {"tools": s.catalog.tools, "prompts": s.catalog.prompts, "resources": s.catalog.resources,
                  "resourceTemplates": s.catalog.templates}[key]
    return list(known.values()) if isinstance(known, dict) else list(known)


async def _list(gw: Gateway, ctx: RequestContext) -> Message:
    """Merged lists from every ready server (each fetched fresh, every page)."""
    key = LIST_KEYS[ctx.method]
    servers = [s for s in gw.servers.values() if s.state == "ready"]
    timeout = (ctx.timeout_ms or gw.policy.current.default_timeout_ms) / 1000

    async def one(s: UpstreamServer) -> list[dict[str, Any]]:
        if key == "tools" and "tools" not in s.capabilities:
            return []
        if key != "tools" and key.startswith(("resource", "prompt")) and \
                ("resources" if key.startswith("resource") else "prompts") not in s.capabilities:
            return []
        # The request's own timeout (the policy's), and the server's circuit breaker: a server
        # that hangs on lists must not hold every client's merged list for long, again and again.
        # When it fails, its last known items stand in, so its tools do not silently vanish.
        if not s.breaker.allow():
            log.warning("[%s] %s skipped: circuit open; listing its last known items", s.name, ctx.method)
            items = _known(s, key)
        else:
            alive = False
            try:
                items = await s.list_all(ctx.method, key, timeout)
                alive = True
            except UpstreamError as exc:
                alive = exc.reason == "error"  # an error answer is an answer; silence or a crash is not
                log.warning("[%s] %s failed: %s; listing its last known items", s.name, ctx.method, exc)
                items = _known(s, key)
            finally:
                # Always settled, so a half-open breaker's probe never stays taken (cancelled too).
                if alive:
                    s.breaker.success()
                else:
                    s.breaker.failure()
        if key == "tools":
            s.catalog.tools = {t["name"]: t for t in items if isinstance(t.get("name"), str)}
        elif key == "prompts":
            s.catalog.prompts = {p["name"]: p for p in items if isinstance(p.get("name"), str)}
        elif key == "resources":
            s.catalog.resources = items
        else:
            s.catalog.templates = items
        if key in ("tools", "prompts"):
            return [{**i, "name": qualify(s.name, i["name"])} for i in items if isinstance(i.get("name"), str)]
        return items

    lists = await asyncio.gather(*(one(s) for s in servers))
    merged: list[dict[str, Any]] = []
    seen_uris: set[str] = set()
    for items in lists:
        for item in items:
            uri = item.get("uri") or item.get("uriTemplate")
            if key.startswith("resource") and isinstance(uri, str):
                if uri in seen_uris:
                    continue  # a collision: the first server in configuration order keeps it
                seen_uris.add(uri)
            merged.append(item)
    return result(ctx.id, {key: merged})


async def _set_level(gw: Gateway, ctx: RequestContext) -> Message:
    level = ctx.params.get("level")
    targets = [gw.servers[ctx.session.server]] if ctx.session.server else list(gw.servers.values())
    for s in targets:
        if s.state == "ready" and "logging" in s.capabilities:
            with contextlib.suppress(UpstreamError):
                await s.request("logging/setLevel", {"level": level}, timeout=10.0)
    return result(ctx.id, {})


#: What a 2026-07-28 client may use of each server capability through the gateway (the flags kept).
_MODERN_CAPABILITIES: dict[str, tuple[str, ...]] = {"tools": ("listChanged",), "resources": ("subscribe", "listChanged"),
                                                   "prompts": ("listChanged",), "completions": ()}


def _modern_capabilities(caps: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, flags in _MODERN_CAPABILITIES.items():
        given = [c[key] for c in caps if isinstance(c.get(key), dict)]
        if given:
            out[key] = {f: True for f in flags if any(g.get(f) is True for g in given)}
    return out


async def _discover(gw: Gateway, ctx: RequestContext) -> Message:
    if not is_modern(ctx.params):
        if ctx.session.protocol_version in MODERN_VERSIONS and not ctx.session.initialized:
            # A stdio client that spoke 2026-07-28 before: its envelope is missing, as the HTTP frontend says.
            return error(ctx.id, ErrorCode.INVALID_PARAMS,
                         "params._meta is missing the required envelope key(s): io.modelcontextprotocol/protocolVersion")
        # A legacy client (no 2026-07-28 envelope) gets what it got before the revision.
        return error(ctx.id, ErrorCode.METHOD_NOT_FOUND, "Method not found: server/discover")
    if ctx.session.server is not None:
        upstream = gw.servers[ctx.session.server]
        if not await upstream.wait_ready(gw.options.ready_timeout_s, until_failure=True):
            return error(ctx.id, ErrorCode.UPSTREAM_ERROR,
                         f"upstream {upstream.name!r} is not available: {upstream.last_error}",
                         {"server": upstream.name, "reason": "unavailable"})
        caps = {**_modern_capabilities([upstream.capabilities]), **modern_extensions([upstream.capabilities], True)}
        given = upstream.init_result.get("instructions")
        instructions = given if isinstance(given, str) else None
    else:
        # As `initialize` declares them: tools always (the gateway lists its own when none are up).
        # The gateway's own tools list changes as upstreams come and go: listChanged always.
        every = [s.capabilities for s in gw.servers.values()]
        caps = {**_modern_capabilities(every), **modern_extensions(every, False)}
        caps["tools"] = {**caps.get("tools", {}), "listChanged": True}
        names = ", ".join(gw.servers) or "none"
        instructions = f"mcpwall gateway. Tools and prompts are named server__name. Servers: {names}."
    body: dict[str, Any] = {"supportedVersions": list(ALL_VERSIONS), "capabilities": caps,
                            "_meta": {SERVER_INFO_META_KEY: SERVER_INFO}, "ttlMs": 0, "cacheScope": "private"}
    if instructions:
        body["instructions"] = instructions
    return result(ctx.id, body)


async def _listen(gw: Gateway, ctx: RequestContext) -> Message:
    return await gw.traffic.listen.serve(ctx)


Local = Callable[["Gateway", RequestContext], Awaitable[Message]]
#: The methods the gateway answers itself on an aggregated session (and the ones in ALWAYS_LOCAL on any).
LOCAL: dict[str, Local] = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _list,
    "prompts/list": _list,
    "resources/list": _list,
    "resources/templates/list": _list,
    "logging/setLevel": _set_level,
    "server/discover": _discover,
    "subscriptions/listen": _listen,
}
#: answered by the gateway even on single-server sessions
ALWAYS_LOCAL = frozenset({"initialize", "ping", "server/discover", "subscriptions/listen"})


__all__ = ["ALWAYS_LOCAL", "LIST_KEYS", "LOCAL"]
