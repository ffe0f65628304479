"""Opening an upstream in its protocol era: the `initialize` handshake, or the 2026-07-28 probe.

A server of the handshake era (2024-11-05 to 2025-11-25) is opened with
`initialize` and `notifications/initialized`; one of the stateless revision
(2026-07-28) has no handshake and no session: `server/discover`, stamped with
the per-request `_meta` envelope (and, over HTTP, `MCP-Protocol-Version`),
says which versions it serves and what it offers.

Which one the gateway speaks is `ServerSpec.era`:

- `auto` (the default) opens with `initialize` and, when the server refuses it,
  probes `server/discover`: a dual-era server (the Python SDK 2.x's, which
  answers both) is spoken to in the handshake era, where one connection carries
  server-to-client requests, change notifications and resource subscriptions
  for every client the gateway serves; a modern-only server, which refuses
  `initialize` (the spec's "legacy client, modern server" row), in 2026-07-28.
  The gateway keeps the era it found (`UpstreamServer.era`) and, after a
  restart, tries it first, probing again when it no longer holds.
- `modern` probes `server/discover` only, `legacy` sends `initialize` only.

The spec's own dual-era client probes `server/discover` first (on stdio the
first request fixes a Python SDK server's era for the process); the gateway
opens with `initialize` instead so that no server it served before the
revision changes era under it.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from mcpwall import __version__
from mcpwall.protocol import LATEST_VERSION, notification
from mcpwall.protocol.modern import MODERN_VERSIONS, SERVER_INFO_META_KEY
from mcpwall.proxy._requests import UpstreamError
from mcpwall.transports import SseTransport, StreamableHttpTransport, Transport

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer

log = logging.getLogger("mcpwall.upstream")

INIT_TIMEOUT_S = 90.0
#: A server that speaks 2026-07-28 answers `server/discover` at once (it has nothing to start).
DISCOVER_TIMEOUT_S = 20.0


async def open_upstream(upstream: UpstreamServer, transport: Transport) -> None:
    """Open `upstream` on its freshly connected `transport` in its era; sets `upstream.era` and
    `upstream.init_result`. Raises UpstreamError (or TransportError) as the handshake did: when
    both eras fail, the handshake's own error, so the HTTP+SSE fallback still sees its status."""
    pinned = upstream.spec.era
    if pinned == "modern" or (pinned == "auto" and upstream.era == "modern"):
        try:
            await discover(upstream, transport)
            return
        except UpstreamError:
            if pinned == "modern":
                raise
            # The era remembered from before a restart no longer holds: probe from the start.
    try:
        await initialize(upstream, transport)
    except UpstreamError:
        if pinned == "legacy":
            raise
        try:
            await discover(upstream, transport)
        except UpstreamError as exc:
            if "requires authorization" in str(exc):
                raise  # a stateless server refuses `initialize` and asks for a (new) login on its discover
        else:
            return
        raise


async def initialize(upstream: UpstreamServer, transport: Transport) -> None:
    """The handshake: `initialize`, then `notifications/initialized`."""
    _speak(transport, None)
    result = await upstream._call("initialize", {
        "protocolVersion": LATEST_VERSION,
        "capabilities": upstream.gateway.upstream_capabilities(upstream.name),
        "clientInfo": {"name": "mcpwall", "version": __version__},
    }, timeout=INIT_TIMEOUT_S)
    upstream.era = "legacy"
    upstream.init_result = result
    # Streamable HTTP sends the negotiated version on every later request.
    _speak(transport, str(result.get("protocolVersion", LATEST_VERSION)))
    await transport.send(notification("notifications/initialized"))


async def discover(upstream: UpstreamServer, transport: Transport) -> None:
    """The 2026-07-28 probe: `server/discover` in the newest revision the gateway speaks; the
    server must name one the gateway speaks. Its answer stands in for an InitializeResult
    (version, capabilities, serverInfo from its `_meta`, instructions)."""
    previous = upstream.era
    upstream.era = "modern"  # UpstreamServer.request stamps the envelope from here on
    _speak(transport, MODERN_VERSIONS[0])
    try:
        result = await upstream._call("server/discover", {}, timeout=DISCOVER_TIMEOUT_S)
        versions = result.get("supportedVersions")
        chosen = next((v for v in MODERN_VERSIONS if isinstance(versions, list) and v in versions), None)
        if chosen is None:
            raise UpstreamError(f"server/discover names no version the gateway speaks per request: {versions!r}",
                                "error")
    except UpstreamError:
        upstream.era = previous
        _speak(transport, None)
        raise
    meta = result.get("_meta")
    caps = result.get("capabilities")
    upstream.init_result = {"protocolVersion": chosen, "capabilities": caps if isinstance(caps, dict) else {}}
    # Its identity is the `_meta` stamp; drafts (and the conformance suite's servers) put it beside
    # the capabilities. A handshake-era client of /mcp/{server} gets it in the InitializeResult, which
    # requires one: without either, the server is named as configured.
    info = meta.get(SERVER_INFO_META_KEY) if isinstance(meta, dict) else None
    info = info if isinstance(info, dict) else result.get("serverInfo")
    upstream.init_result["serverInfo"] = info if isinstance(info, dict) and isinstance(info.get("name"), str) \
        and isinstance(info.get("version"), str) else {"name": upstream.name, "version": "unknown"}
    if isinstance(result.get("instructions"), str):
        upstream.init_result["instructions"] = result["instructions"]


def older_transport(upstream: UpstreamServer, transport: Transport, exc: BaseException) -> bool:
    """MCP's backwards compatibility: a URL that refuses the streamable-HTTP `initialize` POST
    (and the 2026-07-28 probe) with 400, 404 or 405 may be a server of the older HTTP+SSE
    transport; the next start tries that, once. (Cursor and others configure both behind a bare
    `url`, which `init` records as streamable HTTP.)"""
    if upstream._fell_back or not isinstance(transport, StreamableHttpTransport) or not upstream.spec.url \
            or not re.search(r"\bHTTP (?:400|404|405)\b", str(exc)):
        return False
    upstream._fell_back = True
    url, headers, name = upstream.spec.url, upstream.spec.headers, upstream.name
    upstream._factory = lambda: SseTransport(url, headers, name=name)
    log.warning("[%s] %s refused streamable HTTP (%s); trying the older HTTP+SSE transport", name, url,
                str(exc)[:120])
    return True


def _speak(transport: Transport, version: str | None) -> None:
    """Set the version a streamable-HTTP transport sends in `MCP-Protocol-Version` (None: not
    yet known); a 2026-07-28 server has no session, so none is kept for it."""
    if hasattr(transport, "protocol_version"):
        transport.protocol_version = version
        if version in MODERN_VERSIONS and hasattr(transport, "session_id"):
            transport.session_id = None


__all__ = ["DISCOVER_TIMEOUT_S", "INIT_TIMEOUT_S", "discover", "initialize", "older_transport", "open_upstream"]
