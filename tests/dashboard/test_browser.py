"""The dashboard in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright.

Strategy: a real gateway (`tests.approvals.harness.served`, token auth, SQLite ledger, npm
`everything` upstream) serves `/ui/`; Chromium is launched from /usr/bin/chromium with a fresh
profile (Playwright's own browser download is never used). The official MCP client makes the
calls a person would watch. Each test logs in through the form, then: a blocked call appears
in the live table without a reload; a pending ask is approved by clicking and the held call
completes; the simulate form shows the rule trace. Markup in a tool's arguments is shown as
text and never runs; a fetch without the CSRF token is refused; the page logs no console error
(our own CSP would report any inline script or foreign asset). A screenshot of every page goes
to test-artifacts/dashboard/ (`tests.dashboard.harness`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from playwright.async_api import expect

from tests.approvals.harness import ask_policy, served
from tests.dashboard.harness import browser, login, shot
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


async def test_a_blocked_call_appears_live_and_every_page_renders(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=800)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client, \
            browser(tmp_path) as (page, errors):
        await client.call_tool("ev__get-sum", {"a": 2, "b": 3})
        await login(page, gw, errors)
        await page.wait_for_selector("#live-state.on")
        await page.wait_for_selector("#live tbody tr[data-decision='allow']")
        await page.evaluate("window.__marker = 'no reload'")
        with pytest.raises(MCPError):
            await client.call_tool("ev__get-env", {})
        row = await page.wait_for_selector("#live tbody tr[data-decision='deny']")
        assert "get-env" in await row.inner_text()
        assert "no-env" in await row.inner_text()
        assert "LLM02:2025" in await row.inner_text()
        assert await page.evaluate("window.__marker") == "no reload"
        # Locator waits, not wait_for_function: the page's CSP refuses eval, which polling may need.
        await expect(page.locator("[data-stat=blocked] .value")).to_have_text("1", timeout=15_000)
        assert await page.inner_text("[data-stat=calls] .value") == "2"
        await page.wait_for_selector("#chart svg rect.blocks")
        with pytest.raises(MCPError):  # markup in arguments, shown in the calls table below
            await client.call_tool("ev__echo", {"message": XSS})
        await page.wait_for_selector("#live tbody tr[data-decision='deny'] >> text=echo")
        await shot(page, "overview")

        refused = await page.evaluate("""async () => (await fetch('/api/approvals/000000000000/deny',
            {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'})).status""")
        assert refused == 403  # the page's cookie alone is not enough: no CSRF token
        assert errors == ["Failed to load resource: the server responded with a status of 403 (Forbidden)"]
        errors.clear()

        await page.click("nav >> text=Calls")
        await page.wait_for_selector("#calls tbody tr")
        detail = await page.inner_text("#calls tbody")
        assert '{"message":"<img src=x onerror=' in detail  # the markup is shown as text
        await page.select_option("select[name=decision]", "deny")
        await page.click("#filters button[type=submit]")
        await expect(page.locator("#calls tbody tr:not([data-decision='deny'])")).to_have_count(0, timeout=15_000)
        await expect(page.locator("#calls tbody tr")).to_have_count(2, timeout=15_000)
        await shot(page, "calls")

        await page.click("nav >> text=Servers")
        server = await page.wait_for_selector("#servers tbody tr[data-server='ev']")
        text = await server.inner_text()
        assert "ready" in text
        assert "closed" in text
        assert "pinned" in text
        await shot(page, "servers")
        assert await page.evaluate("window.__pwned") is None
        assert errors == []


async def test_a_pending_ask_is_approved_by_clicking_and_the_held_call_completes(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client, \
            browser(tmp_path) as (page, errors):
        await login(page, gw, errors)
        await page.click("nav >> text=Approvals")
        await page.wait_for_selector("#pending-empty:not([hidden])")
        held = asyncio.ensure_future(client.call_tool("ev__echo", {"message": XSS}))
        [ask] = await gw.pending()
        card = await page.wait_for_selector(f"article.ask[data-id='{ask['id']}']")  # arrives live
        text = await card.inner_text()
        assert "ev / echo" in text
        assert "ask-echo" in text
        assert 'onerror=\\"window.__pwned=1\\"' in text
        await shot(page, "approvals")
        await page.click(f"button[data-action='approve'][data-id='{ask['id']}']")
        result: Any = await asyncio.wait_for(held, 20)
        assert result.content[0].text == f"Echo: {XSS}"
        await page.wait_for_selector(f"#history tbody >> text={ask['id']}")
        assert "dashboard" in await page.inner_text("#history tbody")
        [row] = gw.ledger_rows("echo")
        assert (row["decision"], row["notes"]["approval"]["via"]) == ("ask", "dashboard")

        second = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "and again"}))
        [ask2] = await gw.pending()
        await page.wait_for_selector(f"article.ask[data-id='{ask2['id']}']")
        await page.fill(f"article.ask[data-id='{ask2['id']}'] input[name=reason]", "not this one")
        await page.click(f"button[data-action='deny'][data-id='{ask2['id']}']")
        with pytest.raises(MCPError, match="not this one"):
            await asyncio.wait_for(second, 20)
        await shot(page, "approvals-answered")
        assert await page.evaluate("window.__pwned") is None
        assert errors == []


async def test_the_simulate_form_shows_the_decision_and_the_rule_trace(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, browser(tmp_path) as (page, errors):
        await login(page, gw, errors)
        await page.click("nav >> text=Simulate")
        await page.wait_for_selector("#sim-server option[value='ev']", state="attached")
        await page.select_option("#sim-server", "ev")
        await page.fill("input[name=tool]", "get-env")
        await page.fill("textarea[name=args]", '{"verbose": true}')
        await page.click("#simulate button[type=submit]")
        await page.wait_for_selector("#sim-result:not([hidden])")
        assert await page.inner_text("#sim-action") == "deny"
        matched = await page.inner_text("#sim-trace tr.matched")
        assert "no-env" in matched
        assert "ask-echo" in await page.inner_text("#sim-trace tbody")
        assert "LLM02:2025" in await page.inner_text("#sim-rules")
        await shot(page, "simulate")
        await page.fill("textarea[name=args]", "{broken")
        await page.click("#simulate button[type=submit]")
        await page.wait_for_selector("#sim-error:not([hidden])")
        assert errors == []
