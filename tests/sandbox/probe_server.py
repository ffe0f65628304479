"""A tiny stdio MCP server (standard library only) that probes what its process may do.

Tools: `read` (a file's text), `write` (create a file), `connect` (open a TCP connection),
`whoami` (HOME, cwd, hostname, the entries of /). Every failure is reported as the tool's
result text ("error: ..."), so a test sees exactly what the operating system refused.
"""

from __future__ import annotations

import json
import os
import socket
import sys

TOOLS = [{"name": n, "description": n, "inputSchema": {"type": "object"}}
         for n in ("read", "write", "connect", "whoami")]


def run(name: str, args: dict) -> str:
    try:
        if name == "read":
            with open(args["path"], encoding="utf-8") as f:
                return f.read()
        if name == "write":
            with open(args["path"], "w", encoding="utf-8") as f:
                f.write(args.get("text", ""))
            return "written"
        if name == "connect":
            with socket.create_connection((args["host"], int(args["port"])), timeout=3):
                return "connected"
        if name == "whoami":
            return json.dumps({"home": os.environ.get("HOME"), "cwd": os.getcwd(), "hostname": socket.gethostname(),
                               "root": sorted(os.listdir("/"))})
    except Exception as exc:
        return f"error: {exc.__class__.__name__}: {exc}"
    return "error: unknown tool"


def main() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "probe", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            text = run(msg["params"]["name"], msg["params"].get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}))
            sys.stdout.write("\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
