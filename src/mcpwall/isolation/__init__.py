"""Isolation: the upstream connections run in a separate aggregator process.

    settings.extras["isolate"] = True      # `mcpwall proxy --isolate`

The aggregator (`python -m mcpwall.isolation`) holds no ledger handle, no
token and no policy file; the gateway talks to it over length-prefixed
msgpack frames on its stdin/stdout (`_wire`). `register()` adds the
isolation stage to gateways built with `extras["isolate"]`.
"""

from __future__ import annotations

from mcpwall.isolation._parent import (
    OPEN_TIMEOUT_S,
    Aggregator,
    IsolatedTransport,
    IsolationService,
    isolation_service,
)
from mcpwall.isolation._wire import MAX_FRAME, WireError, pack, read_frame, unpack


def register() -> None:
    """Add the isolation service to `mcpwall.proxy.SERVICES` (idempotent)."""
    from mcpwall.proxy import SERVICES

    if isolation_service not in SERVICES:
        SERVICES.append(isolation_service)


__all__ = [
    "MAX_FRAME",
    "OPEN_TIMEOUT_S",
    "Aggregator",
    "IsolatedTransport",
    "IsolationService",
    "WireError",
    "isolation_service",
    "pack",
    "read_frame",
    "register",
    "unpack",
]
