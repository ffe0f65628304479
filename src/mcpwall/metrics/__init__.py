"""Prometheus metrics of one gateway (`GET /metrics`, SPEC 7).

Each gateway owns a `GatewayMetrics` with its own `CollectorRegistry` (never
the process-global one: tests and embedders run several gateways in one
process). Two kinds of numbers:

- counted as requests complete (the metrics stage's `on_complete`):
  `mcpwall_tool_calls_total{server,tool,decision}` - the same `decision`
  word as the ledger's `tool_calls` rows, so the two agree row for row;
  `mcpwall_requests_total{method,decision}` for every request;
  latency histograms (`mcpwall_tool_call_duration_seconds{server}`,
  `mcpwall_upstream_duration_seconds{server}`);
- read from the gateway at scrape time: per-stage time
  (`mcpwall_stage_seconds_total{stage}`, from `gateway.pipeline.timings`),
  upstream health and state, circuit state, sessions, the ledger's queue,
  approvals waiting, webhook deliveries, the policy revision.

Label values that come from clients are bounded: unknown methods become
"other", and after MAX_TOOL_LABELS distinct (server, tool) pairs further
tools count as "_other", so a client cannot grow the registry without end.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from mcpwall.metrics._counts import (
    KNOWN_METHODS,
    LATENCY_BUCKETS,
    MAX_TOOL_LABELS,
    Counts,
    decision_word,
    tool_error,
)

if TYPE_CHECKING:
    from mcpwall.pipeline import RequestContext

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UPSTREAM_STATES = ("starting", "ready", "failed", "down", "stopped")
CIRCUIT_STATES = ("closed", "open", "half-open")


#: The `le` label of each bucket, spelled as prometheus-client spells it.
_LE = (*(floatToGoString(b) for b in LATENCY_BUCKETS), "+Inf")  # type: ignore[no-untyped-call]


#: (name, help, label names) of the numbers counted as requests complete.
_COUNTERS = {
    "tool_calls": ("mcpwall_tool_calls", "tools/call requests by server, tool and decision "
                   "(one per ledger tool_calls row)", ["server", "tool", "decision"]),
    "requests": ("mcpwall_requests", "Requests by JSON-RPC method and decision", ["method", "decision"]),
}
_HISTOGRAMS = {
    "call_seconds": ("mcpwall_tool_call_duration_seconds", "Time a tools/call spent in the gateway, answer "
                     "included", ["server"]),
    "upstream_seconds": ("mcpwall_upstream_duration_seconds", "Time the upstream took to answer", ["server"]),
    "request_seconds": ("mcpwall_request_duration_seconds", "Time any request spent in the gateway", ["method"]),
}


class GatewayMetrics:
    """The registry of one gateway; `observe(ctx)` per request, `render()` per scrape.

    Per-request numbers are plain dict entries read by the collector at scrape
    time: prometheus-client's labelled Counter and Histogram take a lock per
    increment and walk the buckets in Python, ~35 us of the event loop per
    call for five updates (bench/proxy_overhead.py profile); these cost ~3 us.
    """

    def __init__(self, gateway: Any = None, max_tool_labels: int = MAX_TOOL_LABELS) -> None:
        self.gateway = gateway
        self.registry = CollectorRegistry(auto_describe=True)
        #: the per-request tables (`Counts.observe`, compiled); past `max_tool_labels` (server, tool)
        #: pairs, further tools count as "_other"
        self.counts = Counts(max_tool_labels)
        self.counters = self.counts.counters
        self.histograms = self.counts.histograms
        self.registry.register(_GatewayCollector(self))

    def observe(self, ctx: RequestContext, now: float) -> None:
        """Count one finished request (`now`: time.perf_counter() when it finished)."""
        self.counts.observe(ctx, now)

    def families(self) -> Iterator[Metric]:
        """The per-request numbers as metric families (read on the scrape's thread: copies first)."""
        for which, (name, doc, labels) in _COUNTERS.items():
            counter = CounterMetricFamily(name, doc, labels=labels)
            for values, count in list(self.counters[which].items()):
                counter.add_metric(list(values), float(count))
            yield counter
        for which, (name, doc, labels) in _HISTOGRAMS.items():
            family = HistogramMetricFamily(name, doc, labels=labels)
            for label, histogram in list(self.histograms[which].items()):
                cumulative, buckets = 0, []
                for bound, count in zip(_LE, list(histogram.counts), strict=True):
                    cumulative += count
                    buckets.append((bound, float(cumulative)))
                family.add_metric([label], buckets, histogram.total)
            yield family

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))


class _GatewayCollector:
    """Numbers read from the gateway at scrape time."""

    def __init__(self, owner: GatewayMetrics) -> None:
        self.owner = owner

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        gw = self.owner.gateway
        yield from self.owner.families()
        if gw is None:
            return
        stage = CounterMetricFamily("mcpwall_stage_seconds", "Time spent in each pipeline stage's hooks",
                                    labels=["stage"])
        for name, seconds in gw.pipeline.timings.items():
            stage.add_metric([name], float(seconds))
        yield stage
        yield from self._upstreams(gw)
        sessions = GaugeMetricFamily("mcpwall_sessions", "Open client sessions")
        sessions.add_metric([], float(len(gw.sessions)))
        yield sessions
        yield from self._ledger(gw)
        yield from self._approvals(gw)
        yield from self._webhooks(gw)
        policy = gw.policy.current
        info = GaugeMetricFamily("mcpwall_policy_info", "The policy in force", labels=["revision", "mode"])
        info.add_metric([str(policy.revision), str(policy.mode)], 1.0)
        yield info

    @staticmethod
    def _upstreams(gw: Any) -> Iterator[Metric]:
        up = GaugeMetricFamily("mcpwall_upstream_up", "1 when the upstream server is ready", labels=["server"])
        state = GaugeMetricFamily("mcpwall_upstream_state", "The upstream's state (1 for the current one)",
                                  labels=["server", "state"])
        circuit = GaugeMetricFamily("mcpwall_circuit_state", "The upstream's circuit breaker (1 for the current "
                                    "state)", labels=["server", "state"])
        failures = GaugeMetricFamily("mcpwall_circuit_failures", "Consecutive failures counted by the breaker",
                                     labels=["server"])
        restarts = CounterMetricFamily("mcpwall_upstream_restarts", "Upstream restarts", labels=["server"])
        pending = GaugeMetricFamily("mcpwall_upstream_pending", "Requests waiting for the upstream",
                                    labels=["server"])
        for name, s in gw.servers.items():
            up.add_metric([name], 1.0 if s.state == "ready" else 0.0)
            for st in {*UPSTREAM_STATES, s.state}:
                state.add_metric([name, st], 1.0 if s.state == st else 0.0)
            breaker = s.breaker.state
            for st in CIRCUIT_STATES:
                circuit.add_metric([name, st], 1.0 if breaker == st else 0.0)
            failures.add_metric([name], float(s.breaker.failures))
            restarts.add_metric([name], float(getattr(s, "restarts", 0)))
            pending.add_metric([name], float(len(s.pending)))
        yield from (up, state, circuit, failures, restarts, pending)

    @staticmethod
    def _ledger(gw: Any) -> Iterator[Metric]:
        ledger = getattr(gw, "ledger", None)
        if ledger is None:
            return
        status = ledger.status()
        depth = GaugeMetricFamily("mcpwall_ledger_queue_depth", "Rows waiting for the ledger's writer")
        depth.add_metric([], float(status.get("pending") or 0))
        healthy = GaugeMetricFamily("mcpwall_ledger_healthy", "1 while the ledger can write")
        healthy.add_metric([], 1.0 if status.get("healthy", True) else 0.0)
        written = CounterMetricFamily("mcpwall_ledger_rows_written", "Rows committed by this gateway")
        written.add_metric([], float(status.get("written") or 0))
        dropped = CounterMetricFamily("mcpwall_ledger_rows_dropped", "Rows dropped (queue full while the "
                                      "database was unavailable)")
        dropped.add_metric([], float(status.get("dropped") or 0))
        head = ledger.published_head()
        head_seq = GaugeMetricFamily("mcpwall_ledger_head_seq", "The ledger chain's last committed row (keep it "
                                     "elsewhere: verify-audit --expect-head SEQ:MAC catches a rollback)")
        head_seq.add_metric([], float(head["seq"]))
        head_info = GaugeMetricFamily("mcpwall_ledger_head_info", "The ledger's head: id, seq and MAC prefix",
                                      labels=["ledger_id", "seq", "mac"])
        head_info.add_metric([str(head["ledger_id"]), str(head["seq"]), str(head["mac"])], 1.0)
        yield from (depth, healthy, written, dropped, head_seq, head_info)

    @staticmethod
    def _approvals(gw: Any) -> Iterator[Metric]:
        approvals = getattr(gw, "approvals", None)
        if approvals is None:
            return
        status = approvals.status()
        waiting = GaugeMetricFamily("mcpwall_approvals_pending", "Calls held now, waiting for a person")
        waiting.add_metric([], float(status.get("waiting", 0)))
        total = CounterMetricFamily("mcpwall_approvals", "Asks by outcome", labels=["outcome"])
        for outcome in ("asked", "granted", "approved", "denied", "expired", "cancelled", "invalid"):
            total.add_metric([outcome], float(status.get(outcome, 0)))
        yield from (waiting, total)

    @staticmethod
    def _webhooks(gw: Any) -> Iterator[Metric]:
        notifier = getattr(gw, "notifier", None)
        if notifier is None:
            return
        deliveries = CounterMetricFamily("mcpwall_webhook_deliveries", "Webhook notifications by destination "
                                         "and result", labels=["webhook", "result"])
        queued = GaugeMetricFamily("mcpwall_webhook_queue_depth", "Notifications waiting to be sent",
                                   labels=["webhook"])
        for name, stats in notifier.stats().items():
            for result in ("sent", "failed", "dropped", "retried"):
                deliveries.add_metric([name, result], float(stats.get(result, 0)))
            queued.add_metric([name], float(stats.get("queued", 0)))
        yield from (deliveries, queued)


__all__ = ["CIRCUIT_STATES", "CONTENT_TYPE", "KNOWN_METHODS", "LATENCY_BUCKETS", "MAX_TOOL_LABELS", "UPSTREAM_STATES",
           "Counts", "GatewayMetrics", "decision_word", "tool_error"]
