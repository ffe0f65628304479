"""The JSON-RPC envelope on the wire: reading a message, checking its envelope, the JSON readers.

Every message of every frontend passes `parse` and `classify` (or `loads_from_server`, from a
server): compiled with mypyc (src/mcpwall/_native.py). The package `mcpwall.protocol` exports
them; import them from there.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from mcpwall.protocol import MAX_MESSAGE_BYTES, ErrorCode, Kind, Message, ProtocolError, RequestId, error

_ID = rb'("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})'
#: Where a message's top-level id can be told from its first or last bytes alone: right after
#: `{"jsonrpc":"2.0",` (or first), or as the last member before the final `}` (as the TypeScript
#: SDK writes answers). An "id" nested inside params or result is never at either place.
_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID + rb'\s*,')
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*' + _ID + rb'\s*\}\s*$')


def oversized_id(head: bytes, tail: bytes) -> RequestId | None:
    """The top-level id of a message too long to parse, from its first and last bytes, or None.

    So that a request or answer over the size bound is refused under its own id, and whoever
    waits for it learns at once instead of at its timeout.
    """
    m = _HEAD_ID.match(head) or _TAIL_ID.search(tail.rstrip())
    if m is None:
        return None
    try:
        value = orjson.loads(m.group(1))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, int | str) else None


def answer_id(head: bytes, tail: bytes) -> RequestId | None:
    """The id of a server's message that could not be read, from its first and last bytes, when it is
    an answer; else None. A message naming a `"method"` is a request or notification of the server's
    own (its ids are its own), never taken for an answer to one of the gateway's."""
    return None if b'"method"' in head or b'"method"' in tail else oversized_id(head, tail)


def unreadable_answer(raw: bytes, problem: Exception, server: str) -> Message | None:
    """The -32000 answer for a server's answer no reader takes (NaN, Infinity, bytes that are not
    UTF-8), so that its call fails at once instead of at its timeout; None when `raw` is no answer."""
    rid = answer_id(raw[:256], raw[-256:])
    if rid is None:
        return None
    return error(rid, ErrorCode.UPSTREAM_ERROR, f"the server's answer is not JSON mcpwall can read: {problem}",
                 {"server": server, "reason": "transport"})


def request_id(msg: Any) -> RequestId | None:
    """The id of a message, when it is one a JSON-RPC answer can carry (a string or an integer)."""
    rid = msg.get("id") if isinstance(msg, dict) else None
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


def parse(raw: bytes | str) -> Message:
    """Parse one JSON-RPC message; raises ProtocolError with the code to answer."""
    if len(raw) > MAX_MESSAGE_BYTES:
        edges = raw.encode() if isinstance(raw, str) else raw
        raise ProtocolError(ErrorCode.INVALID_REQUEST,
                            f"message of {len(raw)} bytes exceeds the {MAX_MESSAGE_BYTES} byte limit",
                            oversized_id(edges[:256], edges[-256:]))
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.PARSE_ERROR, f"invalid JSON: {exc}") from exc
    if isinstance(value, list):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "JSON-RPC batches are not supported by MCP")
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "a JSON-RPC message must be an object")
    return value


#: (a range of escapes, not the characters: mypyc takes no lone surrogate in a literal)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _refuse(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _int64(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError("integer out of range")
    return value


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def loads_from_server(raw: bytes | str) -> Any:
    """`orjson.loads` for what a server sends, which also reads a string holding a lone UTF-16 surrogate.

    `"\\ud83d"` alone is valid JSON (RFC 8259, section 8.2) but no Unicode text: a JavaScript server
    writes it for a string cut inside an emoji (`JSON.stringify` escapes a lone surrogate), a Python
    one for text read with `surrogateescape`. orjson refuses it, and an answer refused was an answer
    lost: its call waited for its timeout. Such a message is read by the standard library instead
    (NaN and Infinity refused as orjson refuses them, and an integer past 64 bits, which orjson would
    read as a float: such a message fails as unreadable rather than change a number), with every lone
    surrogate removed from its keys and strings, so the stages scan and the client receives the
    same text (a removed character cannot split a word the scanners read). Anything else orjson
    refuses raises its `JSONDecodeError`, as before.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        try:
            return _without_surrogates(json.loads(raw, parse_constant=_refuse, parse_int=_int64))
        except (ValueError, RecursionError):
            raise exc from None


def classify(msg: Message) -> Kind:
    """The kind of a parsed message, after checking the envelope."""
    rid = msg.get("id")
    if msg.get("jsonrpc") != "2.0":
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "jsonrpc must be \"2.0\"", _safe_id(rid))
    if "method" in msg:
        method = msg["method"]
        if not isinstance(method, str) or not method:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "method must be a non-empty string", _safe_id(rid))
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "params must be an object", _safe_id(rid))
        if "id" not in msg:
            return "notification"
        if not _valid_id(rid):
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "id must be a string or an integer")
        return "request"
    if "result" in msg and "error" not in msg:
        if not _valid_id(rid):
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "a response needs a string or integer id")
        return "response"
    if "error" in msg and isinstance(msg["error"], dict):
        return "error"
    raise ProtocolError(ErrorCode.INVALID_REQUEST, "not a request, notification or response", _safe_id(rid))


def _valid_id(rid: Any) -> bool:
    return (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)))


def _safe_id(rid: Any) -> RequestId | None:
    return rid if _valid_id(rid) else None


def json_text(value: Any, *, sort_keys: bool = False, default: Any = None) -> str:
    """JSON of `value` as text, for what stays in memory (memo keys, stored state).

    orjson's `bytes` results each hold an allocation of about 4 KiB, however short
    the JSON (5,000 kept two-key objects: 21 MiB against 0.1 MiB as `str`); the
    decoded copy is exact-sized. Raises TypeError for what JSON cannot express.
    """
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None, default=default).decode()
