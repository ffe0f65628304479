"""The built-in tools: a stdio MCP server the gateway aggregates as `local`.

    servers:
      local: {command: mcpwall, args: [builtin, --policy, /home/me/.mcpwall/policy.yaml]}

gives agents `local__fetch_http`, `local__grep_http`, `local__http_headers`
and `local__echo`. The HTTP tools obey `allowlist.hosts`, refuse private and
link-local addresses after DNS resolution, and cap size and time.
"""

from __future__ import annotations

from mcpwall.builtin._http import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT_S,
    HARD_MAX_BYTES,
    HARD_TIMEOUT_S,
    MAX_REDIRECTS,
    Fetched,
    FetchError,
    clamp,
    fetch,
)
from mcpwall.builtin._net import HostPolicy, Resolver, Target, URLRefused, check_url, public, system_resolver
from mcpwall.builtin._server import PolicySource, create_server, serve

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT_S",
    "HARD_MAX_BYTES",
    "HARD_TIMEOUT_S",
    "MAX_REDIRECTS",
    "FetchError",
    "Fetched",
    "HostPolicy",
    "PolicySource",
    "Resolver",
    "Target",
    "URLRefused",
    "check_url",
    "clamp",
    "create_server",
    "fetch",
    "public",
    "serve",
    "system_resolver",
]
