"""Rewritten results, and response rules that count requests, through the gateway (SPEC 3).

Strategy: an in-process gateway in front of tests/proxy/servers/misbehave.py
(its echo answers with the arguments it got); the policy's rewrite templates
and rate conditions are checked on what the client receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import build_gateway
from tests.proxy.harness import script_server
from tests.proxy.test_server_messages import session

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: fixed-answer
    description: a request-side rule that replaces the result
    tools: [echo]
    target: argValue
    match: contains
    values: ['resultme']
    action: rewrite
    rewrite: {result: "replaced({{args.message}})"}
  - id: quiet-client
    description: a chatty client's answers are withheld
    target: response
    match: contains
    values: ['chatty']
    action: deny
    contextCondition: {maxRequestsPerMinute: 2}
stages:
  ratelimit: {requestsPerMinute: 0}
"""


def call(rid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": args}}


async def test_a_request_side_rewrite_replaces_the_result_with_its_template_filled_in(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path, POLICY, {"m": script_server("misbehave", "ok")}).gateway
    await gw.start()
    try:
        s = await session(gw)
        answer = await gw.handle_request(s, call(1, {"message": "resultme please"}))
        assert answer is not None
        assert answer["result"]["content"] == [{"type": "text", "text": "replaced(resultme please)"}]
        untouched = await gw.handle_request(s, call(2, {"message": "hello"}))
        assert untouched is not None
        assert untouched["result"]["content"][0]["text"] == '{"message": "hello"}'
        # a response rule's rate condition sees the client's real request count (it saw 0: never met)
        texts = [await gw.handle_request(s, call(10 + i, {"message": "chatty"})) for i in range(4)]
        last = texts[-1]
        assert last is not None
        assert last["error"]["code"] == -32001
        assert last["error"]["data"]["rule_ids"] == ["quiet-client"]
    finally:
        await gw.stop()
