"""An OTLP/HTTP trace receiver on 127.0.0.1: what a collector sees of the spans sent to it.

It decodes each POST to `/v1/traces` as an `ExportTraceServiceRequest` with the generated
classes of `opentelemetry-proto` (the real wire format, protobuf, gzip or not), answers with an
`ExportTraceServiceResponse`, and keeps every span as a `Received` record.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

KINDS = {
    Span.SPAN_KIND_SERVER: "server",
    Span.SPAN_KIND_CLIENT: "client",
    Span.SPAN_KIND_INTERNAL: "internal",
    Span.SPAN_KIND_PRODUCER: "producer",
    Span.SPAN_KIND_CONSUMER: "consumer",
}


@dataclass
class Received:
    """One span as the collector decoded it (ids in lower-case hex, as in a traceparent)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: str
    attributes: dict[str, Any]
    error: bool
    status_message: str
    service: str
    trace_state: str


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, which) if which else None


@dataclass
class Receiver:
    url: str = ""
    spans: list[Received] = field(default_factory=list)
    content_types: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            for rs in request.resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            Received(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                KINDS[s.kind],
                                {a.key: _value(a.value) for a in s.attributes},
                                s.status.code == Status.STATUS_CODE_ERROR,
                                s.status.message,
                                str(resource.get("service.name", "")),
                                s.trace_state,
                            )
                        )

    def named(self, name: str, service: str = "mcpwall") -> list[Received]:
        return [s for s in self.spans if s.name == name and s.service == service]

    def children(self, parent: Received) -> list[Received]:
        return [s for s in self.spans if s.parent_id == parent.span_id and s.trace_id == parent.trace_id]


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver listening on a free port of 127.0.0.1 for the block; `url` is its base URL."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            receiver.content_types.add(self.headers.get("Content-Type", ""))
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
