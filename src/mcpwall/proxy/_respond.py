"""uvicorn's `RequestResponseCycle.send` (httptools) for the gateway's connections: the same answer on
the wire, in one write instead of two when the whole body follows at once.

uvicorn writes a response's status line and headers as soon as the app sends `http.response.start`,
then its body with `http.response.body`: two `write` calls (two TCP segments on loopback) for every
answer, and its `send` checks and lowers every header of every answer in Python (~350 bytecodes a
call, the most of any one function on the call path). A start that carries `_asgi.BODY_FOLLOWS` (the
gateway's `_asgi.reply`, which sends the body right after) brings its header lines already checked and
built (`_asgi.head_lines`, compiled, each distinct header checked once): `respond` keeps it as the
cycle's `held` and hands it to uvicorn's own `send` at the front of the body, so both leave in one
write. Everything else (any other start, a stream's, a HEAD's, one from Starlette, one whose headers
`head_lines` leaves to uvicorn's rules, and every body but a held start's whole one) is uvicorn's
`send` itself, with its checks,
flow control, keep-alive and disconnect handling (tests/proxy/test_respond.py holds the bytes on the
wire to stock uvicorn's, shape by shape).

`_conn.guarded_protocol` gives each request cycle of the httptools protocol a `send` that calls
`respond`, and a `held` (None); once the answer is complete that `send` is deleted, so uvicorn's own
refuses any later message and no partial keeps the cycle alive after uvicorn drops it. Not compiled: it reads uvicorn's cycle, a plain Python object, which
compiled code reads generically (`PyObject_GetAttr`), dearer than the interpreter's specialised reads.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, RequestResponseCycle

from mcpwall.proxy._asgi import BODY_FOLLOWS, header_lines

_send = RequestResponseCycle.send
_status_line: dict[int, bytes] = STATUS_LINE


async def respond(cycle: Any, message: Any) -> None:
    """`RequestResponseCycle.send` for `cycle`, a start marked `BODY_FOLLOWS` held for its body."""
    held: bytes | None = cycle.held
    if held is not None:  # the body of a held start: the two in one write
        cycle.held = None
        data = held + message.get("body", b"")
        if message["type"] == "http.response.body" and len(data) == cycle.expected_content_length \
                and not message.get("more_body", False) and not cycle.disconnected and not cycle.flow.write_paused:
            # The whole answer, as uvicorn's `send` ends one (inline: its own `send` as one more
            # coroutine cost ~6,000 instructions a call); anything else is left to that `send`.
            cycle.transport.write(data)
            cycle.expected_content_length = 0
            cycle.response_complete = True
            del cycle.send
            cycle.message_event.set()
            if not cycle.keep_alive:
                cycle.transport.close()
            cycle.on_response()
            return
        message = {**message, "body": data}
    elif not cycle.response_started and (follows := message.get(BODY_FOLLOWS)) is not None \
            and message["type"] == "http.response.start" and not cycle.access_log \
            and cycle.scope["method"] != "HEAD" and not cycle.disconnected:
        defaults = header_lines(cycle.default_headers)  # uvicorn's date and server headers
        if defaults is not None and not defaults[1]:
            lines, size, close = follows
            if close:
                cycle.keep_alive = False
            head = b"".join((_status_line[message["status"]], defaults[0], lines,
                             b"\r\n" if close or cycle.keep_alive else b"connection: close\r\n\r\n"))
            cycle.response_started = True
            cycle.waiting_for_100_continue = False
            cycle.chunked_encoding = False
            cycle.expected_content_length = size + len(head)  # (uvicorn counts what it writes as body)
            cycle.held = head
            return
    await _send(cycle, message)
    if cycle.response_complete:
        del cycle.send


__all__ = ["respond"]
