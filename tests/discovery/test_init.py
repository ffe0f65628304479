"""`init` rewrites every client's config in place, with backups; `uninstall` restores them byte for byte.

Strategy: fake homes with each client's documented config, `mcpwall init`
through CliRunner, then assertions on the rewritten files (parsed with each
format's own parser), on what was kept (comments, other settings, env), on
policy.yaml, and on `uninstall`'s bytes. Refusal cases edit a file between
steps, as a user would.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.discovery import apply_init, make_target, plan_init, scan
from mcpwall.discovery._jsonc import parse as parse_jsonc
from mcpwall.policy import load_policy
from tests.discovery.homes import USER_PATHS, build_home, write

EXE = "/opt/mcpwall/bin/mcpwall"
REAL_EXE = str(Path(sys.executable).parent / "mcpwall")


def init(home: Path, state: Path, *extra: str, input: str | None = None, exe: str = EXE) -> Any:
    args = ["init", "--home", str(state), "--scan-home", str(home), "--platform", "linux", "--mcpwall", exe, *extra]
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    if path.suffix == ".yaml":
        return yaml.safe_load(text)
    return parse_jsonc(text).value


def cfg(home: Path, client: str) -> Any:
    return load(home / USER_PATHS[client]["linux"])


def test_dry_run_writes_nothing_anywhere(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    before = snapshot(tmp_path)
    result = init(home, state, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Dry run: nothing written." in result.output
    assert "mcpwall wrap" in result.output
    assert snapshot(tmp_path) == before
    assert not state.exists()


def test_init_wraps_every_stdio_server_and_keeps_everything_else(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    result = init(home, state, "--yes")
    assert result.exit_code == 0, result.output
    wrap = ["wrap", "--name"]
    claude = cfg(home, "claude-desktop")
    assert claude["globalShortcut"] == ""
    fs = claude["mcpServers"]["filesystem"]
    assert fs["command"] == EXE
    assert fs["args"] == [*wrap, "filesystem", "--home", str(state), "--", "npx", "-y",
                          "@modelcontextprotocol/server-filesystem", "/Users/username/Desktop"]
    github = cfg(home, "cursor")["mcpServers"]["github"]
    assert github["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}
    assert github["command"] == EXE
    codex = cfg(home, "codex")
    assert codex["model"] == "o3"
    assert codex["mcp_servers"]["context7"]["env"] == {"MY_ENV_VAR": "MY_ENV_VALUE"}
    assert codex["mcp_servers"]["context7"]["args"][-3:] == ["npx", "-y", "@upstash/context7-mcp"]
    goose = cfg(home, "goose")
    assert goose["extensions"]["developer"] == {"bundled": True, "enabled": True, "name": "developer",
                                                "timeout": 300, "type": "builtin"}
    assert goose["extensions"]["filesystem"]["cmd"] == EXE
    assert goose["extensions"]["filesystem"]["timeout"] == 300
    cont = cfg(home, "continue")
    assert cont["mcpServers"][0]["name"] == "SQLite MCP"
    assert cont["mcpServers"][0]["command"] == EXE
    zed = cfg(home, "zed")
    assert zed["context_servers"]["mcp-server-postgres"] == {"source": "extension", "settings": {}}
    assert zed["context_servers"]["local-mcp-server"]["args"][-3:] == ["some-command", "arg-1", "arg-2"]
    vscode_settings = cfg(home, "vscode-settings")
    assert vscode_settings["editor.fontSize"] == 14
    assert vscode_settings["mcp"]["servers"]["legacy"]["command"] == EXE


def test_comments_and_layout_outside_the_rewritten_entries_survive(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["vscode", "zed", "codex"])
    assert init(home, state, "--yes").exit_code == 0
    vscode = (home / USER_PATHS["vscode"]["linux"]).read_text()
    assert "// VS Code user MCP configuration (JSONC)" in vscode
    assert '"inputs": [' in vscode
    assert "/* the older place for servers */" in (home / USER_PATHS["vscode-settings"]["linux"]).read_text()
    zed = (home / USER_PATHS["zed"]["linux"]).read_text()
    assert zed.startswith("// Zed settings")
    assert "// provided by an extension" in zed
    assert "# MCP servers for Codex" in (home / USER_PATHS["codex"]["linux"]).read_text()


def test_remote_servers_go_through_the_gateway_each_client_with_its_own_token(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    assert init(home, state, "--yes").exit_code == 0
    assert not (state / "run" / "gateway.token").exists()  # init needs no gateway token (issue 22)

    def bearer(client: str) -> dict[str, str]:
        path = state / "run" / "tokens" / f"{client}.token"
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        return {"Authorization": f"Bearer {path.read_text().strip()}"}

    gw = "http://127.0.0.1:9420/mcp/"
    sentry = cfg(home, "claude-code")["mcpServers"]["sentry"]
    assert sentry == {"type": "http", "url": gw + "sentry", "headers": bearer("claude-code")}
    assert cfg(home, "cursor")["mcpServers"]["linear"] == {"url": gw + "linear", "headers": bearer("cursor")}
    remote = cfg(home, "vscode")["servers"]["github-remote"]
    assert remote == {"type": "http", "url": gw + "github-remote", "headers": bearer("vscode")}
    assert cfg(home, "windsurf")["mcpServers"]["remote-docs"] == {"serverUrl": gw + "remote-docs",
                                                                  "headers": bearer("windsurf")}
    assert cfg(home, "gemini-cli")["mcpServers"]["sseServer"] == {"httpUrl": gw + "sseServer",
                                                                  "headers": bearer("gemini-cli")}
    figma = cfg(home, "codex")["mcp_servers"]["figma"]
    assert figma == {"url": gw + "figma", "http_headers": bearer("codex")}  # bearer_token_env_var was the upstream's
    goose = cfg(home, "goose")["extensions"]["remote-tools"]
    assert (goose["type"], goose["uri"], goose["headers"]) == ("streamable_http", gw + "remote-tools", bearer("goose"))
    cline = cfg(home, "cline")["mcpServers"]["remote-sse"]
    assert (cline["url"], cline["disabled"]) == (gw + "remote-sse", True)
    assert cfg(home, "continue")["mcpServers"][1]["type"] == "streamable-http"


def test_policy_yaml_is_seeded_from_the_scan_and_loads(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    assert init(home, state, "--yes").exit_code == 0
    path = state / "policy.yaml"
    policy = load_policy(path)
    assert policy.mode == "audit"
    assert {"mcp.sentry.dev", "mcp.linear.app", "mcp.figma.com"} <= set(policy.allowlist.hosts)
    assert policy.allowlist.tools == []  # server names are not tool names (COMPATIBILITY.md row 15)
    assert policy.servers["figma"].url == "https://mcp.figma.com/mcp"
    assert policy.servers["figma"].headers == {"X-Figma-Region": "us-east-1"}
    assert policy.servers["sseServer"].transport == "sse"
    assert {r.rule.id for r in policy.rules} >= {"block-shell-execution", "block-sensitive-paths"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert (state / "risk-report.md").read_text().startswith("# mcpwall risk report")


def test_policy_enforce_mode_and_hosts_are_seeded_even_without_consent(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    before = snapshot(home)
    result = init(home, state, "--policy", "enforce", input="n\n")
    assert result.exit_code == 0, result.output
    assert "left unchanged" in result.output
    assert snapshot(home) == before  # declined: no client config touched
    policy = load_policy(state / "policy.yaml")
    assert policy.mode == "enforce"
    assert "mcp.linear.app" in policy.allowlist.hosts
    assert not policy.servers  # nothing routed through the gateway, so no upstreams


def test_running_init_again_never_wraps_twice(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    assert init(home, state, "--yes", exe=REAL_EXE).exit_code == 0
    first = snapshot(home)
    servers = load_policy(state / "policy.yaml").servers
    result = init(home, state, "--yes", exe=REAL_EXE)
    assert result.exit_code == 0, result.output
    assert snapshot(home) == first
    assert load_policy(state / "policy.yaml").servers == servers  # kept for the gateway
    report = json.loads(CliRunner().invoke(cli, ["report", "--format", "json", "--scan-home", str(home),
                                                 "--platform", "linux"]).stdout)
    guarded = {s["name"]: s["guarded"] for s in report["servers"]}
    assert all(v for k, v in guarded.items() if k not in ("nx-mcp",)), guarded
    fs = next(s for s in report["servers"] if s["name"] == "filesystem")
    assert fs["command"] == "npx"  # risk is scored on the real server, not on mcpwall


def test_a_look_alike_mcpwall_wrapper_is_not_counted_as_guarded_nor_wrapped_again(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    fake = write(tmp_path, "evil/mcpwall", "#!/bin/sh\nexec \"$@\"\n")
    fake.chmod(0o755)
    write(home, ".cursor/mcp.json", json.dumps({"mcpServers": {"sneaky": {
        "command": str(fake), "args": ["wrap", "--name", "sneaky", "--", "bash", "-c", "id"]}}}))
    report = json.loads(CliRunner().invoke(cli, ["report", "--format", "json", "--scan-home", str(home),
                                                 "--platform", "linux"]).stdout)
    (server,) = report["servers"]
    assert server["guarded"] is False
    assert server["command"] == "bash"  # scored on what it really launches
    before = snapshot(home)
    result = init(home, state, "--yes", exe=REAL_EXE)
    assert result.exit_code == 0
    assert snapshot(home) == before
    assert "not this mcpwall" in result.output


def test_a_server_added_after_init_is_wrapped_by_the_next_init(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    assert init(home, state, "--yes").exit_code == 0
    path = home / USER_PATHS["cursor"]["linux"]
    data = json.loads(path.read_text())
    data["mcpServers"]["added"] = {"command": "new-server"}
    path.write_text(json.dumps(data, indent=2))
    assert init(home, state, "--yes").exit_code == 0
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["added"]["args"][-1] == "new-server"
    assert sum(1 for s in servers.values() if s.get("args", [])[:1] == ["wrap"]) == 2  # github, added


def test_uninstall_restores_every_file_byte_for_byte(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    before = snapshot(home)
    assert init(home, state, "--yes").exit_code == 0
    assert snapshot(home) != before
    result = CliRunner().invoke(cli, ["uninstall", "--home", str(state)])
    assert result.exit_code == 0, result.output
    assert snapshot(home) == before
    assert not (state / "init" / "manifest.json").exists()
    again = CliRunner().invoke(cli, ["uninstall", "--home", str(state)])
    assert again.exit_code == 0
    assert "Nothing to restore" in again.output


def test_uninstall_refuses_a_file_changed_since_and_force_restores_it(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor", "codex"])
    before = snapshot(home)
    assert init(home, state, "--yes").exit_code == 0
    cursor = home / USER_PATHS["cursor"]["linux"]
    cursor.write_text(cursor.read_text() + "\n")
    result = CliRunner().invoke(cli, ["uninstall", "--home", str(state)])
    assert result.exit_code == 1
    assert "refused" in result.output
    assert "changed since" in result.output
    assert (home / USER_PATHS["codex"]["linux"]).read_bytes() == before[USER_PATHS["codex"]["linux"]]
    assert cursor.read_bytes() != before[USER_PATHS["cursor"]["linux"]]
    forced = CliRunner().invoke(cli, ["uninstall", "--home", str(state), "--force"])
    assert forced.exit_code == 0, forced.output
    assert snapshot(home) == before


def test_uninstall_refuses_when_the_file_was_edited_between_two_inits(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    original = snapshot(home)
    assert init(home, state, "--yes").exit_code == 0
    path = home / USER_PATHS["cursor"]["linux"]
    data = json.loads(path.read_text())
    data["mcpServers"]["later"] = {"command": "later-server"}
    path.write_text(json.dumps(data))
    assert init(home, state, "--yes").exit_code == 0
    result = CliRunner().invoke(cli, ["uninstall", "--home", str(state)])
    assert result.exit_code == 1
    assert "between two" in result.output
    assert CliRunner().invoke(cli, ["uninstall", "--home", str(state), "--force"]).exit_code == 0
    assert snapshot(home) == original


def test_a_symlinked_config_is_edited_through_the_link_and_restored(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    real = write(tmp_path, "dotfiles/cursor-mcp.json", json.dumps({"mcpServers": {"x": {"command": "x-server"}}}))
    original = real.read_bytes()
    (home / ".cursor").mkdir(parents=True)
    link = home / ".cursor" / "mcp.json"
    link.symlink_to(real)
    real.chmod(0o640)
    assert init(home, state, "--yes").exit_code == 0
    assert link.is_symlink()
    assert json.loads(real.read_text())["mcpServers"]["x"]["command"] == EXE
    assert oct(real.stat().st_mode & 0o777) == "0o640"
    assert CliRunner().invoke(cli, ["uninstall", "--home", str(state)]).exit_code == 0
    assert link.is_symlink()
    assert real.read_bytes() == original


def test_backups_are_private(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    assert init(home, state, "--yes").exit_code == 0
    backups = list((state / "init" / "backups").iterdir())
    assert backups
    assert all(oct(b.stat().st_mode & 0o777) == "0o600" for b in backups)
    assert oct((state / "init").stat().st_mode & 0o777) == "0o700"


def test_a_policy_the_user_wrote_is_kept_and_remote_servers_are_not_routed(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    write(state, "policy.yaml", "version: '1'\nmode: enforce\ndefaultAction: allow\n")
    result = init(home, state, "--yes")
    assert result.exit_code == 0, result.output
    assert (state / "policy.yaml").read_text() == "version: '1'\nmode: enforce\ndefaultAction: allow\n"
    servers = cfg(home, "cursor")["mcpServers"]
    assert servers["linear"] == {"url": "https://mcp.linear.app/sse"}  # untouched: the gateway would not know it
    assert servers["github"]["command"] == EXE
    assert init(home, state, "--yes", "--overwrite-policy").exit_code == 0
    assert cfg(home, "cursor")["mcpServers"]["linear"]["url"] == "http://127.0.0.1:9420/mcp/linear"


def test_entries_that_cannot_be_rewritten_are_reported_not_broken(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["jetbrains"])
    write(home, ".cursor/mcp.json", json.dumps({"mcpServers": {"oneline": {"command": "npx -y some-server"}}}))
    write(home, ".codex/config.toml", '[mcp_servers]\ninline = { command = "x" }\n')
    before = snapshot(home)
    result = init(home, state, "--yes")
    assert result.exit_code == 0, result.output
    assert snapshot(home) == before
    assert "client's settings store" in result.output or "settings store" in result.output
    assert "one string" in result.output
    assert "not written as its own table" in result.output


def test_a_file_changed_between_plan_and_apply_is_left_alone(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    result = scan(make_target(home, "linux"))
    p = plan_init(result, state, exe=EXE)
    path = home / USER_PATHS["cursor"]["linux"]
    path.write_text(path.read_text() + " ")
    (applied,) = apply_init(p)
    assert "changed while init was running" in applied.error
    assert path.read_text().endswith(" ")
    assert json.loads(path.read_text())["mcpServers"]["github"]["command"] == "npx"


def test_the_default_home_is_not_passed_to_wrap(tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "home"
    build_home(home, "linux", ["claude-desktop"])
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    state = tmp_path / "user" / ".mcpwall"
    assert init(home, state, "--yes").exit_code == 0
    args = cfg(home, "claude-desktop")["mcpServers"]["time"]["args"]
    assert args[:4] == ["wrap", "--name", "time", "--"]
    assert "--home" not in args
    assert os.path.exists(state / "policy.yaml")
