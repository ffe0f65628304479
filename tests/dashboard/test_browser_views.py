"""The dashboard's status, servers and timeline views in a real browser, wide and on a phone (issue 27 item 9).

Strategy: one real gateway (`tests.approvals.harness.served`: token auth, SQLite ledger, npm
`everything` upstream as `ev`) and one headless Chromium (`tests.dashboard.harness.browser`) for the
whole module, walked through as a person would: open the gateway's address (sent to the
dashboard), read the overview after an ask a person took over a second to answer (the latency
cards leave that wait out), see the policy in force and a refused reload, see the ledger verified,
then broken after a row is edited behind the gateway's back; accept a changed tool on the servers
page after reading its diff, and the held tool works again; open one session's timeline; then every
page at 375 px wide, where no page is wider than the screen and wide tables scroll in their box.
Screenshots go to test-artifacts/dashboard/.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from playwright.async_api import expect

from tests.approvals.harness import Served, ask_policy, served
from tests.dashboard.harness import browser, call_once_accepted, login, pin_other_definition, shot
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: How long the person takes to answer the ask (the wait the latency cards must leave out).
ANSWER_AFTER_S = 1.2
NARROW = {"width": 375, "height": 800}


async def _answer_slowly(gw: Served, client: Any) -> dict[str, Any]:
    """An echo call held for approval, approved after ANSWER_AFTER_S; its ledger row."""
    held = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "wait for me"}))
    [ask] = await gw.pending()
    await asyncio.sleep(ANSWER_AFTER_S)
    async with gw.api() as http:
        assert (await http.post(f"/api/approvals/{ask['id']}/approve", json={})).status_code == 200
    await asyncio.wait_for(held, 20)
    [row] = gw.ledger_rows("echo")
    return row


def _break(policy: Path) -> None:
    """An edit the gateway must refuse to load: an action that does not exist."""
    policy.write_text(policy.read_text().replace("action: deny", "action: explode"))


def _tamper(ledger: Path) -> None:
    """Edit a row behind the gateway's back, as someone covering their tracks would."""
    db = sqlite3.connect(ledger, timeout=10)
    try:
        with db:
            db.execute("UPDATE tool_calls SET tool_name = 'get-tiny' WHERE tool_name = 'get-sum'")
    finally:
        db.close()


async def _number(page: Any, selector: str) -> float:
    return float((await page.inner_text(selector)).replace(",", ""))


async def test_status_servers_timeline_and_a_phone_screen(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client, \
            browser(tmp_path) as (page, errors):
        await client.call_tool("ev__get-sum", {"a": 2, "b": 3})
        with pytest.raises(MCPError):
            await client.call_tool("ev__get-env", {})
        echo = await _answer_slowly(gw, client)
        waited = echo["notes"]["approval"]["waited_ms"]
        assert echo["duration_ms"] >= waited >= ANSWER_AFTER_S * 1000

        # The gateway's address in a browser: the dashboard (its login first), not a JSON-RPC 401.
        await page.goto(f"{gw.url}/")
        assert page.url == f"{gw.url}/ui/login"
        await login(page, gw, errors)
        await page.goto(f"{gw.url}/")
        assert page.url == f"{gw.url}/ui/"

        # Latency: the person's wait is not the gateway's time.
        await expect(page.locator("[data-stat=calls] .value")).to_have_text("3")
        assert await _number(page, "[data-stat=p99_ms] .value") < waited
        row = page.locator("#live tbody tr", has_text="echo")
        await expect(row.locator(".chip.waited")).to_contain_text("s asking")

        # Policy and ledger integrity.
        revision = gw.gateway.policy.current.revision
        await expect(page.locator("#policy-line")).to_contain_text(f"Revision {revision} · enforce")
        assert await page.locator("#policy-refused").is_hidden()
        await expect(page.locator("#ledger-status[data-state=ok] #ledger-line")).to_contain_text("rows verified")
        assert "Head now " in await page.inner_text("#ledger-head")
        await asyncio.to_thread(_break, Path(gw.gateway.policy.path))
        async with gw.api() as http:
            reload = (await http.post("/api/admin/policy/reload")).json()
        assert reload["loaded"] is False
        await page.reload()
        refused = page.locator("#policy-refused")
        await expect(refused).to_contain_text(f"Last reload refused, revision {revision} stays in force")
        await expect(refused).to_contain_text("explode")
        await shot(page, "overview-status")

        assert gw.gateway.ledger.flush(10.0)
        await asyncio.to_thread(_tamper, gw.home / "ledger.db")
        await page.click("#verify")
        broken = page.locator("#ledger-status[data-state=broken] #ledger-line")
        await expect(broken).to_contain_text("BROKEN at row")
        await shot(page, "overview-broken-ledger")

        # Servers: tools with their pin state; a changed tool's diff, accepted by clicking.
        pin_other_definition(gw, "ev", "get-sum", "Adds two numbers, as it was first pinned")
        assert "ev__get-sum" not in {t.name for t in (await client.list_tools()).tools}
        await page.click("nav >> text=Servers")
        server = page.locator("section.server[data-server=ev]")
        await expect(server.locator("table.tools tr[data-tool=echo] .pin")).to_have_text("pinned")
        await expect(server.locator("table.tools tr[data-tool=get-sum] .pin")).to_have_text("pending")
        change = server.locator("article.pin-change[data-name=get-sum]")
        await expect(change.locator("pre.diff .del")).to_contain_text("Adds two numbers, as it was first pinned")
        await expect(change.locator("pre.diff .add")).to_contain_text("Returns the sum of two numbers")
        await shot(page, "servers-pin-change")
        await change.locator("button[data-action=accept-pin]").click()
        await expect(change.locator(".note")).to_contain_text("accepted")
        await expect(server.locator("article.pin-change")).to_have_count(0)
        await expect(server.locator("table.tools tr[data-tool=get-sum] .pin")).to_have_text("pinned")
        assert "42" in await call_once_accepted(client, "ev__get-sum", {"a": 20, "b": 22})
        await shot(page, "servers")

        # Timeline: one session, every event in order.
        await page.click("nav >> text=Timeline")
        session = echo["session_id"]
        await page.click(f"#sessions tbody tr[data-session='{session}']")
        events = page.locator("#events tbody")
        await expect(events.locator("tr", has_text="tools/list").first).to_be_visible()
        await expect(events.locator("tr[data-decision=deny]")).to_contain_text("no-env")
        await expect(events.locator("tr", has_text="echo")).to_contain_text("s asking")
        assert f"session={session}" in page.url
        await shot(page, "timeline")

        # A phone: no page is wider than the screen; a wide table scrolls inside its box.
        await page.set_viewport_size(NARROW)
        for name, path, ready in (("overview", "/ui/", "#live tbody tr"), ("calls", "/ui/calls", "#calls tbody tr"),
                                  ("approvals", "/ui/approvals", "#history tbody tr"),
                                  ("timeline", f"/ui/timeline?session={session}", "#events tbody tr"),
                                  ("simulate", "/ui/simulate", "#simulate"),
                                  ("servers", "/ui/servers", "table.tools tbody tr")):
            await page.goto(f"{gw.url}{path}")
            await page.wait_for_selector(ready)
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= NARROW["width"], f"{name} is {width} px wide on a 375 px screen"
            await shot(page, f"narrow-{name}")
        await page.goto(f"{gw.url}/ui/calls")
        await page.wait_for_selector("#calls tbody tr")
        box = await page.evaluate("(() => { const b = document.querySelector('#calls').parentElement;"
                                  " return [b.className, b.scrollWidth, b.clientWidth]; })()")
        assert box[0] == "scroll"
        assert box[1] > box[2]  # the table is wider than the screen, and scrolls in its box
        assert errors == []
