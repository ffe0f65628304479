"""Helpers for the relay tests: an in-process gateway with a framed listener, and a raw frame client.

`framed_gateway` builds the gateway as `mcpwall proxy --frame-listen unix:PATH` does
(`tests.harness.build_gateway` with `frame_listen`; `isolate=True` adds what `--isolate`
sets), with real upstream servers, and
stops it at the end (which stops the upstream processes and removes the socket).
`FrameClient` speaks the wire format itself, byte for byte: it is the adversary of the
hardening tests, able to send what the real relay never would.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpwall.relay import (
    END,
    ERROR,
    HEADER_SIZE,
    KNOWN_FLAGS,
    MAGIC,
    NOTIFY_STREAM,
    VERSION,
    Frame,
    FrameDecoder,
    MessageAssembler,
    encode,
    meta_line,
)
from tests.harness import ALLOW_ALL, build_gateway, started

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
MCPWALL = str(VENV_BIN / "mcpwall")
MISBEHAVE = ROOT / "tests" / "proxy" / "servers" / "misbehave.py"

EVERYTHING = {"command": str(BIN / "mcp-server-everything"), "args": ["stdio"]}


def builtin(policy: Path | None = None) -> dict[str, Any]:
    args = ["builtin"] + (["--policy", str(policy)] if policy else [])
    return {"command": MCPWALL, "args": args}


def misbehave(mode: str, markers: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(MISBEHAVE), mode, str(markers)]}


@dataclass
class Framed:
    gateway: Any
    built: Any
    home: Path
    socket: Path
    policy_path: Path

    @property
    def address(self) -> str:
        return f"unix:{self.socket}"

    async def rows(self, count: int, *, timeout: float = 10.0, **filters: Any) -> list[dict[str, Any]]:
        """Ledger rows (oldest first) once at least `count` match, waiting for the batched writer."""
        deadline = time.monotonic() + timeout
        while True:
            page = self.gateway.ledger.query(order="asc", limit=500, **filters)
            if len(page.rows) >= count or time.monotonic() > deadline:
                return list(page.rows)
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def framed_gateway(tmp_path: Path, servers: dict[str, dict[str, Any]], policy: str = ALLOW_ALL,
                         **extras: Any) -> AsyncIterator[Framed]:
    # A Unix socket path must fit in 108 bytes: pytest's tmp_path (named after the test) may not.
    sock_dir = Path(tempfile.mkdtemp(prefix="mw-", dir="/tmp"))
    sock = sock_dir / "gw.sock"
    home = tmp_path / "home"
    try:
        built = build_gateway(home, policy, servers, frame_listen=[f"unix:{sock}"], **extras)
        async with started(built):
            yield Framed(built.gateway, built, home, sock, home / "policy.yaml")
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)


def encode_any(stream: int, payload: bytes, flags: int = 0, name: str = "") -> bytes:
    """A frame with any flags (the codec's `encode` refuses to build invalid ones)."""
    if not flags & ~KNOWN_FLAGS:
        return encode(stream, payload, flags, name)
    raw = name.encode()
    head = struct.pack(">4sBBIHHI", MAGIC, VERSION, HEADER_SIZE, stream, flags, len(raw), len(payload))
    return struct.pack(">I", HEADER_SIZE + len(raw) + len(payload)) + head + raw + payload


class FrameClient:
    """A raw framed connection: send any bytes, read frames, match answers to streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = FrameDecoder()
        self.assembler = MessageAssembler()
        self.inbox: list[Frame] = []
        self._streams = itertools.count(1)
        self._ids = itertools.count(1)
        self.eof = False

    @classmethod
    async def open(cls, path: Path, process: str | None = "hardening-test") -> FrameClient:
        reader, writer = await asyncio.open_unix_connection(str(path))
        client = cls(reader, writer)
        if process is not None:
            await client.raw(meta_line(process))
        return client

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    async def raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, stream: int, message: Any, flags: int = 0, name: str = "") -> None:
        payload = message if isinstance(message, bytes) else orjson.dumps(message)
        await self.raw(encode_any(stream, payload, flags, name))

    async def next_frame(self, timeout: float = 15.0) -> Frame | None:
        """The next whole message from the gateway, or None at end of stream."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            if self.eof:
                return None
            data = await asyncio.wait_for(self.reader.read(65536), max(0.01, deadline - time.monotonic()))
            if not data:
                self.eof = True
                continue
            for raw in self.decoder.feed(data):
                whole = self.assembler.push(raw)
                if whole is not None:
                    self.inbox.append(whole)
        return self.inbox.pop(0)

    async def frame_on(self, stream: int, timeout: float = 15.0) -> Frame:
        """The next frame on `stream`; frames on other streams are kept for later."""
        deadline = time.monotonic() + timeout
        kept: list[Frame] = []
        try:
            while True:
                frame = await self.next_frame(max(0.01, deadline - time.monotonic()))
                if frame is None:
                    raise EOFError(f"connection closed while waiting for stream {stream}")
                if frame.stream == stream:
                    return frame
                kept.append(frame)
        finally:
            self.inbox[:0] = kept

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float = 30.0) -> dict[str, Any]:
        stream, rid = next(self._streams), next(self._ids)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(stream, msg)
        frame = await self.frame_on(stream, timeout)
        assert frame.flags & END, f"answer on stream {stream} without END"
        answer: dict[str, Any] = orjson.loads(frame.payload)
        return answer

    async def initialize(self) -> dict[str, Any]:
        answer = await self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                   "clientInfo": {"name": "frame-test", "version": "1"}})
        await self.send(NOTIFY_STREAM, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    async def call(self, tool: str, arguments: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments or {}}, **kw)

    def next_stream(self) -> int:
        return next(self._streams)


def payload(frame: Frame) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(frame.payload)
    return value


def is_refusal(frame: Frame) -> bool:
    return bool(frame.flags & ERROR)


def text_of(answer: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in answer["result"]["content"] if c.get("type") == "text")
