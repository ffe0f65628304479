"""Pipeline stages: small classes with one hook each, run in one ordered list.

A stage is a class with a `name` and any of three hooks:

- `on_request(ctx)`: fires for every client request the gateway is about to
  dispatch, in pipeline order, after the envelope was parsed and the target
  server resolved. Return a `Reject` to stop the request with a JSON-RPC
  error; return None to let it continue. May rewrite `ctx.params`.
- `on_response(ctx, response)`: fires with the upstream's (or the gateway's
  local) answer, in pipeline order; returns the response to pass on.
- `on_complete(ctx)`: fires once when the request has ended, whatever the
  outcome (answered, rejected, failed, timed out): `ctx.outcome` says which.
  Observers only (ledger, metrics, notifications); must not raise. It runs
  before the answer is sent, so a strict ledger can commit first.

Outside a client's request, two more, in the same order:

- `on_server_message(session_id, msg)`: a message a server sends a client
  on its own (a log line, progress, a sampling or elicitation request), or
  an answer no response hook read; returns the message to pass on (DLP
  masks secrets here).
- `on_client_answer(session, answer)`: a client's answer to a server's
  request (sampling output, elicited input); returns why it must not reach
  the server, or None (the honeytoken tripwire and DLP's exfiltration check
  refuse here). A stage applies audit mode itself: in audit mode it logs and
  returns None unless its finding blocks in every mode.

Lifecycle: `bind(gateway)` when the gateway is built, `start()` before the
upstreams connect, `stop()` at shutdown (after the frontends close).

Stages fail closed: an exception in `on_request` or `on_response` becomes a
deny (BLOCKED) with the error recorded in `ctx.notes["stage_error"]`
(mitmproxy logs and carries on; we do not).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from mcpwall.pipeline._context import RequestContext
from mcpwall.pipeline._session import Send, Session
from mcpwall.protocol import ErrorCode, Message

if TYPE_CHECKING:
    from mcpwall.pipeline._view import GatewayView

#: Sends one message to the client that made the request (an HTTP response stream, stdout).
Emit = Send


@dataclass(slots=True)
class Reject:
    """Stop a request: the JSON-RPC error to answer with, and the HTTP status for HTTP routes."""

    code: int
    message: str
    data: dict[str, Any] | None = None
    http_status: int = 200
    #: the outcome recorded for this rejection (ledger `decision`)
    outcome: str = "deny"


class Stage:
    """Base class: override only the hooks a stage needs (the pipeline skips the rest)."""

    name: ClassVar[str] = "stage"

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        return None

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        return response

    def on_complete(self, ctx: RequestContext) -> Awaitable[None] | None:
        """May return an awaitable; the pipeline awaits it before the answer is sent."""
        return None

    def on_server_message(self, session_id: str, msg: Message) -> Message:
        return msg

    def on_client_answer(self, session: Session, answer: Message) -> str | None:
        return None

    def bind(self, gateway: GatewayView) -> None:
        """Called once when the gateway is built, before it starts."""
        return None

    async def start(self) -> None:
        """Called when the gateway starts, before any upstream connects (open files, connections)."""
        return None

    async def stop(self) -> None:
        """Called when the gateway stops, after the frontends closed (flush, close)."""
        return None

    def status(self) -> dict[str, Any]:
        """Counters for /health and /metrics."""
        return {}


def blocked(message: str, **data: Any) -> Reject:
    return Reject(ErrorCode.BLOCKED, message, data or None)


__all__ = ["Emit", "Reject", "RequestContext", "Stage", "blocked"]
