"""An echo server of both protocol eras over stdio, written with the official Python SDK 2.x.

`bench/proxy_overhead.py` and `bench/instructions.py` put it behind the gateway twice, once opened
in the 2025-11-25 era (`"era": "legacy"`) and once in the 2026-07-28 era (`"era": "modern"`), so
that a legacy call through a legacy upstream and a 2026-07-28 call through a 2026-07-28 upstream
are measured on one server program: each era's path end to end, with nothing to bridge. (The SDK's
stdio server decides its era by the client's first request, as the SDK's `Server.run` does.)
Its `echo` answers as server-everything's does: `Echo: <message>`.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-echo")


@server.tool()
def echo(message: str) -> str:
    """Echoes back the input string."""
    return f"Echo: {message}"


if __name__ == "__main__":
    server.run("stdio")
