"""The stateless revision (MCP 2026-07-28) as clients speak it to the gateway.

A modern request carries its protocol version, client capabilities and
client identity in `params._meta` instead of an `initialize` handshake and a
protocol session. The key that tells one apart is the version key
(`io.modelcontextprotocol/protocolVersion`): legacy traffic never sets it (the
SDK's dual-era servers decide on the same key). `envelope` checks what the
request declares, in the order the Python SDK's server checks it (a missing
required key is invalid params, then the version), and `finish` gives the
answer what a 2026-07-28 result carries: `resultType`, the server's identity
in `_meta`, and the caching fields of the cacheable methods.

The names and codes are the MCP SDK's (`mcp_types`, which the project pins),
written out here because importing that package costs the gateway's start
about 0.25 s (its pydantic models of both revisions); tests/proxy/
test_modern_unit.py checks each one against the SDK's own, and the header
codec against `mcp.shared.inbound`'s. The SDK's `x-mcp-header` walk is used
as it is, imported when a tool designates a header.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, NamedTuple

from mcpwall import __version__
from mcpwall.protocol import ErrorCode, Message, ProtocolError, RequestId, error

#: `_meta` keys of the envelope (mcp_types.*_META_KEY). `Final`: compiled code that names one
#: reads a constant of its own, not this module's globals (a dict lookup each time, ~140 instructions).
PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_META_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META_KEY: Final = "io.modelcontextprotocol/serverInfo"
#: mcp_types.version: the per-request revisions and the handshake ones (oldest first, as there)
MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: mcp_types.methods.CACHEABLE_METHODS: the results that carry `ttlMs` and `cacheScope`
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
#: The versions a request's `_meta` may name (newest first).
MODERN_VERSIONS: Final[tuple[str, ...]] = tuple(reversed(MODERN_PROTOCOL_VERSIONS))
LATEST_MODERN = MODERN_VERSIONS[0]
#: Every version the gateway serves, modern (per request) and legacy (by `initialize`), newest
#: first: `server/discover`'s `supportedVersions` and an UnsupportedProtocolVersionError's `supported`.
ALL_VERSIONS: tuple[str, ...] = (*MODERN_VERSIONS, *reversed(HANDSHAKE_PROTOCOL_VERSIONS))
#: Methods 2026-07-28 removed: a modern request naming one is answered as an unknown method.
REMOVED: Final = frozenset({"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
#: `io.modelcontextprotocol/logLevel` values (the LoggingLevel of the schema), least severe first.
LOG_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVELS: Final = frozenset(LOG_ORDER)
#: The envelope keys a legacy upstream must not see: the SDK's handshake-era servers refuse a
#: request carrying the version key, and the rest describe the gateway's client, not the gateway.
ENVELOPE_KEYS = (
    PROTOCOL_VERSION_META_KEY,
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
)
_ENVELOPE_KEY_SET: Final = frozenset(ENVELOPE_KEYS)
#: Who answers: the gateway, on every result of a modern request.
SERVER_INFO: Final = {"name": "mcpwall", "version": __version__}
#: The JSON-RPC server-error codes 2026-07-28 reserves for the specification (-32020 to -32099);
#: only those it defines may be sent, and only with their meaning.
RESERVED = range(-32099, -32019)
#: Codes earlier revisions gave a meaning that 2026-07-28 retired: never sent to a modern client.
RETIRED: Final = frozenset({-32002, -32042})

__all__ = [
    "ALL_VERSIONS",
    "CACHEABLE_METHODS",
    "CHECKED",
    "CLIENT_CAPABILITIES_META_KEY",
    "CLIENT_INFO_META_KEY",
    "ENVELOPE_KEYS",
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "LATEST_MODERN",
    "LOG_FLOORS",
    "LOG_LEVEL_META_KEY",
    "MODERN_PROTOCOL_VERSIONS",
    "MODERN_VERSIONS",
    "NAME_OF",
    "PROTOCOL_VERSION_META_KEY",
    "REMOVED",
    "SERVER_INFO",
    "SERVER_INFO_META_KEY",
    "Envelope",
    "checked_envelope",
    "decode_header_value",
    "designates",
    "encode_header_value",
    "envelope",
    "envelope_at",
    "envelope_of",
    "filtered",
    "finish",
    "is_modern",
    "legacy_params",
    "log_filter",
    "remember_envelope",
    "standard_headers",
    "unsupported",
    "upstream_error",
]


class Envelope(NamedTuple):
    """What one modern request declares about itself (its `_meta`), checked."""

    version: str
    client_name: str
    client_version: str
    log_level: str | None


#: `Envelope(...)` without the Python-level `__new__` a NamedTuple's constructor runs
_made: Callable[[type[Envelope], tuple[str, str, str, str | None]], Envelope] = tuple.__new__


def is_modern(params: Any) -> bool:
    """Whether a request's params carry the 2026-07-28 envelope (its version key)."""
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_META_KEY in meta


def envelope(rid: RequestId | None, params: dict[str, Any]) -> Envelope:
    """The checked envelope of a modern request; raises ProtocolError with the answer otherwise.

    A required key missing (the version, the client capabilities) is invalid params; a version the
    gateway does not serve per request is UnsupportedProtocolVersionError naming those it does.
    """
    meta: Any = params.get("_meta")
    if type(meta) is dict:
        # Every modern call passes here: an envelope as JSON gives it (a served version, capabilities
        # an object, no or a known log level) is read in one pass; anything else takes the checks below,
        # which find the same answer and say what is wrong.
        version = meta.get(PROTOCOL_VERSION_META_KEY)
        level = meta.get(LOG_LEVEL_META_KEY)
        if (
            type(version) is str
            and version in MODERN_VERSIONS
            and type(meta.get(CLIENT_CAPABILITIES_META_KEY)) is dict
            and (level is None or (type(level) is str and level in LOG_LEVELS))
        ):
            info = meta.get(CLIENT_INFO_META_KEY)
            if type(info) is dict:
                name, client_version = str(info.get("name", ""))[:200], str(info.get("version", ""))[:100]
                env = _made(Envelope, (version, name, client_version, level))
            elif not isinstance(info, dict):
                env = _made(Envelope, (version, "", "", level))
            else:
                return _envelope_checks(rid, meta)
            _CHECKED[0], _CHECKED[1] = meta, env  # for `envelope_of`
            return env
    return _envelope_checks(rid, meta)


def _envelope_checks(rid: RequestId | None, meta: Any) -> Envelope:
    """`envelope` by every check in turn (what its one-pass reading must agree with)."""
    if type(meta) is not dict:
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            "params._meta must be an object carrying the required "
            f"{PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r} envelope keys",
            rid,
        )
    assert isinstance(meta, dict)
    missing = [k for k in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if k not in meta]
    if missing:
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
            rid,
        )
    version = meta[PROTOCOL_VERSION_META_KEY]
    if not isinstance(version, str):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS, "the protocol-version envelope value must be a string", rid
        )
    if version not in MODERN_VERSIONS:
        raise unsupported(rid, version)
    if not isinstance(meta[CLIENT_CAPABILITIES_META_KEY], dict):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS, f"{CLIENT_CAPABILITIES_META_KEY} must be an object", rid
        )
    level = meta.get(LOG_LEVEL_META_KEY)
    if level is not None and (not isinstance(level, str) or level not in LOG_LEVELS):  # ([] is no level either)
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS, f"{LOG_LEVEL_META_KEY} must be one of the logging levels", rid
        )
    info = meta.get(CLIENT_INFO_META_KEY)
    name = version_of = ""
    if isinstance(info, dict):
        name, version_of = str(info.get("name", ""))[:200], str(info.get("version", ""))[:100]
    return Envelope(version, name, version_of, level)


#: the envelope a frontend checked last, with the very `_meta` object it read: routing reads the
#: same request's envelope in the same step of the event loop (nothing is awaited between the two),
#: and a slot holding the object keeps its identity from being reused; a request of another task
#: that came between only costs its successor a second check. (A context variable did this at
#: twice the price.)
_CHECKED: list[Any] = [None, None]
#: the same slot, for a caller on every modern request's path that reads it inline (routing:
#: `envelope_at` without the call)
CHECKED = _CHECKED


def checked_envelope(rid: RequestId | None, params: dict[str, Any]) -> Envelope:
    """`envelope`, remembered for the request: the HTTP frontend checks it before the session is
    chosen, routing needs it again; the second look at the same `_meta` is free. (`envelope`
    remembers what it reads in one pass itself: the frontends call it.)"""
    env = envelope(rid, params)
    _CHECKED[0], _CHECKED[1] = params["_meta"], env
    return env


def remember_envelope(meta: dict[str, Any], env: Envelope) -> None:
    """Tell `envelope_of` that `meta` (this very object) was checked and is `env`: for a frontend
    that knows it from an equal `_meta` it checked before (`proxy._passed`)."""
    _CHECKED[0], _CHECKED[1] = meta, env


def envelope_of(rid: RequestId | None, params: dict[str, Any]) -> Envelope:
    """The envelope `checked_envelope` found for this very `_meta` object, else `envelope`'s."""
    if _CHECKED[0] is params.get("_meta") and _CHECKED[0] is not None:
        env: Envelope = _CHECKED[1]
        return env
    return envelope(rid, params)


def envelope_at(rid: RequestId | None, params: dict[str, Any], meta: dict[str, Any]) -> Envelope:
    """`envelope_of` for a caller holding the request's `_meta` object already (routing: every modern
    request passes there)."""
    checked = _CHECKED
    if checked[0] is meta:
        env: Envelope = checked[1]
        return env
    return envelope(rid, params)


def unsupported(rid: RequestId | None, requested: str) -> ProtocolError:
    """UnsupportedProtocolVersionError (-32022) for `requested`, naming what the gateway serves."""
    return ProtocolError(
        ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        rid,
        {"supported": list(ALL_VERSIONS), "requested": requested[:100]},
    )


def legacy_params(params: dict[str, Any], own: bool = False) -> dict[str, Any]:
    """A modern request's params as a legacy (handshake-era) server takes them: the envelope
    keys out of `_meta` (progressToken, trace context and the rest stay), `_meta` gone if empty.
    `own`: `params` is the caller's own copy (routing's, renamed), changed in place."""
    meta: dict[str, Any] = params["_meta"]
    out = params if own else dict(params)
    del out["_meta"]
    for key in meta:  # (a loop: `meta.keys() <= _ENVELOPE_KEY_SET` compared a keys view, ~2,500 instructions)
        if key not in _ENVELOPE_KEY_SET:  # something besides the envelope (most carry it alone): kept
            out["_meta"] = {k: v for k, v in meta.items() if k not in _ENVELOPE_KEY_SET}
            break
    return out


def upstream_error(response: Message, server: str) -> Message:
    """A legacy upstream's error as a modern client may receive it: resource-not-found (-32002)
    becomes invalid params (-32602), as 2026-07-28 renumbered it, and a code of the range the
    specification now reserves, which meant something else to the server, becomes an upstream
    error (-32000) that keeps the server's code and data."""
    err = response.get("error")
    code = err.get("code") if isinstance(err, dict) else None
    if not isinstance(code, int) or (code not in RESERVED and code != -32002):
        return response
    assert isinstance(err, dict)
    if code == -32002:
        return {**response, "error": {**err, "code": int(ErrorCode.INVALID_PARAMS)}}
    data: dict[str, Any] = {"server": server, "reason": "error", "upstream_code": code}
    if "data" in err:
        data["upstream_data"] = err["data"]
    return {
        **response,
        "error": {
            "code": int(ErrorCode.UPSTREAM_ERROR),
            "message": str(err.get("message", "")),
            "data": data,
        },
    }


def finish(method: str, response: Message) -> Message:
    """The answer to a modern request as 2026-07-28 shapes it.

    A result gets `resultType` ("complete" unless the server said otherwise), the gateway's
    identity in `_meta`, and, for the cacheable methods, `ttlMs` (the server's, else 0) and
    `cacheScope: private`: what the gateway lists and reads depends on the caller's policy, so
    no shared cache may keep it. An error with a retired code (the gateway's circuit-open -32002)
    is answered as an upstream error (-32000) with the same data.

    `response` is the caller's own envelope (the gateway's answer, just built): its `result` is
    replaced in place, by a new dict built once (the server's result itself is not changed: a
    stage or a task may hold it).
    """
    body: Any = response.get("result")
    if type(body) is dict:
        meta = body.get("_meta")
        stamp = {**meta, SERVER_INFO_META_KEY: SERVER_INFO} if type(meta) is dict else {
            SERVER_INFO_META_KEY: SERVER_INFO}
        # (one build: the copy, resultType and the stamp; a server's own resultType kept)
        out = {**body, "_meta": stamp} if "resultType" in body else {**body, "resultType": "complete", "_meta": stamp}
        if method in CACHEABLE_METHODS:
            ttl = out.get("ttlMs")
            out["ttlMs"] = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else 0
            out["cacheScope"] = "private"
        response["result"] = out
        return response
    err = response.get("error")
    if isinstance(err, dict) and err.get("code") in RETIRED:
        data = err.get("data")
        fixed = (
            {**(data if isinstance(data, dict) else {}), "reason": "circuit_open"}
            if err.get("code") == ErrorCode.CIRCUIT_OPEN
            else data
        )
        return error(response.get("id"), ErrorCode.UPSTREAM_ERROR, str(err.get("message", "")), fixed)
    return response


#: id(schema) -> (the schema, whether it designates a header); the schema is kept so its id is not reused
_DESIGNATES: dict[int, tuple[Any, bool]] = {}


def designates(schema: dict[str, Any]) -> bool:
    """Whether a tool's schema has an `x-mcp-header` anywhere (cached per schema object): most
    tools designate none, and their calls then skip the SDK's walk of the schema."""
    hit = _DESIGNATES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    found = False
    stack: list[Any] = [schema]
    while stack and not found:
        node = stack.pop()
        if isinstance(node, dict):
            found = "x-mcp-header" in node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if len(_DESIGNATES) > 4096:
        _DESIGNATES.clear()
    _DESIGNATES[id(schema)] = (schema, found)
    return found


#: The body member `Mcp-Name` mirrors, per method (the SDK's NAME_BEARING_METHODS).
NAME_OF: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def standard_headers(message: Message, schema: Any = None) -> dict[str, str]:
    """The headers a streamable-HTTP POST of `message` mirrors its body in: `Mcp-Method`, then
    `Mcp-Name` for the methods that name a target, and, for a tools/call whose tool `schema`
    designates parameters with `x-mcp-header`, their `Mcp-Param-*` (encoded as the SDK's
    client encodes them). An invalid designation designates nothing, as a client drops the tool."""
    method = message.get("method")
    if not isinstance(method, str):  # a response; a notification's POST mirrors its method too
        return {}
    headers = {"Mcp-Method": method}
    member = NAME_OF.get(method)
    params = message.get("params")
    if member is None or not isinstance(params, dict):
        return headers
    value = params.get(member)
    if isinstance(value, str):
        headers["Mcp-Name"] = encode_header_value(value)
    if method == "tools/call" and isinstance(schema, dict) and designates(schema):
        from mcp.shared.inbound import find_invalid_x_mcp_header, mcp_param_headers, x_mcp_header_map

        args = params.get("arguments")
        if find_invalid_x_mcp_header(schema) is None and isinstance(args, dict):
            headers.update(mcp_param_headers(x_mcp_header_map(schema), args))
    return headers


_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")
_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")


def encode_header_value(value: str) -> str:
    """`value` as a header carries it: as is when it is plain printable ASCII without edge
    whitespace, else in the `=?base64?...?=` sentinel (mcp.shared.inbound.encode_header_value)."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def decode_header_value(value: str | None) -> str | None:
    """What a header value says: a sentinel decoded, None when it is malformed (bad or
    non-canonical base64, bad UTF-8), so it never matches a body by accident
    (mcp.shared.inbound.decode_header_value)."""
    if value is None:
        return None
    m = _SENTINEL.fullmatch(value)
    if m is None:
        return value
    payload = m.group("payload")
    try:
        decoded = base64.b64decode(payload, validate=True)
    except binascii.Error:
        return None
    if base64.b64encode(decoded).decode("ascii") != payload:
        return None
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        return None


#: the least severe level each `logLevel` lets through, as an index of LOG_ORDER (none: past its end)
_FLOOR: dict[str | None, int] = {level: i for i, level in enumerate(LOG_ORDER)}
_SILENT = len(LOG_ORDER)
#: `log_filter`'s floor of a checked envelope's `logLevel` (None: none pass), for routing's own
#: `partial(filtered, emit, LOG_FLOORS[level])`: every modern request makes one, without a call more
LOG_FLOORS: dict[str | None, int] = {**_FLOOR, None: _SILENT}


def log_filter(
    emit: Callable[[Message], Awaitable[None]], level: str | None
) -> Callable[[Message], Awaitable[None]]:
    """`emit` without the `notifications/message` a modern request did not ask for: none when its
    `_meta` names no `logLevel` (2026-07-28: a server MUST NOT send them then), else those at that
    level or more severe. Everything else (progress) passes. (A partial, not a closure: every
    modern request makes one.)"""
    return partial(filtered, emit, _FLOOR.get(level, _SILENT))  # (None and an unknown level: none pass)


async def filtered(emit: Callable[[Message], Awaitable[None]], floor: int, msg: Message) -> None:
    if msg.get("method") == "notifications/message":
        params = msg.get("params")
        said = params.get("level") if isinstance(params, dict) else None
        if type(said) is not str or _FLOOR.get(said, -1) < floor:  # (a server's `[]` is no level either)
            return
    await emit(msg)
