"""Traces over OTLP/HTTP (issue 27, item 10), as a collector receives them.

Strategy: a real gateway (tests/harness.py) served over HTTP, its `telemetry:` block pointing at
a receiver on 127.0.0.1 that decodes the OTLP/HTTP protobuf (`receiver.py`); the upstream is
mcp-server-time from PyPI with the OpenTelemetry SDK on (`traced_time.py`), exporting to the
same receiver. A client sends, over streamable HTTP, an allowed tools/call whose `_meta`
carries a traceparent and a denied one whose HTTP request carries it as a header. The
gateway's spans must join those traces under the caller's span, say what the MCP and GenAI
conventions and the ledger say, have one child per stage hook that ran, and pass the context
on so that the server's own span hangs under the gateway's forward.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpwall.stages import Stage
from tests.harness import build_gateway, serve_http
from tests.telemetry.receiver import otlp_receiver

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(90)]

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
HEADER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HEADER_PARENT = "00f067aa0ba902b7"

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-time-conversion
    description: Converting between time zones is not allowed here
    tools: [convert_time]
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
telemetry:
  endpoint: URL
  serviceName: mcpwall
"""


def hooked(stages: list[Stage], hook: str) -> list[str]:
    """The names of the stages that have `hook`, in pipeline order."""
    return [s.name for s in stages if getattr(type(s), hook) is not getattr(Stage, hook)]


async def post(client: httpx.AsyncClient, body: dict[str, Any], **headers: str) -> httpx.Response:
    response = await client.post(
        "/mcp",
        json={"jsonrpc": "2.0", **body},
        headers={"accept": "application/json, text/event-stream", **headers},
    )
    assert response.status_code in (200, 202), response.text
    return response


async def test_a_call_joins_the_callers_trace_with_a_span_per_stage_and_passes_it_upstream(
    tmp_path: Path,
) -> None:
    with otlp_receiver() as receiver:
        time_server = {
            "command": sys.executable,
            "args": [str(Path(__file__).with_name("traced_time.py")), "--local-timezone", "UTC"],
            "env": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver.url}/v1/traces"},
        }
        built = build_gateway(tmp_path, POLICY.replace("URL", receiver.url), {"time": time_server})
        stages = built.gateway.pipeline.stages
        async with serve_http(built) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            init = await post(
                client,
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "pytest", "version": "1"},
                    },
                },
            )
            sid = init.headers["mcp-session-id"]
            await post(client, {"method": "notifications/initialized"}, **{"mcp-session-id": sid})
            allowed = await post(
                client,
                {
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "time__get_current_time",
                        "arguments": {"timezone": "UTC"},
                        "_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "vendor=kept"},
                    },
                },
                **{"mcp-session-id": sid},
            )
            assert "result" in allowed.json(), allowed.text
            denied = await post(
                client,
                {
                    "id": 3,
                    "method": "tools/call",
                    "params": {
                        "name": "time__convert_time",
                        "arguments": {
                            "source_timezone": "UTC",
                            "time": "12:00",
                            "target_timezone": "Asia/Tokyo",
                        },
                    },
                },
                **{"mcp-session-id": sid, "traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"},
            )
            assert denied.json()["error"]["code"] == -32001, denied.text
            health = (await client.get("/health")).json()
            assert health["stages"]["telemetry"]["endpoint"] == f"{receiver.url}/v1/traces"
        # The gateway has stopped: its last batch of spans has been flushed to the receiver.

    assert receiver.content_types == {"application/x-protobuf"}
    call = next(s for s in receiver.named("tools/call get_current_time") if s.kind == "server")
    assert (call.trace_id, call.parent_id) == (TRACE, PARENT)
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call.attributes["gen_ai.tool.name"] == "get_current_time"
    assert call.attributes["mcp.session.id"] == sid
    assert call.attributes["jsonrpc.request.id"] == "2"
    assert call.attributes["mcpwall.server.name"] == "time"
    assert call.attributes["mcpwall.decision"] == "allow"
    assert not call.error
    assert call.trace_state == "vendor=kept"

    children = receiver.children(call)
    by_hook: dict[str, list[str]] = {}
    for child in children:
        if child.kind == "internal":
            by_hook.setdefault(child.attributes["mcpwall.hook"], []).append(child.attributes["mcpwall.stage"])
    for hook in ("request", "response", "complete"):
        assert sorted(by_hook[hook]) == sorted(hooked(stages, f"on_{hook}")), hook
    assert "policy" in by_hook["request"]

    forward = next(c for c in children if c.kind == "client")
    assert forward.name == "tools/call get_current_time"
    # The server's own span (the MCP SDK's, in the upstream process) hangs under the forward.
    served = [
        s for s in receiver.spans if s.service == "traced-time" and s.name == "tools/call get_current_time"
    ]
    assert [(s.trace_id, s.parent_id) for s in served] == [(TRACE, forward.span_id)]

    refused = next(s for s in receiver.named("tools/call convert_time") if s.kind == "server")
    assert (refused.trace_id, refused.parent_id) == (HEADER_TRACE, HEADER_PARENT)
    assert refused.attributes["mcpwall.decision"] == "deny"
    assert refused.attributes["mcpwall.rule_ids"] == ("no-time-conversion",)
    assert refused.attributes["rpc.response.status_code"] == "-32001"
    assert refused.error
    refused_children = receiver.children(refused)
    assert not [c for c in refused_children if c.kind == "client"], "a denied call is never forwarded"
    policy = next(
        c
        for c in refused_children
        if c.attributes.get("mcpwall.stage") == "policy" and c.attributes["mcpwall.hook"] == "request"
    )
    assert policy.attributes["mcpwall.verdict"] == "deny"
    ran = [
        c.attributes["mcpwall.stage"]
        for c in refused_children
        if c.attributes.get("mcpwall.hook") == "request"
    ]
    request_stages = hooked(stages, "on_request")
    assert sorted(ran) == sorted(request_stages[: request_stages.index("policy") + 1])
    assert not [s for s in receiver.spans if s.service == "traced-time" and "convert_time" in s.name]
