"""Authentication, DNS-rebinding guards, rate limits and live policy reload.

Strategy: real gateway processes; HTTP requests with and without the token,
with foreign Host and Origin headers; the policy file rewritten (and SIGHUP
sent) while the gateway runs.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpwall._token import write_secret
from tests.proxy.harness import MCPWALL, MEMORY, PERMISSIVE, GatewayProcess, gateway

pytestmark = pytest.mark.integration

PING = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}}


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path / "home", {"memory": MEMORY}, PERMISSIVE).start()
    yield g
    g.stop()


def test_a_token_is_generated_on_first_start_with_mode_0600(gw: GatewayProcess) -> None:
    path = gw.home / "run" / "gateway.token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((gw.home / "run").stat().st_mode) == 0o700
    assert len(gw.token) >= 32


def test_requests_without_the_right_token_are_refused(gw: GatewayProcess) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": gw.token}):
        r = httpx.post(f"{gw.url}/memory", json=PING, headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["code"] == -32003
    assert gw.post("/memory", PING).status_code == 200


def test_health_without_a_token_reveals_only_the_status(gw: GatewayProcess) -> None:
    bare = httpx.get(f"{gw.url}/health").json()
    assert bare["status"] == "ok"
    assert "servers" not in bare
    assert "servers" in httpx.get(f"{gw.url}/health", headers=gw.headers).json()


def test_foreign_host_and_origin_are_refused(gw: GatewayProcess) -> None:
    r = httpx.post(f"{gw.url}/memory", json=PING, headers={**gw.headers, "Host": "evil.example:9420"})
    assert r.status_code == 403
    r = httpx.post(f"{gw.url}/memory", json=PING, headers={**gw.headers, "Origin": "https://evil.example"})
    assert r.status_code == 403
    r = httpx.post(f"{gw.url}/memory", json=PING, headers={**gw.headers, "Origin": "http://localhost:3000"})
    assert r.status_code == 200
    # /health is public, but not to a page on another origin
    assert httpx.get(f"{gw.url}/health", headers={"Host": "evil.example"}).status_code == 403
    assert httpx.get(f"{gw.url}/health", headers={**gw.headers, "Origin": "http://evil.example"}).status_code == 403
    # a Host that is not host[:port] is no loopback host, whatever it starts with
    for host in ("localhost:80@evil.com", "127.0.0.1:9420/x", "localhost:abc", "localhost :80"):
        r = httpx.post(f"{gw.url}/memory", json=PING, headers={**gw.headers, "Host": host})
        assert r.status_code == 403, host


def test_an_explain_body_over_the_bound_is_an_invalid_request(gw: GatewayProcess) -> None:
    r = gw.post("/memory/explain", b'{"tool": "' + b"x" * (4 * 1024 * 1024) + b'"}')
    assert r.status_code == 413
    assert r.json()["error"]["code"] == -32600


def test_a_token_on_the_command_line_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run([MCPWALL, "proxy", "--home", str(tmp_path), "--token", "s3cret"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "argv" in proc.stderr


def test_the_token_can_come_from_the_environment_or_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "tok"
    token_file.write_text("file-token-123456789\n")
    os.chmod(token_file, 0o600)
    g = GatewayProcess(tmp_path / "a", {"memory": MEMORY}, PERMISSIVE)
    proc = None
    try:
        g.proc = proc = subprocess.Popen(
            [MCPWALL, "proxy", "--home", str(g.home), "--servers", str(g.servers_file), "--port", str(g.port),
             "--token-file", str(token_file)], stderr=subprocess.DEVNULL, start_new_session=True)
        _wait(g.url)
        assert httpx.post(f"{g.url}/memory", json=PING,
                          headers={"Authorization": "Bearer file-token-123456789"}).status_code == 200
        assert not (g.home / "run" / "gateway.token").exists()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)
    env_gw = GatewayProcess(tmp_path / "b", {"memory": MEMORY}, PERMISSIVE, env={"MCPWALL_TOKEN": "env-token-abcdefgh"})
    env_gw.proc = subprocess.Popen(
        [MCPWALL, "proxy", "--home", str(env_gw.home), "--servers", str(env_gw.servers_file), "--port",
         str(env_gw.port)], stderr=subprocess.DEVNULL, env=env_gw.env, start_new_session=True)
    try:
        _wait(env_gw.url)
        assert httpx.post(f"{env_gw.url}/memory", json=PING,
                          headers={"Authorization": "Bearer env-token-abcdefgh"}).status_code == 200
    finally:
        env_gw.proc.terminate()
        env_gw.proc.wait(15)


def _wait(url: str) -> None:
    for _ in range(300):
        try:
            if httpx.get(f"{url}/health", timeout=1).json()["status"] == "ok":
                return
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    raise RuntimeError("gateway did not start")


def test_the_rate_limit_answers_429(tmp_path: Path) -> None:
    policy = PERMISSIVE.replace("requestsPerMinute: 0", "requestsPerMinute: 5")
    g = GatewayProcess(tmp_path / "home", {"memory": MEMORY}, policy).start()
    try:
        codes = [g.post("/memory", PING).status_code for _ in range(7)]
        assert codes[:5] == [200] * 5
        assert codes[5:] == [429, 429]
        assert g.post("/memory", PING).json()["error"]["code"] == -32004
    finally:
        g.stop()


def test_renaming_itself_or_opening_sessions_does_not_lift_the_rate_limit(tmp_path: Path) -> None:
    """A client's names are its own to choose (X-Agent-Id, X-Mcpwall-Client, clientInfo), so the
    window is the authenticated token's: named tokens give agents windows of their own."""
    home = tmp_path / "home"
    for agent in ("alice", "bob"):
        write_secret(home / "run" / "tokens" / f"{agent}.token", f"{agent}-token-{agent * 8}")
    policy = PERMISSIVE.replace("requestsPerMinute: 0", "requestsPerMinute: 5")
    g = GatewayProcess(home, {"memory": MEMORY}, policy).start()
    try:
        codes = [g.post("/memory", PING, {"X-Mcpwall-Client": f"client-{i}", "X-Agent-Id": f"agent-{i}"}).status_code
                 for i in range(7)]
        assert codes == [200] * 5 + [429] * 2
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fresh", "version": "1"}}}
        fresh = g.post("/mcp", init, {"Accept": "application/json, text/event-stream"})
        assert fresh.status_code == 429
        assert fresh.json()["error"]["code"] == -32004
        alice = {"Authorization": "Bearer alice-token-" + "alice" * 8}
        assert [g.post("/memory", PING, alice).status_code for _ in range(6)] == [200] * 5 + [429]
        bob = {"Authorization": "Bearer bob-token-" + "bob" * 8}
        assert g.post("/memory", PING, bob).status_code == 200
    finally:
        g.stop()


def test_the_policy_reloads_on_change_and_keeps_the_old_one_when_broken(gw: GatewayProcess) -> None:
    assert "result" in gw.post("/memory", PING).json()
    # Issue 22: a change seen during an allowed call or within 2 s of its end waits for `mcpwall policy
    # reload` (tests/proxy/test_self_protection.py), so this one is made after that and watched in /health.
    time.sleep(2.5)
    revision = httpx.get(f"{gw.url}/health", headers=gw.headers).json()["policy"]["revision"]
    policy = gw.home / "policy.yaml"
    policy.write_text(PERMISSIVE.replace("rules:\n", "rules:\n  - {id: no-reads, tools: [read_graph], action: deny}\n"))
    _eventually(lambda: httpx.get(f"{gw.url}/health", headers=gw.headers).json()["policy"]["revision"] != revision)
    assert gw.post("/memory", PING).json()["error"]["code"] == -32001
    policy.write_text("rules: [this is: not valid")
    time.sleep(2.5)
    assert gw.post("/memory", PING).json()["error"]["code"] == -32001  # old policy still in force
    assert "policy reload refused" in gw.log.read_text()
    policy.write_text(PERMISSIVE)
    assert gw.proc is not None
    gw.proc.send_signal(signal.SIGHUP)
    _eventually(lambda: "result" in gw.post("/memory", PING).json())


def test_a_policy_file_written_after_a_start_on_the_built_in_policy_takes_over(tmp_path: Path) -> None:
    g = GatewayProcess(tmp_path / "home", {"memory": MEMORY})
    (g.home / "policy.yaml").unlink()  # first start: no policy file, the built-in default (deny)
    g.start()
    try:
        assert g.post("/memory", PING).json()["error"]["code"] == -32001
        (g.home / "policy.yaml").write_text("rules: [this is: not valid")
        time.sleep(2.5)
        assert g.post("/memory", PING).json()["error"]["code"] == -32001  # a broken file changes nothing
        assert "policy reload refused" in g.log.read_text()
        (g.home / "policy.yaml").write_text(PERMISSIVE)  # the README's step 5: write ~/.mcpwall/policy.yaml
        _eventually(lambda: "result" in g.post("/memory", PING).json())
    finally:
        g.stop()


def _eventually(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached")


def test_a_named_token_is_an_identity_a_header_cannot_override(tmp_path: Path) -> None:
    from mcpwall.proxy import write_secret

    home = tmp_path / "home"
    write_secret(home / "run" / "tokens" / "intern.token", "intern-token-0123456789")
    policy = PERMISSIVE.replace("rules:\n", "rules:\n  - {id: no-interns, tools: [read_graph], agents: [intern], "
                                           "action: deny}\n")
    g = GatewayProcess(home, {"memory": MEMORY}, policy).start()
    try:
        r = httpx.post(f"{g.url}/memory", json=PING, headers={"Authorization": "Bearer intern-token-0123456789",
                                                             "x-agent-id": "admin"})
        assert r.json()["error"]["code"] == -32001
        assert "no-interns" in str(r.json()["error"]["data"])
        assert "result" in g.post("/memory", PING, headers={"x-agent-id": "admin"}).json()
    finally:
        g.stop()


def test_a_session_answers_only_to_the_token_that_opened_it(tmp_path: Path) -> None:
    """Another agent's token holding a session's id cannot call in it as that agent, listen to it or end it."""
    home = tmp_path / "home"
    for agent in ("alice", "bob"):
        write_secret(home / "run" / "tokens" / f"{agent}.token", f"{agent}-token-{agent * 8}")
    policy = PERMISSIVE.replace("rules:\n", "rules:\n  - {id: no-bob, tools: [read_graph], agents: [bob], "
                                           "action: deny}\n")
    g = GatewayProcess(home, {"memory": MEMORY}, policy).start()
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        alice = {**accept, "Authorization": "Bearer alice-token-" + "alice" * 8}
        bob = {**accept, "Authorization": "Bearer bob-token-" + "bob" * 8}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}}
        sid = g.post("/mcp", init, alice).headers["mcp-session-id"]
        in_alices = {"Mcp-Session-Id": sid}
        g.post("/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**alice, **in_alices})
        call = {**PING, "params": {"name": "memory__read_graph", "arguments": {}}}
        assert "result" in g.post("/mcp", call, {**alice, **in_alices}).json()
        # bob is denied read_graph; in alice's session he was decided as alice, and could end it
        for headers in (bob, {**accept, **g.headers}):
            refused = g.post("/mcp", call, {**headers, **in_alices})
            assert refused.status_code == 404
            assert refused.json()["error"]["code"] == -32600
            assert httpx.delete(f"{g.url}/mcp", headers={**headers, **in_alices}).status_code == 404
            assert httpx.get(f"{g.url}/mcp", timeout=5,
                             headers={**headers, **in_alices, "Accept": "text/event-stream"}).status_code == 404
        assert "result" in g.post("/mcp", call, {**alice, **in_alices}).json()
    finally:
        g.stop()


def test_server_names_and_the_gateways_own_routes(tmp_path: Path) -> None:
    with gateway(tmp_path, {"uitools": MEMORY, "mcp": MEMORY}) as g:
        r = g.post("/uitools", PING)  # its plain route, not the dashboard's /ui
        assert "result" in r.json()
        assert "'mcp': /mcp is the gateway's own route" in g.log.read_text()
