"""A stdio MCP server (2025-11-25 handshake) whose tool list changes when a client asks it to.

Tool `add_tool` with `{"name": N, "description": D}` adds tool N (or changes its description) and
then sends `notifications/tools/list_changed`, carrying a marker in its `_meta` that no client
may be shown. Tool `noop` answers "ok". No real server on npm changes its tool list on demand,
which is what the gateway's listen streams are tested against.
"""

from __future__ import annotations

import json
import sys

MARKER = "shifting-server-private-marker"
TOOLS: dict[str, dict] = {
    name: {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in (("add_tool", "Adds a tool"), ("noop", "Does nothing"))
}


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "shifting", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": list(TOOLS.values())}})
        elif method == "tools/call":
            args = params.get("arguments") or {}
            if params.get("name") == "add_tool":
                name = str(args.get("name"))
                TOOLS[name] = {"name": name, "description": str(args.get("description", "")),
                               "inputSchema": {"type": "object"}}
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                      "params": {"_meta": {"why": MARKER}}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
