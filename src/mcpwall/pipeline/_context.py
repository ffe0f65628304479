"""What one client request carries across the pipeline (`RequestContext`), compiled.

Every stage reads it, most of them several fields, on every call: ~160 reads a shipped
`tools/call`. As a Python slots dataclass each read from a compiled stage was a generic attribute
lookup (the type's method cache, then the slot's descriptor, ~180 instructions); as a compiled
class it is a load at a fixed offset. Its `__init__` is written out rather than made by
`@dataclass`: on a compiled class the decorator's `__init__` is interpreted code, called with the
keywords in a dict (issue 28).

Compiled, a field's declared type is checked when it is set, from Python too (a `str` field given
an int raises); the gateway, the session and `emit` are of classes compiled code does not check.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline._session import Send, Session
from mcpwall.protocol import Message, RequestId

if TYPE_CHECKING:
    from mcpwall.pipeline._view import GatewayView
    from mcpwall.policy import Decision


class RequestContext:
    """Everything known about one client request as it crosses the pipeline."""

    __slots__ = ("bytes_in", "bytes_out", "decision", "emit", "error_message", "gateway", "id", "message", "method", "notes", "outcome", "params", "probe", "response", "server", "session", "shared", "span", "started", "started_wall", "target", "timeout_ms", "trace_headers", "upstream_ms")

    gateway: GatewayView
    session: Session
    message: Message
    method: str
    #: the request's JSON-RPC id ("" for a refused message without one)
    id: RequestId
    params: dict[str, Any]
    #: the upstream server this request is routed to (None: answered by the gateway)
    server: str | None
    #: the name the upstream knows (tool or prompt name without the `server__` prefix, or a URI)
    target: str
    #: sends one message to the client that made the request, or None
    emit: Send | None
    decision: Decision | None
    timeout_ms: int | None
    started: float
    started_wall: float
    upstream_ms: float | None
    #: "ok", "error" (the upstream answered with an error), "deny", "ask-denied", "timeout",
    #: "failed" (transport), "rejected" (auth, rate, protocol), "cancelled"
    outcome: str
    response: Message | None
    error_message: str | None
    #: per-stage annotations for the ledger (e.g. DLP redactions) and timings
    notes: dict[str, Any]
    bytes_in: int
    bytes_out: int
    #: this request is its server's half-open circuit probe (see stages/circuit.py)
    probe: bool
    #: the W3C trace context of the HTTP request that carried it (`traceparent`, `tracestate`)
    trace_headers: dict[str, str] | None
    #: the call's span while traces are on (`mcpwall.telemetry`), else None
    span: Any
    #: what one stage derived from this message that another reuses rather than derives again
    #: (keyed by what derived it, e.g. `stages._kit.call_facts`)
    shared: dict[str, Any]

    def __init__(self, gateway: GatewayView, session: Session, message: Message, method: str, id: RequestId,
                 params: dict[str, Any], server: str | None = None, target: str = "", emit: Send | None = None,
                 decision: Decision | None = None, timeout_ms: int | None = None,
                 bytes_in: int = 0, trace_headers: dict[str, str] | None = None) -> None:
        self.gateway = gateway
        self.session = session
        self.message = message
        self.method = method
        self.id = id
        self.params = params
        self.server = server
        self.target = target
        self.emit = emit
        self.decision = decision
        self.timeout_ms = timeout_ms
        self.started = time.perf_counter()
        self.started_wall = time.time()
        self.upstream_ms = None
        self.outcome = "pending"
        self.response = None
        self.error_message = None
        self.notes = {}
        self.bytes_in = bytes_in
        self.bytes_out = 0
        self.probe = False
        self.trace_headers = trace_headers
        self.span = None
        self.shared = {}

    def __repr__(self) -> str:
        return (f"RequestContext(method={self.method!r}, id={self.id!r}, server={self.server!r}, "
                f"target={self.target!r}, outcome={self.outcome!r})")


__all__ = ["RequestContext"]
