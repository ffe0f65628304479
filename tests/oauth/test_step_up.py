"""Upstream step-up: a protected server answers `403 insufficient_scope` (issue 26 item 2).

Strategy: all parts real. The protected server (tests/oauth/protected_server.py, the Python SDK
with Glewlwyd's JWTs) needs `mcp:tools` for everything and `mcp:admin` for its `admin_op` tool
(`introspect_op`: `mcp:introspect`, which no test client may get by client credentials); it
challenges with that scope alone and logs each refusal, so a test counts the attempts. The
gateway (`mcpwall proxy`) serves the SDK client.

- A person's grant (browser login as alice, scope mcp:tools) cannot be widened without them: the
  call fails with the login command for the union, status and the dashboard say so, other tools
  keep working, and after the login the call passes.
- The dashboard's login (`POST /api/servers/NAME/login`) asks for that union by itself.
- A service credential is widened by client credentials for the union, once, and kept; a scope
  the authorization server will not give it fails the call clearly after one retry, never more.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.oauth.glewlwyd import Glewlwyd
from tests.oauth.test_upstream_client import (
    Protected,
    _browser,
    _dashboard_servers,
    _env,
    _run_login,
    _store,
    login,
    serve_protected,
)
from tests.proxy.harness import MCPWALL, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

UNION = "mcp:tools mcp:admin"


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    return tmp_path / "protected.log"


@pytest.fixture
def protected(glewlwyd: Glewlwyd, server_log: Path) -> Iterator[Protected]:
    with serve_protected(glewlwyd, server_log) as server:
        yield server


def _refusals(log: Path, tool: str) -> int:
    return log.read_text().count(f"step-up refused {tool}\n")


async def _call(gw: GatewayProcess, tool: str, args: dict[str, float] | None = None) -> str:
    async with http_client(f"{gw.url}/mcp/prot", gw.token) as client:
        result = await client.call_tool(tool, args or {})
    assert not result.is_error, result
    return str(result.content[0].text)  # type: ignore[union-attr]


async def _refused(gw: GatewayProcess, tool: str) -> str:
    """The error message of a call that fails."""
    async with http_client(f"{gw.url}/mcp/prot", gw.token) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool(tool, {})
    return str(refused.value)


async def _after_new_client(gw: GatewayProcess, tool: str) -> str:
    """A call after a login that registered a new client: the upstream session the gateway opened with
    the old client's token is the SDK server's for that client only (it answers 404, "upstream session
    expired"), so the first call may fail while the gateway opens another session; the person retries."""
    for _ in range(50):
        try:
            return await _call(gw, tool)
        except Exception as exc:  # the SDK wraps the call error in an exception group
            if "upstream session expired" not in repr(exc) and "not ready" not in repr(exc):
                raise
        await anyio.sleep(0.2)
    raise AssertionError("the gateway did not reconnect")


def _status_state(home: Path) -> str:
    out = subprocess.run([MCPWALL, "status", "--home", str(home), "--json"], capture_output=True, text=True,
                         env=_env(home), timeout=60)
    return str(json.loads(out.stdout)["servers"]["prot"]["authorization"]["state"])


async def test_a_persons_grant_without_the_tools_scope_asks_for_a_login_with_the_union(
        glewlwyd: Glewlwyd, protected: Protected, server_log: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    await anyio.to_thread.run_sync(lambda: login(home, glewlwyd, protected.url, "alice", "--scope", "mcp:tools"))
    before = _store(home).get("prot", "")
    assert before is not None
    assert before.scope == "mcp:tools"
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
    try:
        assert await _call(gw, "add", {"a": 1, "b": 2}) == "3.0"
        assert (f"upstream 'prot' requires authorization for scope '{UNION}': run "
                f'`mcpwall login prot --scope "{UNION}"`') in await _refused(gw, "admin_op")
        assert _refusals(server_log, "admin_op") == 1  # a person's grant is never retried
        assert await _call(gw, "add", {"a": 2, "b": 2}) == "4.0"  # the grant still serves the rest
        assert _status_state(home) == f"login needed for scope {UNION}"
        (row,) = _dashboard_servers(gw)
        assert row["authorization"]["state"] == f"login needed for scope {UNION}"
        assert row["authorization"]["login"] == f'mcpwall login prot --scope "{UNION}"'
        # the person runs the command they were given; the gateway takes the new grant at its next request
        await anyio.to_thread.run_sync(lambda: login(home, glewlwyd, protected.url, "alice", "--scope", UNION))
        grant = _store(home).get("prot", "")
        assert grant is not None
        assert grant.scope == UNION
        assert grant.step_up is None
        assert await _after_new_client(gw, "admin_op") == "admin done with scope mcp:admin mcp:tools"
        assert _refusals(server_log, "admin_op") == 1
        (row,) = _dashboard_servers(gw)
        assert row["authorization"]["state"].startswith("authorized until")
        assert "login" not in row["authorization"]
    finally:
        gw.stop()


async def test_a_service_credential_is_widened_once_by_client_credentials(
        glewlwyd: Glewlwyd, protected: Protected, server_log: Path, tmp_path: Path) -> None:
    home = tmp_path / "svc"
    env = {**_env(home), "MCPWALL_CLIENT_SECRET": glewlwyd.confidential.secret}
    await anyio.to_thread.run_sync(lambda: _run_login(
        home, protected.url, env, "--service", "--client-id", glewlwyd.confidential.client_id,
        "--issuer", glewlwyd.issuer, "--scope", "mcp:tools"))
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
    try:
        assert await _call(gw, "admin_op") == "admin done with scope mcp:admin mcp:tools"
        assert _refusals(server_log, "admin_op") == 1
        widened = _store(home).get("prot", "*")
        assert widened is not None
        assert set((widened.scope or "").split()) == set(UNION.split())
        # kept: the next call carries the wider token at once
        assert await _call(gw, "admin_op") == "admin done with scope mcp:admin mcp:tools"
        assert _refusals(server_log, "admin_op") == 1
        # a scope the authorization server will not give this client: one retry at most, then a clear error
        # (Glewlwyd gives the client what it may have, without mcp:introspect)
        assert ("upstream 'prot' needs scope 'mcp:tools mcp:admin mcp:introspect'; the authorization server "
                "granted the service credential 'mcp:tools mcp:admin'") in await _refused(gw, "introspect_op")
        assert _refusals(server_log, "introspect_op") == 2  # the call and its one retry
        await _refused(gw, "introspect_op")
        assert _refusals(server_log, "introspect_op") == 4  # each call retries once, never more
        assert await _call(gw, "add", {"a": 1, "b": 1}) == "2.0"
    finally:
        gw.stop()


async def test_the_dashboards_login_asks_for_the_scope_the_server_wanted(
        glewlwyd: Glewlwyd, protected: Protected, tmp_path: Path) -> None:
    home = tmp_path / "home"
    await anyio.to_thread.run_sync(lambda: login(home, glewlwyd, protected.url, "alice", "--scope", "mcp:tools"))
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
    try:
        await _refused(gw, "admin_op")
        async with httpx.AsyncClient(timeout=30, headers=gw.headers) as http:
            started = await http.post(f"{gw.url}/api/servers/prot/login", json={})
            assert started.status_code == 200, started.text
            authorize = started.json()["authorize"]
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))
            assert query["scope"].split() == UNION.split()
            # alice consents in her browser and is sent back to the gateway's loopback callback
            await anyio.to_thread.run_sync(_browser, glewlwyd, authorize, "alice")
            for _ in range(50):
                state = (await http.get(f"{gw.url}/api/servers/prot/login")).json()["state"]
                if state != "waiting for the authorization":
                    break
                await anyio.sleep(0.2)
            assert state == "authorized"
        grant = _store(home).get("prot", "")
        assert grant is not None
        assert grant.scope is not None
        assert set(grant.scope.split()) == set(UNION.split())
        assert await _after_new_client(gw, "admin_op") == "admin done with scope mcp:admin mcp:tools"
    finally:
        gw.stop()
