"""`mcpwall benchmark` against a real gateway in front of server-everything.

Strategy: the command runs as a user would (a subprocess) against a gateway
process; its counts must match what it sent, what the policy decided (one
tool allowed, one denied by the test policy) and the gateway's own counts.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.proxy.harness import EVERYTHING, MCPWALL, GatewayProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path_factory.mktemp("gw-bench"), {"everything": EVERYTHING}).start()
    yield g
    g.stop()


def bench(gw: GatewayProcess, *args: str) -> tuple[int, Any, str]:
    proc = subprocess.run([MCPWALL, "benchmark", "--url", gw.url, "--home", str(gw.home), *args],
                          capture_output=True, text=True, timeout=120)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = proc.stdout
    return proc.returncode, out, proc.stderr


def test_allowed_calls_are_measured_and_agree_with_the_gateways_count(gw: GatewayProcess) -> None:
    code, out, err = bench(gw, "--server", "everything", "--tool", "echo", "--args", '{"message": "hi"}',
                           "--requests", "40", "--concurrency", "4", "--warmup", "4", "--json")
    assert code == 0, err
    assert out["answers"] == {"allowed": 40, "blocked": 0, "rate_limited": 0, "failed": 0, "unanswered": 0}
    assert out["gateway"] == {"processed": 44, "blocked": 0, "failed": 0, "agrees": True}
    assert 0 < out["latency_ms"]["p50"] <= out["latency_ms"]["p95"] <= out["latency_ms"]["p99"]
    assert out["calls_per_s"] > 0


def test_calls_the_policy_denies_count_as_blocked_on_both_sides(gw: GatewayProcess) -> None:
    code, out, err = bench(gw, "--server", "everything", "--tool", "get-env", "--requests", "10",
                           "--concurrency", "5", "--warmup", "2", "--json")
    assert code == 0, err
    assert "does not list 'get-env'" in err  # denied tools are hidden from lists
    assert out["answers"]["blocked"] == 10
    assert out["gateway"] == {"processed": 12, "blocked": 12, "failed": 0, "agrees": True}


def test_a_server_the_gateway_does_not_have_is_bad_input(gw: GatewayProcess) -> None:
    code, _, err = bench(gw, "--server", "nowhere", "--requests", "5")
    assert code == 2
    assert "no server 'nowhere'" in err


def test_the_text_report_and_the_refused_token(gw: GatewayProcess) -> None:
    code, out, err = bench(gw, "--server", "everything", "--tool", "echo", "--args", '{"message": "x"}',
                           "--requests", "8", "--concurrency", "2", "--warmup", "0")
    assert code == 0, err
    assert "calls/s" in out
    assert "agree" in out
    code, _, err = bench(gw, "--token", "secret", "--requests", "1")
    assert code == 2
    assert "refused" in err
