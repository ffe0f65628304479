"""A streamable-HTTP MCP server (2025-11-25, JSON answers) that writes down every request it gets.

Usage: recorder.py PORT LOG. Each HTTP request is appended to LOG as one JSON line: method, path,
every header and the body. Tools: `echo` (returns its `text`). Written on raw ASGI so that nothing
between the socket and the log drops a header: the test reads the log for a client's token.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

LOG = sys.argv[2] if len(sys.argv) > 2 else "/dev/null"
TOOL = {"name": "echo", "description": "Echo a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


async def _send(send: Any, status: int, body: Any = None, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")] if body is not None else []
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": data})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    with open(LOG, "a", encoding="utf-8") as log:  # noqa: ASYNC230 - a test server, one line a request
        log.write(json.dumps({"method": scope["method"], "path": scope["path"],
                              "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
                              "body": body.decode("utf-8", "replace")}) + "\n")
    if scope["method"] != "POST":
        await _send(send, 405)
        return
    msg = json.loads(body)
    if "id" not in msg:
        await _send(send, 202)
        return
    method, params = msg.get("method"), msg.get("params") or {}
    extra: list[tuple[bytes, bytes]] = []
    if method == "initialize":
        extra = [(b"mcp-session-id", b"recorder-session")]
        result: dict[str, Any] = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                                  "capabilities": {"tools": {}}, "serverInfo": {"name": "recorder", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        await _send(send, 200, {"jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": f"no {method}"}})
        return
    await _send(send, 200, {"jsonrpc": "2.0", "id": msg["id"], "result": result}, extra)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
