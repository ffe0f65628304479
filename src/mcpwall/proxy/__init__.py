"""The gateway: relay loop, sessions, upstream servers and frontends.

    settings = GatewaySettings(home=Path("~/.mcpwall").expanduser())
    built = build(settings)              # policy, servers, token, stages, Gateway
    asyncio.run(serve_http(built))       # /mcp, /mcp/{server}, POST /{server}, /health ...

See docs/ARCHITECTURE.md for the picture.
"""

from __future__ import annotations

from mcpwall.proxy._aggregate import qualify, split, valid_server_name
from mcpwall.proxy._app import (
    EXTENSIONS,
    STAGE_PLUGINS,
    Built,
    GatewaySettings,
    build,
    configure_logging,
    prepare_home,
    run,
    serve_http,
    serve_stdio,
)
from mcpwall.proxy._gateway import Emit, Gateway, GatewayOptions
from mcpwall.proxy._http import HttpFrontend
from mcpwall.proxy._policystore import PolicyStore
from mcpwall.proxy._servers import load_servers_file, spec_from_entry
from mcpwall.proxy._session import Session
from mcpwall.proxy._stdio import StdioFrontend
from mcpwall.proxy._token import (
    TOKEN_ENV,
    load_named_tokens,
    load_token,
    read_secret,
    token_path,
    write_secret,
)
from mcpwall.proxy._upstream import CircuitBreaker, UpstreamError, UpstreamServer

__all__ = [
    "EXTENSIONS",
    "STAGE_PLUGINS",
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
