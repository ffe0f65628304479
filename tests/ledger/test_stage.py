"""The ledger stage in a real gateway: what each kind of request leaves in the ledger.

Strategy: in-process gateways (the real pipeline) in front of
server-everything on SQLite; each test drives requests through
`Gateway.handle_request` and reads the ledger back through a second,
independent `open_ledger`, as the CLI would.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from mcpwall.ledger import Ledger, LedgerQuery, open_ledger
from mcpwall.protocol import Message
from mcpwall.stages.audit import build as build_audit
from mcpwall.state import MemoryStateStore
from tests.ledger.gateway import POLICY, Client, ledger_gateway, policy_text

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def test_every_request_is_recorded_tools_calls_in_tool_calls_the_rest_in_protocol_events(
        tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text())
    gw = built.gateway
    assert isinstance(gw.ledger, Ledger)
    assert gw.state is gw.ledger
    await gw.start()
    try:
        client = Client(built)
        await client.initialize()
        await client.request("tools/list")
        await client.request("resources/read", {"uri": "demo://resource/static/document/architecture.md"})
        await client.request("prompts/get", {"name": "everything__simple-prompt"})
        await client.call("echo", {"message": "hi"})
        unknown = await client.request("tools/call", {"name": "nosuchserver__echo", "arguments": {"k": "v"}})
        assert unknown["error"]["code"] == -32601
        gw.state.put_state("tests", "k", {"v": 1})
        status = gw.status()["stages"]["audit"]
        assert status["backend"] == "sqlite"
        assert status["healthy"] is True
    finally:
        await gw.stop()
    with open_ledger(tmp_path, create=False) as ledger:
        calls = ledger.query(LedgerQuery(order="asc")).rows
        assert [(r["tool_name"], r["decision"]) for r in calls] == [("echo", "allow"), ("nosuchserver__echo", "rejected")]
        assert calls[1]["server_name"] is None
        assert "Unknown server" in calls[1]["error_message"]
        assert "v" not in calls[1]["request_preview"]  # never checked by the policy: only argument names
        events = ledger.query(LedgerQuery(table="protocol_events", order="asc")).rows
        assert [e["method"] for e in events] == ["initialize", "tools/list", "resources/read", "prompts/get"]
        init = events[0]
        assert init["client"] == "ledger-tests"
        assert init["client_version"] == "1.0"
        assert events[2]["tool_name"] == "demo://resource/static/document/architecture.md"
        assert events[3]["server_name"] == "everything"
        assert events[3]["tool_name"] == "simple-prompt"
        assert ledger.get_state("tests", "k") == {"v": 1}
        assert ledger.verify().ok


async def test_strict_durability_commits_each_row_before_the_answer_is_returned(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text(durability="strict"))
    await built.gateway.start()
    reader = None
    try:
        client = Client(built)
        await client.initialize()
        reader = open_ledger(tmp_path, create=False)
        for n in range(1, 21):
            await client.call("echo", {"message": f"m{n}"})
            assert reader.count("tool_calls") == n  # committed, not merely queued
    finally:
        await built.gateway.stop()
        if reader is not None:
            reader.close()


async def test_audit_mode_records_what_enforce_mode_would_have_done(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text(mode="audit"))
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        answer = await client.call("get-env", {})
        assert "result" in answer
    finally:
        await built.gateway.stop()
    with open_ledger(tmp_path, create=False) as ledger:
        (row,) = ledger.query().rows
        assert (row["decision"], row["enforced_action"], row["mode"]) == ("allow", "deny", "audit")
        assert row["rule_ids"] == ["no-env-dump"]
        assert [r["action"] for r in ledger.rule_events(row["seq"])] == ["deny"]


async def test_rate_limited_calls_are_recorded_as_such(tmp_path: Path) -> None:
    policy = policy_text().replace("requestsPerMinute: 0", "requestsPerMinute: 3")
    built = ledger_gateway(tmp_path, policy)
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        answers = [await client.call("echo", {"message": str(n)}) for n in range(4)]
        assert answers[-1]["error"]["code"] == -32004
    finally:
        await built.gateway.stop()
    with open_ledger(tmp_path, create=False) as ledger:
        decisions = [r["decision"] for r in ledger.query(LedgerQuery(order="asc")).rows]
        assert decisions == ["allow", "allow", "rate_limited", "rate_limited"]  # initialize counts too


async def test_with_bodies_off_no_payload_is_stored_but_previews_are(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text(bodies=False))
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        await client.call("echo", {"message": "small"})
    finally:
        await built.gateway.stop()
    with open_ledger(tmp_path, create=False) as ledger:
        assert ledger.count("event_body_blobs") == 0
        (row,) = ledger.query().rows
        assert row["request_body_id"] is None
        assert "small" in row["request_preview"]
        assert row["response_preview"] == "Echo: small"


def test_a_disabled_ledger_builds_no_stage_and_no_unit_test_ledger_is_opened(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, POLICY.format(mode="enforce", ledger="  enabled: false"))
    assert built.gateway.pipeline.find("audit") is None
    assert isinstance(built.gateway.state, MemoryStateStore)
    assert not (tmp_path / "ledger.db").exists()
    assert build_audit({}, None) is None


def test_bad_ledger_options_are_refused_with_the_key_named(tmp_path: Path) -> None:
    from mcpwall.errors import ConfigError

    with pytest.raises(ConfigError, match=r"ledger\.durability"):
        ledger_gateway(tmp_path, policy_text(durability="sometimes"))
    with pytest.raises(ConfigError, match="unknown key"):
        ledger_gateway(tmp_path / "b", policy_text(flushEvery=3))
    with pytest.raises(ConfigError, match="batchRows"):
        ledger_gateway(tmp_path / "c", policy_text(batchRows=-1))


async def test_answers_wait_for_a_writer_that_fell_behind_instead_of_rows_piling_up_in_memory(
        tmp_path: Path) -> None:
    """Backpressure in batched mode: with the database held by another writer, the queue
    stops at a few batches and further answers wait; nothing is lost when it frees up."""
    built = ledger_gateway(tmp_path, policy_text(batchRows=5, flushIntervalMs=10))
    gw = built.gateway
    await gw.start()
    blocker = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    try:
        client = Client(built)
        await client.initialize()
        await client.request("tools/list")
        await client.call("echo", {"message": "first"})  # the catalog's pins are saved before the lock
        await asyncio.sleep(0.3)
        blocker.execute("BEGIN IMMEDIATE")  # the gateway's writer now waits on its busy timeout
        answered: list[Message] = []

        async def agent() -> None:  # one call after another, as fast as the gateway answers
            for n in range(60):
                answered.append(await client.call("echo", {"message": f"m{n}"}))

        calls = asyncio.ensure_future(agent())
        await asyncio.sleep(1.5)
        audit = gw.status()["stages"]["audit"]
        assert audit["healthy"] is True
        assert audit["backpressure_waits"] > 0
        # one batch in the blocked writer, four waiting, then the calls are held back: not all 60
        assert len(answered) <= 5 * 5 + 1
        assert audit["pending"] <= 5 * 4 + 1
        blocker.execute("COMMIT")
        await asyncio.wait_for(calls, 30)
        assert len(answered) == 60
        assert all("result" in a for a in answered)
    finally:
        blocker.close()
        await gw.stop()
    with open_ledger(tmp_path, create=False) as ledger:
        assert ledger.count("tool_calls") == 61
        assert ledger.verify().ok
