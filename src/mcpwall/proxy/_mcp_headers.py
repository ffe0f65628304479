"""The MCP headers of a streamable-HTTP POST against its body (2026-07-28: `MCP-Protocol-Version`,
`Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-*` a tool's `inputSchema` designates with `x-mcp-header`).

They mirror the body so that what stands in front of the gateway can route on them; `mismatch` checks
them against it before anything else runs, so no stage decides on one value while the server acts on
another (`_modern.ModernSessions.took` refuses a disagreement with HeaderMismatch, -32020). On a modern
request the standard headers are required; on a legacy one only those sent are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mcpwall.protocol import Message
from mcpwall.protocol.modern import (
    MODERN_VERSIONS,
    NAME_OF,
    PROTOCOL_VERSION_META_KEY,
    decode_header_value,
    designates,
    is_modern,
)

# (Final: compiled, each use is the constant itself, not a look in the module's globals)
VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
PARAM_PREFIX: Final = "mcp-param-"
_STANDARD = (VERSION_HEADER.encode(), METHOD_HEADER.encode(), NAME_HEADER.encode())
_PARAM_PREFIX = PARAM_PREFIX.encode()


def claims(msg: Message, headers: dict[str, str]) -> bool:
    """Whether a POST is of the 2026-07-28 revision: its body carries the envelope, or its
    MCP-Protocol-Version header names a modern version (an `initialize` is only with the envelope)."""
    if msg.get("method") == "initialize" and not is_modern(msg.get("params")):
        return False  # a handshake client's; one in the 2026-07-28 envelope is refused as removed
    return is_modern(msg.get("params")) or headers.get(VERSION_HEADER) in MODERN_VERSIONS


def _safe(value: str) -> bool:
    """Visible ASCII, space and tab only (RFC 9110 field values as MCP allows them): an ASCII
    text is printable exactly when it is within " " to "~"."""
    return value.isascii() and (value.isprintable() or value.replace("\t", " ").isprintable())


def mismatch(
    raw: list[tuple[bytes, bytes]],
    headers: dict[str, str],
    msg: Message,
    *,
    modern: bool,
    schema_of: Callable[[str], Any],
) -> str | None:
    """Why the request's MCP headers disagree with its body, or None when they agree.

    `raw` is the request's header lines as sent (a folded mapping hides a header sent twice,
    which first-copy and last-copy readers would read differently). On a modern request the
    standard headers are required; on a legacy one only those sent are compared. `schema_of`
    gives a tool's inputSchema by the name the client called it (None when unknown).
    """
    if not modern and METHOD_HEADER not in headers and NAME_HEADER not in headers:
        return None
    if len(raw) != len(headers):  # some name came twice (the mapping kept one of them)
        seen: set[bytes] = set()
        for name, _ in raw:
            key = name.lower()
            if key.startswith(b"mcp-"):  # the MCP headers: Mcp-Method, Mcp-Name, Mcp-Param-*, MCP-Protocol-Version
                if key in seen and (key in _STANDARD or key.startswith(_PARAM_PREFIX)):
                    return f"{key.decode('latin-1')} header appears more than once"
                seen.add(key)
    params = msg.get("params")
    body: dict[str, Any] = params if isinstance(params, dict) else {}
    method = msg.get("method")
    if modern:
        meta = body.get("_meta")
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        if headers.get(VERSION_HEADER) != version:
            return f"{VERSION_HEADER} header does not match the request envelope's protocol version"
    given = headers.get(METHOD_HEADER)
    if (modern or given is not None) and given != method:
        return f"{METHOD_HEADER} header does not match the request body's method"
    member = NAME_OF.get(method) if type(method) is str else None
    if member is not None:
        value = body.get(member)
        sent = headers.get(NAME_HEADER)
        if value is not None and (modern or sent is not None):
            if sent is None:
                return f"{NAME_HEADER} header is missing"
            # (plain printable ASCII is safe; only the rest needs `_safe`'s second look)
            if not (sent.isascii() and sent.isprintable()) and not _safe(sent):
                return f"{NAME_HEADER} header carries invalid characters"
            # a header that is the value itself matches it, unless it is a sentinel, which says another
            if (sent != value or sent.startswith("=?base64?")) and decode_header_value(sent) != value:
                return f"{NAME_HEADER} header does not match the request body's {member!r} parameter"
        if modern and method == "tools/call" and type(value) is str:
            schema = schema_of(value)
            if isinstance(schema, dict) and designates(schema):
                return _params_mismatch(headers, body, schema)
    return None


def _params_mismatch(headers: dict[str, str], body: dict[str, Any], schema: Any) -> str | None:
    """The `Mcp-Param-*` headers against the arguments, for a tool whose schema designates any."""
    for key, value in headers.items():
        if key.startswith(PARAM_PREFIX) and not _safe(value):
            return f"{key} header carries invalid characters"
    from mcp.shared.inbound import validate_mcp_param_headers

    args = body.get("arguments")
    rejection = validate_mcp_param_headers(
        schema,
        args if isinstance(args, dict) else {},
        {k: v for k, v in headers.items() if k.startswith(PARAM_PREFIX)},
    )
    return rejection.message if rejection is not None else None


def no_schema(name: str) -> Any:
    return None


__all__ = ["METHOD_HEADER", "NAME_HEADER", "PARAM_PREFIX", "VERSION_HEADER", "claims", "mismatch", "no_schema"]
