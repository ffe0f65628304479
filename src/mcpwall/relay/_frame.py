"""The framed wire format: one JSON-RPC message per frame (docs/wire.md).

    [u32 length][header: magic, version, header length, stream, flags, name length, payload length]
    [process name][payload]

This module is sans-I/O: `encode` builds frames, `FrameDecoder.feed(bytes)`
returns the frames a byte stream holds so far, and `MessageAssembler` joins
continuation frames (flag MORE) into whole messages. The socket code in
`_listener.py` and `_client.py` only moves bytes, so the parser that the
fuzzer drives (tests/relay/fuzz_frames.py) is exactly the one in production.

Why every bound is checked before memory is committed: the length prefix is
read first and a frame over `MAX_FRAME` is refused before its body is read,
so a peer cannot make the gateway buffer more than one frame (1 MiB) per
connection, nor more than `MAX_MESSAGE` (4 MiB) while a continued message
is being assembled.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from mcpwall.errors import InternalError
from mcpwall.protocol import MAX_MESSAGE_BYTES

MAGIC = b"MCPW"
VERSION = 1
#: Bytes of the fixed header (magic .. payload length); a later version may append fields.
HEADER_SIZE = 18
#: The largest header length a reader accepts (a bound for newer versions' extra fields).
MAX_HEADER_SIZE = 64
#: A frame (everything after the length prefix) larger than this is refused.
MAX_FRAME = 1024 * 1024
#: A message split over MORE frames may not grow past the gateway's message bound.
MAX_MESSAGE = MAX_MESSAGE_BYTES
MAX_NAME = 64
#: The largest payload one frame can carry when its header and name are as large as allowed.
MAX_PAYLOAD = MAX_FRAME - HEADER_SIZE - MAX_NAME
#: Stream 0 carries notifications; client requests use 1..CLIENT_MAX; server requests set the top bit.
NOTIFY_STREAM = 0
CLIENT_MAX = 0x7FFF_FFFF
SERVER_BIT = 0x8000_0000

# Flags
END = 0x0001    # the last frame of its stream: a response
ERROR = 0x0002  # the payload is a JSON-RPC error (id null) about a frame the sender refused
CLOSE = 0x0004  # the sender closes the connection after this frame; the payload says why
MORE = 0x0008   # the message continues in the next frame (same stream, nothing in between)
KNOWN_FLAGS = END | ERROR | CLOSE | MORE

#: The optional first line of a connection: `\0MCPWALL_META:<process>\n`.
META_PREFIX = b"\x00MCPWALL_META:"
MAX_META_LINE = len(META_PREFIX) + 256

_LEN = struct.Struct(">I")
_HEAD = struct.Struct(">4sBBIHHI")
assert _HEAD.size == HEADER_SIZE
_NAME_OK = re.compile(r"[^A-Za-z0-9._+@:/ -]")


class FrameError(InternalError):
    """The peer broke the wire format; `fatal` means the byte stream cannot be trusted any more."""

    def __init__(self, message: str, *, fatal: bool = True, stream: int | None = None) -> None:
        super().__init__(message)
        self.fatal = fatal
        self.stream = stream


@dataclass(frozen=True, slots=True)
class Frame:
    stream: int
    flags: int
    name: str
    payload: bytes


def sanitize_name(name: str | bytes) -> str:
    """A process name safe for logs and the ledger: printable ASCII, at most 64 characters."""
    text = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
    return _NAME_OK.sub("_", text.strip())[:MAX_NAME]


def encode(stream: int, payload: bytes, flags: int = 0, name: str = "") -> bytes:
    """One frame. Raises ValueError for what a conforming sender must never produce."""
    if not 0 <= stream <= 0xFFFF_FFFF:
        raise ValueError(f"stream id {stream} out of range")
    if flags & ~KNOWN_FLAGS:
        raise ValueError(f"unknown flag bits {flags & ~KNOWN_FLAGS:#x}")
    raw_name = sanitize_name(name).encode("ascii")
    size = HEADER_SIZE + len(raw_name) + len(payload)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    head = _HEAD.pack(MAGIC, VERSION, HEADER_SIZE, stream, flags, len(raw_name), len(payload))
    return b"".join((_LEN.pack(size), head, raw_name, payload))


def encode_message(stream: int, payload: bytes, flags: int = 0, name: str = "") -> list[bytes]:
    """A message as one frame, or as several (MORE on all but the last) when it exceeds one frame."""
    if len(payload) > MAX_MESSAGE:
        raise ValueError(f"message of {len(payload)} bytes exceeds {MAX_MESSAGE}")
    if HEADER_SIZE + len(sanitize_name(name)) + len(payload) <= MAX_FRAME:
        return [encode(stream, payload, flags, name)]
    chunks = [payload[i:i + MAX_PAYLOAD] for i in range(0, len(payload), MAX_PAYLOAD)]
    frames = [encode(stream, chunk, MORE, name) for chunk in chunks[:-1]]
    frames.append(encode(stream, chunks[-1], flags, name))
    return frames


def meta_line(process: str) -> bytes:
    return META_PREFIX + sanitize_name(process).encode("ascii") + b"\n"


class FrameDecoder:
    """Bytes in, frames out; raises FrameError on anything that is not the wire format.

    The META line is accepted only as the very first bytes of a connection. A
    frame's second byte is the length's high bits, at most 0x10 for a frame
    within bounds, so a `\\0M...` start can only be the META line.
    """

    def __init__(self, *, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._start = True
        self.meta: str | None = None
        #: bytes of the current frame still expected (0: between frames)
        self.expecting = 0

    @property
    def in_frame(self) -> bool:
        """True while a frame's length has arrived and its body has not (the body timeout runs)."""
        return self.expecting > 0

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        if self._start and not self._meta():
            return frames
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def _meta(self) -> bool:
        """Consume the META line if present; False while more bytes are needed to tell."""
        buf = self._buf
        probe = min(len(buf), len(META_PREFIX))
        if bytes(buf[:probe]) != META_PREFIX[:probe]:
            self._start = False
            return True
        if probe < len(META_PREFIX):
            # "\0M" can only start the META line; fewer bytes cannot decide yet.
            if probe >= 2:
                self.expecting = 1
            return False
        end = buf.find(b"\n", 0, MAX_META_LINE + 1)
        if end < 0:
            if len(buf) > MAX_META_LINE:
                raise FrameError("META line too long")
            self.expecting = 1
            return False
        self.meta = sanitize_name(bytes(buf[len(META_PREFIX):end]))
        del buf[:end + 1]
        self._start = False
        self.expecting = 0
        return True

    def _next(self) -> Frame | None:
        buf = self._buf
        if len(buf) < 4:
            self.expecting = 0 if not buf else 4 - len(buf)
            return None
        (size,) = _LEN.unpack_from(buf, 0)
        if size > self.max_frame:
            raise FrameError(f"frame of {size} bytes exceeds the {self.max_frame} byte limit")
        if size < HEADER_SIZE:
            raise FrameError(f"frame of {size} bytes is shorter than its header")
        if len(buf) < 4 + size:
            self.expecting = 4 + size - len(buf)
            return None
        magic, version, head_len, stream, flags, name_len, payload_len = _HEAD.unpack_from(buf, 4)
        if magic != MAGIC:
            raise FrameError("bad magic: not an mcpwall frame")
        if version != VERSION:
            raise FrameError(f"unsupported frame version {version}")
        if not HEADER_SIZE <= head_len <= MAX_HEADER_SIZE:
            raise FrameError(f"bad header length {head_len}")
        if name_len > MAX_NAME:
            raise FrameError(f"process name of {name_len} bytes exceeds {MAX_NAME}")
        if head_len + name_len + payload_len != size:
            raise FrameError("frame length does not match header + name + payload")
        start = 4 + head_len
        name = sanitize_name(bytes(buf[start:start + name_len]))
        payload = bytes(buf[start + name_len:start + name_len + payload_len])
        del buf[:4 + size]
        self.expecting = 0
        return Frame(stream, flags, name, payload)


class MessageAssembler:
    """Frames in, whole messages out: checks flags and joins MORE continuations.

    A message split over several frames must arrive in consecutive frames of
    one stream; anything in between is a protocol error (no interleaving keeps
    the reassembly buffer to one message per connection).
    """

    def __init__(self, *, max_message: int = MAX_MESSAGE) -> None:
        self.max_message = max_message
        self._parts: list[bytes] = []
        self._size = 0
        self._stream: int | None = None

    def push(self, frame: Frame) -> Frame | None:
        """The complete message once its last frame is in (flags of that frame), else None."""
        unknown = frame.flags & ~KNOWN_FLAGS
        if unknown:
            raise FrameError(f"unknown flag bits {unknown:#06x}", fatal=self._stream is not None,
                             stream=frame.stream)
        if self._stream is not None and frame.stream != self._stream:
            raise FrameError(f"stream {frame.stream} interleaved with continued stream {self._stream}")
        if frame.flags & MORE and frame.flags & (CLOSE | ERROR):
            raise FrameError("MORE cannot be combined with CLOSE or ERROR", fatal=False, stream=frame.stream)
        self._size += len(frame.payload)
        if self._size > self.max_message:
            raise FrameError(f"continued message exceeds {self.max_message} bytes")
        if frame.flags & MORE:
            self._stream = frame.stream
            self._parts.append(frame.payload)
            return None
        if not self._parts:
            self._size = 0
            return frame
        self._parts.append(frame.payload)
        whole = Frame(frame.stream, frame.flags, frame.name, b"".join(self._parts))
        self._parts, self._size, self._stream = [], 0, None
        return whole


__all__ = [
    "CLIENT_MAX",
    "CLOSE",
    "END",
    "ERROR",
    "HEADER_SIZE",
    "KNOWN_FLAGS",
    "MAGIC",
    "MAX_FRAME",
    "MAX_MESSAGE",
    "MAX_NAME",
    "MAX_PAYLOAD",
    "META_PREFIX",
    "MORE",
    "NOTIFY_STREAM",
    "SERVER_BIT",
    "VERSION",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "MessageAssembler",
    "encode",
    "encode_message",
    "meta_line",
    "sanitize_name",
]
