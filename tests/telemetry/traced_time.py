"""mcp-server-time (from PyPI) with the OpenTelemetry SDK on: its spans go over OTLP/HTTP.

The MCP SDK's servers open a span per request, joined to the `traceparent` in the request's
`_meta`; they are recorded only where the process has a tracer provider, which this launcher
installs before it runs the server (the endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Each span
is exported as it ends, so it has reached the collector before the answer leaves.
"""

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource({"service.name": "traced-time"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

from mcp_server_time import main  # type: ignore[import-untyped]  # noqa: E402 - after the provider

main()
