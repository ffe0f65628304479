"""The numbers `GatewayMetrics` counts as each request finishes (compiled: see `mcpwall._native`).

Every request passes `Counts.observe` once (the metrics stage's `on_complete`); run as Python
its five dict updates and the bucket search cost ~21,000 instructions a call
(bench/instructions.py, callgrind). `GatewayMetrics` reads the tables at scrape time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import RequestContext
from mcpwall.protocol import ErrorCode

MAX_TOOL_LABELS = 2000
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                   60.0, 120.0, 300.0)
KNOWN_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "server/discover",
})
#: The bounds as a list for `bucket` (compiled, a constant tuple is rebuilt, 18 floats, each time it is read).
_BOUNDS: list[float] = list(LATENCY_BUCKETS)
#: The counter tables: `requests` by (method, decision), `tool_calls` by (server, tool, decision).
COUNTERS = ("tool_calls", "requests")
#: The histogram tables: `call_seconds` and `upstream_seconds` by server, `request_seconds` by method.
HISTOGRAMS = ("call_seconds", "upstream_seconds", "request_seconds")


def tool_error(response: Mapping[str, Any] | None) -> bool:
    """A result the upstream marked `isError` (the ledger records it as decision "error")."""
    result = response.get("result") if response is not None else None
    return isinstance(result, dict) and result.get("isError") is True


def decision_word(ctx: RequestContext) -> str:
    """The ledger's `decision` for a finished request (the rule of `mcpwall.stages.audit`)."""
    outcome, response, decision = ctx.outcome, ctx.response, ctx.decision
    if outcome == "ok":
        if tool_error(response):
            return "error"
        return decision.action if decision is not None else "allow"
    if outcome == "pending":
        return "failed"
    if outcome in ("deny", "ask-denied"):
        err = response.get("error") if response is not None else None
        code = err.get("code") if isinstance(err, dict) else None
        return "invalid" if code == ErrorCode.INVALID_PARAMS else "deny"
    return outcome


class Histogram:
    """Bucket counts (the last one +Inf) and a sum; exposed through `HistogramMetricFamily` at scrape time."""

    def __init__(self) -> None:
        self.counts: list[int] = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bucket(value)] += 1
        self.total += value


def bucket(value: float) -> int:
    """`bisect.bisect_left(LATENCY_BUCKETS, value)`: the first bucket whose bound is not below it.
    (A loop over a list, not bisect over the tuple: compiled, the constant tuple is boxed anew, 18
    floats, each time it is read; most calls end in the first buckets.)"""
    i = 0
    for bound in _BOUNDS:
        if not bound < value:
            return i
        i += 1
    return i


class Counts:
    """The per-request tables of one gateway: counters by label tuple, histograms by label."""

    def __init__(self, max_tool_labels: int = MAX_TOOL_LABELS) -> None:
        self.max_tool_labels = max_tool_labels
        self.counters: dict[str, dict[tuple[str, ...], int]] = {k: {} for k in COUNTERS}
        self.histograms: dict[str, dict[str, Histogram]] = {k: {} for k in HISTOGRAMS}
        self._tools: set[tuple[str, str]] = set()

    def _tool_label(self, server: str, tool: str) -> str:
        """The tool's own name, until `max_tool_labels` pairs are counted (then "_other")."""
        key = (server, tool)
        if key in self._tools:
            return tool
        if len(self._tools) >= self.max_tool_labels or len(tool) > 200:
            return "_other"
        self._tools.add(key)
        return tool

    def _count(self, which: str, labels: tuple[str, ...]) -> None:
        table = self.counters[which]
        table[labels] = table.get(labels, 0) + 1

    def _observe(self, which: str, label: str, value: float) -> None:
        table = self.histograms[which]
        histogram = table.get(label)
        if histogram is None:
            histogram = table[label] = Histogram()
        histogram.observe(value)

    def observe(self, ctx: RequestContext, now: float) -> None:
        """Count one finished request (`now`: time.perf_counter() when it finished)."""
        word = decision_word(ctx)
        method = ctx.method if ctx.method in KNOWN_METHODS else "other"
        elapsed = max(0.0, now - ctx.started)
        self._count("requests", (method, word))
        self._observe("request_seconds", method, elapsed)
        server = ctx.server or "_gateway"
        if ctx.method == "tools/call":
            given = ctx.params.get("name")
            name = ctx.target or (given if isinstance(given, str) else "")
            self._count("tool_calls", (server, self._tool_label(server, name), word))
            self._observe("call_seconds", server, elapsed)
        upstream_ms = ctx.upstream_ms
        if upstream_ms is not None and ctx.server is not None:
            self._observe("upstream_seconds", ctx.server, upstream_ms / 1000)


__all__ = ["COUNTERS", "HISTOGRAMS", "KNOWN_METHODS", "LATENCY_BUCKETS", "MAX_TOOL_LABELS", "Counts", "Histogram",
           "bucket", "decision_word", "tool_error"]
