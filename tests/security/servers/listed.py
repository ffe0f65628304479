"""A small real MCP server (official SDK, low-level API, stdio) that lists exactly what a JSON file holds.

    python listed.py LIST.json

LIST.json is `{"tools": [...], "prompts": [...], "resources": [...], "resourceTemplates": [...]}`. Each
list is sent as written, every field kept (the handlers return plain dicts, which the SDK passes
through without its models dropping unknown keys), so a test can put text in any field a
definition may carry. The file is read again for every list, so a test can change what the server
lists while it runs; calling the tool `list_changed` (whether listed or not) makes the server send
notifications/tools/list_changed and notifications/prompts/list_changed. The SDK sieves results to the fields its protocol revision names; a
poisoning server need not, so the sieve is bypassed for the four list methods (the test's server
sends what a hostile one could). Calling any tool returns "ok".
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types.methods as _methods  # what mcp.server.runner calls as `_methods`
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def _listed(key: str) -> list[dict[str, Any]]:
    with open(sys.argv[1], encoding="utf-8") as f:
        listed: list[dict[str, Any]] = json.load(f).get(key, [])
    return listed


_LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
_sieve = _methods.serialize_server_result


def _unsieved(method: str, version: str, data: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    return dict(data) if method in _LISTS else _sieve(method, version, data, **options)


_methods.serialize_server_result = _unsieved


async def list_tools(ctx: Any, params: Any) -> Any:
    return {"tools": _listed("tools")}


async def call_tool(ctx: Any, params: Any) -> Any:
    if params.name == "list_changed":
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_prompt_list_changed()
    return {"content": [{"type": "text", "text": "ok"}]}


async def list_prompts(ctx: Any, params: Any) -> Any:
    return {"prompts": _listed("prompts")}


async def get_prompt(ctx: Any, params: Any) -> Any:
    return {"messages": [{"role": "user", "content": {"type": "text", "text": "ok"}}]}


async def list_resources(ctx: Any, params: Any) -> Any:
    return {"resources": _listed("resources")}


async def list_templates(ctx: Any, params: Any) -> Any:
    return {"resourceTemplates": _listed("resourceTemplates")}


async def read_resource(ctx: Any, params: Any) -> Any:
    return {"contents": [{"uri": params.uri, "text": "ok"}]}


server: Any = Server("listed", on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts,
                     on_get_prompt=get_prompt, on_list_resources=list_resources,
                     on_list_resource_templates=list_templates, on_read_resource=read_resource)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
