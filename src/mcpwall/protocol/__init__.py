"""JSON-RPC envelopes for the relay: validate the envelope, leave params opaque.

The gateway relays messages as plain dicts parsed by orjson; pydantic models
of every MCP type would cost more than the whole relay budget per call
(bench/proxy_overhead.py). `classify` checks the envelope once; stages that
need a field read it from `params` themselves.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

from enum import IntEnum
from typing import Any, Literal

import orjson

from mcpwall.errors import InternalError

#: Messages larger than this are refused with INVALID_REQUEST (SPEC 4).
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: The answer to a message over the bound (-32600), on every frontend.
TOO_LARGE = f"message exceeds the {MAX_MESSAGE_BYTES} byte limit"

#: Protocol versions the gateway speaks to clients (the initialize handshake era).
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]


class ErrorCode(IntEnum):
    """JSON-RPC `error.code` values the gateway produces (docs/ERRORS.md)."""

    BLOCKED = -32001
    CIRCUIT_OPEN = -32002
    UNAUTHORIZED = -32003
    RATE_LIMITED = -32004
    UPSTREAM_ERROR = -32000
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    #: MCP 2026-07-28, the range it reserves for the specification (mcp_types.jsonrpc has the same)
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022


Kind = Literal["request", "notification", "response", "error"]
Message = dict[str, Any]
RequestId = str | int


class ProtocolError(InternalError):
    """A message that cannot be relayed; carries the JSON-RPC error to answer with."""

    def __init__(self, code: ErrorCode, message: str, request_id: RequestId | None = None,
                 data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.data = data

    def to_message(self) -> Message:
        return error(self.request_id, self.code, self.message, self.data)


def error(request_id: RequestId | None, code: int, message: str, data: Any = None) -> Message:
    err: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


def result(request_id: RequestId, value: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def notification(method: str, params: dict[str, Any] | None = None) -> Message:
    msg: Message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def dumps(msg: Message) -> bytes:
    return orjson.dumps(msg)


# The envelope's checks and the JSON readers, on every message of every frontend: compiled
# (src/mcpwall/_native.py), so imported after the names they raise with
from mcpwall.protocol._wire import (  # noqa: I001
    answer_id,
    classify,
    json_text,
    loads_from_server,
    oversized_id,
    parse,
    request_id,
    unreadable_answer,
)


__all__ = [
    "LATEST_VERSION",
    "MAX_MESSAGE_BYTES",
    "SUPPORTED_VERSIONS",
    "TOO_LARGE",
    "ErrorCode",
    "Kind",
    "Message",
    "ProtocolError",
    "RequestId",
    "answer_id",
    "classify",
    "dumps",
    "error",
    "json_text",
    "loads_from_server",
    "notification",
    "oversized_id",
    "parse",
    "request_id",
    "result",
    "unreadable_answer",
]
