"""Copies (issue 25): one tool's description under another name, on the same server or another,
is `copied_description`; and declared harm is acted on by the gateway.

Strategy: unit checks on `scan_tools` for the spellings a copy may take (case, punctuation, the
tool's own name swapped for the copy's); `mcpwall inspect` on a saved two-server payload (the
offline form of `inspect --all`); and the real gateway with server-memory beside a real server
that copies one of memory's tools and declares a harmful capability, driven by the official client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import MCPError

from mcpwall.cli import cli
from mcpwall.security.poisoning import scan_tools
from mcpwall.stages.poisoning import PoisoningStage
from tests.trust.helpers import ENFORCE, HERE, MEMORY, mcp_client, serve_gateway, tool_names

DESCRIPTION = "Get the current weather forecast for a city, with temperature, wind and rain."
COPYCAT = {"command": sys.executable, "args": [str(HERE / "servers" / "copycat.py")]}


def test_the_same_description_under_another_name_on_one_server_is_a_copy() -> None:
    found = scan_tools([{"name": "get_weather", "description": DESCRIPTION},
                        {"name": "weather_now", "description": DESCRIPTION.upper().replace(",", ";")}], server="w")
    assert {(f.tool, f.kind, f.severity) for f in found} == {("get_weather", "copied_description", "medium"),
                                                               ("weather_now", "copied_description", "medium")}


def test_a_copy_on_another_server_is_high_and_the_tools_own_name_does_not_hide_it() -> None:
    found = scan_tools([{"name": "weather_now", "description": f"Use weather_now: {DESCRIPTION}"}], server="b",
                       others={"a": ["get_weather"]},
                       definitions={"a": [{"name": "get_weather", "description": f"Use getWeather: {DESCRIPTION}"}]})
    assert [(f.kind, f.severity) for f in found] == [("copied_description", "high")]
    assert "'get_weather' on server 'a'" in found[0].evidence


def test_short_generic_descriptions_and_the_same_name_elsewhere_are_not_copies() -> None:
    assert scan_tools([{"name": "echo", "description": "Echoes back the input string"},
                       {"name": "say", "description": "Echoes back the input string"}]) == []
    found = scan_tools([{"name": "get_weather", "description": DESCRIPTION}], server="b", others={"a": ["get_weather"]},
                       definitions={"a": [{"name": "get_weather", "description": DESCRIPTION}]})
    assert {f.kind for f in found} == {"name_collision"}


def test_inspect_reads_several_servers_and_reports_a_copy_across_them(tmp_path: Path) -> None:
    saved = {"servers": {"a": {"tools": [{"name": "get_weather", "description": DESCRIPTION}]},
                         "b": {"tools": [{"name": "weather_now", "description": DESCRIPTION},
                                         {"name": "add", "description": "Add two numbers."}]}}}
    result = CliRunner().invoke(cli, ["inspect", "-", "--json"], input=json.dumps(saved))
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["scanned"]["tools"] == 3
    assert {(f["server"], f["tool"], f["kind"]) for f in data["findings"]} == {
        ("a", "get_weather", "copied_description"), ("b", "weather_now", "copied_description")}


@pytest.mark.anyio
@pytest.mark.integration
async def test_the_gateway_hides_declared_harm_and_lists_copies_with_a_warning(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"memory": MEMORY, "c": COPYCAT}) as served, \
            mcp_client(served.url) as client:
        names = await tool_names(client)
        assert "c__export_logins" not in names
        assert {"c__add_facts", "c__tidy_home", "c__sum_numbers", "memory__add_observations"} <= names
        with pytest.raises(MCPError) as blocked:
            await client.call_tool("c__export_logins", {})
        assert blocked.value.error.code == -32001
        assert "capability" in blocked.value.error.message
        stage = next(s for s in served.gateway.pipeline.stages if s.name == "poisoning")
        assert isinstance(stage, PoisoningStage)
        verdict = stage.verdict("c", "tools", "add_facts", {"description": "Add new observations to existing "
                                                                           "entities in the knowledge graph"})
        assert [f.kind for f in verdict.findings] == ["copied_description"]
        assert "'add_observations' on server 'memory'" in verdict.findings[0].evidence


@pytest.mark.anyio
@pytest.mark.integration
async def test_a_policy_that_blocks_copies_hides_both_of_them(tmp_path: Path) -> None:
    policy = ENFORCE + "  poisoning:\n    actions: {copied_description: block}\n"
    async with serve_gateway(tmp_path, {"memory": MEMORY, "c": COPYCAT}, policy) as served, \
            mcp_client(served.url) as client:
        names = await tool_names(client)
        assert "c__add_facts" not in names
        assert "memory__add_observations" not in names
        assert "memory__create_entities" in names


@pytest.mark.integration
def test_inspect_all_reports_a_copy_across_live_servers_and_the_declared_harm(tmp_path: Path) -> None:
    memory = {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "m.json")}}
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"memory": memory, "c": COPYCAT}}))
    result = CliRunner().invoke(cli, ["inspect", "--all", "--servers", str(path), "--home", str(tmp_path / "home"),
                                      "--json", "--timeout", "90"])
    assert result.exit_code == 1, result.output
    found = {(f["server"], f["tool"], f["kind"], f["severity"]) for f in json.loads(result.stdout)["findings"]}
    assert found == {("c", "add_facts", "copied_description", "high"),
                     ("memory", "add_observations", "copied_description", "high"),
                     ("c", "export_logins", "capability", "high"),
                     ("c", "tidy_home", "capability", "medium")}
