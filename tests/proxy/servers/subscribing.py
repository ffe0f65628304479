"""A stdio MCP server (2025-11-25 handshake) that says which resources its client subscribed to.

It offers `memo://a` and `memo://b` with `resources.subscribe`, keeps the URIs the gateway has
subscribed to and not unsubscribed from, and has two tools: `held` answers them as a JSON list
(what the gateway really asked of the server, which no client can see otherwise), and `touch`
sends `notifications/resources/updated` for each. No npm server reports its subscriptions.
"""

from __future__ import annotations

import json
import sys

RESOURCES = [{"uri": f"memo://{n}", "name": f"memo {n}", "mimeType": "text/plain"} for n in ("a", "b")]
TOOLS = [{"name": name, "description": text, "inputSchema": {"type": "object"}}
         for name, text in (("held", "The URIs subscribed to"), ("touch", "Updates every subscribed URI"))]


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    held: set[str] = set()
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue
        answer: dict = {}
        if method == "initialize":
            answer = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                      "capabilities": {"tools": {}, "resources": {"subscribe": True}},
                      "serverInfo": {"name": "subscribing", "version": "1"}}
        elif method == "tools/list":
            answer = {"tools": TOOLS}
        elif method == "resources/list":
            answer = {"resources": RESOURCES}
        elif method == "resources/read":
            answer = {"contents": [{"uri": params.get("uri"), "mimeType": "text/plain", "text": "memo"}]}
        elif method == "resources/subscribe":
            held.add(str(params.get("uri")))
        elif method == "resources/unsubscribe":
            held.discard(str(params.get("uri")))
        elif method == "tools/call" and params.get("name") == "touch":
            for uri in sorted(held):
                send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
            answer = {"content": [{"type": "text", "text": "touched"}]}
        elif method == "tools/call":
            answer = {"content": [{"type": "text", "text": json.dumps(sorted(held))}]}
        elif method != "ping":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": answer})


if __name__ == "__main__":
    main()
