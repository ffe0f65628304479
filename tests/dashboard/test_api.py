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
                assert (await http.get("/api/servers")).json()["mode"] == "standalone"
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
