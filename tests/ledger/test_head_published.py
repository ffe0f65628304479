"""The ledger's head is published where an agent in the home cannot take it back (issue 22, item 11).

Strategy: a real gateway (`tests.approvals.harness.served`: token auth, SQLite
ledger, the npm `everything` upstream, a real local webhook receiver) serves
calls through the official MCP client; then the head appears, equal to the
ledger's own `ledger_head`, in `/metrics` (`mcpwall_ledger_head_seq`,
`mcpwall_ledger_head_info`), in the dashboard API (`/api/ledger/head` and the
stats' `ledger_head`) and in every webhook payload (`ledger_head`), and the
published `SEQ:MAC` is what `verify-audit --expect-head` accepts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from mcpwall.cli import cli
from mcpwall.ledger import open_ledger
from tests.approvals.harness import ask_policy, served
from tests.notify.receiver import receiver
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]


async def test_the_head_is_in_metrics_the_dashboard_and_every_webhook_and_verifies_as_expected(tmp_path: Path) -> None:
    async with receiver() as recv:
        policy = ask_policy() + f"notifications:\n  webhooks:\n    - {{url: \"{recv.url}/json\", events: [deny, allow]}}\n"
        async with served(tmp_path, policy) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
            for i in range(3):
                await client.call_tool("ev__get-sum", {"a": i, "b": 1})
            ledger = gw.gateway.ledger
            await asyncio.to_thread(ledger.flush)
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
            hooks = await recv.wait("/json", 4)
            await asyncio.to_thread(ledger.flush)
            head_seq, head_mac = await asyncio.to_thread(ledger.head)
            async with gw.api() as api:
                metrics = (await api.get("/metrics")).text
                head = (await api.get("/api/ledger/head")).json()
                stats = (await api.get("/api/stats")).json()
    families = {f.name: f for f in text_string_to_metric_families(metrics)}
    assert families["mcpwall_ledger_head_seq"].samples[0].value == head_seq
    info = families["mcpwall_ledger_head_info"].samples[0].labels
    assert info == {"ledger_id": ledger.ledger_id, "seq": str(head_seq), "mac": head_mac[:16]}
    assert head == {"ledger_id": ledger.ledger_id, "seq": head_seq, "mac": head_mac[:16],
                    "head": f"{head_seq}:{head_mac[:16]}"}
    assert stats["ledger_head"]["head"] == head["head"]
    # Each payload carries the head committed when it was made: it only moves forward, up to the last one.
    published = [h.body["ledger_head"] for h in hooks[1:]]
    seqs = [int(p.split(":")[0]) for p in published]
    assert seqs == sorted(seqs)
    assert 0 < seqs[-1] <= head_seq
    home = gw.home
    with open_ledger(home, create=False) as reopened:
        assert reopened.head() == (head_seq, head_mac)
    for label in (head["head"], published[-1]):
        result = CliRunner().invoke(cli, ["verify-audit", "--home", str(home), "--expect-head", label])
        assert result.exit_code == 0, result.output
