"""A reference MCP server that does everything the official conformance suite asks of a server.

Usage: reference_server.py stdio | reference_server.py http PORT

The suite (`@modelcontextprotocol/conformance` 0.1.10, server scenarios) calls
fixed tool, resource and prompt names and checks the answers' shapes; this
server implements each of them as the scenario descriptions in the package
spell out (`test_*` tools, `test://` resources, a `{id}` template, the
`test_*` prompts, completion, logging levels, subscriptions). It is written on
the official Python SDK's low-level `Server` so that what goes on the wire is
exactly what the handlers return, and it runs over stdio and over streamable
HTTP, so the same server can be mcpwall's stdio or remote upstream.

Over HTTP it keeps an in-memory event store with a 500 ms retry interval:
POST streams then carry SSE event ids, and `test_reconnection` closes its
stream mid-call to exercise `Last-Event-ID` resumption.
"""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import sys
import warnings
import wave
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata

# Logging, sampling and client progress are deprecated as of the SDK's 2026 protocol
# version; the suite still tests them on the handshake-era wire, which is what we serve.
warnings.simplefilter("ignore", MCPDeprecationWarning)

#: A 1x1 red PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def _wav() -> str:
    """A tenth of a second of silence as a base64 WAV file."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    return base64.b64encode(buf.getvalue()).decode()


WAV = _wav()
_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


def _schema(properties: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties or {}, **({"required": required} if required else {})}


TOOLS: list[dict[str, Any]] = [
    {"name": "test_simple_text", "description": "Returns a simple text response", "inputSchema": _schema()},
    {"name": "test_image_content", "description": "Returns a 1x1 PNG image", "inputSchema": _schema()},
    {"name": "test_audio_content", "description": "Returns a short WAV clip", "inputSchema": _schema()},
    {"name": "test_embedded_resource", "description": "Returns an embedded text resource",
     "inputSchema": _schema()},
    {"name": "test_multiple_content_types", "description": "Returns text, image and resource content",
     "inputSchema": _schema()},
    {"name": "test_tool_with_logging", "description": "Sends three log messages while it runs",
     "inputSchema": _schema()},
    {"name": "test_tool_with_progress", "description": "Reports progress 0, 50 and 100 of 100",
     "inputSchema": _schema()},
    {"name": "test_error_handling", "description": "Always fails with isError", "inputSchema": _schema()},
    {"name": "test_sampling", "description": "Asks the client's LLM to answer a prompt",
     "inputSchema": _schema({"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
                            ["prompt"])},
    {"name": "test_elicitation", "description": "Asks the user for a username and an email",
     "inputSchema": _schema({"message": {"type": "string", "description": "The message to show the user"}},
                            ["message"])},
    {"name": "test_elicitation_sep1034_defaults", "description": "Elicitation with a default for every type",
     "inputSchema": _schema()},
    {"name": "test_elicitation_sep1330_enums", "description": "Elicitation with the five enum variants",
     "inputSchema": _schema()},
    {"name": "test_reconnection", "description": "Closes its SSE stream mid-call, then answers",
     "inputSchema": _schema()},
    {"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features",
     "inputSchema": {
         "$schema": "https://json-schema.org/draft/2020-12/schema",
         "type": "object",
         "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                                 "city": {"type": "string"}}}},
         "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
         "additionalProperties": False,
     }},
]

RESOURCES: list[dict[str, Any]] = [
    {"uri": "test://static-text", "name": "static-text", "description": "A static text resource",
     "mimeType": "text/plain"},
    {"uri": "test://static-binary", "name": "static-binary", "description": "A static PNG resource",
     "mimeType": "image/png"},
    {"uri": "test://watched-resource", "name": "watched-resource",
     "description": "A resource clients may subscribe to", "mimeType": "text/plain"},
]
TEMPLATES: list[dict[str, Any]] = [
    {"uriTemplate": "test://template/{id}/data", "name": "template-data",
     "description": "Data for an id, substituted from the URI", "mimeType": "application/json"},
]
PROMPTS: list[dict[str, Any]] = [
    {"name": "test_simple_prompt", "description": "A prompt without arguments"},
    {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments",
     "arguments": [{"name": "arg1", "description": "First test argument", "required": True},
                   {"name": "arg2", "description": "Second test argument", "required": True}]},
    {"name": "test_prompt_with_embedded_resource", "description": "A prompt embedding a resource",
     "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}]},
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
]
COMPLETIONS = {"arg1": ["paris", "park", "party", "test-value"], "arg2": ["alpha", "beta"],
               "resourceUri": ["test://static-text", "test://example-resource"]}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image() -> dict[str, Any]:
    return {"type": "image", "data": PNG, "mimeType": "image/png"}


def _result(*content: dict[str, Any], is_error: bool = False) -> dict[str, Any]:
    return {"content": list(content), **({"isError": True} if is_error else {})}


class _Levels:
    """The log level each client connection asked for (the session id over HTTP; one connection on stdio)."""

    def __init__(self) -> None:
        self._by_connection: dict[str, str] = {}

    @staticmethod
    def key(ctx: Any) -> str:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None)
        return str(headers.get("mcp-session-id", "")) if headers is not None else "stdio"

    def set(self, ctx: Any, level: str) -> None:
        self._by_connection[self.key(ctx)] = level

    def allows(self, ctx: Any, level: str) -> bool:
        floor = self._by_connection.get(self.key(ctx), "debug")
        return _LEVELS.index(level) >= _LEVELS.index(floor)


LEVELS = _Levels()


async def _log(ctx: Any, level: types.LoggingLevel, text: str) -> None:
    if LEVELS.allows(ctx, level):
        await ctx.session.send_notification(
            types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
                level=level, data=text, logger="reference-server")),
            related_request_id=ctx.request_id)


async def _ask(ctx: Any, request: Any, result_type: Any) -> Any:
    """A server-to-client request on the tools/call's own stream."""
    return await ctx.session.send_request(request, result_type,
                                          metadata=ServerMessageMetadata(related_request_id=ctx.request_id))


async def _elicit(ctx: Any, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
    result: types.ElicitResult = await _ask(ctx, request, types.ElicitResult)
    return result


def _elicited(result: types.ElicitResult) -> str:
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


SEP1034_SCHEMA = _schema({
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
               "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True},
})
SEP1330_SCHEMA = _schema({
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                         {"const": "value2", "title": "Second Choice"},
                                                         {"const": "value3", "title": "Third Choice"}]}},
})


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return _result(_text("This is a simple text response for testing."))
    if name == "test_image_content":
        return _result(_image())
    if name == "test_audio_content":
        return _result({"type": "audio", "data": WAV, "mimeType": "audio/wav"})
    if name == "test_embedded_resource":
        return _result({"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                                         "text": "This is an embedded resource content."}})
    if name == "test_multiple_content_types":
        return _result(_text("Multiple content types test:"), _image(),
                       {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                                                         "mimeType": "application/json",
                                                         "text": json.dumps({"test": "data", "value": 123})}})
    if name == "test_tool_with_logging":
        await _log(ctx, "info", "Tool execution started")
        await asyncio.sleep(0.05)
        await _log(ctx, "info", "Tool processing data")
        await asyncio.sleep(0.05)
        await _log(ctx, "info", "Tool execution completed")
        return _result(_text("Tool with logging executed successfully"))
    if name == "test_tool_with_progress":
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(0.05)
            await ctx.session.report_progress(progress, 100)
        return _result(_text("Tool with progress executed successfully"))
    if name == "test_error_handling":
        return _result(_text("This tool intentionally returns an error for testing"), is_error=True)
    if name == "test_sampling":
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text",
                                                                                   text=str(args.get("prompt"))))],
            max_tokens=100))
        answer: types.CreateMessageResult = await _ask(ctx, request, types.CreateMessageResult)
        content = answer.content
        text = content.text if isinstance(content, types.TextContent) else json.dumps(
            content.model_dump(mode="json") if hasattr(content, "model_dump") else str(content))
        return _result(_text(f"LLM response: {text}"))
    if name == "test_elicitation":
        schema = _schema({"username": {"type": "string", "description": "User's response"},
                          "email": {"type": "string", "description": "User's email address"}},
                         ["username", "email"])
        result = await _elicit(ctx, str(args.get("message", "")), schema)
        return _result(_text(f"User response: action={result.action}, content={json.dumps(result.content or {})}"))
    if name == "test_elicitation_sep1034_defaults":
        return _result(_text(_elicited(await _elicit(ctx, "Please review your information", SEP1034_SCHEMA))))
    if name == "test_elicitation_sep1330_enums":
        return _result(_text(_elicited(await _elicit(ctx, "Please choose options", SEP1330_SCHEMA))))
    if name == "test_reconnection":
        if ctx.close_sse_stream is not None:
            await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        return _result(_text("Reconnection test completed successfully"))
    if name == "json_schema_2020_12_tool":
        return _result(_text(f"Received: {json.dumps(args)}"))
    return _result(_text(f"Unknown tool: {name}"), is_error=True)


def read_resource(uri: str) -> dict[str, Any]:
    if uri == "test://static-text":
        return {"contents": [{"uri": uri, "mimeType": "text/plain",
                              "text": "This is the content of the static text resource."}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    if uri == "test://watched-resource":
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."}]}
    parts = uri.removeprefix("test://template/").split("/")
    if uri.startswith("test://template/") and len(parts) == 2 and parts[1] == "data":
        body = {"id": parts[0], "templateTest": True, "data": f"Data for ID: {parts[0]}"}
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json.dumps(body)}]}
    from mcp.shared.exceptions import MCPError

    raise MCPError(code=-32002, message=f"Resource not found: {uri}", data={"uri": uri})


def get_prompt(name: str, args: dict[str, str]) -> dict[str, Any]:
    if name == "test_simple_prompt":
        return {"messages": [{"role": "user", "content": _text("This is a simple prompt for testing.")}]}
    if name == "test_prompt_with_arguments":
        text = f"Prompt with arguments: arg1='{args.get('arg1', '')}', arg2='{args.get('arg2', '')}'"
        return {"messages": [{"role": "user", "content": _text(text)}]}
    if name == "test_prompt_with_embedded_resource":
        resource = {"uri": args.get("resourceUri", "test://example-resource"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}
        return {"messages": [{"role": "user", "content": {"type": "resource", "resource": resource}},
                             {"role": "user", "content": _text("Please process the embedded resource above.")}]}
    if name == "test_prompt_with_image":
        return {"messages": [{"role": "user", "content": _image()},
                             {"role": "user", "content": _text("Please analyze the image above.")}]}
    from mcp.shared.exceptions import MCPError

    raise MCPError(code=-32602, message=f"Unknown prompt: {name}")


def build() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
        return {"tools": TOOLS}

    async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
        return {"resources": RESOURCES}

    async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
        return {"resourceTemplates": TEMPLATES}

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> dict[str, Any]:
        return read_resource(str(params.uri))

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> dict[str, Any]:
        return {}

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> dict[str, Any]:
        return {}

    async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
        return {"prompts": PROMPTS}

    async def prompt(ctx: Any, params: types.GetPromptRequestParams) -> dict[str, Any]:
        return get_prompt(params.name, dict(params.arguments or {}))

    async def complete(ctx: Any, params: types.CompleteRequestParams) -> dict[str, Any]:
        values = [v for v in COMPLETIONS.get(params.argument.name, []) if v.startswith(params.argument.value)]
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> dict[str, Any]:
        LEVELS.set(ctx, params.level)
        return {}

    # Registered by method rather than as `on_*=` arguments: those are typed to return result
    # models, and these handlers return the wire dicts themselves (the runner serves both alike).
    server: Server[Any] = Server("mcpwall-conformance-reference", version="1.0.0")
    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, list_templates)
    server.add_request_handler("resources/read", types.ReadResourceRequestParams, read)
    server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    server.add_request_handler("prompts/list", types.PaginatedRequestParams, list_prompts)
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, prompt)
    server.add_request_handler("completion/complete", types.CompleteRequestParams, complete)
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


class MemoryEventStore(EventStore):
    """Every event of every stream, so a client can resume after `Last-Event-ID`."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._events: list[tuple[str, str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"ev-{next(self._ids)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        found = [i for i, (eid, _, _) in enumerate(self._events) if eid == last_event_id]
        if not found:
            return None
        stream = self._events[found[0]][1]
        for eid, sid, message in self._events[found[0] + 1:]:
            if sid == stream and message is not None:
                await send_callback(EventMessage(message, eid))
        return stream


async def _serve_stdio(make: Any = build) -> None:
    """Serve over stdio what `make()` builds (tests/conformance2 passes its dual-era server's builder)."""
    from mcp.server.stdio import stdio_server

    server = make()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _serve_http(port: int) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    app = build().streamable_http_app(
        event_store=MemoryEventStore(), retry_interval=500,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str]) -> None:
    if argv[:1] == ["stdio"]:
        asyncio.run(_serve_stdio())
    elif len(argv) == 2 and argv[0] == "http":
        _serve_http(int(argv[1]))
    else:
        sys.exit("usage: reference_server.py stdio | reference_server.py http PORT")


if __name__ == "__main__":
    main(sys.argv[1:])
