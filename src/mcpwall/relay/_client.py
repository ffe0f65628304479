"""`mcpwall relay --connect ADDR`: stdio MCP on one side, frames on the other.

An agent in a sandbox launches the relay as its stdio MCP server. Each line
the agent writes is one JSON-RPC message and becomes one frame: a request
opens a fresh stream, a notification goes on stream 0, the answer to a
gateway request goes back on that request's stream with END. Frames from
the gateway become lines on stdout, which carries nothing else; the relay's
own diagnostics go to stderr.

When the gateway closes the connection, every request still waiting is
answered with an error so the agent never hangs; when the agent closes
stdin, the relay waits (a bounded grace) for the answers in flight and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

import orjson

from mcpwall.errors import MCPWallError
from mcpwall.protocol import (
    TOO_LARGE,
    ErrorCode,
    Message,
    ProtocolError,
    RequestId,
    classify,
    error,
    parse,
)
from mcpwall.relay._address import Address, connect
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
    encode_message,
    meta_line,
    sanitize_name,
)
from mcpwall.transports._lines import skip_line, stdio_streams

log = logging.getLogger("mcpwall.relay")

#: How long the relay waits for answers in flight after the agent closed stdin.
DRAIN_GRACE_S = 10.0


class RelayError(MCPWallError):
    """The relay could not reach the gateway."""


class Relay:
    """Carries one agent's stdio MCP session over a framed connection."""

    def __init__(self, address: Address, process_name: str = "", *, connect_timeout: float = 10.0) -> None:
        self.address = address
        self.process_name = sanitize_name(process_name)
        self.connect_timeout = connect_timeout
        #: open client streams -> the agent's request id
        self.streams: dict[int, RequestId] = {}
        #: ids of gateway requests the agent has not answered -> their stream
        self.server_requests: dict[RequestId, int] = {}
        self._next = 0
        self._out_lock = asyncio.Lock()
        self._sock_lock = asyncio.Lock()
        self._stdout: asyncio.StreamWriter | None = None
        self._sock: asyncio.StreamWriter | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    async def run(self, stdin: asyncio.StreamReader | None = None,
                  stdout: asyncio.StreamWriter | None = None) -> int:
        """Relay until stdin or the connection ends; returns the exit code."""
        try:
            reader, writer = await connect(self.address, self.connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise RelayError(f"cannot connect to {self.address}: {exc}") from exc
        if stdin is None or stdout is None:
            stdin, stdout = await stdio_streams()
        self._stdout, self._sock = stdout, writer
        writer.write(meta_line(self.process_name))
        inbound = asyncio.create_task(self._from_gateway(reader))
        outbound = asyncio.create_task(self._from_agent(stdin))
        done, _ = await asyncio.wait({inbound, outbound}, return_when=asyncio.FIRST_COMPLETED)
        code = 0
        if outbound in done:
            # The agent is finished: let the answers in flight arrive, then hang up.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._idle.wait()), DRAIN_GRACE_S)
            inbound.cancel()
        else:
            code = 1
            outbound.cancel()
            await self._fail_pending("the gateway closed the relay connection")
        await asyncio.gather(inbound, outbound, return_exceptions=True)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        return code

    # ------------------------------------------------------------------ agent -> gateway

    async def _from_agent(self, stdin: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stdin.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    await self._agent_line(exc.partial)
                return
            except asyncio.LimitOverrunError:
                await skip_line(stdin)
                await self._to_agent(error(None, ErrorCode.INVALID_REQUEST, TOO_LARGE))
                continue
            if line.strip():
                await self._agent_line(line)

    async def _agent_line(self, raw: bytes) -> None:
        try:
            msg = parse(raw)
            kind = classify(msg)
        except ProtocolError as exc:
            await self._to_agent(exc.to_message())
            return
        payload = raw.strip()
        if kind == "request":
            stream = self._open_stream(msg["id"])
            await self._send(stream, payload, 0)
        elif kind == "notification":
            await self._send(NOTIFY_STREAM, payload, 0)
        else:
            stream_of = self.server_requests.pop(msg["id"], None)
            if stream_of is None:
                log.warning("the agent answered an unknown request id %r; dropped", msg.get("id"))
                return
            await self._send(stream_of, payload, END)

    def _open_stream(self, rid: RequestId) -> int:
        while True:
            self._next = self._next % CLIENT_MAX + 1
            if self._next not in self.streams:
                break
        self.streams[self._next] = rid
        self._idle.clear()
        return self._next

    async def _send(self, stream: int, payload: bytes, flags: int) -> None:
        assert self._sock is not None
        try:
            frames = encode_message(stream, payload, flags, self.process_name)
        except ValueError as exc:
            rid = self.streams.pop(stream, None)
            self._check_idle()
            if rid is not None:
                await self._to_agent(error(rid, ErrorCode.INVALID_REQUEST, str(exc)))
            return
        async with self._sock_lock:
            for frame in frames:
                self._sock.write(frame)
            await self._sock.drain()

    # ------------------------------------------------------------------ gateway -> agent

    async def _from_gateway(self, reader: asyncio.StreamReader) -> None:
        decoder, assembler = FrameDecoder(), MessageAssembler()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                for raw in decoder.feed(data):
                    frame = assembler.push(raw)
                    if frame is not None and not await self._gateway_frame(frame):
                        return
        except FrameError as exc:
            log.error("the gateway sent a malformed frame: %s", exc)
        except (ConnectionError, OSError) as exc:
            log.error("relay connection failed: %s", exc)

    async def _gateway_frame(self, frame: Frame) -> bool:
        """Deliver one message from the gateway; False when the gateway is closing."""
        try:
            msg = orjson.loads(frame.payload)
        except orjson.JSONDecodeError:
            log.error("the gateway sent a frame that is not JSON")
            return True
        if not isinstance(msg, dict):
            return True
        if frame.flags & CLOSE:
            log.error("the gateway closed the connection: %s", _reason(msg))
            return False
        stream = frame.stream
        if frame.flags & ERROR:
            rid = self.streams.pop(stream, None) if frame.flags & END else None
            self._check_idle()
            if rid is None:
                log.warning("the gateway refused a frame: %s", _reason(msg))
                return True
            msg = {**msg, "id": rid}
        elif stream & SERVER_BIT:
            if "method" in msg and "id" in msg:
                self.server_requests[msg["id"]] = stream
        elif stream != NOTIFY_STREAM:
            rid = self.streams.pop(stream, None)
            self._check_idle()
            if rid is None or msg.get("id") != rid:
                log.error("the gateway answered stream %d with id %r (expected %r); dropped", stream,
                          msg.get("id"), rid)
                if rid is not None:
                    await self._to_agent(error(rid, ErrorCode.INTERNAL_ERROR, "the relay got a mismatched answer"))
                return True
        await self._to_agent(msg)
        return True

    async def _to_agent(self, msg: Message) -> None:
        assert self._stdout is not None
        data = orjson.dumps(msg) + b"\n"
        async with self._out_lock:
            self._stdout.write(data)
            await self._stdout.drain()

    async def _fail_pending(self, reason: str) -> None:
        pending, self.streams = self.streams, {}
        self._check_idle()
        for rid in pending.values():
            with contextlib.suppress(Exception):
                await self._to_agent(error(rid, ErrorCode.UPSTREAM_ERROR, reason))

    def _check_idle(self) -> None:
        if not self.streams:
            self._idle.set()


def _reason(msg: Message) -> str:
    err = msg.get("error")
    return str(err.get("message")) if isinstance(err, dict) else str(msg)[:300]


def parent_process_name() -> str:
    """The name of the process that launched the relay (the agent), from /proc."""
    try:
        with open(f"/proc/{os.getppid()}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


__all__ = ["DRAIN_GRACE_S", "Relay", "RelayError", "parent_process_name"]
