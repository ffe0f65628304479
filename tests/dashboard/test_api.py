"""The dashboard's HTTP surface: who gets in, CSRF, and what the JSON API answers.

Strategy: a real gateway (`tests.approvals.harness.served`, token auth, SQLite ledger, npm
`everything` upstream) serves `/ui` and `/api/` from its notify stage; plain httpx talks to it
over loopback, as a browser or a script would. Refusals are tested as attacks: no credential,
a wrong token, an agent's own token, a cookie without or with a wrong CSRF token, a foreign
Origin or Host (DNS rebinding), a session after logout. Then the API's answers are checked
against calls made by the official client, the live stream (SSE) is read, and the standalone
`mcpwall dashboard` process answers an ask that the gateway holds, through the shared ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcpwall.dashboard import COOKIE, CSP
from tests.approvals.harness import EVERYTHING, ask_policy, served
from tests.dashboard.harness import call_once_accepted, pin_other_definition
from tests.harness import MemoryClient, build_gateway, free_port, started
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MCPWALL = str(Path(sys.executable).parent / "mcpwall")


@contextlib.asynccontextmanager
async def _login(url: str, token: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A browser-like client logged in with the token, and the page's CSRF token."""
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30.0) as http:
        response = await http.post("/ui/login", data={"token": token})
        assert response.status_code == 303, response.text
        page = await http.get("/ui/")
        assert page.status_code == 200
        csrf = page.text.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        yield http, csrf


async def test_the_api_and_pages_refuse_requests_without_the_token_or_the_csrf_token(tmp_path: Path) -> None:
    agent_token = "agent-" + "z" * 40
    async with served(tmp_path, ask_policy(), agent_tokens={"bot": agent_token}) as gw:
        async with httpx.AsyncClient(base_url=gw.url, trust_env=False) as anon:
            assert (await anon.get("/api/stats")).status_code == 401
            assert (await anon.post("/api/approvals/x/approve", json={})).status_code == 401
            page = await anon.get("/ui/calls")
            assert (page.status_code, page.headers["location"]) == (303, "/ui/login")
            login = await anon.get("/ui/login")
            assert login.status_code == 200
            assert 'name="token"' in login.text
            assert login.headers["content-security-policy"] == CSP
            wrong = await anon.post("/ui/login", data={"token": "guess"})
            assert wrong.status_code == 401
            assert COOKIE not in wrong.headers.get("set-cookie", "")
            agent = await anon.post("/ui/login", data={"token": agent_token})
            assert agent.status_code == 401  # an agent's token does not open the dashboard
            assert (await anon.get("/api/stats", headers={"Authorization": f"Bearer {agent_token}"})).status_code == 403
            raw = (await anon.post("/ui/login", data={"token": gw.token})).headers["set-cookie"].lower()
            assert "httponly" in raw
            assert "samesite=strict" in raw
            assert "path=/" in raw

        async with _login(gw.url, gw.token) as (http, csrf):
            cookie = http.cookies.jar
            [set_cookie] = [c for c in cookie if c.name == COOKIE]
            assert set_cookie.path == "/"
            assert set_cookie.has_nonstandard_attr("HttpOnly")

            assert (await http.get("/api/stats")).status_code == 200
            no_csrf = await http.post("/api/approvals/000000000000/approve", json={})
            assert no_csrf.status_code == 403
            assert "CSRF" in no_csrf.json()["error"]
            bad_csrf = await http.post("/api/approvals/000000000000/approve", json={},
                                       headers={"X-CSRF-Token": "x" + csrf[1:]})
            assert bad_csrf.status_code == 403
            assert (await http.post("/api/simulate", json={"tool": "echo"})).status_code == 403
            assert (await http.delete("/api/grants/g1")).status_code == 403
            passed = await http.post("/api/approvals/000000000000/approve", json={}, headers={"X-CSRF-Token": csrf})
            assert passed.status_code == 404  # through the guard; the id is unknown
            foreign = await http.post("/api/approvals/000000000000/approve", json={},
                                      headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"})
            assert foreign.status_code == 403
            rebound = await http.get("/api/stats", headers={"Host": "evil.example"})
            assert rebound.status_code == 403
            assert (await http.post("/ui/logout", headers={"X-CSRF-Token": csrf})).status_code == 200
            http.cookies.set(COOKIE, set_cookie.value or "")
            assert (await http.get("/api/stats")).status_code == 401  # the session is gone server-side
        async with gw.api() as bearer:
            # Bearer requests need no CSRF token: a browser never attaches this header by itself.
            assert (await bearer.post("/api/approvals/000000000000/deny", json={})).status_code == 404


async def test_the_api_reports_calls_stats_servers_pins_and_simulations(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy(timeout_ms=500)) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        await client.list_tools()
        await client.call_tool("ev__get-sum", {"a": 1, "b": 2})
        with pytest.raises(MCPError):
            await client.call_tool("ev__get-env", {})
        with pytest.raises(MCPError):
            await client.call_tool("ev__echo", {"message": "<script>alert(1)</script>"})
        gw.ledger_rows()
        async with gw.api() as http:
            stats = (await http.get("/api/stats")).json()
            assert (stats["calls"], stats["blocked"], stats["asks_pending"]) == (3, 2, 0)
            assert stats["p50_ms"] is not None
            assert stats["p99_ms"] >= stats["p50_ms"]
            assert sum(stats["series"]["calls"]) == 3
            assert sum(stats["series"]["blocks"]) == 2

            calls = (await http.get("/api/calls", params={"decision": "deny"})).json()["rows"]
            assert [c["tool"] for c in calls] == ["echo", "get-env"]  # newest first
            env = calls[1]
            assert env["rule_ids"] == ["no-env"]
            assert env["owasp"] == ["LLM02:2025"]
            assert calls[0]["compliance"] == ["soc2:CC6.1"]
            assert calls[0]["owasp"] == ["LLM06:2025"]
            assert calls[0]["preview"] == '{"message":"<script>alert(1)</script>"}'  # data; the page writes text
            one = (await http.get("/api/calls", params={"tool": "get-sum", "limit": 1})).json()
            assert [c["decision"] for c in one["rows"]] == ["allow"]
            assert (await http.get("/api/calls", params={"limit": "many"})).status_code == 400

            servers = (await http.get("/api/servers")).json()["servers"]
            [ev] = servers
            assert (ev["name"], ev["state"], ev["circuit"]) == ("ev", "ready", "closed")
            assert ev["risk"]["level"]
            assert ev["pins"]["pinned"] >= 5
            assert ev["pins"]["pending"] == 0
            pins = (await http.get("/api/pins", params={"server": "ev"})).json()
            assert pins["pending"] == 0
            assert {p["name"] for p in pins["pins"]} >= {"echo", "get-sum"}

            sim = (await http.post("/api/simulate", json={"server": "ev", "tool": "echo",
                                                          "args": {"message": "x"}})).json()
            assert sim["action"] == "ask"
            assert sim["rule_ids"] == ["ask-echo"]
            assert any(t["rule_id"] == "ask-echo" and t["matched"] for t in sim["trace"])
            assert any(t["rule_id"] == "no-env" and not t["matched"] for t in sim["trace"])
            bad = await http.post("/api/simulate", json={"server": "ev", "tool": "echo", "args": [1]})
            assert bad.status_code == 400
            assert (await http.post("/api/simulate", content=b"{not json")).status_code == 400


async def _events(url: str, token: str, out: list[tuple[str, Any]], ready: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=httpx.Timeout(30.0, read=60.0)) as http, \
            http.stream("GET", "/api/events", headers={"Authorization": f"Bearer {token}"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = None
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind:
                out.append((kind, json.loads(line[6:])))
                ready.set()


async def test_the_live_stream_pushes_new_calls_and_pending_asks(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        seen: list[tuple[str, Any]] = []
        ready = asyncio.Event()
        listener = asyncio.ensure_future(_events(gw.url, gw.token, seen, ready))
        try:
            await asyncio.wait_for(ready.wait(), 20)
            assert seen[0][0] == "stats"
            with pytest.raises(MCPError):
                await client.call_tool("ev__get-env", {})
            held = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "live"}))
            for _ in range(200):
                calls = [d for k, d in seen if k == "call"]
                if calls and any(k == "approvals" and d["pending"] == 1 for k, d in seen):
                    break
                await asyncio.sleep(0.05)
            assert [c["tool"] for c in calls] == ["get-env"]
            assert calls[0]["decision"] == "deny"
            [ask] = await gw.pending()
            async with gw.api() as http:
                await http.post(f"/api/approvals/{ask['id']}/approve", json={})
            await asyncio.wait_for(held, 20)
            for _ in range(200):  # the stats follow the call on the stream: wait for both
                if ([d["tool"] for k, d in seen if k == "call"] == ["get-env", "echo"]
                        and any(k == "stats" and d["calls"] == 2 for k, d in seen)):
                    break
                await asyncio.sleep(0.05)
            assert [d["decision"] for k, d in seen if k == "call"] == ["deny", "ask"]
            assert any(k == "stats" and d["calls"] == 2 for k, d in seen)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener


def _start_dashboard(home: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`mcpwall dashboard` as a real process (the token from <home>/run/gateway.token)."""
    with log.open("wb") as out:
        return subprocess.Popen([MCPWALL, "dashboard", "--home", str(home), "--port", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MCPWALL_TOKEN": ""})


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


async def test_the_standalone_dashboard_answers_an_ask_that_the_gateway_holds(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        port = free_port()
        proc = _start_dashboard(gw.home, port, tmp_path / "dashboard.log")
        try:
            url = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=url, trust_env=False, headers=gw.headers, timeout=10) as http:
                for _ in range(300):
                    with contextlib.suppress(httpx.HTTPError):
                        if (await http.get("/api/stats")).status_code == 200:
                            break
                    assert proc.poll() is None, (tmp_path / "dashboard.log").read_text()
                    await asyncio.sleep(0.1)
                held = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "from afar"}))
                [ask] = await gw.pending()
                for _ in range(100):  # another process: its state cache is at most half a second old
                    listed = (await http.get("/api/approvals")).json()
                    if listed:
                        break
                    await asyncio.sleep(0.05)
                assert [a["id"] for a in listed] == [ask["id"]]
                answer = await http.post(f"/api/approvals/{ask['id']}/approve", json={"call_hash": ask["call_hash"]})
                assert answer.status_code == 200, answer.text
                result: Any = await asyncio.wait_for(held, 20)
                assert result.content[0].text == "Echo: from afar"
                gw.ledger_rows()
                calls = (await http.get("/api/calls")).json()["rows"]
                assert calls[0]["tool"] == "echo"
                assert calls[0]["decision"] == "ask"
                servers = (await http.get("/api/servers")).json()
                assert servers["mode"] == "standalone"
                home = await http.get("/")
                assert (home.status_code, home.headers["location"]) == (308, "/ui/")
                [ev] = servers["servers"]  # no live catalog here: the tools the gateway pinned
                assert {"name": "echo", "description": "Echoes back the input string", "pin": "pinned"} in ev["tool_list"]
                status = (await http.get("/api/status")).json()
                assert status["policy"]["revision"] == gw.gateway.policy.current.revision
                checked = (await http.post("/api/ledger/verify")).json()["ledger"]
                assert checked["ok"], checked
                assert checked["rows"] >= 1
        finally:
            await asyncio.to_thread(_stop, proc)


async def test_a_gateway_without_a_ledger_shows_its_calls_from_memory(tmp_path: Path) -> None:
    built = build_gateway(tmp_path / "home", ask_policy() + "ledger: {enabled: false}\n", {"ev": EVERYTHING})
    gateway = built.gateway
    assert getattr(gateway, "ledger", None) is None
    async with started(built):
        client = MemoryClient(gateway, name="t")
        await client.initialize()
        await client.call("ev__get-env", {})
        transport = httpx.ASGITransport(app=gateway.ui_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            rows = (await http.get("/api/calls")).json()["rows"]
            assert [(r["tool"], r["decision"], r["rule_ids"]) for r in rows] == [("get-env", "deny", ["no-env"])]
            assert rows[0]["owasp"] == ["LLM02:2025"]
            assert rows[0]["preview"] == "{}"
            assert rows[0]["gateway_ms"] <= rows[0]["duration_ms"]
            status = (await http.get("/api/status")).json()
            assert status["ledger"] is None  # no chain to verify
            assert status["policy"]["mode"] == "enforce"
            stats = (await http.get("/api/stats")).json()
            assert (stats["calls"], stats["blocked"]) == (1, 1)
            # The preview is made when the row is read, and still masks what DLP recognises.
            token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
            await client.call("ev__echo", {"message": f"key {token}"})
            rows = (await http.get("/api/calls")).json()["rows"]
            assert rows[0]["tool"] == "echo"
            assert token not in rows[0]["preview"]
            assert "[REDACTED-github-token]" in rows[0]["preview"]
            assert (await http.get("/api/stats")).json()["calls"] == 2
            # No token exists on an insecure gateway: scripts need no credential, Origin checks still apply.
            assert (await http.post("/api/simulate", json={"tool": "echo"})).status_code == 200
            assert (await http.post("/api/simulate", json={"tool": "echo"},
                                    headers={"Origin": "http://evil.example"})).status_code == 403
            page = await http.get("/ui/")  # no login, but a browser session with a CSRF token
            assert page.status_code == 200
            assert 'name="csrf-token"' in page.text
            csrf = page.text.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
            assert (await http.post("/api/simulate", json={"tool": "echo"})).status_code == 403
            assert (await http.post("/api/simulate", json={"tool": "echo"},
                                    headers={"X-CSRF-Token": csrf})).status_code == 200


async def test_a_changed_tool_is_accepted_through_the_api_with_the_gateway_token_and_the_hash_shown(
        tmp_path: Path) -> None:
    """Issue 27 item 9: the servers page accepts a pin; an agent's token, a missing CSRF token or a
    definition that changed again since it was shown are refused."""
    agent_token = "agent-" + "p" * 40
    async with served(tmp_path, ask_policy(), agent_tokens={"bot": agent_token}) as gw, \
            http_client(f"{gw.url}/mcp", gw.token) as client:
        await client.list_tools()
        pin_other_definition(gw, "ev", "get-sum", "Adds two numbers, as it was first pinned")
        listed = {t.name for t in (await client.list_tools()).tools}
        assert "ev__get-sum" not in listed  # a changed tool is withheld until a person accepts it
        assert "ev__echo" in listed
        with pytest.raises(MCPError):
            await client.call_tool("ev__get-sum", {"a": 1, "b": 2})
        async with gw.api() as http:
            pins = (await http.get("/api/pins", params={"server": "ev"})).json()
            [change] = [p for p in pins["pins"] if p["state"] == "pending"]
            assert (change["name"], change["pending"]["change"]) == ("get-sum", "changed")
            assert '-  "description": "Adds two numbers, as it was first pinned"' in change["diff"]
            [ev] = (await http.get("/api/servers")).json()["servers"]
            tools = {t["name"]: t["pin"] for t in ev["tool_list"]}
            assert (tools["get-sum"], tools["echo"]) == ("pending", "pinned")
            body = {"server": "ev", "kind": "tool", "name": "get-sum", "hash": change["pending"]["hash"]}
            async with gw.api(agent_token) as agent:
                refused = await agent.post("/api/pins/accept", json=body)
                assert refused.status_code == 403
            stale = await http.post("/api/pins/accept", json={**body, "hash": "0" * 64})
            assert stale.status_code == 409
            assert "changed again" in stale.json()["error"]
            assert (await http.post("/api/pins/accept", json={**body, "kind": 3})).status_code == 400
        async with _login(gw.url, gw.token) as (browser_like, csrf):
            assert (await browser_like.post("/api/pins/accept", json=body)).status_code == 403  # no CSRF token
            accepted = await browser_like.post("/api/pins/accept", json=body, headers={"X-CSRF-Token": csrf})
            assert accepted.status_code == 200, accepted.text
            again = await browser_like.post("/api/pins/accept", json=body, headers={"X-CSRF-Token": csrf})
            assert again.status_code == 409  # nothing pending any more
        assert "3" in await call_once_accepted(client, "ev__get-sum", {"a": 1, "b": 2})



async def test_a_browser_at_the_root_is_sent_to_the_dashboard_and_a_json_rpc_client_is_not(tmp_path: Path) -> None:
    """Issue 27 item 9: `/` in a browser redirects to /ui/; MCP clients at `/` get today's 401."""
    async with served(tmp_path, ask_policy()) as gw, httpx.AsyncClient(base_url=gw.url, trust_env=False) as anon:
        page = await anon.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert (page.status_code, page.headers["location"]) == (303, "/ui/")
        rpc = await anon.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Accept": "application/json, text/event-stream"})
        assert rpc.status_code == 401
        assert rpc.json()["error"]["message"].startswith("Unauthorized")
        assert (await anon.get("/", headers={"Accept": "text/event-stream"})).status_code == 401
        rebound = await anon.get("/", headers={"Accept": "text/html", "Host": "evil.example"})
        assert rebound.status_code == 403  # the DNS-rebinding guard comes first
