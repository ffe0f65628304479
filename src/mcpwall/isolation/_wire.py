"""Length-prefixed msgpack frames between the gateway and its aggregator process.

    [u32 big-endian length][msgpack map]

Every frame is a map with an `op` and a connection id `cid`:

    gateway -> aggregator   {op: open, cid, server, spec} | {op: send, cid, msg} | {op: close, cid}
    aggregator -> gateway   {op: opened, cid, description} | {op: failed, cid, error}
                            | {op: msg, cid, msg, related} | {op: closed, cid, reason}

`msg` is a JSON-RPC message as a msgpack map. A frame over `MAX_FRAME` is a
protocol error that ends the aggregator: the pipe cannot be resynchronised.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import msgpack  # type: ignore[import-untyped]  # ships no type information

from mcpwall.errors import InternalError
from mcpwall.protocol import MAX_MESSAGE_BYTES

#: A JSON-RPC message is at most 4 MiB as JSON; msgpack is never much larger. Room for the envelope.
MAX_FRAME = 2 * MAX_MESSAGE_BYTES
_LEN = struct.Struct(">I")


class WireError(InternalError):
    """The other side broke the framing; the channel must be closed."""


def pack(obj: dict[str, Any]) -> bytes:
    body: bytes = msgpack.packb(obj, use_bin_type=True)
    if len(body) > MAX_FRAME:
        raise WireError(f"frame of {len(body)} bytes exceeds {MAX_FRAME}")
    return _LEN.pack(len(body)) + body


def unpack(body: bytes) -> dict[str, Any]:
    try:
        obj = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise WireError(f"undecodable frame: {exc}") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("op"), str):
        raise WireError("a frame must be a map with an 'op'")
    return obj


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame, or None at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise WireError("stream ended inside a length prefix") from exc
        return None
    (size,) = _LEN.unpack(head)
    if size > MAX_FRAME:
        raise WireError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise WireError("stream ended inside a frame") from exc
    return unpack(body)


__all__ = ["MAX_FRAME", "WireError", "pack", "read_frame", "unpack"]
