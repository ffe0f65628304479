"""One framed connection: the stream rules of docs/wire.md, frames in, gateway calls, frames out.

A connection is one gateway session of kind "frame", aggregated (tools named
`server__tool`) and attributed to the process the relay names in its META
line or frame headers. Requests are served concurrently, each answered on its
own stream whatever happens to it; writes are serialised by one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.protocol import ErrorCode, Message, ProtocolError, RequestId, classify, error, parse
from mcpwall.relay._address import peer_of
from mcpwall.relay._frame import (
    CLIENT_MAX,
    CLOSE,
    END,
    ERROR,
    NOTIFY_STREAM,
    SERVER_BIT,
    Frame,
    FrameDecoder,
    FrameError,
    MessageAssembler,
    encode,
    encode_message,
)

if TYPE_CHECKING:
    from mcpwall.proxy import Gateway, Session

log = logging.getLogger("mcpwall.relay")

BODY_TIMEOUT_S = 30.0
MAX_STREAMS = 256


class ConnectionStats:
    """Counters of a listener's connections (shown in /health under the frame_listener stage)."""

    def __init__(self) -> None:
        self.connections = 0
        self.frames_in = 0
        self.frames_out = 0
        self.refused = 0
        self.closed_on_error = 0


class FrameConnection:
    """One relay connection: frames in, gateway calls, frames out."""

    def __init__(self, gateway: Gateway, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 body_timeout: float = BODY_TIMEOUT_S, max_streams: int = MAX_STREAMS,
                 stats: ConnectionStats | None = None) -> None:
        self.gateway = gateway
        self.reader = reader
        self.writer = writer
        self.body_timeout = body_timeout
        self.max_streams = max_streams
        self.stats = stats or ConnectionStats()
        self.decoder = FrameDecoder()
        self.assembler = MessageAssembler()
        self.process_name = ""
        #: open client streams -> the JSON-RPC id of the request each carries
        self.client_streams: dict[int, RequestId] = {}
        #: open server streams -> the id of the request the gateway sent on it
        self.server_streams: dict[int, RequestId] = {}
        self._server_ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self.session: Session | None = None
        self.close_reason: str | None = None

    # ------------------------------------------------------------------ reading

    async def serve(self) -> None:
        session = self.gateway.open_session("frame", None, peer=peer_of(self.writer))
        session.send = self._push
        self.session = session
        started: float | None = None
        try:
            while not self.writer.is_closing():
                timeout = None if started is None else max(0.0, started + self.body_timeout - time.monotonic())
                data = await asyncio.wait_for(self.reader.read(65536), timeout)
                if not data:
                    break
                frames = self.decoder.feed(data)
                if self.decoder.meta and not self.process_name:
                    self._bind_name(self.decoder.meta)
                for frame in frames:
                    await self._frame(frame)
                started = (started or time.monotonic()) if self.decoder.in_frame else None
        except FrameError as exc:
            await self._close_with(str(exc))
        except TimeoutError:
            await self._close_with(f"a frame's body did not arrive within {self.body_timeout:g} s")
        except _PeerClosed:
            pass
        except (ConnectionError, OSError):
            pass
        finally:
            await self._finish()

    async def _finish(self) -> None:
        if self.session is not None:
            self.gateway.close_session(self.session)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    def _bind_name(self, name: str) -> None:
        self.process_name = name
        if self.session is not None:
            self.session.process_name = name

    async def _frame(self, raw: Frame) -> None:
        self.stats.frames_in += 1
        try:
            frame = self.assembler.push(raw)
        except FrameError as exc:
            if exc.fatal:
                raise
            stream = raw.stream
            if 0 < stream <= CLIENT_MAX and stream not in self.client_streams:
                await self._refuse(stream, str(exc), end=True)  # the stream it opened is closed at once
            else:
                await self._refuse(0, str(exc), about=stream)
            return
        if frame is None:
            return
        if frame.flags & CLOSE:
            raise _PeerClosed
        if frame.flags & ERROR:
            log.info("relay %s refused a frame: %s", self.process_name or "?", frame.payload[:300])
            return
        if frame.name:
            if not self.process_name:
                self._bind_name(frame.name)
            elif frame.name != self.process_name:
                await self._refuse(frame.stream, f"process name {frame.name!r} differs from this connection's "
                                                 f"{self.process_name!r}")
                return
        stream = frame.stream
        if stream == NOTIFY_STREAM:
            await self._notification(frame)
        elif stream <= CLIENT_MAX:
            await self._client_request(frame)
        else:
            await self._client_answer(frame)

    async def _notification(self, frame: Frame) -> None:
        if frame.flags:
            await self._refuse(0, "stream 0 frames carry no flags")
            return
        try:
            msg = parse(frame.payload)
            kind = classify(msg)
        except ProtocolError as exc:
            await self._refuse(0, exc.message, code=exc.code)
            return
        if kind != "notification":
            await self._refuse(0, "stream 0 carries notifications only; a request or response needs its stream",
                               request_id=msg.get("id"))
            return
        assert self.session is not None
        reply = await self.gateway.handle(self.session, msg)
        if reply is not None:
            await self._refuse(0, str(reply.get("error", {}).get("message", "refused")))

    async def _client_request(self, frame: Frame) -> None:
        stream = frame.stream
        if stream in self.client_streams:
            # The stream is answered later for its first request; this frame goes nowhere.
            await self._refuse(0, f"stream {stream} is already open", about=stream)
            return
        if frame.flags:
            await self._refuse(stream, "a request frame carries no flags", end=True)
            return
        try:
            msg = parse(frame.payload)
            kind = classify(msg)
        except ProtocolError as exc:
            await self._refuse(stream, exc.message, end=True, code=exc.code)
            return
        if kind != "request":
            await self._refuse(stream, "a client stream opens with a request; notifications use stream 0",
                               end=True)
            return
        rid = msg["id"]
        if rid in self.client_streams.values():
            await self._refuse(stream, f"request id {rid!r} is already in flight on another stream", end=True)
            return
        if len(self.client_streams) >= self.max_streams:
            await self._refuse(stream, f"more than {self.max_streams} requests in flight", end=True)
            return
        self.client_streams[stream] = rid
        task = asyncio.create_task(self._serve_request(stream, msg, len(frame.payload)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_request(self, stream: int, msg: Message, size: int) -> None:
        assert self.session is not None
        try:
            try:
                response = await self.gateway.handle_request(self.session, msg, self._push, bytes_in=size)
            except ProtocolError as exc:
                # The gateway raises for a method nobody serves; the stream still gets its answer.
                response = error(msg["id"], exc.code, exc.message, exc.data)
            except (asyncio.CancelledError, ConnectionError, OSError):
                raise
            except Exception as exc:  # every open stream is answered, whatever failed
                log.exception("relay: request %r failed", msg.get("method"))
                response = error(msg["id"], ErrorCode.INTERNAL_ERROR, f"internal error: {exc.__class__.__name__}")
            if response is None:  # cancelled by the client
                response = error(msg["id"], ErrorCode.INTERNAL_ERROR, "request cancelled")
            await self._send_message(stream, response, END)
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            self.client_streams.pop(stream, None)

    async def _client_answer(self, frame: Frame) -> None:
        stream = frame.stream
        expected = self.server_streams.get(stream)
        if expected is None:
            await self._refuse(0, f"stream {stream:#x} is not an open server request", about=stream)
            return
        if frame.flags != END:
            await self._refuse(0, "the answer to a server request carries END", about=stream)
            return
        try:
            msg = parse(frame.payload)
            kind = classify(msg)
        except ProtocolError as exc:
            await self._refuse(0, exc.message, about=stream, code=exc.code)
            return
        if kind not in ("response", "error") or msg.get("id") != expected:
            await self._refuse(0, f"stream {stream:#x} must carry the answer to request {expected!r}",
                               about=stream)
            return
        del self.server_streams[stream]
        assert self.session is not None
        await self.gateway.handle(self.session, msg)

    # ------------------------------------------------------------------ writing

    async def _push(self, msg: Message) -> None:
        """Messages the gateway sends on its own or with a request (session.send and emit)."""
        if "method" in msg and "id" in msg:
            stream = SERVER_BIT | (next(self._server_ids) & CLIENT_MAX)
            if len(self.server_streams) >= self.max_streams:
                self.server_streams.pop(next(iter(self.server_streams)))
            self.server_streams[stream] = msg["id"]
            await self._send_message(stream, msg, 0)
        else:
            await self._send_message(NOTIFY_STREAM, msg, 0)

    async def _send_message(self, stream: int, msg: Message, flags: int) -> None:
        payload = orjson.dumps(msg)
        try:
            frames = encode_message(stream, payload, flags)
        except ValueError as exc:
            rid = msg.get("id") if "method" not in msg else None
            frames = encode_message(stream, orjson.dumps(error(rid, ErrorCode.INTERNAL_ERROR,
                                                               f"message not relayed: {exc}")), flags)
        async with self._lock:
            for data in frames:
                self.writer.write(data)
            self.stats.frames_out += len(frames)
            await self.writer.drain()

    async def _refuse(self, stream: int, message: str, *, end: bool = False, code: int = ErrorCode.INVALID_REQUEST,
                      request_id: Any = None, about: int | None = None) -> None:
        """Answer a frame we will not act on with an ERROR frame (END too when it closes `stream`).

        `about` is the stream of the refused frame when the refusal travels on stream 0.
        """
        self.stats.refused += 1
        data: dict[str, Any] = {"stream": stream if about is None else about}
        if isinstance(request_id, int | str):
            data["id"] = request_id
        log.info("relay %s: refused a frame: %s", self.process_name or "?", message)
        await self._send_message(stream, error(None, code, message, data), ERROR | (END if end else 0))

    async def _close_with(self, reason: str) -> None:
        self.stats.closed_on_error += 1
        self.close_reason = reason
        log.warning("relay %s (%s): closing the connection: %s", self.process_name or "?",
                    self.session.peer if self.session else "", reason)
        with contextlib.suppress(Exception):
            async with self._lock:
                self.writer.write(encode(NOTIFY_STREAM, orjson.dumps(error(None, ErrorCode.INVALID_REQUEST, reason)),
                                         CLOSE))
                await asyncio.wait_for(self.writer.drain(), 2.0)


class _PeerClosed(Exception):
    """The peer sent CLOSE."""


__all__ = ["BODY_TIMEOUT_S", "MAX_STREAMS", "ConnectionStats", "FrameConnection"]
