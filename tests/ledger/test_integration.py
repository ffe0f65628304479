"""1,000 mixed calls through a real gateway: exactly one ledger row each, with the right decision.

Strategy: an in-process gateway (the real pipeline, policy and ledger stage)
in front of @modelcontextprotocol/server-everything over stdio, on SQLite and
on PostgreSQL. The calls mix allowed, denied, redacted, malformed (refused
by the schema stage), failing (the tool reports an error) and timed-out (a
100 ms policy timeout on a 400 ms tool) calls. Then the ledger is read back:
1,000 `tool_calls` rows, the decisions per kind, rule rows for the deny and
redact rules, no redacted secret anywhere in the database, and `mcpwall
verify-audit` passes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.ledger import LedgerQuery, open_ledger
from tests.ledger.conftest import Backend
from tests.ledger.gateway import Client, ledger_gateway, policy_text, run_mix

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TOTAL = 1000


async def test_a_thousand_mixed_calls_leave_a_thousand_rows_with_their_decisions(backend: Backend,
                                                                                  tmp_path: Path) -> None:
    url = backend.url(tmp_path)
    built = ledger_gateway(tmp_path, policy_text(), url)
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        answers = await run_mix(client, TOTAL)
    finally:
        await built.gateway.stop()

    by_kind = Counter(expected for expected, _ in answers)
    assert by_kind == {"allow": 400, "deny": 100, "redact": 100, "error": 200, "timeout": 100, "invalid": 100}
    for expected, answer in answers:
        if expected == "deny":
            assert answer["error"]["code"] == -32001
        elif expected == "invalid":
            assert answer["error"]["code"] == -32602
        elif expected == "timeout":
            assert answer["error"]["data"]["reason"] == "timeout"
        else:
            assert "result" in answer, answer

    with open_ledger(tmp_path, url, create=False) as ledger:
        assert ledger.count("tool_calls") == TOTAL
        rows = list(ledger.iter_rows(LedgerQuery(order="asc", limit=400)))
        assert len(rows) == TOTAL
        assert Counter(r["decision"] for r in rows) == by_kind
        for r in rows:
            assert r["client"] == "ledger-tests"
            assert r["agent_id"] == "agent-7"
            assert r["process_name"] == "pytest"
            assert r["server_name"] == "everything"
            assert r["method"] == "tools/call"
            assert r["session_id"] == rows[0]["session_id"]
            assert r["decision_id"]
            assert r["mac"]
            assert r["policy_revision"]
        denied = [r for r in rows if r["decision"] == "deny"]
        assert {r["tool_name"] for r in denied} == {"get-env"}
        assert all(r["rule_ids"] == ["no-env-dump"] and r["error_code"] == -32001 for r in denied)
        rules = ledger.rule_events(denied[0]["seq"])
        assert [(x["rule_id"], x["action"], x["layer"]) for x in rules] == [("no-env-dump", "deny", "profile")]
        assert rules[0]["compliance"]
        assert "CC6.1" in str(rules[0]["compliance"])
        redacted = [r for r in rows if r["decision"] == "redact"]
        assert all(r["redacted_keys"] == ["secret"] and r["dlp"]["erased"] == ["request.arguments.secret"]
                   for r in redacted)
        assert all("secret" not in r["arg_keys"] and "hunter2" not in r["request_preview"] for r in redacted)
        assert "hunter2" not in str(ledger.arguments(redacted[0]))
        timeouts = [r for r in rows if r["decision"] == "timeout"]
        assert all(r["outcome"] == "timeout" and "within 0.1 s" in r["error_message"] for r in timeouts)
        errors = [r for r in rows if r["decision"] == "error"]
        assert {r["tool_name"] for r in errors} == {"get-resource-reference", "no-such-tool"}
        invalid = [r for r in rows if r["decision"] == "invalid"]
        assert all(r["rule_ids"] == [] and "Schema validation failed" in r["reasons"][0] for r in invalid)
        assert all(r["error_message"] for r in errors)
        assert ledger.count("protocol_events") >= 1  # initialize
        if backend.name == "sqlite":
            raw = (tmp_path / "ledger.db").read_bytes() + (tmp_path / "ledger.db-wal").read_bytes() \
                if (tmp_path / "ledger.db-wal").exists() else (tmp_path / "ledger.db").read_bytes()
            assert b"hunter2" not in raw

    args = ["verify-audit", "--home", str(tmp_path)] + (["--ledger", url] if url else [])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "chain intact" in result.output
