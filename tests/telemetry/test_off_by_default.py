"""Traces are off unless configured, and then cost nothing: OpenTelemetry is not even imported.

Strategy: the `sys.modules` of a fresh interpreter that built a gateway as `mcpwall proxy` does
(tests/harness.py) and served a tools/call through it to mcp-server-time, with no `telemetry:`
block and no OTEL_* variable. The same probe with OTEL_EXPORTER_OTLP_ENDPOINT set shows the
check can fail: the SDK is loaded, the traced pipeline runs, and its spans reach the receiver
under OTEL_SERVICE_NAME. (The test process itself cannot tell: the MCP SDK it imports loads
opentelemetry-api.) The switch's rules (`telemetry_config`) are checked directly.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from mcpwall.errors import ConfigError, PolicyError
from mcpwall.telemetry import TelemetryConfig, telemetry_config, trace_headers
from tests.harness import ALLOW_ALL, build_gateway
from tests.telemetry.receiver import otlp_receiver

ROOT = Path(__file__).resolve().parents[2]
TIME = str(Path(sys.executable).parent / "mcp-server-time")

PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
from tests.harness import running

async def main():
    servers = {"time": {"command": sys.argv[1], "args": ["--local-timezone", "UTC"]}}
    async with running(Path(tempfile.mkdtemp()), servers=servers) as gw:
        answer = await gw.call("time__get_current_time", {"timezone": "UTC"})
        pipeline = type(gw.gateway.pipeline).__name__
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    print(json.dumps({"answered": "result" in answer, "pipeline": pipeline, "loaded": loaded}))

asyncio.run(main())
"""


async def _probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        TIME,
        cwd=ROOT,
        env={**clean, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return dict(json.loads(out.decode().splitlines()[-1]))


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.timeout(90)
async def test_a_gateway_without_telemetry_never_imports_opentelemetry_and_one_with_it_does() -> None:
    with otlp_receiver() as receiver:
        off, on = await asyncio.gather(
            _probe(), _probe(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="probe")
        )
    assert off == {"answered": True, "pipeline": "Pipeline", "loaded": []}
    assert on["answered"]
    assert on["pipeline"] == "TracedPipeline"
    assert "opentelemetry.sdk.trace" in on["loaded"]
    assert [
        s.attributes["mcpwall.decision"]
        for s in receiver.named("tools/call get_current_time", "probe")
        if s.kind == "server"
    ] == ["allow"]


def test_traces_are_off_without_a_block_or_a_variable() -> None:
    assert telemetry_config(None, {}) is None
    assert telemetry_config(None, {"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}) is None


def test_the_standard_variables_turn_traces_on_and_off() -> None:
    assert telemetry_config(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == TelemetryConfig(
        source="environment"
    )
    assert (
        telemetry_config(None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) is not None
    )
    assert telemetry_config(None, {"OTEL_TRACES_EXPORTER": "otlp"}) is not None
    assert (
        telemetry_config(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"})
        is None
    )
    assert (
        telemetry_config(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"})
        is None
    )


def test_the_policy_block_turns_traces_on_names_the_endpoint_and_can_keep_them_off() -> None:
    config = telemetry_config(
        {"endpoint": "http://collector:4318/", "serviceName": "edge", "sampleRatio": 0.5}, {}
    )
    assert config is not None
    assert (config.endpoint, config.service_name, config.sample_ratio) == (
        "http://collector:4318/v1/traces",
        "edge",
        0.5,
    )
    assert telemetry_config(True, {}) == TelemetryConfig()
    assert telemetry_config({"enabled": False}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}) is None
    assert telemetry_config(False, {"OTEL_TRACES_EXPORTER": "otlp"}) is None


@pytest.mark.parametrize(
    "block", [{"endpoint": "collector:4318"}, {"sampleRatio": 2}, {"endpont": "http://c"}, "on"]
)
def test_a_malformed_block_is_refused_naming_it(block: object) -> None:
    with pytest.raises(ConfigError, match=r"^policy telemetry: "):
        telemetry_config(block, {})


def test_a_frontend_hands_over_only_the_trace_context_of_its_headers() -> None:
    headers = {"authorization": "Bearer secret", "traceparent": "00-a-b-01", "tracestate": "k=v"}
    assert trace_headers(headers) == {"traceparent": "00-a-b-01", "tracestate": "k=v"}
    assert trace_headers({"authorization": "Bearer secret"}) is None


def test_a_bad_telemetry_block_stops_the_gateway_naming_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"policy\.yaml:7: policy telemetry: endpoint 'nope'"):
        build_gateway(tmp_path, ALLOW_ALL + "telemetry:\n  endpoint: nope\n")
