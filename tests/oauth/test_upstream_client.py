"""The gateway as an OAuth client of a protected upstream (issue 26 item 2).

Strategy: all parts are real. Glewlwyd (tests/oauth/glewlwyd.py) is the authorization server; an
MCP server written with the SDK's resource-server support (tests/oauth/protected_server.py)
checks its JWTs by JWKS and audience. `mcpwall login` runs as a subprocess with `--no-browser`;
the test plays the person's browser: it reads the printed URL, logs in at Glewlwyd as alice or
bob, and follows the redirect to the login's loopback callback. The gateway (`mcpwall proxy`
subprocess) then serves the official SDK client, which calls the upstream's `whoami` tool: its
answer names the user whose token the gateway sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcpwall._token import ensure_named_token
from mcpwall.oauth import OWNER, LoginRequired, TokenStore, UpstreamAuth
from tests.harness import free_port, wait_answers
from tests.oauth.glewlwyd import USERS, Glewlwyd
from tests.proxy.harness import MCPWALL, PERMISSIVE, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent


@dataclass
class Protected:
    url: str
    proc: subprocess.Popen[bytes]


@contextlib.contextmanager
def serve_protected(glewlwyd: Glewlwyd, log_path: Path, transport: str = "streamable-http",
                    issuer: str | None = None) -> Iterator[Protected]:
    """tests/oauth/protected_server.py on a free port (its resource allowed at Glewlwyd), stopped by PID;
    its tokens come from `issuer` (one of Glewlwyd's plugins, the main one by default)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    glewlwyd.allow_resource(url)
    issuer = issuer or glewlwyd.issuer
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, str(HERE / "protected_server.py"), str(port), issuer,
                                 f"{issuer}/jwks", "mcp:tools", transport], stdout=log, stderr=log)
        try:
            wait_answers(url, proc, log_path)
            yield Protected(url, proc)
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.fixture(scope="module")
def protected(glewlwyd: Glewlwyd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    with serve_protected(glewlwyd, tmp_path_factory.mktemp("protected") / "server.log") as server:
        yield server


def _env(home: Path) -> dict[str, str]:
    # the file store's key outside the home (tests/conftest.py: this run's directory); no desktop keyring
    return {**os.environ, "MCPWALL_KEY_DIR": os.environ.get("MCPWALL_KEY_DIR") or str(home.parent / "keys"),
            "MCPWALL_KEYRING": "off"}


def _store(home: Path) -> TokenStore:
    """The home's token store as the gateway opens it (the key where `_env` puts it)."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in _env(home).items():
            if key.startswith("MCPWALL_"):
                mp.setenv(key, value)
        return TokenStore(home)


def _browser(glewlwyd: Glewlwyd, url: str, user: str) -> str:
    """What the user's browser does: log in, consent, follow the redirect to the loopback callback.
    Returns the callback URL it was sent to."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    glewlwyd.grant(user, query["client_id"], query["scope"])
    with contextlib.closing(glewlwyd.login(user, USERS[user][0])) as http:
        r = http.get(url + "&g_continue")
    location = r.headers["location"]
    httpx.get(location, timeout=10)
    return location


def login(home: Path, glewlwyd: Glewlwyd, server_url: str, user: str, *args: str, use_url: bool = True) -> str:
    """`mcpwall login prot --url URL --no-browser ARGS`, completed as `user`; returns its output.
    Without `use_url` the server's URL comes from the home's policy.yaml."""
    where = ["--url", server_url] if use_url else []
    proc = subprocess.Popen([MCPWALL, "login", "prot", *where, "--home", str(home), "--no-browser",
                             "--timeout", "60", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=_env(home), text=True)
    with proc:
        assert proc.stdout is not None
        seen: list[str] = []
        for line in proc.stdout:
            seen.append(line)
            match = re.search(r"(http://\S+/auth\?\S+)", line)
            if match:
                callback = _browser(glewlwyd, match.group(1), user)
                assert urllib.parse.urlsplit(callback).hostname == "127.0.0.1"
                assert "iss=" in callback  # Glewlwyd sends RFC 9207's iss; the SDK checks it
                break
        seen.append(proc.stdout.read())
        assert proc.wait(60) == 0, "".join(seen)
    return "".join(seen)


async def _whoami(gw: GatewayProcess, token: str) -> str:
    async with http_client(f"{gw.url}/mcp/prot", token) as client:
        result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def logged_in(glewlwyd: Glewlwyd, protected: Protected, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[Path, GatewayProcess, dict[str, str]]]:
    """A home where the owner (as alice), alice and bob logged in; a gateway serving it."""
    home = tmp_path_factory.mktemp("home")
    out = login(home, glewlwyd, protected.url, "alice")
    assert "prot: authorized until" in out
    login(home, glewlwyd, protected.url, "alice", "--principal", "alice")
    login(home, glewlwyd, protected.url, "bob", "--principal", "bob")
    tokens = {name: ensure_named_token(home, name)[0] for name in ("alice", "bob", "carol")}
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
    try:
        yield home, gw, tokens
    finally:
        gw.stop()


async def test_login_stores_a_grant_the_gateway_sends_for_each_principal(logged_in) -> None:
    home, gw, tokens = logged_in
    assert (await _whoami(gw, tokens["alice"])).startswith("user=alice")
    assert (await _whoami(gw, tokens["bob"])).startswith("user=bob")
    # the gateway token's principal is the owner, whose grant is alice's login without --principal
    assert (await _whoami(gw, gw.token)).startswith("user=alice")
    # carol is a client of this machine (a named token) without a grant of her own: the owner's
    assert (await _whoami(gw, tokens["carol"])).startswith("user=alice")
    held = _store(home).index()["prot"]
    assert set(held) == {"", "alice", "bob"}
    (row,) = _dashboard_servers(gw)  # the dashboard's upstream view
    assert row["authorization"]["state"].startswith("authorized until")
    assert set(row["authorization"]["principals"]) == {"alice", "bob"}


async def test_the_gateway_renews_a_grant_before_it_expires(logged_in) -> None:
    home, gw, tokens = logged_in
    store = _store(home)
    before = store.get("prot", "bob")
    assert before is not None
    assert before.refresh_token
    before.expires_at = time.time() + 5  # due: within the renewal margin
    store.put("prot", "bob", before)
    assert (await _whoami(gw, tokens["bob"])).startswith("user=bob")
    after = _store(home).get("prot", "bob")
    assert after is not None
    assert after.access_token != before.access_token
    assert after.expires_at is not None
    assert after.expires_at > time.time() + 600


async def test_no_token_is_in_clear_in_the_home_the_ledger_the_logs_or_argv(logged_in) -> None:
    home, gw, tokens = logged_in
    await _whoami(gw, tokens["alice"])
    store = _store(home)
    secrets_held = []
    for principal in ("", "alice", "bob"):
        grant = store.get("prot", principal)
        assert grant is not None
        secrets_held += [grant.access_token, *([grant.refresh_token] if grant.refresh_token else []),
                         str(grant.client.get("client_secret") or "")]
    _assert_nowhere_in_clear(home, gw, [s for s in secrets_held if s])


def _assert_nowhere_in_clear(home: Path, gw: GatewayProcess, secrets_held: list[str]) -> None:
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.db" for p in files)
    assert gw.log.exists()
    for path in files:
        data = path.read_bytes()
        for secret in secrets_held:
            assert secret.encode() not in data, f"a token in clear in {path}"
    assert (home / "run" / "upstream-tokens.enc").stat().st_mode & 0o077 == 0
    assert gw.proc is not None
    for pid in [gw.proc.pid, *_children(gw.proc.pid)]:
        with contextlib.suppress(FileNotFoundError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            assert not any(s.encode() in cmdline for s in secrets_held)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


async def test_a_principal_without_a_grant_is_told_to_log_in_and_gets_no_one_elses(logged_in) -> None:
    home, _gw, _tokens = logged_in
    auth = UpstreamAuth("prot", home, _store(home))
    assert auth.key_for("alice") == "alice"
    assert auth.key_for("bob") == "bob"
    assert auth.key_for(None) == OWNER
    # dave is no client of this machine (no named token: a person from an identity provider)
    assert auth.key_for("dave") is None
    request = httpx.Request("POST", "http://127.0.0.1:1/mcp", extensions={"mcpwall_principal": "dave"})
    flow = auth.async_auth_flow(request)
    with pytest.raises(LoginRequired, match=r"mcpwall login prot --principal dave"):
        await flow.__anext__()


async def test_an_upstream_without_a_login_fails_with_the_login_command(protected: Protected,
                                                                         tmp_path: Path) -> None:
    gw = _Answering(tmp_path / "home", {"prot": {"url": protected.url}}, env=_env(tmp_path / "home")).start()
    try:
        server = _health(gw)["servers"]["prot"]
        assert server["state"] != "ready"
        assert "requires authorization: run `mcpwall login prot`" in (server["last_error"] or "")
        async with http_client(f"{gw.url}/mcp", gw.token) as client:
            tools = await client.list_tools()
        assert tools.tools == []  # the gateway serves on; the server's tools come after the login
        (row,) = _dashboard_servers(gw)
        assert row["authorization"] == {"state": "login required", "principals": {}, "login": "mcpwall login prot"}
    finally:
        gw.stop()


def _dashboard_servers(gw: GatewayProcess) -> list[dict[str, Any]]:
    r = httpx.get(f"{gw.url}/api/servers", headers=gw.headers, timeout=10)
    assert r.status_code == 200, r.text
    return list(r.json()["servers"])


def _health(gw: GatewayProcess) -> dict[str, Any]:
    return dict(httpx.get(f"{gw.url}/health", headers=gw.headers, timeout=10).json())


class _Answering(GatewayProcess):
    """A gateway that is up once /health answers (degraded: its one upstream has no grant)."""

    def _wait_healthy(self, timeout: float) -> GatewayProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, KeyError):
                r = httpx.get(f"{self.url}/health", headers=self.headers, timeout=1.0)
                if "requires authorization" in (r.json()["servers"]["prot"].get("last_error") or ""):
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"gateway did not answer: {self.log.read_text()[-3000:]}")


def test_status_reports_each_upstreams_authorization_state(logged_in) -> None:
    home, _gw, _tokens = logged_in
    out = subprocess.run([MCPWALL, "status", "--home", str(home), "--json"], capture_output=True, text=True,
                         env=_env(home), timeout=60)
    data = json.loads(out.stdout)
    auth = data["servers"]["prot"]["authorization"]
    assert auth["state"].startswith("authorized until")
    assert set(auth["principals"]) == {"alice", "bob"}


def test_login_of_a_stdio_server_or_unknown_name_is_refused(tmp_path: Path) -> None:
    out = subprocess.run([MCPWALL, "login", "nosuch", "--home", str(tmp_path)], capture_output=True, text=True,
                         env=_env(tmp_path), timeout=60)
    assert out.returncode == 2
    assert "no server 'nosuch'" in out.stderr



async def test_a_service_credential_is_shared_and_renewed_by_client_credentials(
        glewlwyd: Glewlwyd, protected: Protected, tmp_path: Path) -> None:
    home = tmp_path / "svc"
    env = {**_env(home), "MCPWALL_CLIENT_SECRET": glewlwyd.confidential.secret}
    out = _run_login(home, protected.url, env, "--service", "--client-id", glewlwyd.confidential.client_id,
                     "--issuer", glewlwyd.issuer)
    assert "(service" in out
    assert glewlwyd.confidential.secret not in out
    store = _store(home)
    grant = store.get("prot", "*")
    assert grant is not None
    assert grant.kind == "service"
    grant.expires_at = time.time()  # due: renewed by a new client-credentials grant, not a login
    store.put("prot", "*", grant)
    bob = ensure_named_token(home, "bob")[0]
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home)).start()
    try:
        for token in (gw.token, bob):
            assert f"client={glewlwyd.confidential.client_id}" in await _whoami(gw, token)
    finally:
        gw.stop()
    renewed = _store(home).get("prot", "*")
    assert renewed is not None
    assert renewed.access_token != grant.access_token


def _run_login(home: Path, url: str, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([MCPWALL, "login", "prot", "--url", url, "--home", str(home), *args], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def test_a_person_from_the_identity_provider_gets_only_their_own_upstream_token(
        glewlwyd: Glewlwyd, protected: Protected, tmp_path: Path) -> None:
    """Both sides: the gateway trusts Glewlwyd downstream (policy.yaml `auth:`), so bob and alice
    reach it as themselves; upstream, bob's call carries bob's grant, and alice, who has none of her
    own, is told to log in: the owner's grant (also alice's login, but the machine owner's) is never
    lent to a person the identity provider named."""
    home = tmp_path / "both"
    login(home, glewlwyd, protected.url, "alice")
    login(home, glewlwyd, protected.url, "bob", "--principal", "bob")
    gw = GatewayProcess(home, {"prot": {"url": protected.url}}, env=_env(home))
    (home / "policy.yaml").write_text(PERMISSIVE + f"""\
auth:
  issuers:
    - issuer: {glewlwyd.issuer}
      scopes: [mcp:tools]
      principalClaim: preferred_username
""")
    glewlwyd.allow_resource(f"{gw.url}/mcp/prot")
    gw.start()
    try:
        def downstream(user: str) -> str:
            return glewlwyd.token_for(user, "mcp:tools", f"{gw.url}/mcp/prot").access_token

        bob = await anyio.to_thread.run_sync(downstream, "bob")
        assert (await _whoami(gw, bob)).startswith("user=bob")
        alice = await anyio.to_thread.run_sync(downstream, "alice")
        async with http_client(f"{gw.url}/mcp/prot", alice) as client:
            with pytest.raises(MCPError, match=r"requires authorization for principal 'alice': run "
                                              r"`mcpwall login prot --principal alice`"):
                await client.call_tool("whoami", {})
    finally:
        gw.stop()


def test_a_device_login_where_the_server_offers_none_says_so(protected: Protected, tmp_path: Path) -> None:
    home = tmp_path / "dev"
    done = subprocess.run([MCPWALL, "login", "prot", "--url", protected.url, "--home", str(home), "--device"],
                          env=_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "offers no device authorization grant" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (home / "run" / "upstream-auth.json").exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/mcp", "ftp://127.0.0.1/mcp"])
def test_a_login_to_a_server_that_is_not_there_or_no_url_fails_in_one_line(url: str, tmp_path: Path) -> None:
    done = subprocess.run([MCPWALL, "login", "prot", "--url", url, "--home", str(tmp_path), "--no-browser"],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == (1 if url.startswith("http") else 2), done.stderr
    assert "Traceback" not in done.stderr
    assert ("cannot reach" if url.startswith("http") else "must be an http(s) URL") in done.stderr


async def test_a_legacy_sse_upstream_gets_the_owners_grant(glewlwyd: Glewlwyd, tmp_path: Path) -> None:
    with serve_protected(glewlwyd, tmp_path / "sse.log", "sse") as sse:
        home = tmp_path / "home"
        await anyio.to_thread.run_sync(lambda: login(home, glewlwyd, sse.url, "bob"))
        gw = GatewayProcess(home, {"prot": {"url": sse.url, "type": "sse"}}, env=_env(home)).start()
        try:
            assert (await _whoami(gw, gw.token)).startswith("user=bob")
        finally:
            gw.stop()
