"""`GET /metrics`: Prometheus text that parses and agrees with the ledger.

Strategy: a real gateway (`tests.approvals.harness.served`: token auth, SQLite ledger, npm
`everything` upstream) serves a mix of calls through the official client: allowed, denied by
policy, an ask that times out, an upstream error, an unknown tool. Then `/metrics` is fetched
over HTTP with the token and parsed by `prometheus_client.parser`; its
`mcpwall_tool_calls_total{server,tool,decision}` must equal the ledger's `tool_calls` rows
grouped the same way, and the scrape-time families (stages, upstream, circuit, ledger queue)
must describe the live gateway. Label cardinality is bounded against clients that invent tools.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from mcpwall.metrics import LATENCY_BUCKETS, GatewayMetrics
from mcpwall.metrics._counts import bucket
from mcpwall.stages import RequestContext
from tests.approvals.harness import ask_policy, served
from tests.harness import context
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio]


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _samples(family: Any, suffix: str = "") -> list[Any]:
    return [s for s in family.samples if s.name == family.name + suffix]


@pytest.mark.integration
async def test_metrics_parse_and_the_call_counters_match_the_ledger(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=500)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        for i in range(3):
            await client.call_tool("ev__get-sum", {"a": i, "b": 1})
        for _ in range(2):
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
        with pytest.raises(MCPError):
            await client.call_tool("ev__echo", {"message": "nobody answers"})
        for name in ("ev__no-such-tool", "ev__get-sum"):
            with contextlib.suppress(MCPError):
                await client.call_tool(name, {"a": "not a number"} if name.endswith("sum") else {})
        rows = gw.ledger_rows()
        async with httpx.AsyncClient(base_url=gw.url, trust_env=False) as http:
            assert (await http.get("/metrics")).status_code == 401
            response = await http.get("/metrics", headers=gw.headers)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        families = _families(response.text)

        ledger = Counter((r["server_name"], r["tool_name"], r["decision"]) for r in rows)
        counted = Counter({(s.labels["server"], s.labels["tool"], s.labels["decision"]): int(s.value)
                           for s in _samples(families["mcpwall_tool_calls"], "_total")})
        assert counted == ledger
        assert {d for _, _, d in ledger} == {"allow", "deny", "invalid", "error"}
        assert sum(ledger.values()) == 8
        durations = _samples(families["mcpwall_tool_call_duration_seconds"], "_count")
        assert sum(s.value for s in durations) == len(rows)

        stages = {s.labels["stage"]: s.value for s in _samples(families["mcpwall_stage_seconds"], "_total")}
        assert set(stages) == {s.name for s in gw.gateway.pipeline.stages}
        assert stages["policy"] > 0
        assert [s.value for s in families["mcpwall_upstream_up"].samples] == [1.0]
        circuit = {s.labels["state"]: s.value for s in families["mcpwall_circuit_state"].samples}
        assert circuit == {"closed": 1.0, "open": 0.0, "half-open": 0.0}
        assert families["mcpwall_ledger_queue_depth"].samples[0].value >= 0
        assert families["mcpwall_ledger_healthy"].samples[0].value == 1.0
        asks = {s.labels["outcome"]: s.value for s in _samples(families["mcpwall_approvals"], "_total")}
        assert asks["asked"] == 1
        assert asks["expired"] == 1
        [info] = families["mcpwall_policy_info"].samples
        assert info.labels["revision"] == gw.gateway.policy.current.revision


def _ctx(tool: str) -> RequestContext:
    ctx = context(server="ev", target=tool, params={"name": f"ev__{tool}", "arguments": {}})
    ctx.outcome = "ok"
    return ctx


def test_tool_labels_are_bounded_against_clients_that_invent_names() -> None:
    m = GatewayMetrics(max_tool_labels=3)
    for i in range(10):
        m.observe(_ctx(f"tool{i}"), 0.0)
    m.observe(_ctx("x" * 500), 0.0)
    tools = {s.labels["tool"] for s in _samples(_families(m.render().decode())["mcpwall_tool_calls"], "_total")}
    assert tools == {"tool0", "tool1", "tool2", "_other"}


def test_two_gateways_in_one_process_keep_separate_registries() -> None:
    a, b = GatewayMetrics(), GatewayMetrics()
    a.observe(_ctx("echo"), 0.0)
    assert b"mcpwall_tool_calls_total{" not in b.render()
    assert b'mcpwall_tool_calls_total{decision="allow",server="ev",tool="echo"} 1.0' in a.render()


async def test_an_open_circuit_shows_in_the_circuit_state(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw:
        breaker = gw.gateway.servers["ev"].breaker
        for _ in range(breaker.threshold):
            breaker.failure()
        families = _families(gw.gateway.metrics_text().decode())
        circuit = {s.labels["state"]: s.value for s in families["mcpwall_circuit_state"].samples}
        assert circuit["open"] == 1.0
        assert circuit["closed"] == 0.0
        assert families["mcpwall_circuit_failures"].samples[0].value == breaker.threshold
        breaker.success()
        await asyncio.sleep(0)


def test_latency_histograms_are_cumulative_and_agree_with_their_count_and_sum() -> None:
    m = GatewayMetrics()
    waits = [0.0002, 0.0007, 0.0007, 0.003, 0.2, 45.0, 400.0]  # the last one past every bound
    for wait in waits:
        ctx = _ctx("echo")
        ctx.upstream_ms = wait * 500
        m.observe(ctx, ctx.started + wait)
    family = _families(m.render().decode())["mcpwall_tool_call_duration_seconds"]
    buckets = {s.labels["le"]: s.value for s in _samples(family, "_bucket") if s.labels["server"] == "ev"}
    assert buckets["0.0005"] == 1
    assert buckets["0.001"] == 3
    assert buckets["0.005"] == 4
    assert buckets["0.25"] == 5
    assert buckets["60.0"] == 6
    assert buckets["300.0"] == 6
    assert buckets["+Inf"] == len(waits) == _samples(family, "_count")[0].value
    assert _samples(family, "_sum")[0].value == pytest.approx(sum(waits))
    counts = [buckets[le] for le in sorted(buckets, key=lambda le: float(le))]
    assert counts == sorted(counts)
    upstream = _families(m.render().decode())["mcpwall_upstream_duration_seconds"]
    assert _samples(upstream, "_sum")[0].value == pytest.approx(sum(waits) / 2)


def test_the_default_bound_on_tool_labels_is_the_documented_one() -> None:
    from mcpwall.metrics import MAX_TOOL_LABELS

    m = GatewayMetrics()
    for i in range(MAX_TOOL_LABELS + 5):
        m.observe(_ctx(f"tool{i}"), 0.0)
    tools = {s.labels["tool"] for s in _samples(_families(m.render().decode())["mcpwall_tool_calls"], "_total")}
    assert len(tools) == MAX_TOOL_LABELS + 1
    assert "_other" in tools


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_latency_lands_in_the_bucket_bisect_gives_it(value: float) -> None:
    """`_counts.bucket` is a loop in place of `bisect_left` (compiled, the tuple would be boxed per call)."""
    assert bucket(value) == bisect.bisect_left(LATENCY_BUCKETS, value)


@pytest.mark.parametrize("value", [0.0, *LATENCY_BUCKETS, 0.00049, 0.00051, 299.9, 300.1, 1e12])
def test_each_bound_is_in_its_own_bucket(value: float) -> None:
    assert bucket(value) == bisect.bisect_left(LATENCY_BUCKETS, value)
