"""Line-oriented stream helpers shared by every stdio speaker (upstream transport,
`--stdio` frontend, relay, isolated aggregator)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from mcpwall.protocol import MAX_MESSAGE_BYTES

_EDGE = 256


async def skip_line(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """Discard the rest of a line longer than the reader's limit (after LimitOverrunError).

    Returns the line's first and last bytes, enough to tell whose message it was (`oversized_id`).
    """
    head = tail = b""
    while True:
        done = False
        try:
            chunk = await reader.readuntil(b"\n")
            done = True
        except asyncio.LimitOverrunError as exc:
            chunk = await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError as exc:
            chunk, done = exc.partial, True
        if not head:
            head = chunk[:_EDGE]
        tail = (tail + chunk[-_EDGE:])[-_EDGE:]
        if done:
            return head, tail


async def log_lines(stream: asyncio.StreamReader, log: logging.Logger, label: str) -> None:
    """Copy a child's stderr to the log, one record per line, never into the protocol."""
    while True:
        try:
            line = await stream.readline()
        except (ValueError, asyncio.LimitOverrunError):
            continue
        except Exception:
            return
        if not line:
            return
        log.info("[%s] %s", label, line.decode("utf-8", "replace").rstrip())


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """This process's stdin and stdout as asyncio streams (stdout through a dup, unbuffered)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES + 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)
