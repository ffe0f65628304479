"""A strict modern-only (2026-07-28) streamable-HTTP MCP server that records every request it gets.

Usage: strict_modern.py MODE PORT. Serves POST /mcp statelessly: `initialize` is refused (400,
UnsupportedProtocolVersionError naming 2026-07-28), `server/discover` names 2026-07-28 and puts
its `serverInfo` beside the capabilities, as the conformance suite's servers do (MODE
`anonymous`: none at all), and `tools/list` lists `route` (`region` designated for
`Mcp-Param-Region`, `verbose` for `Mcp-Param-Verbose`) beside `blank` (its `x-mcp-header` is the
empty string) and `boxed` (designates an object property), both invalid. A `tools/call` is
answered with a JSON text of the `Mcp-Param-*` headers of its POST. `GET /seen` answers the
JSON list of what each request carried: method, tool name, `MCP-Protocol-Version` header, the
`_meta` envelope keys, `Mcp-Param-*` headers.

MODE says how it treats the envelope's version, 2026-07-28, which it serves:
- `first`: the first request, whatever its method, is refused with
  UnsupportedProtocolVersionError naming 2026-07-28 (the suite's `request-metadata` server);
- `always`: every request is refused so (a server that contradicts itself);
- `other`: every request is refused naming only 2099-01-01 (no version in common);
- `plain`, `anonymous`: none is refused.

Raw ASGI, so that nothing between the socket and the answer reads or checks the headers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.conformance.bridge import read_body

MODERN = "2026-07-28"
TOOLS = [
    {"name": "route", "description": "Route a query to a region.",
     "inputSchema": {"type": "object", "properties": {
         "region": {"type": "string", "x-mcp-header": "Region"},
         "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
         "query": {"type": "string"}}, "required": ["query"]}},
    {"name": "blank", "description": "Echo a value.",
     "inputSchema": {"type": "object", "properties": {"value": {"type": "string", "x-mcp-header": ""}}}},
    {"name": "boxed", "description": "Store a record.",
     "inputSchema": {"type": "object", "properties": {"data": {"type": "object", "x-mcp-header": "Data"}}}},
]
ENVELOPE = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
            "io.modelcontextprotocol/clientInfo")
MODE = sys.argv[1] if len(sys.argv) > 2 else "plain"
SEEN: list[dict[str, Any]] = []


def _refusal(msg: dict[str, Any], supported: list[str]) -> dict[str, Any]:
    requested = ((msg.get("params") or {}).get("_meta") or {}).get(ENVELOPE[0], "")
    return {"jsonrpc": "2.0", "id": msg.get("id"),
            "error": {"code": -32022, "message": "Unsupported protocol version",
                      "data": {"supported": supported, "requested": str(requested)}}}


def _answer(msg: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
    method = msg.get("method")
    if "id" not in msg:
        return 202, None
    if MODE == "other":
        return 400, _refusal(msg, ["2099-01-01"])
    if MODE == "always" or (MODE == "first" and len(SEEN) == 1) or method == "initialize":
        return 400, _refusal(msg, [MODERN])
    if method == "server/discover":
        result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        if MODE != "anonymous":
            result["serverInfo"] = {"name": "strict", "version": "1.0"}
    elif method == "tools/list":
        result = {"tools": TOOLS, "ttlMs": 0, "cacheScope": "private"}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(SEEN[-1]["params"])}]}
    else:
        return 200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
    return 200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", **result}}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = await read_body(receive)
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    if scope["method"] == "GET" and scope["path"] == "/seen":
        await _send(send, 200, SEEN)
        return
    if scope["method"] != "POST":
        await _send(send, 405, None)
        return
    try:
        msg = json.loads(body)
    except ValueError:
        await _send(send, 400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        return
    meta = (msg.get("params") or {}).get("_meta") or {}
    SEEN.append({"method": msg.get("method"), "name": (msg.get("params") or {}).get("name"),
                 "version": headers.get("mcp-protocol-version"), "envelope": [k for k in ENVELOPE if k in meta],
                 "params": {k: v for k, v in headers.items() if k.startswith("mcp-param-")}})
    status, answer = _answer(msg)
    await _send(send, status, answer)


async def _send(send: Any, status: int, value: Any) -> None:
    headers = [(b"content-type", b"application/json")] if value is not None else []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(value).encode() if value is not None else b""})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[-1]), log_level="warning")
