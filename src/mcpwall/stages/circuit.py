"""Circuit breaker: stop sending to an upstream that keeps failing.

Five consecutive failures (timeouts, transport errors, crashes) open the
circuit for 30 s; then one probe request is let through (half-open): success
closes it, failure opens it again. The breaker lives on the upstream
(`UpstreamServer.breaker`) so that failures seen outside a request count too.

A probe that never reaches the server (a later stage refused it, the client
cancelled it) is given back when its request completes, so that the next
request probes: otherwise the circuit would stay open until a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.stages._components import Components


class CircuitStage(Stage):
    name = "circuit"

    def __init__(self) -> None:
        self.tripped = 0

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.server is None:
            return None
        upstream = ctx.gateway.servers.get(ctx.server)
        if upstream is None:
            return None
        if upstream.breaker.allow():
            ctx.probe = upstream.breaker.probing
            return None
        self.tripped += 1
        b = upstream.breaker
        return Reject(ErrorCode.CIRCUIT_OPEN, f"Circuit open for server {ctx.server!r}: too many failures",
                      {"server": ctx.server, "failures": b.failures, "retry_after_s": b.open_seconds},
                      http_status=503, outcome="circuit_open")

    def on_complete(self, ctx: RequestContext) -> None:
        if ctx.probe and ctx.server is not None:
            upstream = ctx.gateway.servers.get(ctx.server)
            if upstream is not None and upstream.breaker.probing:
                upstream.breaker.release()

    def status(self) -> dict[str, Any]:
        return {"tripped": self.tripped}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> CircuitStage:
    return CircuitStage()


__all__ = ["CircuitStage", "build"]
