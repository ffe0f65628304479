"""A schema refusal never echoes the argument's value (issue 22, review of item 8).

Strategy: the real gateway (`mcpwall proxy` subprocess) in front of the npm everything
server, an allow-all policy; `get-sum` takes numbers, so a credential sent as `a` is refused
by the schema stage with -32602. jsonschema's own message quotes the value ("'ghp_...' is not
of type 'number'"), which went back to the agent and into the ledger in clear: the refusal
must name the argument and the rule, and hold none of the secret, in the message, in
`error.data` and in the ledger row's error and reasons. One case per value shape that
jsonschema quotes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.proxy.harness import PERMISSIVE, ROOT, GatewayProcess

pytestmark = pytest.mark.integration

EVERYTHING = {"command": str(ROOT / "node_modules" / ".bin" / "mcp-server-everything"), "args": ["stdio"]}
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
AWS = "AKIA" + "QWERTYUIOPASDFGH"


@pytest.mark.parametrize("value", [GITHUB, f"key={AWS}", {"token": GITHUB}, [AWS, 1]])
def test_a_secret_sent_in_a_field_of_the_wrong_type_is_not_echoed_by_the_refusal(tmp_path: Path,
                                                                                   value: object) -> None:
    g = GatewayProcess(tmp_path / "home", {"everything": EVERYTHING}, PERMISSIVE).start(timeout=120)
    try:
        answer = g.post("/everything", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                        "params": {"name": "get-sum", "arguments": {"a": value, "b": 1}}}).json()
    finally:
        g.stop()
    assert answer["error"]["code"] == -32602
    text = json.dumps(answer)
    assert "/a" in answer["error"]["message"] or "a:" in answer["error"]["message"]
    for secret in (GITHUB, AWS):
        assert secret not in text
    with sqlite3.connect(g.home / "ledger.db") as db:
        rows = json.dumps([list(r) for r in db.execute(
            "SELECT tool_name, error_message, reasons FROM tool_calls")], default=str)
    assert "get-sum" in rows
    assert "is not of type 'number'" in rows
    for secret in (GITHUB, AWS):
        assert secret not in rows  # the refusal's words; what was sent is the request preview's to keep
