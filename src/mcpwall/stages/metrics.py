"""The metrics stage: count every finished request for `GET /metrics` (see `mcpwall.metrics`).

An observer: `on_complete` only increments counters and histograms (a few
microseconds). Its `GatewayMetrics` is built before the stages
(`metrics_from`, `Components.metrics`); the gateway's `metrics_text` is its
scrape, which the HTTP frontend serves at `/metrics` (bearer token required,
like every route).

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
from mcpwall.stages._components import Components
from mcpwall.stages._configs import MetricsConfig
from mcpwall.stages._kit import parse, stage_block

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView


class MetricsStage(Stage):
    name = "metrics"

    def __init__(self, metrics: GatewayMetrics | None = None) -> None:
        self.metrics = metrics if metrics is not None else GatewayMetrics()

    def bind(self, gateway: GatewayView) -> None:
        self.metrics.gateway = gateway  # read at scrape time: stage timings, sessions, upstreams

    def on_complete(self, ctx: RequestContext) -> None:
        self.metrics.counts.observe(ctx, time.perf_counter())  # (its tables: compiled code to compiled code)


def metrics_from(config: Mapping[str, Any]) -> GatewayMetrics | None:
    """The gateway's Prometheus registry, unless `stages.metrics: false` (then no /metrics)."""
    cfg = parse(MetricsConfig, stage_block(config, "metrics"), "stages.metrics")
    return GatewayMetrics() if cfg.enabled else None


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> MetricsStage | None:
    metrics = components.metrics if components is not None else metrics_from(config)
    return MetricsStage(metrics) if metrics is not None else None


__all__ = ["MetricsConfig", "MetricsStage", "build", "metrics_from"]
