"""The event-stream side of streamable HTTP: a POST's answer that turns into an event stream
when something must go before it, and a session's GET stream.

A POST carrying a request is answered with `application/json` when the answer comes before
anything else; if the upstream first sends something related to the request (progress, a log
message, a sampling or elicitation request), the response switches to `text/event-stream` and
carries those events, then the answer. A GET stream carries what the upstream sends the session
outside any request, with a comment every `KEEPALIVE_S` so proxies keep it open.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import orjson

from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode, Message, error
from mcpwall.proxy._asgi import Headers, Receive, Send, answer, reply_json, wait_disconnect

SSE: Headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no")]
KEEPALIVE_S = 15.0

Emit = Callable[[Message], Awaitable[None]]
#: runs the request, handing related messages to the emit it is given; returns the answer (None: no answer)
Call = Callable[[Emit], Awaitable[Message | None]]


def sse_event(msg: Message) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(msg) + b"\n\n"


async def answer_request(receive: Receive, send: Send, call: Call, extra: Headers,
                         status_of: Callable[[Message], int] | None = None) -> None:
    """Answer with JSON, or upgrade to SSE as soon as a related message must go first; `status_of`
    gives a JSON answer's HTTP status (default `_asgi.status_for`; an event stream's is 200)."""
    streaming = False
    disconnected = False
    # Made by the first related message: most requests have none, and answer without it.
    lock: asyncio.Lock | None = None
    handler = asyncio.current_task()
    watcher: asyncio.Task[None] | None = None

    async def watch_disconnect() -> None:
        nonlocal disconnected
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                disconnected = True
                if handler is not None:
                    handler.cancel()
                return

    async def emit(related: Message) -> None:
        nonlocal streaming, watcher, lock
        if lock is None:
            lock = asyncio.Lock()
        async with lock:
            if not streaming:
                streaming = True
                await send({"type": "http.response.start", "status": 200, "headers": SSE + extra})
                watcher = asyncio.ensure_future(watch_disconnect())
            await send({"type": "http.response.body", "body": sse_event(related), "more_body": True})

    try:
        response = await call(emit)
    except asyncio.CancelledError:
        if disconnected:
            return  # nobody is listening any more
        # The client cancelled this request (notifications/cancelled) or ended its session
        # (DELETE): per MCP no answer follows, so the exchange ends as an event stream with
        # no response in it, instead of an error status or a cut connection.
        async with lock or contextlib.nullcontext():  # after any progress event being written
            if not streaming:
                await send({"type": "http.response.start", "status": 200, "headers": SSE + extra})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    finally:
        if watcher is not None:
            watcher.cancel()
    if lock is None:
        await answer(send, response, extra, status_of)
        return
    async with lock:
        if streaming:
            body = sse_event(response) if response is not None else b""
            await send({"type": "http.response.body", "body": body, "more_body": False})
        else:
            await answer(send, response, extra, status_of)


async def get_stream(receive: Receive, send: Send, session: Session | None, headers: dict[str, str],
                     streams: set[str]) -> None:
    """A GET on the MCP endpoint: be `session`'s stream until the client goes or the session
    closes, what the session buffered first, then each message as the gateway sends it.
    `streams` holds the ids of the sessions with a stream open: one each."""
    if session is None:
        status = 404 if headers.get("mcp-session-id") else 400
        await reply_json(send, status, error(None, ErrorCode.INVALID_REQUEST, "Session not found"))
        return
    if "text/event-stream" not in headers.get("accept", "text/event-stream"):
        await reply_json(send, 406, error(None, ErrorCode.INVALID_REQUEST, "Accept: text/event-stream needed"))
        return
    if session.id in streams:
        await reply_json(send, 409, error(None, ErrorCode.INVALID_REQUEST,
                                          "a GET stream is already open for this session"))
        return
    streams.add(session.id)
    queue: asyncio.Queue[Message] = asyncio.Queue()

    async def push(msg: Message) -> None:
        queue.put_nowait(msg)

    disconnected = asyncio.ensure_future(wait_disconnect(receive))
    try:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*SSE, (b"mcp-session-id", session.id.encode())]})
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        for msg in session.drain_buffer():
            await send({"type": "http.response.body", "body": sse_event(msg), "more_body": True})
        session.send = push
        while not disconnected.done() and not session.closed:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, disconnected}, timeout=KEEPALIVE_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                await send({"type": "http.response.body", "body": sse_event(getter.result()),
                            "more_body": True})
            else:
                getter.cancel()
                if not done:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
    except (OSError, RuntimeError):
        pass
    finally:
        if session.send is push:
            session.send = None
        streams.discard(session.id)
        disconnected.cancel()
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


__all__ = ["KEEPALIVE_S", "SSE", "answer_request", "get_stream", "sse_event"]
