"""Protocol validation: the session is initialized and params have the right shape.

The envelope itself was checked when the message was parsed
(`mcpwall.protocol.classify`); this stage checks what the routed methods need
before any policy sees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.stages._components import Components

_BEFORE_INIT = frozenset({"initialize", "ping", "server/discover"})


class ProtocolStage(Stage):
    name = "protocol"

    def __init__(self) -> None:
        self.invalid = 0

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        session = ctx.session
        if ctx.method == "initialize":
            if not isinstance(ctx.params.get("protocolVersion", ""), str):
                return self._bad(ErrorCode.INVALID_PARAMS, "initialize needs a string protocolVersion")
            return None
        if not session.initialized and session.protocol_version == "" and session.kind in ("http", "stdio", "frame") \
                and ctx.method not in _BEFORE_INIT:
            return self._bad(ErrorCode.INVALID_REQUEST, "the session has not been initialized")
        if ctx.method in ("tools/call", "prompts/get"):
            args = ctx.params.get("arguments")
            if args is not None and not isinstance(args, dict):
                return self._bad(ErrorCode.INVALID_PARAMS, f"{ctx.method}: 'arguments' must be an object")
        return None

    def _bad(self, code: int, message: str) -> Reject:
        self.invalid += 1
        return Reject(code, message, http_status=400, outcome="rejected")

    def status(self) -> dict[str, Any]:
        return {"invalid": self.invalid}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> ProtocolStage:
    return ProtocolStage()


__all__ = ["ProtocolStage", "build"]
