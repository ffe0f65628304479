"""The pipeline with traces: what the gateway runs instead of `Pipeline` when traces are on.

Chosen once, when the gateway is built (`Gateway.__init__`), so a gateway
without traces pays nothing per call or per stage for them. Each hook list's
stages run inside child spans of the call's (`Tracing.traced`), the dispatch
inside the forward's span (`Tracing.forward`), and the call's span closes
after the observers (ledger, metrics) have run. Tracing is an observer: an
error in it is logged, never a deny.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from mcpwall.protocol import Message
from mcpwall.proxy._pipeline import Dispatch, Pipeline
from mcpwall.stages import RequestContext, Stage

if TYPE_CHECKING:
    from mcpwall.telemetry._tracing import Tracing

log = logging.getLogger("mcpwall.telemetry")


class TracedPipeline(Pipeline):
    """`Pipeline` with a span per call, per stage hook and per forward (docs/TRACING.md)."""

    def __init__(self, stages: Sequence[Stage], tracing: Tracing) -> None:
        super().__init__(stages)
        self.tracing = tracing
        if tracing.config.stage_spans:
            self._request = tracing.traced(self._request, "request")
            self._response = tracing.traced(self._response, "response")
            self._complete = tracing.traced(self._complete, "complete")

    async def run(self, ctx: RequestContext, dispatch: Dispatch) -> Message | None:
        self._begin(ctx)
        return await super().run(ctx, partial(self.tracing.forward, dispatch))

    async def complete(self, ctx: RequestContext) -> None:
        if ctx.span is None:
            self._begin(ctx)  # refused before the pipeline ran (routing, the door): a span all the same
        try:
            await super().complete(ctx)
        finally:
            try:
                self.tracing.end(ctx)
            except Exception:
                log.exception("could not close the span of %s", ctx.method)

    def _begin(self, ctx: RequestContext) -> None:
        try:
            self.tracing.begin(ctx)
        except Exception:
            log.exception("could not open a span for %s", ctx.method)


__all__ = ["TracedPipeline"]
