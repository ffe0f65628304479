"""Issue 22, item 3: the token `init` writes into a client config calls tools and does nothing else.

Strategy: `mcpwall init --yes` on a fake home whose Cursor config holds a
remote server `ev` and a stdio server; the token is read back from the
rewritten config, as the agent would read it. Then a real `mcpwall proxy`
(dashboard, admin API and metrics mounted as shipped) serves that home with
the npm `everything` server as `ev` and a policy that holds `echo` for a
person's approval. With the client's token the agent calls a tool, and
its own `echo` is held. Then every other route the gateway serves is tried
with that token, in several spellings: the dashboard API (approve, deny,
grants, simulate, ledger reads, the live stream), the login form, the admin
API, the status routes (/servers, /metrics, GET /{server}, explain) and
/health's full status; each must answer 401 or 403, and afterwards the
held call is still pending, no rule or grant was added, and the
operator's token releases it. `mcpwall approve`/`deny` and the admin MCP
server (`mcpwall mcp`) given the client's token cannot answer it either.
A second test revokes and issues tokens while the gateway runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.discovery._clienttokens import issue
from tests.approvals.harness import ask_policy
from tests.discovery.homes import write
from tests.proxy.harness import EVERYTHING, MCPWALL, GatewayProcess

pytestmark = pytest.mark.integration

ACCEPT = {"Accept": "application/json, text/event-stream"}


def _call(rid: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}}


def _init_cursor(tmp_path: Path, state: Path) -> str:
    """Run init on a fake home with Cursor; return the bearer token its rewritten config holds."""
    home = tmp_path / "user"
    config = write(home, ".cursor/mcp.json", json.dumps({"mcpServers": {
        "ev": {"url": "https://mcp.example.com/ev"},
        "notes": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}, indent=2))
    config.chmod(0o644)
    result = CliRunner().invoke(cli, ["init", "--yes", "--home", str(state), "--scan-home", str(home),
                                      "--platform", "linux", "--mcpwall", MCPWALL], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    entry = json.loads(config.read_text())["mcpServers"]["ev"]
    assert entry["url"] == "http://127.0.0.1:9420/mcp/ev"
    assert os.stat(config).st_mode & 0o777 == 0o600
    return str(entry["headers"]["Authorization"]).removeprefix("Bearer ")


def _eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.1)


def _privileged_routes(approval: str) -> list[tuple[str, str, Any]]:
    rule = {"rule": {"id": "let-me", "description": "x", "tools": [".*"], "match": "pattern", "action": "allow"}}
    return [
        # the dashboard API: answering asks, grants, the simulator, ledger reads, the live stream
        ("POST", f"/api/approvals/{approval}/approve", {}),
        ("POST", f"/api/approvals/{approval}/approve", {"similar_minutes": 60}),
        ("POST", f"/api/approvals/{approval}/deny", {"reason": "mine"}),
        ("POST", f"/api//approvals/{approval}/approve", {}),
        ("POST", f"/api/approvals/{approval}/approve/", {}),
        ("POST", f"/api/approvals//{approval}//approve", {}),
        ("GET", "/api/approvals", None),
        ("GET", "/api/approvals/history", None),
        ("GET", "/api/grants", None),
        ("POST", "/api/grants/any/revoke", {}),
        ("DELETE", "/api/grants/any", None),
        ("POST", "/api/simulate", {"tool": "echo", "server": "ev"}),
        ("GET", "/api/stats", None),
        ("GET", "/api/calls", None),
        ("GET", "/api/calls?limit=500", None),
        ("GET", "/api/events", None),
        ("GET", "/api/pins", None),
        ("GET", "/api/servers", None),
        # the admin API (and what the admin MCP server would call)
        ("GET", "/api/admin/policy", None),
        ("GET", "/api/admin/timeline", None),
        ("GET", "/api/admin/timeline?limit=500", None),
        ("POST", "/api/admin/verify-audit", None),
        ("POST", "/api/admin/policy/rules", rule),
        ("DELETE", "/api/admin/policy/rules/ask-echo", None),
        ("POST", "/api/admin/policy/reload", {}),
        ("GET", "/api/admin", None),
        ("GET", "/api/admin/", None),
        ("GET", "/api//admin/policy", None),
        # the operator's status routes
        ("GET", "/servers", None),
        ("GET", "/servers/", None),
        ("HEAD", "/servers", None),
        ("GET", "/metrics", None),
        ("GET", "//metrics", None),
        ("GET", "/metrics?name[]=x", None),
        ("GET", "/ev", None),
        ("GET", "/health/", None),
        ("POST", "/ev/explain", {"tool": "echo", "args": {"message": "x"}}),
        ("POST", "/ev/explain/", {"tool": "echo", "agent": "operator"}),
        ("POST", "/_/explain", {"tool": "echo"}),
        ("POST", "/mcp/ev/explain", {"tool": "echo"}),
    ]


def test_the_token_init_writes_calls_tools_and_cannot_approve_or_administer_regression_issue_22(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    agent_token = _init_cursor(tmp_path, state)
    gw = GatewayProcess(state, {"ev": EVERYTHING}, ask_policy(timeout_ms=90000)).start()
    pool = ThreadPoolExecutor(1)
    held: Future[httpx.Response] | None = None
    try:
        agent = {"Authorization": f"Bearer {agent_token}"}
        operator = gw.headers
        assert agent_token != gw.token

        # what the token is for: MCP calls, as the client's principal
        summed = httpx.post(f"{gw.url}/ev", json=_call(1, "get-sum", {"a": 2, "b": 40}), headers=agent, timeout=30)
        assert summed.status_code == 200, summed.text
        assert "42" in json.dumps(summed.json()["result"])
        opened = httpx.post(f"{gw.url}/mcp/ev", headers={**agent, **ACCEPT}, timeout=30, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cursor", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        health = httpx.get(f"{gw.url}/health", headers=agent, timeout=10)
        assert health.status_code == 200
        assert set(health.json()) == {"status", "version", "uptime_s"}  # the public part only
        assert "servers" in httpx.get(f"{gw.url}/health", headers=operator, timeout=10).json()

        held = pool.submit(httpx.post, f"{gw.url}/ev", json=_call(2, "echo", {"message": "let me in"}),
                           headers=agent, timeout=90)
        pending: list[dict[str, Any]] = []

        def asked() -> bool:
            pending[:] = httpx.get(f"{gw.url}/api/approvals", headers=operator, timeout=10).json()
            return len(pending) == 1

        _eventually(asked)
        [ask] = pending
        assert ask["agent"] == "cursor"  # the client's principal, from its token

        with httpx.Client(base_url=gw.url, trust_env=False, timeout=15) as http:
            for method, path, body in _privileged_routes(ask["id"]):
                for auth in (f"Bearer {agent_token}", f"bearer  {agent_token}", f"BEARER {agent_token}"):
                    answer = http.request(method, path, json=body, headers={"Authorization": auth})
                    # 404 only for spellings no route answers (the door refuses `//x` paths)
                    assert answer.status_code in (401, 403, 404), (method, path, answer.status_code, answer.text[:200])
                    assert answer.status_code != 404 or "//" in path, (method, path)
            login = http.post("/ui/login", data={"token": agent_token})
            assert login.status_code == 401
            assert "mcpwall_session" not in login.headers.get("set-cookie", "")
            assert not http.cookies
            page = http.get("/ui/", headers=agent)
            assert page.status_code == 303  # to the login form: a bearer token opens no page

        env = {**os.environ, "MCPWALL_TOKEN": agent_token}
        for verb in ("approve", "deny"):
            cli_answer = subprocess.run([MCPWALL, verb, ask["id"], "--url", gw.url, "--home", str(state)],
                                        env=env, capture_output=True, text=True, timeout=60)
            assert cli_answer.returncode != 0, cli_answer.stdout
            assert "403" in cli_answer.stdout + cli_answer.stderr
        assert _admin_mcp_answers(gw.url, agent_token, ask["id"]) == [True, True, True]

        # nothing changed: still held, no grant, no live rule, and the operator releases it
        [still] = httpx.get(f"{gw.url}/api/approvals", headers=operator, timeout=10).json()
        assert (still["id"], still["status"]) == (ask["id"], "pending")
        assert not held.done()
        assert httpx.get(f"{gw.url}/api/grants", headers=operator, timeout=10).json() == []
        assert httpx.get(f"{gw.url}/api/admin/policy", headers=operator, timeout=10).json()["live_rules"] == []
        for path in ("/servers", "/metrics", "/ev"):
            assert httpx.get(f"{gw.url}{path}", headers=operator, timeout=10).status_code == 200, path
        released = httpx.post(f"{gw.url}/api/approvals/{ask['id']}/approve", json={}, headers=operator, timeout=10)
        assert released.status_code == 200, released.text
        assert held.result(60).json()["result"]["content"][0]["text"] == "Echo: let me in"
    finally:
        if held is not None and not held.done():
            httpx.post(f"{gw.url}/api/approvals/x/deny", headers=gw.headers, timeout=5)
        gw.stop()
        pool.shutdown(wait=False, cancel_futures=True)


def _admin_mcp_answers(url: str, token: str, approval: str) -> list[bool]:
    """isError of mcpwall_approve, mcpwall_deny and mcpwall_rule_add from `mcpwall mcp` holding `token`."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCPWALL_GATEWAY_TOKEN", "MCPWALL_TOKEN")}
    env["MCPWALL_GATEWAY_TOKEN"] = token
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call(2, "mcpwall_approve", {"id": approval}),
        _call(3, "mcpwall_deny", {"id": approval}),
        _call(4, "mcpwall_rule_add", {"id": "let-me", "action": "allow", "tools": ["echo"],
                                      "description": "x"})]
    proc = subprocess.Popen([MCPWALL, "mcp", "--gateway-url", url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    assert proc.stdin is not None
    assert proc.stdout is not None
    answers: dict[int, Any] = {}
    try:
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
        while len(answers) < 4:  # stdout carries protocol only; the pytest timeout bounds a hang
            message = json.loads(proc.stdout.readline())
            answers[message["id"]] = message
    finally:
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
    for rid in (2, 3, 4):
        assert "403" in json.dumps(answers[rid]["result"]), answers[rid]
    return [bool(answers[rid]["result"]["isError"]) for rid in (2, 3, 4)]


def test_a_client_token_made_or_revoked_while_the_gateway_runs_takes_effect_at_once(tmp_path: Path) -> None:
    """init may run beside a running gateway, and uninstall's revocation must not wait for a restart."""
    state = tmp_path / "state"
    gw = GatewayProcess(state, {"ev": EVERYTHING}, ask_policy()).start()
    try:
        tokens = issue(state, ["cursor", "vscode"])  # what init does for the clients it routes
        call = _call(1, "get-sum", {"a": 1, "b": 1})

        def status(token: str) -> int:
            return httpx.post(f"{gw.url}/ev", json=call, headers={"Authorization": f"Bearer {token}"},
                              timeout=30).status_code

        _eventually(lambda: status(tokens["cursor"]) == 200, timeout=10)
        assert status(tokens["vscode"]) == 200
        undo = CliRunner().invoke(cli, ["uninstall", "--home", str(state)], catch_exceptions=False)
        assert undo.exit_code == 0, undo.output
        assert undo.output.count("revoked") == 2
        _eventually(lambda: status(tokens["cursor"]) == 401, timeout=10)
        assert status(tokens["vscode"]) == 401
        assert status(gw.token) == 200
    finally:
        gw.stop()
