"""The admin MCP server (`mcpwall mcp`) driving a real gateway over its authenticated HTTP API.

Strategy: a real gateway with token authentication, served by uvicorn on a free loopback port
with its admin API mounted (`/api/admin/`), and the npm `everything` server upstream. The
official MCP client launches the real `mcpwall mcp` process (token in MCPWALL_GATEWAY_TOKEN),
lists its tools, adds a deny rule live, and the next call through the gateway's /mcp endpoint
(the official client again) is denied; removing the rule lets it through. Results must be raw
JSON; the token must never appear in a result or on the admin server's stderr; a token on the
command line is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcpwall.admin import app_wrapper
from mcpwall.cli import cli
from mcpwall.proxy import write_secret
from tests.harness import ALLOW_ALL, build_gateway, serve_http, token
from tests.proxy.harness import http_client
from tests.relay.helpers import EVERYTHING, MCPWALL

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

POLICY = ALLOW_ALL


@asynccontextmanager
async def served_gateway(tmp_path: Path) -> AsyncIterator[tuple[str, str, Any]]:
    """(URL, token, gateway) of a real gateway on loopback with the admin API mounted."""
    built = build_gateway(tmp_path / "home", POLICY, {"ev": EVERYTHING}, auth=True)
    async with serve_http(built, app_wrapper=app_wrapper(built.gateway.admin_api)) as url:
        yield url, token(built), built.gateway


def _admin(url: str, token: str | None, stderr: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k != "MCPWALL_GATEWAY_TOKEN"}
    if token is not None:
        env["MCPWALL_GATEWAY_TOKEN"] = token
    return StdioServerParameters(command=MCPWALL, args=["mcp", "--gateway-url", url, "--log-level", "DEBUG"],
                                 env=env)


async def _json(client: Client, tool: str, args: dict[str, Any] | None = None) -> tuple[Any, bool]:
    result = await client.call_tool(tool, args or {})
    text = result.content[0].text  # type: ignore[union-attr]
    return json.loads(text), bool(result.is_error)  # raw JSON, nothing prepended


async def test_the_admin_server_adds_a_deny_rule_live_and_the_next_gateway_call_is_denied(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw), \
            Client(_admin(url, token, tmp_path / "err")) as admin, \
            http_client(f"{url}/mcp", token) as agent:
        tools = {t.name for t in (await admin.list_tools()).tools}
        assert {"mcpwall_status", "mcpwall_servers", "mcpwall_timeline", "mcpwall_simulate", "mcpwall_policy_get",
                "mcpwall_rule_add", "mcpwall_rule_remove", "mcpwall_approvals_list", "mcpwall_approve",
                "mcpwall_deny", "mcpwall_verify_audit", "mcpwall_pins"} <= tools
        before = await agent.call_tool("ev__echo", {"message": "before"})
        assert before.content[0].text == "Echo: before"  # type: ignore[union-attr]

        added, failed = await _json(admin, "mcpwall_rule_add", {"id": "live-no-echo", "action": "deny",
                                                                "tools": ["echo"], "servers": ["ev"],
                                                                "description": "added by the admin agent"})
        assert not failed, added
        assert added["added"]["id"] == "live-no-echo"
        with pytest.raises(MCPError) as denied:
            await agent.call_tool("ev__echo", {"message": "after"})
        assert denied.value.error.code == -32001
        assert "live-no-echo" in json.dumps(denied.value.error.data)

        simulated, _ = await _json(admin, "mcpwall_simulate", {"tool": "echo", "server": "ev",
                                                               "arguments": {"message": "x"}})
        assert simulated["action"] == "deny"
        assert "live-no-echo" in simulated["rule_ids"]
        policy, _ = await _json(admin, "mcpwall_policy_get")
        assert [r["id"] for r in policy["live_rules"]] == ["live-no-echo"]
        assert policy["revision"] == added["revision"]

        removed, failed = await _json(admin, "mcpwall_rule_remove", {"id": "live-no-echo"})
        assert not failed
        assert removed["removed"] == "live-no-echo"
        again = await agent.call_tool("ev__echo", {"message": "again"})
        assert again.content[0].text == "Echo: again"  # type: ignore[union-attr]


async def test_status_servers_timeline_and_verify_audit_return_the_gateways_json(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw), \
            Client(_admin(url, token, tmp_path / "err")) as admin, \
            http_client(f"{url}/mcp", token) as agent:
        await agent.call_tool("ev__get-sum", {"a": 1, "b": 2})
        status, _ = await _json(admin, "mcpwall_status")
        assert status["status"] == "ok"
        assert "ev" in status["servers"]
        servers, _ = await _json(admin, "mcpwall_servers")
        assert [s["name"] for s in servers["servers"]] == ["ev"]
        for _ in range(100):
            timeline, failed = await _json(admin, "mcpwall_timeline", {"tool": "get-sum", "limit": 5})
            if timeline.get("rows"):
                break
            await asyncio.sleep(0.1)
        assert not failed
        assert timeline["rows"][0]["tool_name"] == "get-sum"
        assert timeline["rows"][0]["decision"] == "allow"
        verified, failed = await _json(admin, "mcpwall_verify_audit")
        assert not failed, verified
        assert verified.get("ok", verified.get("valid")) is True
        for tool in ("mcpwall_approvals_list", "mcpwall_pins"):
            value, _failed = await _json(admin, tool)  # served by another part of the gateway: JSON either way
            assert isinstance(value, dict | list)


async def test_a_rule_that_does_not_validate_or_reuses_an_id_is_refused_with_a_json_error(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw), Client(_admin(url, token, tmp_path / "e")) as admin:
        first, failed = await _json(admin, "mcpwall_rule_add", {"id": "r1", "action": "warn", "tools": ["x"]})
        assert not failed
        dup, failed = await _json(admin, "mcpwall_rule_add", {"id": "r1", "action": "deny", "tools": ["y"]})
        assert failed
        assert dup["status"] == 409
        bad, failed = await _json(admin, "mcpwall_rule_add", {"id": "r2", "action": "deny", "values": ["x"]})
        assert failed
        assert bad["status"] == 400
        assert "values given without a target" in bad["error"]
        gone, failed = await _json(admin, "mcpwall_rule_remove", {"id": "never-added"})
        assert failed
        assert gone["status"] == 409
        assert first["revision"]


async def test_live_rules_stay_in_force_when_the_policy_file_reloads(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, gw), Client(_admin(url, token, tmp_path / "e")) as admin:
        await _json(admin, "mcpwall_rule_add", {"id": "stays", "action": "deny", "tools": ["get-sum"]})
        (gw.policy.path).write_text(POLICY.replace("rules: []", "rules:\n  - {id: from-file, tools: [x], "
                                                                "action: warn}"), encoding="utf-8")
        assert gw.policy.reload()
        ids = [r.id for r in gw.policy.current.all_rules]
        assert "stays" in ids
        assert "from-file" in ids


async def test_without_the_token_every_tool_reports_the_refusal_and_no_secret_leaks(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw), Client(_admin(url, None, tmp_path / "e")) as admin:
        for tool, args in (("mcpwall_policy_get", {}), ("mcpwall_rule_add", {"id": "x", "action": "deny"}),
                           ("mcpwall_timeline", {})):
            value, failed = await _json(admin, tool, args)
            assert failed
            assert value["status"] == 401
            assert token not in json.dumps(value)


async def test_the_admin_api_itself_requires_the_token_and_a_loopback_host(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw), \
            httpx.AsyncClient(base_url=url, trust_env=False) as http:
        assert (await http.get("/api/admin/policy")).status_code == 401
        assert (await http.get("/api/admin/policy", headers={"Authorization": "Bearer wrong"})).status_code == 401
        ok = await http.get("/api/admin/policy", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        rebinding = await http.get("/api/admin/policy", headers={"Authorization": f"Bearer {token}",
                                                                 "Host": "evil.example"})
        assert rebinding.status_code == 403
        posted = await http.post("/api/admin/policy/rules", content=b"{not json",
                                 headers={"Authorization": f"Bearer {token}"})
        assert posted.status_code == 400


async def test_an_agents_named_token_cannot_administer_the_gateway(tmp_path: Path) -> None:
    """A named token is an agent: it may call tools as itself, but reading every agent's ledger rows or
    adding a rule that lets itself through is the operator's, as on the dashboard API."""
    write_secret(tmp_path / "home" / "run" / "tokens" / "bob.token", "bob-token-0123456789abcdef")
    async with served_gateway(tmp_path) as (url, token, _gw), \
            httpx.AsyncClient(base_url=url, trust_env=False) as http:
        bob = {"Authorization": "Bearer bob-token-0123456789abcdef"}
        rule = {"rule": {"id": "let-bob", "description": "x", "tools": [".*"], "match": "pattern",
                         "action": "allow", "agents": ["bob"]}}
        for method, path, body in (("GET", "/api/admin/policy", None), ("GET", "/api/admin/timeline", None),
                                   ("POST", "/api/admin/verify-audit", None),
                                   ("POST", "/api/admin/policy/rules", rule),
                                   ("DELETE", "/api/admin/policy/rules/anything", None)):
            answer = await http.request(method, path, json=body, headers=bob)
            assert answer.status_code == 403, (method, path, answer.text)
            assert "bob" in answer.json()["error"]
        operator = {"Authorization": f"Bearer {token}"}
        assert (await http.get("/api/admin/policy", headers=operator)).json()["live_rules"] == []
        own = await http.post("/api/admin/policy/rules", json=rule, headers=operator)
        assert own.status_code == 201, own.text


async def test_the_token_never_reaches_stdout_or_stderr_of_the_admin_server(tmp_path: Path) -> None:
    async with served_gateway(tmp_path) as (url, token, _gw):
        env = {**os.environ, "MCPWALL_GATEWAY_TOKEN": token}
        proc = await asyncio.create_subprocess_exec(
            MCPWALL, "mcp", "--gateway-url", url.replace("127.0.0.1", "127.0.0.2"), "--log-level", "DEBUG",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "mcpwall_status", "arguments": {}}},
        ]
        assert proc.stdin is not None
        assert proc.stdout is not None
        for line in lines:
            proc.stdin.write(json.dumps(line).encode() + b"\n")
        await proc.stdin.drain()
        answers: list[dict[str, Any]] = []
        while len(answers) < 2:
            raw = await asyncio.wait_for(proc.stdout.readline(), 30)
            answers.append(json.loads(raw))  # stdout carries protocol only
        proc.stdin.close()
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert answers[1]["result"]["isError"] is True
        for blob in (json.dumps(answers).encode(), out, err):
            assert token.encode() not in blob


def test_a_token_on_the_command_line_is_refused() -> None:
    result = CliRunner().invoke(cli, ["mcp", "--token", "s3cret"])
    assert result.exit_code == 2
    assert "refused" in result.output
    assert "s3cret" not in result.output.replace("--token", "")
