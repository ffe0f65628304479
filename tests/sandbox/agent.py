"""An agent for the sandbox acceptance test: run inside bubblewrap with no network.

Usage: agent.py SOCKET HOST_PORT MCPWALL. It tries the network (a TCP port that listens on
the host's loopback), then reaches the gateway the only way it has: the official MCP client
launching `mcpwall relay` on the bind-mounted Unix socket. It prints one JSON object with what
happened, for the test to check.
"""

from __future__ import annotations

import json
import socket
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(sock: str, port: int, mcpwall: str) -> None:
    out: dict[str, object] = {}
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            out["tcp"] = "connected"
    except OSError as exc:
        out["tcp"] = f"error: {exc}"
    params = StdioServerParameters(command=mcpwall, args=["relay", "--connect", f"unix:{sock}",
                                                          "--process-name", "sandboxed-agent"])
    async with Client(params) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        result = await client.call_tool("local__echo", {"text": "from inside the sandbox"})
        out["echo"] = result.content[0].text  # type: ignore[union-attr]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), sys.argv[3])
