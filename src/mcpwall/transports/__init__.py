"""Upstream transports: stdio, streamable HTTP, legacy SSE and plain HTTP JSON-RPC."""

from __future__ import annotations

from mcpwall.policy import ServerSpec
from mcpwall.transports._principal import auth_for as _auth_for
from mcpwall.transports.base import OnClosed, OnMessage, Transport, TransportClosed, TransportError
from mcpwall.transports.sse import HttpJsonRpcTransport, SseTransport
from mcpwall.transports.stdio import StdioTransport, default_environment, die_with_parent
from mcpwall.transports.streamable_http import StreamableHttpTransport


def transport_for(name: str, spec: ServerSpec, wrapper: list[str] | None = None) -> Transport:
    """The transport a server spec asks for (`transport`, else stdio for a command, streamable HTTP for a URL)."""
    if spec.command:
        if spec.sandbox is not None:
            # bubblewrap, computed at connect time: a missing bwrap fails this server,
            # it never starts it unconfined.
            from mcpwall.sandbox import SandboxedTransport

            return SandboxedTransport(name, spec, wrapper or [])
        return StdioTransport(spec.command, spec.args, spec.env, spec.cwd, name=name, wrapper=wrapper or [])
    assert spec.url is not None
    kind = spec.transport or ("sse" if spec.url.rstrip("/").endswith("/sse") else "streamable-http")
    if kind == "sse":
        return SseTransport(spec.url, spec.headers, name=name, auth=_auth_for(name))
    if kind == "http":
        return HttpJsonRpcTransport(spec.url, spec.headers, name=name)
    return StreamableHttpTransport(spec.url, spec.headers, name=name, auth=_auth_for(name))


__all__ = [
    "HttpJsonRpcTransport",
    "OnClosed",
    "OnMessage",
    "SseTransport",
    "StdioTransport",
    "StreamableHttpTransport",
    "Transport",
    "TransportClosed",
    "TransportError",
    "default_environment",
    "die_with_parent",
    "transport_for",
]
