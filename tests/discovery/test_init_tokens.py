"""Issue 22, item 3: `init` hands each client a named token of its own, never the gateway's.

Strategy: fake homes (tests.discovery.homes) with Cursor, Claude Code and VS
Code configs holding remote (url) and stdio servers, files 0644 as a client
writes them; the gateway token exists before init (a gateway ran once), as
on a real machine. `mcpwall init --yes` runs through CliRunner; then every
file under the fake home is searched for the gateway token's bytes, each
client config must hold its own named token (a different one per client,
the file 0600), a config without a token keeps its mode, policy.yaml is
0600, the stdio wraps carry no token in argv or env, running init again
reuses the tokens, a config an earlier init gave the gateway token is
moved to the client's token, and `uninstall` restores bytes and modes and
deletes the tokens init made (and only those). That the written token
really is least-privilege is tested through the real gateway in
tests/proxy/test_named_token_routes.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcpwall._token import write_secret
from mcpwall.cli import cli
from mcpwall.discovery._jsonc import parse as parse_jsonc
from mcpwall.proxy import load_token
from tests.discovery.homes import USER_PATHS, build_home, write

EXE = "/opt/mcpwall/bin/mcpwall"
CLIENTS = ["cursor", "claude-code", "vscode"]  # vscode brings vscode-settings (stdio only)


def init(home: Path, state: Path, *extra: str) -> Any:
    args = ["init", "--home", str(state), "--scan-home", str(home), "--platform", "linux", "--mcpwall", EXE,
            "--yes", *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def uninstall(state: Path, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["uninstall", "--home", str(state), *extra], catch_exceptions=False)


def config(home: Path, client: str) -> Any:
    return parse_jsonc((home / USER_PATHS[client]["linux"]).read_text(encoding="utf-8")).value


def mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def a_machine(tmp_path: Path) -> tuple[Path, Path, str]:
    """A fake home whose client configs are 0644, and a state home whose gateway already made its token."""
    home, state = tmp_path / "home", tmp_path / "state"
    for path in build_home(home, "linux", CLIENTS).values():
        path.chmod(0o644)
    gateway_token, _ = load_token(state, None)
    return home, state, gateway_token


def files_holding(root: Path, secret: str) -> list[str]:
    return [str(p) for p in sorted(root.rglob("*")) if p.is_file() and secret.encode() in p.read_bytes()]


def bearer(entry: dict[str, Any]) -> str:
    value = str(entry["headers"]["Authorization"])
    assert value.startswith("Bearer ")
    return value[len("Bearer "):]


def test_no_client_config_receives_the_gateway_token_regression_issue_22(tmp_path: Path) -> None:
    home, state, gateway_token = a_machine(tmp_path)
    init(home, state)
    assert files_holding(home, gateway_token) == []
    # only the gateway's own file holds it (and the init backups hold nothing new)
    assert files_holding(state, gateway_token) == [str(state / "run" / "gateway.token")]


def test_each_client_config_holds_a_token_of_its_own_and_is_private(tmp_path: Path) -> None:
    home, state, gateway_token = a_machine(tmp_path)
    init(home, state)
    tokens = {c: (state / "run" / "tokens" / f"{c}.token").read_text().strip() for c in CLIENTS}
    assert len(set(tokens.values())) == 3
    assert gateway_token not in tokens.values()
    assert bearer(config(home, "cursor")["mcpServers"]["linear"]) == tokens["cursor"]
    assert bearer(config(home, "claude-code")["mcpServers"]["sentry"]) == tokens["claude-code"]
    assert bearer(config(home, "vscode")["servers"]["github-remote"]) == tokens["vscode"]
    for client in CLIENTS:
        assert mode(home / USER_PATHS[client]["linux"]) == 0o600, client
        assert mode(state / "run" / "tokens" / f"{client}.token") == 0o600
    assert mode(state / "run" / "tokens") == 0o700
    # a config that holds no token keeps the mode it had
    assert mode(home / USER_PATHS["vscode-settings"]["linux"]) == 0o644
    assert mode(state / "policy.yaml") == 0o600


def test_a_wrapped_stdio_server_carries_no_token_in_its_argv_or_env(tmp_path: Path) -> None:
    home, state, gateway_token = a_machine(tmp_path)
    init(home, state)
    named = [p.read_text().strip() for p in (state / "run" / "tokens").glob("*.token")]
    wrapped = [config(home, "cursor")["mcpServers"]["github"], config(home, "vscode")["servers"]["fetch"],
               config(home, "vscode-settings")["mcp"]["servers"]["legacy"],
               config(home, "claude-code")["projects"]["/nonexistent/project"]["mcpServers"]["local-db"]]
    for entry in wrapped:
        assert entry["command"] == EXE
        text = json.dumps(entry)
        assert all(secret not in text for secret in [gateway_token, *named]), entry
        assert "MCPWALL_TOKEN" not in text
        assert "Authorization" not in text


def test_running_init_again_reuses_each_clients_token(tmp_path: Path) -> None:
    home, state, _ = a_machine(tmp_path)
    init(home, state)
    folder = state / "run" / "tokens"
    first = {p.name: p.read_bytes() for p in folder.iterdir()}
    configs = {c: (home / USER_PATHS[c]["linux"]).read_bytes() for c in CLIENTS}
    init(home, state)
    init(home, state, "--overwrite-policy")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == first
    assert {c: (home / USER_PATHS[c]["linux"]).read_bytes() for c in CLIENTS} == configs


def test_an_entry_an_earlier_init_gave_the_gateway_token_is_moved_to_the_clients_own(tmp_path: Path) -> None:
    """A config written by the old init (gateway token, 0644) is repaired by running init again."""
    home, state = tmp_path / "home", tmp_path / "state"
    gateway_token, _ = load_token(state, None)
    old = {"mcpServers": {"linear": {"url": "http://127.0.0.1:9420/mcp/linear",
                                     "headers": {"Authorization": f"Bearer {gateway_token}", "X-Keep": "1"}},
                          "other": {"url": "http://127.0.0.1:9420/mcp/other",
                                    "headers": {"Authorization": "Bearer somebody-elses-token"}}}}
    path = write(home, ".cursor/mcp.json", json.dumps(old, indent=2))
    path.chmod(0o644)
    original = path.read_bytes()
    init(home, state)
    servers = json.loads(path.read_text())["mcpServers"]
    own = (state / "run" / "tokens" / "cursor.token").read_text().strip()
    assert servers["linear"]["headers"] == {"Authorization": f"Bearer {own}", "X-Keep": "1"}
    assert servers["other"] == old["mcpServers"]["other"]  # not the gateway's token: not ours to change
    assert gateway_token.encode() not in path.read_bytes()
    assert mode(path) == 0o600
    assert uninstall(state).exit_code == 0
    assert path.read_bytes() == original
    assert mode(path) == 0o644


def test_uninstall_restores_bytes_and_modes_and_deletes_only_the_tokens_init_made(tmp_path: Path) -> None:
    home, state, _ = a_machine(tmp_path)
    own = state / "run" / "tokens" / "cursor.token"
    write_secret(own, "cursor-token-the-user-made-0123456789")  # a named token the user made by hand
    before = {p: (p.read_bytes(), mode(p)) for p in home.rglob("*") if p.is_file()}
    init(home, state)
    assert bearer(config(home, "cursor")["mcpServers"]["linear"]) == "cursor-token-the-user-made-0123456789"
    result = uninstall(state)
    assert result.exit_code == 0, result.output
    assert {p: (p.read_bytes(), mode(p)) for p in home.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in (state / "run" / "tokens").iterdir()) == ["cursor.token"]
    assert "revoked" in result.output
    assert not (state / "init" / "manifest.json").exists()


def test_uninstall_keeps_the_token_of_a_client_whose_file_it_could_not_restore(tmp_path: Path) -> None:
    home, state, _ = a_machine(tmp_path)
    init(home, state)
    cursor = home / USER_PATHS["cursor"]["linux"]
    cursor.write_text(cursor.read_text() + "\n")  # edited since: refused without --force
    assert uninstall(state).exit_code == 1
    tokens = state / "run" / "tokens"
    assert sorted(p.name for p in tokens.iterdir()) == ["cursor.token"]  # Cursor still uses it
    assert uninstall(state, "--force").exit_code == 0
    assert list(tokens.iterdir()) == []


def test_a_dry_run_makes_no_token(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", CLIENTS)
    result = CliRunner().invoke(cli, ["init", "--home", str(state), "--scan-home", str(home), "--platform", "linux",
                                      "--mcpwall", EXE, "--dry-run"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "with its own token" in result.output
    assert not (state / "run").exists()


def test_the_output_names_each_token_file_and_never_prints_a_token(tmp_path: Path) -> None:
    home, state, gateway_token = a_machine(tmp_path)
    result = CliRunner().invoke(cli, ["init", "--home", str(state), "--scan-home", str(home), "--platform", "linux",
                                      "--mcpwall", EXE, "--yes", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tokens"] == {c: str(state / "run" / "tokens" / f"{c}.token") for c in sorted(CLIENTS)}
    for secret in [gateway_token, *(Path(p).read_text().strip() for p in summary["tokens"].values())]:
        assert secret not in result.output


def test_a_kept_policy_that_others_can_read_is_made_private(tmp_path: Path) -> None:
    home, state, _ = a_machine(tmp_path)
    policy = write(state, "policy.yaml", "version: '1'\nmode: enforce\ndefaultAction: allow\nnotifications:\n"
                                         "  webhooks:\n    - url: https://hooks.example.com/T000/B000/secret\n")
    policy.chmod(0o644)
    text = policy.read_bytes()
    result = init(home, state)
    assert mode(policy) == 0o600
    assert policy.read_bytes() == text  # kept, only its mode changed
    assert "private" in result.output
