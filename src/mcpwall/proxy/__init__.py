"""The gateway: relay loop, sessions, upstream servers and frontends.

    settings = GatewaySettings(home=Path("~/.mcpwall").expanduser())
    built = build(settings)              # policy, servers, token, stages, Gateway
    asyncio.run(serve_http(built))       # /mcp, /mcp/{server}, POST /{server}, /health ...

See docs/ARCHITECTURE.md for the picture.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

from mcpwall._token import (
    TOKEN_ENV,
    load_named_tokens,
    load_token,
    read_secret,
    token_path,
    write_secret,
)
from mcpwall.pipeline import PolicyStore, Session
from mcpwall.protocol.naming import qualify, split, valid_server_name
from mcpwall.proxy._app import (
    SERVICES,
    Built,
    GatewaySettings,
    build,
    configure_logging,
    prepare_home,
    run,
    serve_http,
    serve_stdio,
)
from mcpwall.proxy._breaker import CircuitBreaker
from mcpwall.proxy._gateway import Emit, Gateway, GatewayOptions
from mcpwall.proxy._http import HttpFrontend
from mcpwall.proxy._requests import UpstreamError
from mcpwall.proxy._servers import load_servers_file, spec_from_entry
from mcpwall.proxy._stdio import StdioFrontend
from mcpwall.proxy._upstream import UpstreamServer

__all__ = [
    "SERVICES",
    "TOKEN_ENV",
    "Built",
    "CircuitBreaker",
    "Emit",
    "Gateway",
    "GatewayOptions",
    "GatewaySettings",
    "HttpFrontend",
    "PolicyStore",
    "Session",
    "StdioFrontend",
    "UpstreamError",
    "UpstreamServer",
    "build",
    "configure_logging",
    "load_named_tokens",
    "load_servers_file",
    "load_token",
    "prepare_home",
    "qualify",
    "read_secret",
    "run",
    "serve_http",
    "serve_stdio",
    "spec_from_entry",
    "split",
    "token_path",
    "valid_server_name",
    "write_secret",
]
