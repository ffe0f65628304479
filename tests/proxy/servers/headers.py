"""A legacy (2025-11-25) streamable-HTTP MCP server that reports the MCP headers it was sent.

Usage: headers.py PORT. Serves POST /mcp: `initialize` (with an Mcp-Session-Id), its
notifications (202), `tools/list` with one tool, `route`, whose `region` argument is designated
for the `Mcp-Param-Region` header (`x-mcp-header`), and `tools/call` of `route`, answered with a
JSON text of the Mcp-Method, Mcp-Name and Mcp-Param-Region headers of that POST and the `_meta`
keys of the call. Written on raw ASGI so that nothing between the socket and the answer reads or
checks those headers.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

TOOL = {
    "name": "route",
    "description": "Route a query to a region.",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
        "required": ["query"],
    },
}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    msg = json.loads(body)
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    method, params = msg.get("method"), msg.get("params") or {}
    extra: list[tuple[bytes, bytes]] = []
    if method == "initialize":
        extra = [(b"mcp-session-id", b"headers-session")]
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "headers", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        seen = {k: headers.get(k) for k in ("mcp-method", "mcp-name", "mcp-param-region")}
        seen["meta"] = sorted((params.get("_meta") or {}).keys())
        result = {"content": [{"type": "text", "text": json.dumps(seen)}]}
    else:
        answer = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
        await _json(send, answer, extra)
        return
    await _json(send, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, extra)


async def _json(send: Any, value: Any, extra: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(value).encode()})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
