"""Which trace a call joins, and what its forward tells the upstream: the tracer's hooks called
directly on fixture requests (tests/harness.py `context`), spans kept by the SDK's in-memory
exporter. The end-to-end path over OTLP is test_otlp_export.py's."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpwall.protocol import Message
from mcpwall.stages import RequestContext
from mcpwall.telemetry import TelemetryConfig
from mcpwall.telemetry._tracing import Tracing
from tests.harness import context

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
OTHER = "4bf92f3577b34da6a3ce929d0e0e4736"


def traced_call(meta: Any = None, headers: dict[str, str] | None = None) -> tuple[Tracing, RequestContext]:
    params: dict[str, Any] = {"name": "read_file", "arguments": {"path": "/tmp/x"}}
    if meta is not None:
        params["_meta"] = meta
    ctx = context(params=params)
    ctx.trace_headers = headers
    tracing = Tracing(TelemetryConfig(), InMemorySpanExporter())
    tracing.begin(ctx)
    return tracing, ctx


def finished(tracing: Tracing, ctx: RequestContext) -> Any:
    tracing.end(ctx)
    tracing.provider.shutdown()  # flushes
    exporter = tracing.exporter.inner
    assert isinstance(exporter, InMemorySpanExporter)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "tools/call read_file"]
    return span


def test_the_meta_traceparent_wins_over_the_http_header() -> None:
    tracing, ctx = traced_call(
        {"traceparent": f"00-{TRACE}-{PARENT}-01"}, {"traceparent": f"00-{OTHER}-{PARENT}-01"}
    )
    span = finished(tracing, ctx)
    assert (f"{span.context.trace_id:032x}", f"{span.parent.span_id:016x}") == (TRACE, PARENT)


def test_the_http_header_is_joined_when_meta_has_no_traceparent() -> None:
    tracing, ctx = traced_call({"progressToken": 1}, {"traceparent": f"00-{OTHER}-{PARENT}-01"})
    assert f"{finished(tracing, ctx).context.trace_id:032x}" == OTHER


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": "00-zz-yy-01"},
        {"traceparent": 42},
        "not an object",
        {"traceparent": f"00-{'0' * 32}-{PARENT}-01"},
    ],
)
def test_a_malformed_traceparent_starts_a_trace_of_its_own(meta: Any) -> None:
    tracing, ctx = traced_call(meta)
    span = finished(tracing, ctx)
    assert span.parent is None
    assert span.context.is_valid


@pytest.mark.anyio
async def test_the_forward_carries_its_own_span_upstream_and_leaves_the_clients_params_alone() -> None:
    tracing, ctx = traced_call(
        {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "a=1", "progressToken": 7}
    )
    sent: list[dict[str, Any]] = []

    async def dispatch(c: RequestContext) -> Message:
        sent.append(c.params)
        return {"jsonrpc": "2.0", "id": c.id, "result": {"content": []}}

    original = ctx.params
    await tracing.forward(dispatch, ctx)
    assert ctx.params is original
    meta = sent[0]["_meta"]
    assert meta["progressToken"] == 7
    assert meta["tracestate"] == "a=1"
    version, trace, parent, flags = meta["traceparent"].split("-")
    assert (version, trace, flags) == ("00", TRACE, "01")
    tracing.provider.shutdown()  # flushes
    exporter = tracing.exporter.inner
    assert isinstance(exporter, InMemorySpanExporter)
    (forward,) = [s for s in exporter.get_finished_spans() if s.kind.name == "CLIENT"]
    assert f"{forward.context.span_id:016x}" == parent
