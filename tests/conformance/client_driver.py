"""The `--command` the conformance suite launches for its client scenarios: mcpwall as the client.

Usage (by the suite): client_driver.py SERVER_URL, with MCP_CONFORMANCE_SCENARIO,
MCP_CONFORMANCE_PROTOCOL_VERSION and (for some scenarios) MCP_CONFORMANCE_CONTEXT in
the environment. The suite's scenario server is what mcpwall meets upstream.

The driver starts a real `mcpwall proxy` whose one upstream is SERVER_URL
(streamable HTTP; `era: modern` at 2026-07-28, see `upstream`), as shipped
except for `--insecure-no-auth` on loopback, waits until the gateway has opened
the scenario server, then connects the official Python client to the gateway's
`/mcp/conformance`, lists the tools and calls each: first the calls the
scenario's context names, with its arguments, then every other listed tool. So
the handshake or probe the suite checks, the tool calls and their headers, the
elicitation answer, the retries of a multi round-trip call and the SSE
reconnection it times are all mcpwall's. The person behind the client accepts
every elicitation form as offered, i.e. with the schema's defaults, which the
gateway must therefore relay intact. Exits 0 when every call went through, 1
otherwise; the gateway's log is copied to stderr, which the suite saves.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mcp_types as types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from mcpwall.protocol.modern import MODERN_VERSIONS  # noqa: E402
from tests.conformance.helpers import gateway_policy  # noqa: E402
from tests.proxy.harness import GatewayProcess, http_client  # noqa: E402

SERVER = "conformance"
#: resources read and prompts got, at most, per list
MAX_EACH = 5


async def accept_defaults(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Accept the form as offered: every field that has a default keeps it."""
    schema = getattr(params, "requested_schema", None) or {}
    content = {name: prop["default"] for name, prop in (schema.get("properties") or {}).items()
               if isinstance(prop, dict) and "default" in prop}
    return types.ElicitResult(action="accept", content=content)


async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="ok"),
                                     model="conformance-driver", stop_reason="endTurn")


def _arguments(tool: types.Tool) -> dict[str, Any]:
    """Plausible arguments from a tool's input schema (the suite's tools take numbers or nothing)."""
    props = (tool.input_schema or {}).get("properties") or {}
    samples: dict[str | None, Any] = {"number": 5, "integer": 3, "string": "conformance", "boolean": True}
    return {name: samples.get(prop.get("type"), "x") for name, prop in props.items() if isinstance(prop, dict)}


def planned_calls(tools: list[types.Tool]) -> list[tuple[str, dict[str, Any]]]:
    """The calls to make: those the scenario names in MCP_CONFORMANCE_CONTEXT (`toolCalls`, each a
    tool and its arguments, e.g. http-custom-headers' values that need base64 and its null
    parameter), then one call of every listed tool they leave out, with plausible arguments."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    schemas = {tool.name: tool.input_schema or {} for tool in tools}
    named = [(str(c["name"]), _valid(schemas.get(str(c["name"]), {}), dict(c.get("arguments") or {})))
             for c in context.get("toolCalls") or [] if isinstance(c, dict) and "name" in c]
    done = {name for name, _ in named}
    return [*named, *[(tool.name, _arguments(tool)) for tool in tools if tool.name not in done]]


def _valid(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` without a null its property's type does not admit: such a call does not match the
    tool's schema, which the gateway refuses whatever the policy's mode (stages/schema.py), so a
    client leaves the parameter out (http-custom-headers checks its header omitted for a null or
    absent value alike; tests/proxy/test_modern_upstream_headers.py checks the null form's header)."""
    props = schema.get("properties") or {}

    def admits_null(prop: Any) -> bool:
        kind = prop.get("type") if isinstance(prop, dict) else None
        return kind is None or kind == "null" or (isinstance(kind, list) and "null" in kind)

    return {k: v for k, v in arguments.items() if v is not None or admits_null(props.get(k))}


async def drive(url: str) -> bool:
    """List the tools through the gateway and make every planned call; a call that fails is told and
    the next one made, so one refused call does not hide what the rest exercise. True: all went."""
    # The scenarios' elicitation and sampling are server-to-client requests, the handshake era's (a
    # 2026-07-28 client would get them by MRTR, issue 24 item 3): the client speaks that era.
    ok = True
    async with http_client(url, elicitation_callback=accept_defaults, sampling_callback=sample,
                           mode="legacy") as client:
        tools = (await client.list_tools()).tools
        print(f"listed: {[tool.name for tool in tools]}", file=sys.stderr)
        for name, arguments in planned_calls(tools):
            try:
                result = await client.call_tool(name, arguments)
            except MCPError as exc:
                print(f"{name}: refused: {exc}", file=sys.stderr)
                ok = False
                continue
            ok = ok and not result.is_error
            print(f"{name}: {result.model_dump_json(exclude_none=True)[:300]}", file=sys.stderr)
        return await read_and_get(client) and ok


async def read_and_get(client: Client) -> bool:
    """Read the listed resources and get the listed prompts of a server that offers them, so the
    headers of those requests (http-standard-headers' `Mcp-Name` of a URI) are the gateway's too."""
    caps, ok = client.server_capabilities, True
    try:
        if caps.resources is not None:
            for resource in (await client.list_resources()).resources[:MAX_EACH]:
                await client.read_resource(str(resource.uri))
        if caps.prompts is not None:
            for prompt in (await client.list_prompts()).prompts[:MAX_EACH]:
                await client.get_prompt(prompt.name, {a.name: "conformance" for a in prompt.arguments or []
                                                      if a.required})
    except MCPError as exc:
        print(f"resources or prompts: refused: {exc}", file=sys.stderr)
        ok = False
    return ok


def upstream(url: str) -> dict[str, Any]:
    """The scenario's server as a user configures it. At a revision without the handshake (the suite
    says which in MCP_CONFORMANCE_PROTOCOL_VERSION) it is a 2026-07-28 server, which a user facing
    one names `era: modern`: `auto` opens with `initialize` (so that a dual-era server keeps the
    handshake era), and the scenarios judge every request the client sends, the first included."""
    era = "modern" if os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") in MODERN_VERSIONS else "auto"
    return {"url": url, "type": "http", "era": era}


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: client_driver.py SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "?")
    with tempfile.TemporaryDirectory(prefix=f"mcpwall-conf-{scenario.replace('/', '-')}-") as tmp:
        gateway = GatewayProcess(Path(tmp), {SERVER: upstream(argv[-1])}, gateway_policy(),
                                 extra=["--insecure-no-auth"])
        try:
            gateway.start(timeout=45.0)
            return 0 if asyncio.run(asyncio.wait_for(drive(f"{gateway.url}/mcp/{SERVER}"), 30.0)) else 1
        except Exception as exc:
            print("driver failed: " + "".join(traceback.format_exception(exc)), file=sys.stderr)
            return 1
        finally:
            gateway.stop()
            sys.stderr.write(gateway.log.read_text(errors="replace")[-20000:] if gateway.log.exists() else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
