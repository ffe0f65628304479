"""The gateway's requests to an upstream: what is pending, and how one fails."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from mcpwall.errors import InternalError
from mcpwall.protocol import ErrorCode, Message, RequestId


class UpstreamError(InternalError):
    """A request could not be answered by the upstream; carries the JSON-RPC error data."""

    def __init__(self, message: str, reason: str, code: int = ErrorCode.UPSTREAM_ERROR) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code


@dataclass(slots=True)
class Pending:
    """A request we sent upstream and are waiting on."""

    future: asyncio.Future[Message]
    method: str
    session_id: str | None
    downstream_id: RequestId | None
    progress_token: Any = None
    emit: Any = None
    timeout: float = 0.0


def settled(future: asyncio.Future[Message]) -> bool:
    """Answered by the server, or failed because it went away (not: cancelled, timed out, unsent)."""
    if not future.done() or future.cancelled():
        return False
    exc = future.exception()
    return exc is None or isinstance(exc, UpstreamError)


def expire(future: asyncio.Future[Message]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


__all__ = ["Pending", "UpstreamError", "expire", "settled"]
