"""Acceptance: init routes real clients' servers through mcpwall, the servers still work, uninstall undoes it.

Strategy: a fake home with Claude Desktop, Cursor, VS Code and Codex configs
naming real MCP servers (mcp-server-time from PyPI, mcp-server-memory from
npm); `mcpwall init --yes`; then each rewritten stdio entry is launched the
way its client launches it (the command, args and env from the rewritten
config, spawned by the official MCP Python client over stdio) and a
tools/call must succeed through `mcpwall wrap`. When the ledger package is
installed the call must be in `<home>/ledger.db` `tool_calls`. Finally
`uninstall` must restore every file byte for byte.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcpwall.cli import cli
from mcpwall.discovery._jsonc import parse as parse_jsonc
from tests.discovery.homes import write

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
TIME = str(Path(sys.executable).parent / "mcp-server-time")
MEMORY = str(ROOT / "node_modules" / ".bin" / "mcp-server-memory")
MCPWALL = str(Path(sys.executable).parent / "mcpwall")


def build(home: Path, memory_file: Path) -> dict[str, Path]:
    files = {
        "claude-desktop": write(home, ".config/Claude/claude_desktop_config.json", json.dumps({
            "mcpServers": {"time": {"command": TIME, "args": ["--local-timezone=UTC"]}}}, indent=2)),
        "cursor": write(home, ".cursor/mcp.json", json.dumps({
            "mcpServers": {"memory": {"command": MEMORY, "env": {"MEMORY_FILE_PATH": str(memory_file)}}}}, indent=2)),
        "vscode": write(home, ".config/Code/User/mcp.json",
                        '{\n  // memory for Copilot\n  "servers": {\n    "memory": {"type": "stdio", "command": "'
                        + MEMORY + '", "env": {"MEMORY_FILE_PATH": "' + str(memory_file) + '"}}\n  }\n}\n'),
        "codex": write(home, ".codex/config.toml",
                       f'model = "o3"\n\n[mcp_servers.time]\ncommand = "{TIME}"\nargs = ["--local-timezone=Europe/Paris"]\n'),
    }
    return files


def entries(files: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
    claude = json.loads(files["claude-desktop"].read_text())["mcpServers"]["time"]
    cursor = json.loads(files["cursor"].read_text())["mcpServers"]["memory"]
    vscode = parse_jsonc(files["vscode"].read_text()).value["servers"]["memory"]
    codex = tomllib.loads(files["codex"].read_text())["mcp_servers"]["time"]
    return [("claude-desktop", claude), ("cursor", cursor), ("vscode", vscode), ("codex", codex)]


async def call_through(entry: dict[str, Any]) -> tuple[str, str]:
    """Launch an entry as its client would and make one tool call; returns (tool, text)."""
    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=entry.get("env"))
    with anyio.fail_after(60):
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            args: dict[str, Any]
            if "get_current_time" in tools:
                tool, args = "get_current_time", {"timezone": "UTC"}
            else:
                tool, args = "create_entities", {"entities": [{"name": "mcpwall", "entityType": "test",
                                                               "observations": ["through the wall"]}]}
            result = await client.call_tool(tool, args)
            assert not result.is_error, result
            text = "".join(getattr(c, "text", "") for c in result.content)
            return tool, text


async def test_init_routes_each_client_through_mcpwall_and_uninstall_restores_them(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    files = build(home, tmp_path / "memory.json")
    originals = {k: p.read_bytes() for k, p in files.items()}

    result = CliRunner().invoke(cli, ["init", "--yes", "--home", str(state), "--scan-home", str(home),
                                      "--platform", "linux", "--mcpwall", MCPWALL], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert all(files[k].read_bytes() != originals[k] for k in files)

    calls = []
    for client, entry in entries(files):
        assert entry["command"] == MCPWALL, client
        assert entry["args"][:2] == ["wrap", "--name"], client
        tool, text = await call_through(entry)
        calls.append((client, entry["args"][2], tool))
        assert text, client
    assert {c[2] for c in calls} == {"get_current_time", "create_entities"}
    assert "through the wall" in (tmp_path / "memory.json").read_text()  # env reached the real server
    names = {c[1] for c in calls}
    assert names == {"time", "memory", "time-2"}  # Cursor's and VS Code's memory are one server

    if importlib.util.find_spec("mcpwall.ledger") is not None:
        with sqlite3.connect(state / "ledger.db") as db:
            rows = db.execute("SELECT server_name, tool_name FROM tool_calls").fetchall()
        assert {(c[1], c[2]) for c in calls} <= set(rows), rows

    undo = CliRunner().invoke(cli, ["uninstall", "--home", str(state)], catch_exceptions=False)
    assert undo.exit_code == 0, undo.output
    assert {k: p.read_bytes() for k, p in files.items()} == originals
