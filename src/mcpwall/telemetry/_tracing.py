"""The tracer: a span per call, a child per stage hook and one for the forward, exported over OTLP.

Loaded only when traces are on (`mcpwall.telemetry.tracing_from`), so this is
the one module that imports OpenTelemetry. The tracer provider is the
gateway's own, never the process-global one: the MCP SDK in the same process
(the tests' clients, `mcpwall mcp`) must not start recording or injecting
trace context because a gateway traces.

A call's span (kind SERVER) joins the caller's trace: the W3C `traceparent`
and `tracestate` in the request's `params._meta` (where MCP's convention and
the 2026-07-28 revision carry them), else the HTTP request's own headers.
The forward to the upstream is a CLIENT span under it, whose context replaces
the `traceparent`/`tracestate` in the `_meta` the upstream receives, so the
server's own spans hang under the gateway's. Spans leave in batches from a
background thread (the SDK's BatchSpanProcessor); `stop` flushes them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcpwall import __version__
from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import Message
from mcpwall.telemetry._attributes import call_attributes, end_attributes, span_name, target
from mcpwall.telemetry._config import TelemetryConfig

log = logging.getLogger("mcpwall.telemetry")

_PROPAGATOR = TraceContextTextMapPropagator()
#: the W3C trace-context keys, in `_meta` as in HTTP headers
TRACE_KEYS = ("traceparent", "tracestate")
Dispatch = Callable[[RequestContext], Awaitable[Message | None]]


class Call:
    """A call's span and the context its children start from (`RequestContext.span`)."""

    __slots__ = ("context", "span")

    def __init__(self, span: Span, context: Context) -> None:
        self.span = span
        self.context = context


class Tracing:
    """One gateway's tracer and exporter; a service, so the gateway's stop flushes it."""

    name = "telemetry"

    def __init__(self, config: TelemetryConfig, exporter: SpanExporter | None = None) -> None:
        self.config = config
        detected = Resource.create({"service.version": __version__})
        service = config.service_name or str(detected.attributes.get("service.name", ""))
        if not service or service.startswith("unknown_service"):
            service = "mcpwall"
        sampler = (
            ParentBased(TraceIdRatioBased(config.sample_ratio)) if config.sample_ratio is not None else None
        )
        # shutdown_on_exit=False: `stop` flushes; an atexit hook per gateway would pile up in a test run.
        self.provider = TracerProvider(
            resource=detected.merge(Resource({"service.name": service})),
            sampler=sampler,
            shutdown_on_exit=False,
        )
        inner = (
            exporter
            if exporter is not None
            else OTLPSpanExporter(
                endpoint=config.endpoint,
                headers=dict(config.headers) if config.headers else None,
                timeout=config.timeout_s,
            )
        )
        self.exporter = _Counting(inner)
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.tracer: Tracer = self.provider.get_tracer("mcpwall", __version__)

    # ------------------------------------------------------------------ a call

    def begin(self, ctx: RequestContext) -> None:
        """Open the call's span, from when the gateway received the request."""
        parent = self._parent(ctx)
        span = self.tracer.start_span(
            span_name(ctx),
            context=parent,
            kind=SpanKind.SERVER,
            attributes=call_attributes(ctx),
            start_time=int(ctx.started_wall * 1e9),
        )
        ctx.span = Call(span, set_span_in_context(span, parent))

    def end(self, ctx: RequestContext) -> None:
        """Close the call's span with what the gateway decided and answered."""
        call = ctx.span
        if not isinstance(call, Call):
            return
        attrs, problem = end_attributes(ctx)
        call.span.set_attributes(attrs)
        if problem is not None:
            call.span.set_status(StatusCode.ERROR, problem)
        call.span.end()

    @staticmethod
    def _parent(ctx: RequestContext) -> Context:
        """The caller's trace: `params._meta` first (it travels with the message), then the HTTP headers."""
        meta = ctx.params.get("_meta")
        carrier: Mapping[str, str] | None = None
        if isinstance(meta, dict) and isinstance(meta.get("traceparent"), str):
            carrier = {k: meta[k] for k in TRACE_KEYS if isinstance(meta.get(k), str)}
        elif ctx.trace_headers:
            carrier = ctx.trace_headers
        if carrier is None:
            return Context()
        return _PROPAGATOR.extract(carrier, context=Context())

    async def forward(self, dispatch: Dispatch, ctx: RequestContext) -> Message | None:
        """The dispatch inside a CLIENT span when it goes upstream, its context in the forwarded `_meta`."""
        call = ctx.span
        if ctx.server is None or not isinstance(call, Call):
            return await dispatch(ctx)  # answered by the gateway itself: the call's span covers it
        name = target(ctx)
        attrs: dict[str, Any] = {"mcp.method.name": ctx.method, "mcpwall.server.name": ctx.server}
        if ctx.method == "tools/call" and name:
            attrs["gen_ai.operation.name"] = "execute_tool"
            attrs["gen_ai.tool.name"] = name
        span = self.tracer.start_span(
            span_name(ctx), context=call.context, kind=SpanKind.CLIENT, attributes=attrs
        )
        params = ctx.params
        meta = params.get("_meta", {})
        if isinstance(meta, dict):  # a `_meta` that is no object stays as the client sent it
            carried = {k: v for k, v in meta.items() if k not in TRACE_KEYS}
            _PROPAGATOR.inject(carried, context=set_span_in_context(span, Context()))
            ctx.params = {**params, "_meta": carried}
        with _Child(span):
            try:
                response = await dispatch(ctx)
            finally:
                ctx.params = params  # the stages after, and the ledger, see what the client sent
            err = response.get("error") if response is not None else None
            if isinstance(err, dict):
                code = str(err.get("code"))
                span.set_attributes({"error.type": code, "rpc.response.status_code": code})
                span.set_status(StatusCode.ERROR, str(err.get("message") or code))
        return response

    def traced(self, stages: Sequence[Stage], hook: str) -> list[Stage]:
        """`stages` (the pipeline's list for `hook`), each inside a child span of the call's."""
        return [_wrap(stage, hook, self.tracer) for stage in stages]

    # ------------------------------------------------------------------ service

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        """Flush what is queued and stop the exporter's thread (a blocking call: off the event loop)."""
        await asyncio.to_thread(self.provider.shutdown)

    def status(self) -> dict[str, Any]:
        return {
            "exporter": "otlp/http",
            "endpoint": getattr(self.exporter.inner, "_endpoint", self.config.endpoint),
            "spans_exported": self.exporter.exported,
            "spans_failed": self.exporter.failed,
        }


class _Counting(SpanExporter):
    """The OTLP exporter, counting what it delivered and what it could not, for `/health`."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _failed(span: Span, exc: BaseException) -> None:
    if isinstance(exc, Exception):
        span.record_exception(exc)
    span.set_attribute("error.type", type(exc).__qualname__)
    span.set_status(StatusCode.ERROR, str(exc) or type(exc).__qualname__)
    span.end()


class _Child:
    """A stage hook's span for a `with` block: ended on the way out, marked failed by an exception."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def __enter__(self) -> Span | None:
        return self.span

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if self.span is not None:
            if exc is not None:
                _failed(self.span, exc)
            else:
                self.span.end()


class _TracedStage(Stage):
    """One stage's hook in a child span of the call's (`mcpwall.stage`, `mcpwall.hook`).

    Made per stage by `_wrap`, as a subclass carrying the stage's `name`: the pipeline's
    timings and its fail-closed errors name the stage, never the wrapper."""

    def __init__(self, inner: Stage, hook: str, tracer: Tracer) -> None:
        self.inner = inner
        self._tracer = tracer
        self._span_name = f"{hook} {inner.name}"
        self._attrs = {"mcpwall.stage": inner.name, "mcpwall.hook": hook}

    def _child(self, ctx: RequestContext) -> _Child:
        call = ctx.span
        if not isinstance(call, Call):
            return _Child(None)
        return _Child(self._tracer.start_span(self._span_name, context=call.context, attributes=self._attrs))

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        with self._child(ctx) as span:
            verdict = await self.inner.on_request(ctx)
            if verdict is not None and span is not None:
                span.set_attributes(
                    {"mcpwall.verdict": verdict.outcome, "rpc.response.status_code": str(verdict.code)}
                )
                span.set_status(StatusCode.ERROR, verdict.message)
        return verdict

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        with self._child(ctx):
            return await self.inner.on_response(ctx, response)

    def on_complete(self, ctx: RequestContext) -> Awaitable[None] | None:
        child = self._child(ctx)
        try:
            outcome = self.inner.on_complete(ctx)
        except BaseException as exc:
            child.__exit__(None, exc, None)
            raise
        if outcome is not None and inspect.isawaitable(outcome):
            return self._awaited(child, outcome)  # a strict ledger's commit: the span waits for it
        child.__exit__(None, None, None)
        return None

    @staticmethod
    async def _awaited(child: _Child, outcome: Awaitable[None]) -> None:
        with child:
            await outcome


def _wrap(stage: Stage, hook: str, tracer: Tracer) -> Stage:
    cls: type[_TracedStage] = type(f"Traced{type(stage).__name__}", (_TracedStage,), {"name": stage.name})
    return cls(stage, hook, tracer)


__all__ = ["TRACE_KEYS", "Call", "Tracing"]
