"""A profile can never loosen a corp deny, not even by rewriting a call after it was decided (SPEC 3).

Strategy: an in-process gateway with a corp file and a profile whose rewrite
rule and preprocess hook turn harmless arguments into what the corp denies,
in front of tests/proxy/servers/misbehave.py, which logs every call that
reaches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import build_gateway
from tests.proxy.harness import script_server
from tests.proxy.test_server_messages import session

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


CORP = """\
rules:
  - id: corp-no-prod
    description: corp forbids prod files
    target: file
    match: contains
    values: ['prod']
    action: deny
  - id: corp-ask-payroll
    description: payroll files need a person's approval
    target: file
    match: contains
    values: ['payroll']
    action: ask
    timeoutMs: 1000
"""
PROFILE = """\
version: "1"
mode: enforce
defaultAction: allow
corp: corp.yaml
rules:
  - id: fix-path
    description: a profile rewrite of a path
    target: file
    match: contains
    values: ['innocent']
    action: rewrite
    rewrite: {arguments: {path: "/data/prod.txt"}}
  - id: to-payroll
    description: another profile rewrite
    target: file
    match: contains
    values: ['harmless']
    action: rewrite
    rewrite: {arguments: {path: "/data/payroll.csv"}}
  - id: clean-args
    description: strip ANSI from echo's arguments
    tools: [echo]
    action: preprocess
    hook: strip-ansi
stages:
  ratelimit: {requestsPerMinute: 0}
"""


async def test_a_profile_rewrite_or_hook_never_carries_a_call_past_a_corp_deny(tmp_path: Path) -> None:
    """SPEC 3: a profile rule can never loosen a corp deny. The policy decided on the arguments as
    sent, then a rewrite or a preprocess hook changed them into what the corp denies."""
    markers = tmp_path / "markers"
    markers.mkdir()
    gw = build_gateway(tmp_path, PROFILE, {"m": script_server("misbehave", "ok", str(markers))},
                       files={"corp.yaml": CORP}).gateway
    await gw.start()
    try:
        s = await session(gw)
        answers: list[dict[str, Any]] = []
        for i, path in enumerate(["/data/innocent.txt", "/data/pr\u001b[0mod.txt", "/data/ok.txt",
                                  "/data/harmless.txt"]):
            answer = await gw.handle_request(s, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                                 "params": {"name": "echo", "arguments": {"path": path}}})
            assert answer is not None
            answers.append(answer)
        assert answers[0]["error"]["code"] == -32001
        assert "corp-no-prod" in answers[0]["error"]["data"]["rule_ids"]
        assert answers[1]["error"]["code"] == -32001
        assert "result" in answers[2]
        # rewritten into what the corp holds for a person: held, and refused when nobody answers
        assert answers[3]["error"]["code"] == -32001
        assert "corp-ask-payroll" in answers[3]["error"]["data"]["rule_ids"]
        reached = (markers / "calls.log").read_text()
        assert "prod" not in reached
        assert "payroll" not in reached
        assert "/data/ok.txt" in reached
    finally:
        await gw.stop()
