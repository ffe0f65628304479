"""The `--command` the conformance suite launches for its client scenarios: mcpwall as the client.

Usage (by the suite): client_driver.py SERVER_URL, with MCP_CONFORMANCE_SCENARIO
in the environment. The suite's scenario server is what mcpwall meets upstream.

The driver starts a real `mcpwall proxy` whose one upstream is SERVER_URL
(streamable HTTP), as shipped except for `--insecure-no-auth` on loopback,
waits until the gateway has done its own handshake with the scenario server,
then connects the official Python client to the gateway's `/mcp/conformance`
and drives one call through it: so the initialize the suite checks, the tool
call, the elicitation answer and the SSE reconnection it times are all
mcpwall's. The person behind the client accepts every elicitation form as
offered, i.e. with the schema's defaults, which the gateway must therefore
relay intact. Exits 0 when the call went through, 1 otherwise; the gateway's
log is copied to stderr, which the suite saves.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mcp_types as types  # noqa: E402

from tests.conformance.helpers import gateway_policy  # noqa: E402
from tests.proxy.harness import GatewayProcess, http_client  # noqa: E402

SERVER = "conformance"


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


async def drive(url: str) -> None:
    # The scenarios' elicitation and sampling are server-to-client requests, the handshake era's (a
    # 2026-07-28 client would get them by MRTR, issue 24 item 3): the client speaks that era.
    async with http_client(url, elicitation_callback=accept_defaults, sampling_callback=sample,
                           mode="legacy") as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            result = await client.call_tool(tool.name, _arguments(tool))
            print(f"{tool.name}: {result.model_dump_json(exclude_none=True)[:300]}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: client_driver.py SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "?")
    with tempfile.TemporaryDirectory(prefix=f"mcpwall-conf-{scenario.replace('/', '-')}-") as tmp:
        gateway = GatewayProcess(Path(tmp), {SERVER: {"url": argv[-1], "type": "http"}}, gateway_policy(),
                                 extra=["--insecure-no-auth"])
        try:
            gateway.start(timeout=45.0)
            asyncio.run(asyncio.wait_for(drive(f"{gateway.url}/mcp/{SERVER}"), 30.0))
            return 0
        except Exception as exc:
            print(f"driver failed: {exc.__class__.__name__}: {exc}", file=sys.stderr)
            return 1
        finally:
            gateway.stop()
            sys.stderr.write(gateway.log.read_text(errors="replace")[-20000:] if gateway.log.exists() else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
