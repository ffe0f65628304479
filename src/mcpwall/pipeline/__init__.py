"""The contract between the gateway and its stages.

What a stage is (`Stage`, its hooks and verdicts: `Reject`), what it is handed
per request (`RequestContext`: the session, the message, the route, the
decision so far), what it may see of the gateway (`GatewayView`), and the
policy snapshot every stage reads (`PolicyStore.current`). Below both
`mcpwall.proxy` (which runs the stages) and `mcpwall.stages` (the stages):
neither reaches into the other through this package.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule (`_context` is compiled): see mcpwall._native

from mcpwall.pipeline._policystore import PolicyStore
from mcpwall.pipeline._session import (
    KEPT_CAPABILITIES,
    Inflight,
    Send,
    ServerRequest,
    Session,
    keep_capabilities,
)
from mcpwall.pipeline._stage import Emit, Reject, RequestContext, Stage, blocked
from mcpwall.pipeline._view import GatewayView, Holder, Service, Tap, ToolFilter, UpstreamView

__all__ = [
    "KEPT_CAPABILITIES",
    "Emit",
    "GatewayView",
    "Holder",
    "Inflight",
    "PolicyStore",
    "Reject",
    "RequestContext",
    "Send",
    "ServerRequest",
    "Service",
    "Session",
    "Stage",
    "Tap",
    "ToolFilter",
    "UpstreamView",
    "blocked",
    "keep_capabilities",
]
