"""Detectors find every client's servers, in its real format, on every platform's paths.

Strategy: a fake home per platform (tests/discovery/homes.py, paths and
formats from the clients' documentation) is scanned through `make_target
(scan_home, platform)`; Windows and macOS layouts are exercised on Linux the
same way. Broken files (malformed, empty, binary, unreadable) must become
findings without sinking the scan. Deduplication merges the same server
across clients.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpwall.discovery import make_target, scan
from mcpwall.discovery._model import ScanResult
from tests.discovery.homes import EXPECTED, PROJECT_CONTENT, USER_PATHS, build_home, build_project, write

PLATFORMS = ["linux", "darwin", "win32"]


def names_by_client(result: ScanResult) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in result.entries:
        out.setdefault(e.client, set()).add(e.name)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_client_is_found_at_its_documented_path_on_each_platform(tmp_path: Path, platform: str) -> None:
    build_home(tmp_path, platform)
    result = scan(make_target(tmp_path, platform))
    found = names_by_client(result)
    for client, names in EXPECTED.items():
        if platform not in USER_PATHS[client]:
            continue
        assert found.get(client) == names, client
    assert not result.problems


def test_a_fake_home_scans_only_the_projects_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    build_project(project)
    monkeypatch.chdir(project)
    assert scan(make_target(tmp_path / "home", "linux")).entries == []
    result = scan(make_target(tmp_path / "home", "linux", [project]))
    expected: dict[str, set[str]] = {}
    for client, _, names in PROJECT_CONTENT.values():
        expected.setdefault(client, set()).update(names)
    assert names_by_client(result) == expected
    assert {e.scope for e in result.entries} == {"project"}


def test_claude_code_user_and_per_project_entries_and_the_projects_mcp_json(tmp_path: Path) -> None:
    project = tmp_path / "app"
    write(project, ".mcp.json", PROJECT_CONTENT[".mcp.json"][1])
    write(tmp_path, ".claude.json", json.dumps({
        "mcpServers": {"user-srv": {"command": "user-srv"}},
        "projects": {str(project): {"mcpServers": {"local-srv": {"type": "stdio", "command": "local-srv"}}},
                     str(tmp_path / "gone"): {"mcpServers": {}}},
    }))
    result = scan(make_target(tmp_path, "linux"))
    by_name = {e.name: e for e in result.entries}
    assert by_name["user-srv"].scope == "user"
    assert by_name["local-srv"].scope == "local"
    assert by_name["local-srv"].project == str(project)
    assert by_name["local-srv"].path == ("projects", str(project), "mcpServers", "local-srv")
    assert by_name["api"].scope == "project"
    assert by_name["api"].transport == "sse"
    assert by_name["api"].headers == {"Authorization": "Bearer ${API_KEY}"}


def test_transports_follow_each_clients_spelling(tmp_path: Path) -> None:
    build_home(tmp_path, "linux")
    entries = {(e.client, e.name): e for e in scan(make_target(tmp_path, "linux")).entries}
    assert entries[("cursor", "linear")].transport == "streamable-http"  # url-only: seatbelt dropped it
    assert entries[("gemini-cli", "sseServer")].transport == "sse"  # Gemini: url is SSE
    assert entries[("gemini-cli", "httpServer")].transport == "streamable-http"  # httpUrl
    assert entries[("windsurf", "remote-docs")].url == "https://docs.example.com/mcp"  # serverUrl
    assert entries[("goose", "remote-tools")].url == "https://goose-tools.example.com/mcp"  # uri
    assert entries[("goose", "filesystem")].command == "npx"  # cmd
    assert entries[("codex", "figma")].headers == {"X-Figma-Region": "us-east-1"}  # http_headers
    assert entries[("codex", "context7")].env == {"MY_ENV_VAR": "MY_ENV_VALUE"}  # sub-table
    assert entries[("cline", "remote-sse")].disabled is True
    assert entries[("copilot", "playwright")].transport == "stdio"  # "type": "local"
    assert entries[("jetbrains", "nx-mcp")].args == ("-y", "nx-mcp@latest")
    assert not entries[("jetbrains", "nx-mcp")].editable


def test_entries_carry_the_line_they_are_written_on(tmp_path: Path) -> None:
    build_home(tmp_path, "linux")
    for e in scan(make_target(tmp_path, "linux")).entries:
        if e.client == "jetbrains":
            continue
        text = e.file.read_text(encoding="utf-8").splitlines()
        assert e.line is not None, (e.client, e.name)
        needle = e.name if e.client != "codex" else f"[mcp_servers.{e.name}]"
        assert needle in text[e.line - 1], (e.client, e.name, e.line)


def test_zed_older_nested_command_form_is_read(tmp_path: Path) -> None:
    write(tmp_path, ".config/zed/settings.json",
          '{"context_servers": {"old": {"command": {"path": "/usr/bin/old", "args": ["--x"], "env": {"A": "1"}},'
          ' "settings": {}}}}')
    (e,) = scan(make_target(tmp_path, "linux")).entries
    assert (e.command, e.args, e.env) == ("/usr/bin/old", ("--x",), {"A": "1"})


def test_continue_legacy_json_and_block_files_are_read(tmp_path: Path) -> None:
    write(tmp_path, ".continue/config.json", json.dumps({"experimental": {"modelContextProtocolServers": [
        {"transport": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite"]}}]}}))
    write(tmp_path, ".continue/mcpServers/claude-style.json", json.dumps({"mcpServers": {"copied": {"command": "x"}}}))
    names = {e.name for e in scan(make_target(tmp_path, "linux")).entries}
    assert names == {"mcp-1", "copied"}


@pytest.mark.parametrize(("content", "status"), [
    ("{not json", "malformed"),
    ("", "empty"),
    ("   \n\t", "empty"),
    (b"\x00\x01\x02binary\xff", "binary"),
    (b"\xff\xfe{}", "binary"),
    ("[1, 2, 3]", "malformed"),
])
def test_a_broken_file_is_a_finding_and_never_sinks_the_scan(tmp_path: Path, content: str | bytes, status: str) -> None:
    build_home(tmp_path, "linux", ["cursor", "codex"])
    write(tmp_path, ".config/Claude/claude_desktop_config.json", content)
    result = scan(make_target(tmp_path, "linux"))
    (problem,) = result.problems if status != "empty" else [f for f in result.files if f.status == "empty"]
    assert problem.status == status
    assert problem.client == "claude-desktop"
    assert names_by_client(result) == {"cursor": EXPECTED["cursor"], "codex": EXPECTED["codex"]}


@pytest.mark.parametrize(("rel", "content"), [
    (".codex/config.toml", "[mcp_servers.x\ncommand = 1"),
    (".config/goose/config.yaml", "extensions:\n  a: [unclosed\n"),
    (".config/JetBrains/Idea2025.1/options/llm.mcpServers.xml", "<application><component></application>"),
    (".config/JetBrains/Idea2025.2/options/llm.mcpServers.xml",
     '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><application>&a;</application>'),
    (".continue/config.yaml", "a: &a [*a, *a]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" + "".join(
        f"c{i}: &c{i} [{', '.join(['*' + ('b' if i == 0 else f'c{i - 1}')] * 9)}]\n" for i in range(6))),
])
def test_broken_toml_yaml_and_xml_and_entity_tricks_are_findings(tmp_path: Path, rel: str, content: str) -> None:
    write(tmp_path, rel, content)
    result = scan(make_target(tmp_path, "linux"))
    (problem,) = result.problems
    assert problem.status in ("malformed", "unsupported")


def _scan_problems_without_dac_override(home: Path) -> list[dict[str, str]]:
    """`mcpwall report --format json` as a process that cannot bypass file modes (root drops the capability)."""
    argv = [str(Path(sys.executable).parent / "mcpwall"), "report", "--format", "json", "--scan-home", str(home),
            "--platform", "linux"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        argv = [setpriv, "--inh-caps=-dac_override,-dac_read_search",
                "--bounding-set=-dac_override,-dac_read_search", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    problems: list[dict[str, str]] = json.loads(proc.stdout)["problems"]
    return problems


def test_a_permission_denied_file_is_a_finding(tmp_path: Path) -> None:
    build_home(tmp_path, "linux", ["codex"])
    path = write(tmp_path, ".cursor/mcp.json", '{"mcpServers": {"secret": {"command": "x"}}}')
    path.chmod(0)
    try:
        (problem,) = _scan_problems_without_dac_override(tmp_path)
    finally:
        path.chmod(0o600)
    assert problem["status"] == "unreadable"
    assert "permission denied" in problem["error"]
    assert problem["client"] == "cursor"


def test_a_dangling_symlink_is_a_finding_and_a_directory_is_no_config(tmp_path: Path) -> None:
    (tmp_path / ".cursor" / "mcp.json").mkdir(parents=True)
    (tmp_path / ".codeium" / "windsurf").mkdir(parents=True)
    (tmp_path / ".codeium" / "windsurf" / "mcp_config.json").symlink_to(tmp_path / "dangling")
    result = scan(make_target(tmp_path, "linux"))
    assert [(p.client, p.status) for p in result.problems] == [("windsurf", "unreadable")]


def test_duplicate_keys_keep_the_last_definition_as_clients_do(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json",
          '{"mcpServers": {"x": {"command": "harmless"}, "x": {"command": "bash", "args": ["-c", "id"]}}}')
    (e,) = scan(make_target(tmp_path, "linux")).entries
    assert e.command == "bash"


def test_the_same_server_in_several_clients_is_one_server_listing_every_client(tmp_path: Path) -> None:
    same = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {"memory": same}}))
    write(tmp_path, ".config/Claude/claude_desktop_config.json", json.dumps({"mcpServers": {"mem": same}}))
    write(tmp_path, ".codex/config.toml",
          '[mcp_servers.memory]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-memory"]\n')
    write(tmp_path, ".gemini/settings.json", json.dumps({"mcpServers": {"memory": {"command": "other"}}}))
    result = scan(make_target(tmp_path, "linux"))
    assert len(result.servers) == 2
    merged = next(s for s in result.servers if len(s.entries) == 3)
    assert merged.clients == ["claude-desktop", "codex", "cursor"]
    assert set(merged.names) == {"memory", "mem"}
    other = next(s for s in result.servers if s is not merged)
    assert other.name != merged.name  # names stay unique across servers


def test_server_names_are_made_valid_for_the_gateway_and_unique(tmp_path: Path) -> None:
    from mcpwall.proxy import valid_server_name

    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {
        "My Server!": {"command": "a"}, "a__b": {"command": "b"}, "trailing_": {"command": "c"},
        "-lead": {"command": "d"}, "my-server": {"command": "e"}, "": {"command": "f"}, "日本": {"command": "g"}}}))
    result = scan(make_target(tmp_path, "linux"))
    names = [s.name for s in result.servers]
    assert len(names) == len({n.lower() for n in names}) == 7
    assert all(valid_server_name(n) for n in names), names


def test_bare_maps_are_read_but_only_entries_that_look_like_servers(tmp_path: Path) -> None:
    write(tmp_path, "proj/mcp.json", json.dumps({"srv": {"command": "x"}, "version": 2, "other": {"a": 1}}))
    result = scan(make_target(tmp_path, "linux", [tmp_path / "proj"]))
    assert [e.name for e in result.entries] == ["srv"]


def test_a_config_symlinked_into_place_is_read_once(tmp_path: Path) -> None:
    real = write(tmp_path, "dotfiles/mcp.json", json.dumps({"mcpServers": {"x": {"command": "x"}}}))
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").symlink_to(real)
    (tmp_path / ".copilot").mkdir()
    (tmp_path / ".copilot" / "mcp-config.json").symlink_to(real)
    assert len(scan(make_target(tmp_path, "linux")).entries) == 1


def test_environment_overrides_apply_only_to_the_real_home(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CODEX_HOME": str(tmp_path / "codex")}
    fake = make_target(tmp_path / "home", "linux", environ=env)
    assert fake.xdg_config == tmp_path / "home" / ".config"
    real = make_target(None, "linux", environ=env)
    assert real.xdg_config == tmp_path / "xdg"
    assert make_target(None, None, environ={"MCPWALL_SCAN_HOME": str(tmp_path), "MCPWALL_SCAN_PLATFORM": "win32"}
                       ).platform == "win32"


def test_scanning_200_servers_is_quick_enough_to_run_everywhere(tmp_path: Path) -> None:
    """Not a timing assertion (see bench/discovery_scan.py): the scan completes and counts right."""
    servers = {f"s{i}": {"command": "npx", "args": ["-y", f"pkg-{i}@1.0.{i}"]} for i in range(200)}
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": servers}))
    assert len(scan(make_target(tmp_path, "linux")).servers) == 200
