"""uvicorn's `RequestResponseCycle.send` (httptools) for the gateway's connections: the same answer on
the wire, in one write instead of two when the whole body follows at once.

uvicorn writes a response's status line and headers as soon as the app sends `http.response.start`,
then its body with `http.response.body`: two `write` calls (two TCP segments on loopback) for every
answer, and its `send` checks and lowers every header of every answer in Python (~350 bytecodes a
call, the most of any one function on the call path). This is that `send` with one change: a start
that carries `BODY_FOLLOWS` (the gateway's `_asgi.reply`, which sends the body right after) brings
its header lines already checked and built (`head_lines`, compiled, each distinct header checked
once), and is held and written together with its body. Any other start (a stream's, a HEAD's, one
from Starlette, one whose headers `head_lines` leaves to uvicorn's rules) takes uvicorn's way and is
written at once; a held start is held only until its body, which that sender sends next.

`_conn.guarded_protocol` gives each request cycle of the httptools protocol a `send` that calls
`respond`, and a `held` (None); `respond` reads and sets the cycle's own attributes, so uvicorn's flow
control, keep-alive, disconnect and pipelining state stay what uvicorn keeps
(tests/proxy/test_respond.py holds the bytes on the wire to uvicorn's own, shape by shape).

Not compiled: it reads a dozen attributes of uvicorn's cycle, a plain Python object, which compiled
code looks up generically (`PyObject_GetAttr`) where the interpreter's specialised reads are cheaper
(compiled, the whole of uvicorn's `send` cost ~6,000 instructions a call more than interpreted).
"""

from __future__ import annotations

from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE, STATUS_LINE

#: The key of an `http.response.start` whose whole body the sender sends next (`_asgi.reply`): its
#: value is `head_lines`' (header lines, content length, whether a header closes the connection).
BODY_FOLLOWS: Final = "mcpwall.body_follows"

#: what uvicorn refuses in a header's name and value (its own patterns: `_asgi.head_lines` checks with them)
HEADER_NAME: Final = HEADER_RE
HEADER_VALUE: Final = HEADER_VALUE_RE
_header_name = HEADER_RE.search
_header_value = HEADER_VALUE_RE.search
_status_line: dict[int, bytes] = STATUS_LINE
#: uvicorn's default headers (the date, renewed each second: a new list) last seen, and their lines
_defaults: list[Any] = [None, b""]


async def respond(cycle: Any, message: Any) -> None:
    """`RequestResponseCycle.send` for `cycle`, holding a start marked `BODY_FOLLOWS` for its body."""
    if cycle.flow.write_paused and not cycle.disconnected:
        await cycle.flow.drain()
    if cycle.disconnected:
        return
    if not cycle.response_started:
        follows = message.get(BODY_FOLLOWS)
        if follows is not None and message["type"] == "http.response.start" and not cycle.access_log \
                and cycle.scope["method"] != "HEAD":
            defaults = cycle.default_headers
            first = _defaults[1] if defaults is _defaults[0] else _default_lines(defaults)
            if first is not None:
                lines, length, close = follows
                cycle.response_started = True
                cycle.waiting_for_100_continue = False
                cycle.chunked_encoding = False
                cycle.expected_content_length = length
                if close:
                    cycle.keep_alive = False
                    end = b"\r\n"
                else:
                    end = b"\r\n" if cycle.keep_alive else b"connection: close\r\n\r\n"
                cycle.held = b"".join((_status_line[message["status"]], first, lines, end))
                return
        _start(cycle, message)
    elif not cycle.response_complete:
        if message["type"] != "http.response.body":
            raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{message['type']}'.")
        body: bytes = message.get("body", b"")
        more_body = message.get("more_body", False)
        held: bytes | None = cycle.held
        if cycle.scope["method"] == "HEAD":
            cycle.expected_content_length = 0  # (a HEAD's start is never held)
        elif cycle.chunked_encoding:
            out = [held] if held is not None else []
            if body:
                out.extend((b"%x\r\n" % len(body), body, b"\r\n"))
            if not more_body:
                out.append(b"0\r\n\r\n")
            cycle.transport.write(b"".join(out))
        else:
            expected: int = cycle.expected_content_length
            if len(body) > expected:
                raise RuntimeError("Response content longer than Content-Length")
            cycle.expected_content_length = expected - len(body)
            cycle.transport.write(held + body if held is not None else body)
        if held is not None:
            cycle.held = None
        if not more_body:
            if cycle.expected_content_length != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            cycle.response_complete = True
            del cycle.send  # (a partial holding the cycle: without it, the cycle is freed when uvicorn drops it)
            cycle.message_event.set()
            if not cycle.keep_alive:
                cycle.transport.close()
            cycle.on_response()
    else:
        raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent, after response already completed.")


def _start(cycle: Any, message: Any) -> None:
    """uvicorn's start of a response, written at once: its checks and header rules."""
    if message["type"] != "http.response.start":
        raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{message['type']}'.")
    cycle.response_started = True
    cycle.waiting_for_100_continue = False
    status_code = message["status"]
    if cycle.access_log:
        from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

        scope = cycle.scope
        cycle.access_logger.info('%s - "%s %s HTTP/%s" %d', get_client_addr(scope), scope["method"],
                                 get_path_with_query_string(scope), scope["http_version"], status_code)
    content: list[bytes] = [_status_line[status_code]]
    has_connection_close = False
    for name, value in [*cycle.default_headers, *message.get("headers", ())]:
        if _header_name(name):
            raise RuntimeError("Invalid HTTP header name.")
        if _header_value(value):
            raise RuntimeError("Invalid HTTP header value.")
        name = name.lower()
        if name == b"content-length" and cycle.chunked_encoding is None:
            cycle.expected_content_length = int(value.decode())
            cycle.chunked_encoding = False
        elif name == b"transfer-encoding" and value.lower() == b"chunked":
            cycle.expected_content_length = 0
            cycle.chunked_encoding = True
        elif name == b"connection" and b"close" in [token.lower().strip() for token in value.split(b",")]:
            cycle.keep_alive = False
            has_connection_close = True
        content.extend((name, b": ", value, b"\r\n"))
    if not cycle.keep_alive and not has_connection_close:
        content.append(b"connection: close\r\n")
    if cycle.chunked_encoding is None and cycle.scope["method"] != "HEAD" and status_code not in (204, 304):
        cycle.chunked_encoding = True  # neither content-length nor transfer-encoding given
        content.append(b"transfer-encoding: chunked\r\n")
    content.append(b"\r\n")
    cycle.transport.write(b"".join(content))


def _default_lines(headers: Any) -> bytes | None:
    """The lines of uvicorn's default headers, remembered until it renews them; None when one of them
    is one uvicorn refuses or its rules must see (content-length, transfer-encoding, connection)."""
    out: list[bytes] = []
    for name, value in headers:
        low = name.lower()
        if _header_name(name) or _header_value(value) or low in (b"content-length", b"transfer-encoding", b"connection"):
            return None
        out.extend((low, b": ", value, b"\r\n"))
    lines = b"".join(out)
    _defaults[0], _defaults[1] = headers, lines
    return lines


__all__ = ["BODY_FOLLOWS", "HEADER_NAME", "HEADER_VALUE", "respond"]
