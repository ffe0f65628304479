"""Line-oriented stream helpers shared by every stdio speaker (upstream transport,
`--stdio` frontend, relay, isolated aggregator)."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import stat
import sys
import time

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


#: A child's stderr in the log: at most this many lines per 10 s, each cut at this many characters
#: (a server flooding its stderr wrote 37 MB into the gateway's log); the rest is counted.
_LOG_LINES_PER_10S = 200
_LOG_LINE_CHARS = 2000


async def log_lines(stream: asyncio.StreamReader, log: logging.Logger, label: str) -> None:
    """Copy a child's stderr to the log, one record per line, never into the protocol."""
    window_start, logged, dropped = time.monotonic(), 0, 0
    while True:
        try:
            line = await stream.readline()
        except (ValueError, asyncio.LimitOverrunError):
            continue
        except Exception:
            return
        if not line:
            if dropped:
                log.warning("[%s] %d more stderr lines not logged", label, dropped)
            return
        now = time.monotonic()
        if now - window_start >= 10.0:
            if dropped:
                log.warning("[%s] %d stderr lines not logged (more than %d in 10 s)", label, dropped,
                            _LOG_LINES_PER_10S)
            window_start, logged, dropped = now, 0, 0
        if logged >= _LOG_LINES_PER_10S:
            dropped += 1
            continue
        logged += 1
        text = line.decode("utf-8", "replace").rstrip()
        log.info("[%s] %s", label, text if len(text) <= _LOG_LINE_CHARS else text[:_LOG_LINE_CHARS] + "…")


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """This process's stdin and stdout as asyncio streams (stdout through a dup, unbuffered).

    Pipes, sockets and terminals go through the event loop. A regular file (`< requests.jsonl`,
    `> answers.jsonl`, a launcher logging to a file) cannot: the event loop refuses it (uvloop
    aborts the process), so it is read on a thread / written directly (a file never blocks long).
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES + 1024)
    if _regular(sys.stdin.fileno()):
        loop.run_in_executor(None, _feed_from_file, loop, reader, os.dup(sys.stdin.fileno()))
    else:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    if _regular(stdout.fileno()):
        return reader, _FileWriter(stdout)  # type: ignore[return-value]
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def stdin_is_file() -> bool:
    """Input from a regular file: a script of requests, to be answered in full (not a client)."""
    return _regular(sys.stdin.fileno())


def _regular(fd: int) -> bool:
    """A file the event loop cannot watch: a regular file, or a device that is not a terminal
    (`/dev/null`: uvloop aborted the process at its end)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or (stat.S_ISCHR(mode) and not os.isatty(fd))


def _feed_from_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    with os.fdopen(fd, "rb", buffering=0) as f:
        while chunk := f.read(1 << 16):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


class _FileWriter:
    """The part of `asyncio.StreamWriter` the stdio speakers use, over a regular file."""

    def __init__(self, file: io.RawIOBase) -> None:
        self._file = file

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) or 0:]

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        self._file.close()

    async def wait_closed(self) -> None:
        return None

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default
