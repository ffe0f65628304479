"""The `ask` flow end to end: the official MCP client, a real gateway on loopback, the HTTP API.

Strategy: `harness.served` runs a gateway built like `mcpwall proxy` (token auth, SQLite
ledger, every stage) with the npm `everything` server upstream and a policy whose `ask-echo`
rule holds every `echo` call. The official Python client calls `ev__echo` over streamable
HTTP; the test answers through `/api/approvals/...` with the gateway's bearer token, as the
dashboard and `mcpwall approve` do. Each outcome is then read back from the ledger's
`tool_calls` rows. Adversarial cases: an approval cannot release a call with other arguments
(its hash binds it), cannot be replayed, cannot be given with an agent's own token, and the
client's own elicitation answer counts only when the policy allows it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.approvals.harness import ask_policy, served
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_held_call_completes_when_approved_over_http_and_an_identical_call_asks_again(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        first = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "hello"}, progress_callback=on_progress))
        [ask] = await gw.pending()
        assert (ask["server"], ask["tool"], ask["arguments"]) == ("ev", "echo", {"message": "hello"})
        assert ask["rule_ids"] == ["ask-echo"]
        await asyncio.sleep(1.2)  # let a progress notification or two reach the client
        async with gw.api() as http:
            answer = await http.post(f"/api/approvals/{ask['id']}/approve", json={})
        assert answer.status_code == 200, answer.text
        result = await asyncio.wait_for(first, 20)
        assert _text(result) == "Echo: hello"
        assert updates, "the held call sent no progress notification"
        assert "waiting for a person to approve" in (updates[0][2] or "")
        assert ask["id"] in (updates[0][2] or "")

        # The approval was used: the same call again waits for a new answer.
        second = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "hello"}))
        [again] = await gw.pending()
        assert again["id"] != ask["id"]
        assert again["call_hash"] == ask["call_hash"]  # the same call, a new approval
        async with gw.api() as http:
            replay = await http.post(f"/api/approvals/{ask['id']}/approve", json={})
            assert replay.status_code == 409
            assert "already approved" in replay.json()["error"]
            denied = await http.post(f"/api/approvals/{again['id']}/deny", json={"reason": "not today"})
            assert denied.status_code == 200
        with pytest.raises(MCPError) as refused:
            await asyncio.wait_for(second, 20)
        assert refused.value.code == -32001
        assert "not today" in refused.value.message

        rows = gw.ledger_rows("echo")
        assert [r["decision"] for r in rows] == ["ask", "deny"]
        assert [r["outcome"] for r in rows] == ["ok", "ask-denied"]
        assert rows[0]["notes"]["approval"]["status"] == "approved"
        assert rows[0]["notes"]["approval"]["id"] == ask["id"]
        assert rows[0]["notes"]["approval"]["via"] == "api"
        assert rows[1]["notes"]["approval"]["status"] == "denied"
        assert rows[1]["rule_ids"] == ["ask-echo"]
        assert any("not today" in r for r in rows[1]["reasons"])
        # answered asks stay in the ledger's approval book
        book = {r["id"]: r for r in (await asyncio.to_thread(gw.gateway.approvals.book.all))}
        assert book[ask["id"]]["used_at"] is not None
        assert book[again["id"]]["status"] == "denied"


async def test_an_approval_for_one_set_of_arguments_does_not_release_a_call_with_other_arguments(
        tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=4000)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        call_a = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "harmless"}))
        [ask_a] = await gw.pending(1)
        call_b = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "rm -rf /"}))
        asks = await gw.pending(2)
        ask_b = next(a for a in asks if a["id"] != ask_a["id"])
        assert ask_b["call_hash"] != ask_a["call_hash"]
        async with gw.api() as http:
            # An approver who saw call A cannot have that approval applied to call B.
            wrong = await http.post(f"/api/approvals/{ask_b['id']}/approve", json={"call_hash": ask_a["call_hash"]})
            assert wrong.status_code == 409
            assert "different call" in wrong.json()["error"]
            ok = await http.post(f"/api/approvals/{ask_a['id']}/approve", json={"call_hash": ask_a["call_hash"]})
            assert ok.status_code == 200
        assert _text(await asyncio.wait_for(call_a, 20)) == "Echo: harmless"
        assert not call_b.done()
        with pytest.raises(MCPError) as refused:
            await asyncio.wait_for(call_b, 20)
        assert "no one approved this call" in refused.value.message
        rows = gw.ledger_rows("echo")
        by_status = {r["notes"]["approval"]["id"]: r for r in rows}
        assert by_status[ask_a["id"]]["decision"] == "ask"
        assert by_status[ask_b["id"]]["decision"] == "deny"
        assert by_status[ask_b["id"]]["notes"]["approval"]["status"] == "expired"
        assert by_status[ask_b["id"]]["request_preview"] == '{"message":"rm -rf /"}'


async def test_an_unanswered_ask_is_denied_at_its_timeout(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=1500)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        started = time.monotonic()
        with pytest.raises(MCPError) as refused:
            await client.call_tool("ev__echo", {"message": "nobody is there"})
        waited = time.monotonic() - started
        assert 1.4 <= waited < 10
        assert refused.value.code == -32001
        assert refused.value.data["approval"]["status"] == "expired"
        assert refused.value.data["rule_ids"] == ["ask-echo"]
        assert refused.value.data["mode"] == "enforce"  # the same error data as any policy block (ERRORS.md)
        [row] = gw.ledger_rows("echo")
        assert (row["decision"], row["outcome"]) == ("deny", "ask-denied")
        assert row["notes"]["approval"]["status"] == "expired"
        assert any("no one approved this call within 1.5 s" in r for r in row["reasons"])
        async with gw.api() as http:
            late = await http.post(f"/api/approvals/{row['notes']['approval']['id']}/approve", json={})
        assert late.status_code == 409  # expired: a late approval releases nothing


async def test_an_agent_with_its_own_token_cannot_approve_its_own_call(tmp_path: Path) -> None:
    agent_token = "agent-token-" + "x" * 40
    async with served(tmp_path, ask_policy(), agent_tokens={"agent7": agent_token}) as gw, \
            http_client(f"{gw.url}/mcp", agent_token) as client:
        call = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "let me in"}))
        [ask] = await gw.pending()
        assert ask["agent"] == "agent7"
        async with gw.api(agent_token) as http:
            mine = await http.post(f"/api/approvals/{ask['id']}/approve", json={})
            assert mine.status_code == 403
            listing = await http.get("/api/approvals")
            assert listing.status_code == 403
        async with gw.api("") as anonymous:
            assert (await anonymous.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 401
        async with gw.api("not-the-token") as wrong:
            assert (await wrong.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 401
        assert not call.done()
        async with gw.api() as http:
            assert (await http.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 200
        assert _text(await asyncio.wait_for(call, 20)) == "Echo: let me in"


def _elicitation(answers: list[types.ElicitRequestParams], approve: bool) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        answers.append(params)
        return types.ElicitResult(action="accept", content={"approve": approve})

    return callback


async def test_the_client_is_not_asked_to_approve_its_own_call_unless_the_policy_allows_it(tmp_path: Path) -> None:
    asked: list[types.ElicitRequestParams] = []
    async with served(tmp_path, ask_policy(timeout_ms=3000)) as gw, \
            http_client(f"{gw.url}/mcp", gw.token, elicitation_callback=_elicitation(asked, True)) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("ev__echo", {"message": "approve yourself"})
        assert "no one approved" in refused.value.message
        assert asked == []


async def test_with_via_elicitation_the_users_answer_in_the_client_releases_or_refuses_the_call(
        tmp_path: Path) -> None:
    policy = ask_policy(extra="  approvals: {viaElicitation: true}\n")
    asked: list[types.ElicitRequestParams] = []
    # In the SDK's default mode: a 2026-07-28 client is asked in an input round (MRTR, issue 24 item 3)
    async with served(tmp_path, policy) as gw, \
            http_client(f"{gw.url}/mcp", gw.token, elicitation_callback=_elicitation(asked, True)) as client:
        result = await asyncio.wait_for(client.call_tool("ev__echo", {"message": "asked in the client"}), 20)
        assert _text(result) == "Echo: asked in the client"
        assert len(asked) == 1
        assert "ev/echo" in asked[0].message
        [row] = gw.ledger_rows("echo")
        assert row["notes"]["approval"]["via"] == "elicitation"
    refusing: list[types.ElicitRequestParams] = []
    async with served(tmp_path / "2", policy) as gw, \
            http_client(f"{gw.url}/mcp", gw.token, elicitation_callback=_elicitation(refusing, False)) as client:
        with pytest.raises(MCPError) as refused:
            await asyncio.wait_for(client.call_tool("ev__echo", {"message": "no"}), 20)
        assert "denied by a person" in refused.value.message
        assert len(refusing) == 1


async def test_approve_similar_grants_a_narrow_expiring_allow_that_can_be_revoked(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=3000)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        first = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "one"}))
        [ask] = await gw.pending()
        async with gw.api() as http:
            answer = (await http.post(f"/api/approvals/{ask['id']}/approve", json={"similar_minutes": 5})).json()
            assert answer["grant_id"]
            [grant] = (await http.get("/api/grants")).json()
        assert grant["id"] == answer["grant_id"]
        assert (grant["server"], grant["tool"], grant["arg_keys"]) == ("ev", "echo", ["message"])
        assert 290 <= grant["expires"] - grant["created"] <= 300
        await asyncio.wait_for(first, 20)
        # Other values, same shape: allowed without asking.
        assert _text(await asyncio.wait_for(client.call_tool("ev__echo", {"message": "two"}), 10)) == "Echo: two"
        # Another tool the grant was not made for still follows its own rule.
        with pytest.raises(MCPError):
            await client.call_tool("ev__get-env", {})
        async with gw.api() as http:
            revoked = await http.post(f"/api/grants/{grant['id']}/revoke")
            assert revoked.status_code == 200
            assert (await http.get("/api/grants")).json() == []
        with pytest.raises(MCPError) as asked_again:
            await client.call_tool("ev__echo", {"message": "three"})
        assert "no one approved" in asked_again.value.message
        rows = gw.ledger_rows("echo")
        assert [r["notes"]["approval"]["status"] for r in rows] == ["approved", "granted", "expired"]
        assert rows[1]["notes"]["approval"]["grant"] == grant["id"]


async def test_a_stage_that_asks_about_a_poisoned_tool_waits_for_the_same_approval(tmp_path: Path) -> None:
    from tests.trust.helpers import POISONED

    policy = ('version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
              "  poisoning:\n    actions: {hidden_instructions: ask, context_harvesting: ask}\n")
    async with served(tmp_path, policy, servers={"p": POISONED}) as gw, \
            http_client(f"{gw.url}/mcp", gw.token) as client:
        assert "p__fetch_notes" in [t.name for t in (await client.list_tools()).tools]
        held = asyncio.ensure_future(client.call_tool("p__fetch_notes", {}))
        [ask] = await gw.pending()
        assert ask["tool"] == "fetch_notes"
        assert all(r.startswith("poisoning:") for r in ask["rule_ids"])
        async with gw.api() as http:
            assert (await http.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 200
        assert _text(await asyncio.wait_for(held, 20)) == "notes"


async def test_a_client_that_cancels_a_held_call_leaves_a_cancelled_record_and_nothing_pending(
        tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw:
        gateway = gw.gateway
        session = gateway.open_session("stdio", None)
        await gateway.handle_request(session, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        held = asyncio.ensure_future(gateway.handle_request(session, {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "ev__echo", "arguments": {"message": "never mind"}}}))
        [ask] = await gw.pending()
        await gateway.handle(session, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                       "params": {"requestId": 2, "reason": "user pressed stop"}})
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(held, 10)
        assert gateway.approvals.book.get(ask["id"])["status"] == "cancelled"
        assert gateway.approvals.book.pending() == []
        async with gw.api() as http:
            assert (await http.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 409
        [row] = gw.ledger_rows("echo")
        assert row["decision"] == "cancelled"
        assert row["notes"]["approval"]["status"] == "cancelled"
