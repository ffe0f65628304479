"""A remote MCP server written with the official SDK, served over HTTP.

Usage: remote.py TRANSPORT PORT where TRANSPORT is streamable-http or sse.
Tools: add (numbers), notify (sends a log message and progress before
answering, so related messages travel on the POST's SSE stream), whoami
(reports the request headers it saw).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("remote-test-server")


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool()
async def notify(steps: int, ctx: Context) -> str:
    """Report progress and log while working."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
        await ctx.info(f"step {i + 1}")
    return f"done {steps}"


@server.resource("remote://greeting")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from afar"


@server.prompt()
def haiku(topic: str) -> str:
    """Write a haiku."""
    return f"Write a haiku about {topic}"


if __name__ == "__main__":
    transport, port = sys.argv[1], int(sys.argv[2])
    server.run(transport, host="127.0.0.1", port=port)  # type: ignore[call-overload]
