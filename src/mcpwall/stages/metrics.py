"""The metrics stage: count every finished request for `GET /metrics` (see `mcpwall.metrics`).

An observer: `on_complete` only increments counters and histograms (a few
microseconds). `bind` gives the gateway its `GatewayMetrics` as
`gateway.metrics` and the scrape callable as `gateway.metrics_text`, which the
HTTP frontend serves at `/metrics` (bearer token required, like every route).

policy.yaml::

    stages:
      metrics: {enabled: true}     # default; false removes /metrics
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpwall.metrics import GatewayMetrics
from mcpwall.pipeline import RequestContext, Stage
from mcpwall.stages._kit import StageConfig, parse, stage_block

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView


class MetricsConfig(StageConfig):
    enabled: bool = True


class MetricsStage(Stage):
    name = "metrics"

    def __init__(self) -> None:
        self.metrics = GatewayMetrics()

    def bind(self, gateway: GatewayView) -> None:
        self.metrics.gateway = gateway
        gateway.metrics = self.metrics  # type: ignore[attr-defined]
        gateway.metrics_text = self.metrics.render

    def on_complete(self, ctx: RequestContext) -> None:
        self.metrics.observe(ctx, time.perf_counter())


def build(config: Mapping[str, Any], settings: Any = None) -> MetricsStage | None:
    cfg = parse(MetricsConfig, stage_block(config, "metrics"), "stages.metrics")
    return MetricsStage() if cfg.enabled else None


__all__ = ["MetricsConfig", "MetricsStage", "build"]
