"""`inspect` says what a clean scan covered (issue 27, item 8).

Strategy: the real CLI in-process on saved payloads of each shape, and on the
real npm memory server through `--servers`; a clean result names how many
tools (prompts, content blocks) of which file or server were scanned. The
old code printed a bare "no findings" for all of them, an empty file too.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpwall.cli import cli

ROOT = Path(__file__).resolve().parents[2]
MEMORY = ROOT / "node_modules" / ".bin" / "mcp-server-memory"


def _tool(name: str) -> dict[str, object]:
    return {"name": name, "description": f"{name.replace('_', ' ').capitalize()}.",
            "inputSchema": {"type": "object", "properties": {}}}


def _inspect(*args: str) -> str:
    result = CliRunner().invoke(cli, ["inspect", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def test_a_clean_file_names_its_tool_count_and_path(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [_tool("get_time"), _tool("list_zones"), _tool("convert_time")]}))
    assert _inspect(str(path)).strip() == f"no findings in 3 tools of {path}"
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [_tool("get_time")]}}))
    assert _inspect(str(one)).strip() == f"no findings in 1 tool of {one}"
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"tools": []}))
    assert _inspect(str(empty)).strip() == f"no findings in 0 tools of {empty}"


def test_a_clean_tool_result_names_its_content_blocks(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"content": [{"type": "text", "text": "12:00 in Paris."},
                                            {"type": "text", "text": "13:00 in Athens."}]}))
    assert _inspect(str(path)).strip() == f"no findings in a tool result (2 content blocks) of {path}"


def test_a_clean_live_server_names_the_server_and_how_many_tools_it_listed(tmp_path: Path) -> None:
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"memory": {"command": str(MEMORY)}}}))
    args = ["--server", "memory", "--servers", str(servers), "--home", str(tmp_path / "home"), "--timeout", "60"]
    listed = json.loads(_inspect(*args, "--json"))["scanned"]["tools"]
    assert listed > 0
    assert _inspect(*args).strip() == f"no findings in {listed} tools of server memory"
