"""Webhook notifications: seatbelt's formats, the events each webhook lists, retries, redaction.

Strategy: a real gateway (`tests.approvals.harness.served`, npm `everything` upstream) whose
policy lists webhooks pointing at a real local HTTP receiver (`receiver.py`). Calls made by the
official client trigger deny, allow, ask and honeytoken events (the honeytoken is a real decoy
planted by the injection stage in a `get-sum` result and sent back by the test). A second
gateway points one webhook at a port nothing listens on, one at a receiver that fails twice
with 503 and one that answers 400: calls stay fast, the dead one is retried then given up,
the flaky one delivered, the 400 not retried. Formatting and the event mapping are also
checked directly on fabricated contexts.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from mcpwall.notify import (
    Notifier,
    SenderOptions,
    as_discord,
    as_json,
    as_slack,
    destination_name,
    events_for,
    pick,
    render,
)
from mcpwall.notify._events import NotificationEvent
from mcpwall.policy import Decision
from mcpwall.stages import RequestContext
from tests.approvals.harness import ask_policy, served
from tests.harness import context, free_port
from tests.notify.receiver import receiver
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio]

AWS = re.compile(r"AKIA[0-9A-Z]{16}")


def _hooks(url: str) -> str:
    return f"""\
notifications:
  webhooks:
    - {{url: "{url}/json", format: json, events: [deny, ask, honeytoken, allow], headers: {{X-Hook: s3cret}}}}
    - {{url: "{url}/slack", format: slack, events: [deny]}}
    - {{url: "{url}/discord", format: discord, events: [honeytoken, rug_pull]}}
honeytokens: {{enabled: true, tools: [get-sum], types: [aws]}}
"""


@pytest.mark.integration
async def test_each_webhook_gets_the_events_it_lists_in_its_format_with_secrets_redacted(tmp_path: Path) -> None:
    async with receiver() as recv:
        policy = ask_policy(extra="  notify: {attempts: 3, backoffMs: 50}\n") + _hooks(recv.url)
        async with served(tmp_path, policy) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
            [deny] = await recv.wait("/json")
            assert deny.headers["x-hook"] == "s3cret"
            assert deny.headers["content-type"] == "application/json"
            body = deny.body
            assert {k: body[k] for k in ("event", "server", "tool")} == {"event": "deny", "server": "ev",
                                                                         "tool": "get-env"}
            assert body["rule_ids"] == ["no-env"]
            assert body["reasons"]
            assert body["timestamp"].endswith("Z")
            [slack] = await recv.wait("/slack")
            assert "DENY" in slack.body["text"]
            assert "ev/get-env" in slack.body["text"]
            assert slack.body["attachments"][0]["color"] == "#ff0000"

            result: Any = await client.call_tool("ev__get-sum", {"a": 1, "b": 2})
            decoy = AWS.search(" ".join(c.text for c in result.content if c.type == "text"))
            assert decoy is not None, "no decoy was planted"
            allowed = (await recv.wait("/json", 2))[1].body
            assert (allowed["event"], allowed["tool"]) == ("allow", "get-sum")

            with pytest.raises(MCPError):
                await client.call_tool("ev__echo", {"message": f"use key {decoy.group(0)}"})
            honey = (await recv.wait("/json", 3))[2]
            assert honey.body["event"] == "honeytoken"  # the most specific event, not "deny"
            assert honey.body["rule_ids"] == ["mcpwall.honeytoken"]
            [discord] = await recv.wait("/discord")
            assert discord.body["embeds"][0]["title"] == "mcpwall: HONEYTOKEN"
            await recv.wait("/slack", 2)  # slack listens for deny only: the trip is a deny there
            for delivery in recv.received:
                assert decoy.group(0).encode() not in delivery.raw, delivery.path

            ask_call = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "please"}))
            [pending] = await gw.pending()
            ask = (await recv.wait("/json", 4))[3].body
            assert (ask["event"], ask["approval_id"]) == ("ask", pending["id"])
            assert ask["arguments"] == {"message": "please"}
            assert any(f"mcpwall approve {pending['id']}" in r for r in ask["reasons"])
            async with gw.api() as http:
                await http.post(f"/api/approvals/{pending['id']}/approve", json={})
            await asyncio.wait_for(ask_call, 20)
            done = (await recv.wait("/json", 5))[4].body
            assert (done["event"], done["decision"]) == ("allow", "ask")


@pytest.mark.integration
async def test_a_receiver_that_is_down_is_retried_then_given_up_and_calls_are_not_delayed(tmp_path: Path) -> None:
    async with receiver() as recv:
        recv.script["/flaky"] = [503, 503]
        recv.script["/bad"] = [400]
        dead = f"http://127.0.0.1:{free_port()}/hook"
        policy = ask_policy(extra="  notify: {attempts: 3, backoffMs: 400}\n") + f"""\
notifications:
  webhooks:
    - {{url: "{dead}", events: [deny]}}
    - {{url: "{recv.url}/flaky", events: [deny]}}
    - {{url: "{recv.url}/bad", events: [deny]}}
"""
        async with served(tmp_path, policy) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
            dead_name = f"json:{destination_name(dead)}"
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
            # The answer came back while its notification to the dead receiver was still being
            # retried (the backoff alone takes 1.2 s): delivery is off the call path.
            assert gw.gateway.notifier.stats()[dead_name]["failed"] == 0
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
            assert (await client.call_tool("ev__get-sum", {"a": 2, "b": 3})).content[0].text  # type: ignore[union-attr]
            await recv.wait("/flaky", 4, timeout=20)
            for _ in range(200):
                totals = [v["failed"] + v["sent"] for v in gw.gateway.notifier.stats().values()]
                if sum(totals) == 6:
                    break
                await asyncio.sleep(0.1)
            stats = gw.gateway.notifier.stats()
            by_url = {url: stats[f"json:{destination_name(url)}"] for url in
                      (dead, f"{recv.url}/flaky", f"{recv.url}/bad")}
            assert by_url[dead]["failed"] == 2
            assert by_url[dead]["retried"] == 4
            assert "ConnectError" in by_url[dead]["last_error"]
            assert by_url[f"{recv.url}/flaky"]["sent"] == 2
            assert by_url[f"{recv.url}/flaky"]["retried"] == 2
            assert by_url[f"{recv.url}/bad"]["failed"] == 1
            assert by_url[f"{recv.url}/bad"]["sent"] == 1
            assert len(recv.on("/bad")) == 2  # one 400 (not retried), then the second event delivered
            assert len(recv.on("/flaky")) == 4
            metrics = gw.gateway.metrics_text().decode()
            assert 'mcpwall_webhook_deliveries_total{result="failed",webhook="json:127.0.0.1#' in metrics


# ---------------------------------------------------------------------- formats and events, directly

def _event(**kw: Any) -> NotificationEvent:
    base: dict[str, Any] = {"event": "deny", "server": "fs", "tool": "read_file",
                            "reasons": ("token ghp_" + "b" * 36 + " in a path",), "timestamp": "2026-05-20T10:00:00.000Z",
                            "rule_ids": ("no-secrets",), "arguments": {"path": "/x", "password": "pw-in-clear-1234",
                                                                       "k": "AKIAIOSFODNN7EXAMPLE"},
                            "redacted_keys": ("password",)}
    return NotificationEvent(**{**base, **kw})


def test_the_three_formats_keep_seatbelts_shapes() -> None:
    e = _event()
    j = as_json(e)
    assert list(j)[:5] == ["event", "server", "tool", "reasons", "timestamp"]
    s = as_slack(e)
    assert s["text"].startswith(":no_entry: mcpwall: *DENY* — fs/read_file")
    assert s["blocks"][0]["type"] == "section"
    assert s["blocks"][0]["text"]["type"] == "mrkdwn"
    assert [f["title"] for f in s["attachments"][0]["fields"]] == ["Action", "Server", "Tool", "Timestamp"]
    d = as_discord(e)
    embed = d["embeds"][0]
    assert embed["title"] == "mcpwall: DENY"
    assert embed["color"] == 0xFF0000
    assert [f["name"] for f in embed["fields"]][:3] == ["Server", "Tool", "Reasons"]
    assert embed["timestamp"] == e.timestamp


@pytest.mark.parametrize("fmt", ["json", "slack", "discord"])
def test_secrets_never_leave_in_a_payload(fmt: str) -> None:
    body = render(fmt, _event())
    assert b"ghp_" + b"b" * 36 not in body
    assert b"AKIAIOSFODNN7EXAMPLE" not in body
    assert b"pw-in-clear-1234" not in body


def _ctx(notes: dict[str, Any], outcome: str = "ok", action: str = "allow") -> RequestContext:
    ctx = context(server="fs", target="write", params={"name": "fs__write", "arguments": {"path": "/tmp/a"}})
    ctx.decision = Decision(action=action, reasons=("r",), rule_ids=("rule-1",), mode="enforce",  # type: ignore[arg-type]
                            enforced_action=action, revision="rev", timeout_ms=1000)  # type: ignore[arg-type]
    ctx.outcome = outcome
    ctx.notes.update(notes)
    return ctx


def test_notes_of_the_security_stages_become_their_events_most_specific_first() -> None:
    chain = _ctx({"chain": {"alert": "[mcpwall.attack-chain] reached exfiltration", "state": "x"}}, "deny")
    chain.response = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Blocked",
                                                           "data": {"reasons": ["chain"], "rule_ids": ["mcpwall.attack-chain"]}}}
    events = events_for(chain)
    assert [e.event for e in events] == ["attack_chain", "deny"]
    assert pick(events, ["deny", "attack_chain"]).event == "attack_chain"  # type: ignore[union-attr]
    assert pick(events, ["deny"]).event == "deny"  # type: ignore[union-attr]
    assert pick(events, ["redact"]) is None
    toxic = events_for(_ctx({"chain": {"toxic_flow": "[mcpwall.toxic-flow] private + untrusted -> web"}}))
    assert [e.event for e in toxic] == ["toxic_flow", "allow"]
    seen: set[str] = set()
    first = events_for(_ctx({"pins": {"pending": "fs/tool:write", "change": "changed"}}), seen)
    assert first[0].event == "rug_pull"
    again = events_for(_ctx({"pins": {"pending": "fs/tool:write", "change": "changed"}}), seen)
    assert "rug_pull" not in [e.event for e in again]  # announced once
    dlp = events_for(_ctx({"dlp": {"redactions": 2, "types": {"aws": 2}}}))
    assert [e.event for e in dlp] == ["redact", "allow"]
    warned = events_for(_ctx({}, action="warn"))
    assert [e.event for e in warned] == ["warn", "allow"]


async def test_publishing_never_waits_and_a_full_queue_drops_and_counts() -> None:
    class Hook:
        url = f"http://127.0.0.1:{free_port()}/nobody"
        format = "json"
        events = ("deny",)
        headers = None

    notifier = Notifier(SenderOptions(attempts=1, queue_size=2, timeout_s=1))
    # publish() is synchronous: it cannot wait for a delivery; it queues or drops.
    queued = sum(notifier.publish([Hook()], [_event()]) for _ in range(50))
    assert queued <= 3
    [stats] = notifier.stats().values()
    assert stats["dropped"] >= 47
    await notifier.close(grace_s=3)
