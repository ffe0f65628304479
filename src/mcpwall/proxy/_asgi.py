"""The raw ASGI the HTTP frontend is written in: a whole answer in two events, a body read
within a size bound, and what a request's scope says about its caller.

The frontend is a bare ASGI app because the relay path is the hot path (see `_http`), so these
are the few pieces a framework would otherwise give it, kept as plain functions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE

from mcpwall.protocol import ErrorCode, Message

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

JSON: Headers = [(b"content-type", b"application/json")]
#: sent with a refusal at the door: a refused client gets no connection to hold open (see `_conn`)
CLOSE: Headers = [(b"connection", b"close")]
#: The key of an `http.response.start` whose whole body the sender sends next (`reply`): its value is
#: `head_lines`' (header lines, content length, whether a header closes the connection), and the
#: gateway's connections write the start with the body (`_respond`).
BODY_FOLLOWS = "mcpwall.body_follows"


async def reply(send: Send, status: int, body: bytes = b"", headers: Headers | None = None) -> None:
    """Answer with `body` whole (JSON unless `headers` say otherwise); the gateway's connections write
    the start, its header lines built here (`head_lines`), and the body in one write (`_respond`)."""
    given = headers or JSON
    length = str(len(body)).encode()
    await send({"type": "http.response.start", "status": status, "headers": [*given, (b"content-length", length)],
                BODY_FOLLOWS: head_lines(given, length, len(body))})
    await send({"type": "http.response.body", "body": body})


#: header -> (its line as uvicorn writes it, whether it closes the connection), each distinct header
#: checked once (most are constants; a session's id is one a session)
_LINES: dict[tuple[bytes, bytes], tuple[bytes, bool]] = {}


def head_lines(headers: Headers, length: bytes, size: int) -> tuple[bytes, int, bool] | None:
    """`headers` and a content-length of `length` as the lines uvicorn's `send` writes for them, with
    the body's `size` and whether a `Connection` header closes the connection: what `_respond.respond`
    writes with the body. None when uvicorn's own rules must see them (`header_lines`)."""
    lines = header_lines(headers)
    if lines is None:
        return None
    return lines[0] + b"content-length: " + length + b"\r\n", size, lines[1]


def header_lines(headers: Headers) -> tuple[bytes, bool] | None:
    """`headers` as uvicorn writes them (names lowered, each a line) and whether one closes the
    connection; None for a header uvicorn refuses (its own patterns) or one its rules read (a
    content-length, a transfer-encoding), which take uvicorn's way."""
    out: list[bytes] = []
    close = False
    for header in headers:
        known = _LINES.get(header)
        if known is None:
            known = _line(header)
            if known is None:
                return None
        out.append(known[0])
        close = close or known[1]
    return b"".join(out), close


def _line(header: tuple[bytes, bytes]) -> tuple[bytes, bool] | None:
    name, value = header
    if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
        return None  # (uvicorn refuses it: its own way says so)
    low = name.lower()
    if low == b"content-length" or low == b"transfer-encoding":
        return None
    known = (low + b": " + value + b"\r\n",
             low == b"connection" and b"close" in [token.lower().strip() for token in value.split(b",")])
    if len(_LINES) >= 4096:
        _LINES.clear()
    _LINES[header] = known
    return known


async def reply_json(send: Send, status: int, value: Any, headers: Headers | None = None) -> None:
    """Answer with `value` as JSON, `headers` added to the content type."""
    await reply(send, status, orjson.dumps(value), JSON + (headers or []))


async def answer(send: Send, response: Message | None, extra: Headers,
                 status_of: Callable[[Message], int] | None = None) -> None:
    """Answer a JSON-RPC request with its response, or 202 when none follows (it was cancelled).
    `status_of` gives the response's HTTP status (default `status_for`)."""
    if response is None:
        await reply(send, 202, b"", extra)
    else:
        await reply(send, (status_of or status_for)(response), orjson.dumps(response), JSON + extra)


def status_for(response: Message) -> int:
    """HTTP status of a JSON-RPC answer: 200, except for rejections that carry their own."""
    err = response.get("error")
    if not isinstance(err, dict):
        return 200
    code = err.get("code")
    return 401 if code == ErrorCode.UNAUTHORIZED else 429 if code == ErrorCode.RATE_LIMITED else 200


class BodyTooLarge(Exception):
    """A body over the size bound; `head` is its first bytes (enough to tell whose request it was)."""

    def __init__(self, head: bytes = b"") -> None:
        super().__init__("body too large")
        self.head = head


async def read_body(receive: Receive, limit: int) -> bytes:
    """The request's body, read whole; `BodyTooLarge` past `limit` bytes, `ConnectionError` when
    the client goes first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            raise ConnectionError("client disconnected")
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(b"".join(chunks)[:256] if chunks else chunk[:256])
        chunks.append(chunk)
        if not event.get("more_body", False):
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]


async def wait_disconnect(receive: Receive) -> None:
    """Return when the client has gone (for a response that outlives the request's body)."""
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return


def peer(scope: Scope) -> str:
    """The caller's address as the ledger records it ("" when the server does not say)."""
    client = scope.get("client")
    return f"{client[0]}" if client else ""


__all__ = [
    "BODY_FOLLOWS",
    "CLOSE",
    "JSON",
    "App",
    "BodyTooLarge",
    "Headers",
    "Receive",
    "Scope",
    "Send",
    "answer",
    "head_lines",
    "header_lines",
    "peer",
    "read_body",
    "reply",
    "reply_json",
    "status_for",
    "wait_disconnect",
]
