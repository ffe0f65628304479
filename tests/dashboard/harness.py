"""Helpers of the dashboard's browser tests: headless Debian Chromium, the login form, screenshots, pins.

Chromium is launched from /usr/bin/chromium with a fresh profile (Playwright's own browser
download is never used); screenshots go to test-artifacts/dashboard/.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcpwall.security._poisoning_pins import NAMESPACE, fingerprint, pin_key
from tests.approvals.harness import ROOT, Served

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "dashboard"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.asynccontextmanager
async def browser(tmp_path: Path) -> AsyncIterator[tuple[Any, list[str]]]:
    """A page in a fresh Chromium profile, and the console errors it logs."""
    from playwright.async_api import async_playwright

    assert shutil.which(CHROMIUM), "Debian's chromium is needed: apt-get install -y chromium"
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    errors: list[str] = []
    async with async_playwright() as p:
        context = await p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1440, "height": 900})
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            page.set_default_timeout(15_000)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            await context.close()


async def login(page: Any, gw: Served, errors: list[str]) -> None:
    """Log in through the form, after a wrong token first (its 401 is the one expected console error)."""
    await page.goto(f"{gw.url}/ui/")
    assert page.url.endswith("/ui/login")
    await page.fill('input[name="token"]', "wrong")
    await page.click('button[type="submit"]')
    await page.wait_for_selector("text=Wrong token.")
    await shot(page, "login")
    await page.fill('input[name="token"]', gw.token)
    await page.click('button[type="submit"]')
    await page.wait_for_url(f"{gw.url}/ui/")
    assert errors == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
    errors.clear()


async def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def pin_other_definition(gw: Served, server: str, tool: str, description: str) -> None:
    """Make the pin of `tool` hold another description than the server's: the next list the gateway
    sees differs from the pin, as when the server changed the tool after it was pinned (a rug pull)."""
    store = gw.gateway.state
    key = pin_key(server, "tool", tool)
    record = store.get_state(NAMESPACE, key)
    assert record is not None, f"{key} is not pinned"
    assert record["hash"], f"{key} is not pinned"
    definition = {**record["definition"], "description": description}
    digest, definition = fingerprint("tool", definition)
    store.put_state(NAMESPACE, key, {**record, "hash": digest, "definition": definition})


async def call_once_accepted(client: Any, tool: str, args: dict[str, Any]) -> str:
    """The call's text once the gateway sees its pin accepted (the pins stage re-reads within half a second)."""
    from mcp.shared.exceptions import MCPError

    for _ in range(100):
        try:
            result: Any = await client.call_tool(tool, args)
        except MCPError as exc:
            if "rug pull" not in str(exc):
                raise
            await asyncio.sleep(0.1)
            continue
        return str(result.content[0].text)
    raise AssertionError(f"{tool} is still blocked after its pin was accepted")
