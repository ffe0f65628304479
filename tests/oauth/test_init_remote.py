"""`init` keeps an OAuth-protected remote server working through the gateway (issue 26 item 3).

Strategy: a client config (Claude Code's `~/.claude.json`) names the real protected server of
tests/oauth/protected_server.py (Glewlwyd behind it). `mcpwall init --yes` rewrites it to the
gateway's `/mcp/NAME` with the client's named token and moves the upstream into policy.yaml; it
tells the user to run `mcpwall login NAME`. After that login (the browser played by the test),
the official SDK client, configured exactly as the rewritten entry says (path and headers; only
the port is the test gateway's), calls the server's `whoami` through the gateway and is answered
as the user who logged in. Declining leaves the config byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from tests.oauth.glewlwyd import Glewlwyd
from tests.oauth.test_upstream_client import _env, login, protected  # noqa: F401
from tests.proxy.harness import MCPWALL, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]


def _client_home(tmp_path: Path, url: str) -> tuple[Path, Path, Path]:
    scan_home, state = tmp_path / "scan", tmp_path / "state"
    config = scan_home / ".claude.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"numStartups": 3, "mcpServers": {"prot": {"type": "http", "url": url}}}))
    return scan_home, state, config


def _init(scan_home: Path, state: Path, *extra: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["init", "--home", str(state), "--scan-home", str(scan_home), "--platform",
                                      "linux", "--mcpwall", MCPWALL, *extra], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


async def _whoami_as_configured(state: Path, policy: str, entry: dict) -> str:
    """`whoami` through a gateway on `state`, called as the rewritten client entry says (its path and
    its Authorization header; the port is the test gateway's)."""
    gw = GatewayProcess(state, {}, policy, env=_env(state)).start()
    try:
        token = entry["headers"]["Authorization"].removeprefix("Bearer ")
        async with http_client(f"{gw.url}{urlsplit(entry['url']).path}", token) as client:
            result = await client.call_tool("whoami", {})
        assert not result.is_error, result
        return str(result.content[0].text)  # type: ignore[union-attr]
    finally:
        gw.stop()


@pytest.fixture
def initialised(protected, tmp_path: Path) -> tuple[Path, Path, dict]:  # noqa: F811
    scan_home, state, config = _client_home(tmp_path, protected.url)
    out = _init(scan_home, state, "--yes")
    assert "mcpwall login prot" in out
    return scan_home, state, json.loads(config.read_text())["mcpServers"]["prot"]


async def test_after_init_and_login_the_client_reaches_the_protected_server_through_the_gateway(
        initialised, glewlwyd: Glewlwyd, protected) -> None:  # noqa: F811
    _scan, state, entry = initialised
    assert urlsplit(entry["url"]).path == "/mcp/prot"
    assert protected.url not in json.dumps(entry)  # the client no longer talks to the server itself
    policy = (state / "policy.yaml").read_text()
    assert protected.url in policy
    # the server comes from the policy init wrote: no --url
    login(state, glewlwyd, protected.url, "alice", use_url=False)
    assert (await _whoami_as_configured(state, policy, entry)).startswith("user=alice")


def test_declining_leaves_the_remote_server_as_it_was(protected, tmp_path: Path) -> None:  # noqa: F811
    scan_home, state, config = _client_home(tmp_path, protected.url)
    before = config.read_bytes()
    out = _init(scan_home, state, input="n\n")
    assert "left unchanged" in out
    assert config.read_bytes() == before


async def test_a_static_credential_init_finds_moves_to_the_token_store_not_policy_yaml(
        protected, glewlwyd: Glewlwyd, tmp_path: Path) -> None:  # noqa: F811
    service = glewlwyd.service_token(resource=protected.url).access_token
    scan_home, state, config = _client_home(tmp_path, protected.url)
    config.write_text(json.dumps({"mcpServers": {"prot": {
        "type": "http", "url": protected.url,
        "headers": {"Authorization": f"Bearer {service}", "X-Region": "eu"}}}}))
    _init(scan_home, state, "--yes")
    policy = (state / "policy.yaml").read_text()
    assert service not in policy
    assert "X-Region" in policy  # what is no secret stays
    for path in state.rglob("*"):
        if path.is_file() and "backups" not in path.parts:
            assert service.encode() not in path.read_bytes(), path
    # the client config's backup (for `uninstall`, byte for byte) holds what the user's file held, privately
    for backup in (state / "init" / "backups").iterdir():
        assert backup.stat().st_mode & 0o077 == 0
    entry = json.loads(config.read_text())["mcpServers"]["prot"]
    assert f"client={glewlwyd.confidential.client_id}" in await _whoami_as_configured(state, policy, entry)
