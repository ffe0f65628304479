"""The dashboard's "Log in" of an OAuth-protected upstream, in headless Chromium (issue 26 item 2).

Strategy: all parts real. A gateway (`mcpwall proxy`) starts with a protected upstream it holds no
grant for (tests/oauth/protected_server.py, Glewlwyd's tokens), so the servers page says "login
required". The operator logs in to the dashboard with the gateway's token (Debian's chromium,
Playwright, as tests/dashboard), clicks "Log in": the gateway starts the authorization code flow
and the page offers the authorization server's page, which the operator opens in a new tab. There the person logs in as alice
(through Glewlwyd's login API in that tab's session, as its login page does; consent recorded as
Glewlwyd's consent screen records it) and is redirected to the gateway's loopback callback. The
servers page turns "authorized" by itself, and a call through the gateway reaches the server with
alice's token. An agent's token and a request without the CSRF token cannot start a login.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import anyio
import httpx
import pytest
from playwright.async_api import expect

from mcpwall._token import ensure_named_token
from tests.dashboard.harness import browser, shot
from tests.oauth.glewlwyd import USERS, Glewlwyd
from tests.oauth.test_upstream_client import _Answering, _env, _store, _whoami, serve_protected

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]


async def test_the_servers_page_logs_the_gateway_in_to_a_protected_upstream(glewlwyd: Glewlwyd,
                                                                            tmp_path: Path) -> None:
    with serve_protected(glewlwyd, tmp_path / "protected.log") as protected:
        home = tmp_path / "home"
        agent = ensure_named_token(home, "agent")[0]
        gw = _Answering(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
        try:
            login_url = f"{gw.url}/api/servers/prot/login"
            # an agent's own token cannot start the login the owner's grant comes from
            async with httpx.AsyncClient(timeout=10) as http:
                refused = await http.post(login_url, headers={"Authorization": f"Bearer {agent}"}, json={})
                assert refused.status_code == 403, refused.text
                assert "cannot use the dashboard API" in refused.text
                assert (await http.post(login_url, json={})).status_code == 401
            async with browser(tmp_path) as (page, errors):
                await page.goto(f"{gw.url}/ui/login")
                await page.fill('input[name="token"]', gw.token)
                await page.click('button[type="submit"]')
                await page.wait_for_url(f"{gw.url}/ui/")
                await page.click("nav >> text=Servers")
                row = page.locator("#servers tbody tr[data-server='prot']")
                await expect(row).to_contain_text("login required: run mcpwall login prot")
                # the page's cookie without its CSRF token starts nothing
                status = await page.evaluate("""async () => (await fetch('/api/servers/prot/login',
                    {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'})).status""")
                assert status == 403
                assert (await (await page.request.get(login_url)).json())["state"] == "none"
                errors.clear()

                async with page.expect_response(login_url) as answered:
                    await row.locator("button[data-action='upstream-login']").click()
                authorize = (await (await answered.value).json())["authorize"]
                async with page.context.expect_page() as opened:
                    await row.locator("a[data-action='authorize']").click()
                tab = await opened.value
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))
                assert authorize.startswith(glewlwyd.authorization_endpoint)
                assert query["code_challenge_method"] == "S256"
                assert query["resource"] == protected.url
                redirect = urllib.parse.urlsplit(query["redirect_uri"])
                assert (redirect.hostname, redirect.path) == ("127.0.0.1", "/callback")
                await expect(row).to_contain_text("log in on the authorization page")

                # the person, in the tab that opened: logs in as alice, consents, is sent back
                await anyio.to_thread.run_sync(glewlwyd.grant, "alice", query["client_id"], query["scope"])
                logged = await tab.request.post(f"{glewlwyd.api}/auth/",
                                                data={"username": "alice", "password": USERS["alice"][0]})
                assert logged.ok, await logged.text()
                await tab.goto(authorize + "&g_continue")
                await expect(tab.locator("body")).to_contain_text("mcpwall received the authorization")
                assert tab.url.startswith(query["redirect_uri"] + "?")

                await expect(row).to_contain_text("authorized until", timeout=30_000)
                await expect(row).to_contain_text("ready")
                await shot(page, "servers-upstream-login")
                assert errors == []
            assert (await _whoami(gw, gw.token)).startswith("user=alice")
            grant = _store(home).get("prot", "")
            assert grant is not None
            assert grant.kind == "user"
            assert grant.access_token not in gw.log.read_text()
        finally:
            gw.stop()
