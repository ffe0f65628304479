"""A modern-only MCP server (2026-07-28, no initialize handshake), written with the official SDK 2.x.

Usage: modern_only.py stdio | modern_only.py http PORT

The SDK's servers are dual-era (the client's first request decides); this one refuses the
handshake era on both transports, as a server of the revision only does: over stdio it runs
the SDK's own modern serving loop, which answers `initialize` with
UnsupportedProtocolVersionError (-32022) naming 2026-07-28; over streamable HTTP a request
without a 2026-07-28 `MCP-Protocol-Version` header gets 400 with that error, GET and DELETE 405,
and the rest goes to the SDK's modern single-exchange entry.

Tools: `add` (numbers), `leak` (a result holding an AWS key id), `drop_table` (for a deny
rule), `ask_name` (asks for the user's name with an InputRequiredResult, then greets whoever
the answer names), `count_calls` (how many calls the process served), `grow` (adds a tool and
tells `subscriptions/listen` streams that the tool list changed), `summarize` (asks the client's
model: sampling in an InputRequiredResult), `where` (asks for the client's roots), `nag` (asks
again on every round, for ever).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ListRootsRequest,
    SamplingMessage,
    TextContent,
)

SECRET = "AKIAQX4BZ7WD3K5N2HPL"
server = MCPServer("modern-only")
_calls = 0


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    global _calls
    _calls += 1
    return a + b


@server.tool()
def leak() -> str:
    """Read the deployment notes."""
    global _calls
    _calls += 1
    return f"deploy with key {SECRET} from the vault"


@server.tool()
def drop_table(name: str) -> str:
    """Drop a database table."""
    global _calls
    _calls += 1
    return f"dropped {name}"


@server.tool()
def count_calls() -> int:
    """How many calls of add, leak and drop_table this process ran."""
    return _calls


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name` (it answers "grown") and tell the listening clients the list changed."""

    def grown() -> str:
        return "grown"

    server.add_tool(grown, name=name, description="A tool added while the server runs.")
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool()
async def ask_name(greeting: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Greet the user by the name they give when asked."""
    answer = (ctx.input_responses or {}).get("who")
    if answer is None:
        return InputRequiredResult(
            input_requests={
                "who": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message="What is your name?",
                        requested_schema={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    )
                )
            },
            request_state="asked-for-name",
        )
    dumped: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    name = (dumped.get("content") or {}).get("name", "?")
    return CallToolResult(
        content=[TextContent(text=f"{greeting}, {name} (state {ctx.request_state}, action {dumped.get('action')})")]
    )


@server.tool()
async def summarize(topic: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Summarize a topic with the client's model (a sampling request in an InputRequiredResult)."""
    answer = (ctx.input_responses or {}).get("llm")
    if answer is None:
        message = SamplingMessage(role="user", content=TextContent(text=f"Summarize {topic}"))
        return InputRequiredResult(
            input_requests={"llm": CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=50))}
        )
    dumped: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return CallToolResult(content=[TextContent(text=f"summary: {(dumped.get('content') or {}).get('text')}")])


@server.tool()
async def where(ctx: Context) -> CallToolResult | InputRequiredResult:
    """The roots the client gives when asked (a roots/list request in an InputRequiredResult)."""
    answer = (ctx.input_responses or {}).get("roots")
    if answer is None:
        return InputRequiredResult(input_requests={"roots": ListRootsRequest()})
    dumped: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return CallToolResult(content=[TextContent(text=json.dumps([r["uri"] for r in dumped.get("roots", [])]))])


@server.tool()
async def nag(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Never finishes: every round answers with only a new requestState (a server stuck asking)."""
    return InputRequiredResult(request_state=f"round-{len(ctx.request_state or '')}")


async def _stdio() -> None:
    from mcp.server.runner import _serve_modern_stream
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await _serve_modern_stream(low, read, write, lifespan_state=state, raise_exceptions=False)


def _http(port: int) -> None:
    import uvicorn

    inner = server.streamable_http_app()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            if scope["method"] in ("GET", "DELETE"):
                await send({"type": "http.response.start", "status": 405, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            version = headers.get("mcp-protocol-version")
            if version != "2026-07-28":
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": -32022,
                            "message": "Unsupported protocol version: this server speaks only 2026-07-28",
                            "data": {"supported": ["2026-07-28"], "requested": version or ""},
                        },
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        anyio.run(_stdio)
    else:
        _http(int(sys.argv[2]))
