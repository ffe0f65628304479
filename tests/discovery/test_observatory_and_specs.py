"""`import-observatory`, `proxy --discover`'s server specs, and the package's public surface.

Strategy: observatory artifacts in both shapes (seatbelt's flat findings and
mcp-observatory's run artifact) become rules that the policy loader accepts,
with seatbelt's severity mapping; discovered specs are checked against the
gateway's own name rule and for the cases that would loop or double-wrap.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.discovery import discover_artifacts, discovered_server_specs, import_observatory, make_target
from mcpwall.policy import load_policy
from mcpwall.proxy import valid_server_name
from tests.discovery.homes import build_home, write

FLAT = {"version": "1", "generatedAt": "2025-01-01T00:00:00Z", "findings": [
    {"id": "shell-1", "severity": "critical", "title": "Shell tool", "description": "Runs shell commands",
     "tool": "run_command"},
    {"id": "path-2", "severity": "medium", "title": "Broad path", "description": "Reads any file",
     "path": "/etc"},
    {"id": "host-3", "severity": "low", "title": "Plain HTTP", "description": "Calls http endpoints",
     "host": "example.com"},
    {"id": "info-4", "severity": "info", "title": "FYI", "description": "nothing"},
]}
RUN = {"target": {"targetId": "srv"}, "checks": [
    {"id": "security", "status": "fail", "message": "2 findings", "evidence": [{"findings": [
        {"ruleId": "shell-injection", "message": "tool exec_cmd passes input to a shell", "severity": "high",
         "toolName": "exec_cmd"},
        {"ruleId": "no-auth-http", "message": "no auth", "severity": "medium", "toolName": "(target)"}]}]},
    {"id": "schema-quality", "status": "partial", "evidence": [{"diagnostics": ["[warning] tool x has no description"]}]},
    {"id": "tools", "status": "pass", "evidence": [{"identifiers": ["exec_cmd"]}]},
], "fatalError": None}


def test_flat_findings_map_with_seatbelts_severity_and_target_rules(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(FLAT))
    rules = {r["id"]: r for r in import_observatory(path)}
    assert set(rules) == {"observatory-shell-1", "observatory-path-2", "observatory-host-3"}
    shell = rules["observatory-shell-1"]
    assert (shell["target"], shell["match"], shell["values"], shell["action"]) == ("command", "contains",
                                                                                ["run_command"], "deny")
    assert (rules["observatory-path-2"]["target"], rules["observatory-path-2"]["action"]) == ("file", "warn")
    assert (rules["observatory-host-3"]["target"], rules["observatory-host-3"]["action"]) == ("network", "warn")


def test_run_artifacts_findings_and_diagnostics_become_rules(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    rules = import_observatory(path)
    by_tool = {tuple(r["values"]): r for r in rules}
    assert by_tool[("exec_cmd",)]["action"] == "deny"
    assert any(r["action"] == "warn" and "no-auth-http" in r["id"] for r in rules)
    assert any("diagnostic" in r["id"] for r in rules)
    assert len({r["id"] for r in rules}) == len(rules)


def test_the_command_prints_rules_that_load_and_writes_an_extendable_file(tmp_path: Path) -> None:
    artifact = tmp_path / "a.json"
    artifact.write_text(json.dumps(FLAT))
    out = tmp_path / "observatory.yaml"
    result = CliRunner().invoke(cli, ["import-observatory", str(artifact), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "observatory-shell-1" in result.stdout
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"version: '1'\nextends: [{out}]\n")
    assert {r.rule.id for r in load_policy(policy).rules} == {"observatory-shell-1", "observatory-path-2",
                                                              "observatory-host-3"}


def test_artifacts_are_discovered_where_mcp_observatory_writes_them(tmp_path: Path) -> None:
    write(tmp_path, ".mcp-observatory/runs/2025-01-01/run.json", json.dumps(RUN))
    write(tmp_path, ".mcp-observatory-metrics/m.json", json.dumps(FLAT))
    write(tmp_path, "unrelated.json", json.dumps({"hello": 1}))
    found = discover_artifacts(tmp_path)
    assert {p.name for p in found} == {"run.json", "m.json"}
    result = CliRunner().invoke(cli, ["import-observatory", "--base", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)["artifacts"]) == 2


def test_a_file_that_is_not_an_artifact_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}")
    assert CliRunner().invoke(cli, ["import-observatory", str(path)]).exit_code == 2


def test_discovered_specs_have_gateway_names_and_real_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_home(tmp_path, "linux")
    write(tmp_path, ".copilot/mcp-config.json", json.dumps({"mcpServers": {
        "wrapped": {"command": "/x/mcpwall", "args": ["wrap", "--name", "wrapped", "--", "real-server", "--flag"]},
        "loop": {"url": "http://127.0.0.1:9420/mcp/loop", "headers": {"Authorization": "Bearer t"}},
        "bad name!": {"command": "srv", "env": {"HOME_DIR": "${env:MCPWALL_TEST_VALUE}"}},
    }}))
    monkeypatch.setenv("MCPWALL_TEST_VALUE", "expanded")
    specs = discovered_server_specs(make_target(tmp_path, "linux"))
    assert all(valid_server_name(n) for n in specs)
    assert specs["wrapped"].command == "real-server"
    assert specs["wrapped"].args == ["--flag"]
    assert "loop" not in specs  # the gateway would call itself
    assert specs["bad-name"].env == {"HOME_DIR": "expanded"}
    assert specs["sseServer"].transport == "sse"
    assert specs["sseServer"].url == "https://sse.example.com/events"
    assert "remote-sse" not in specs  # disabled in Cline


def test_risk_summary_scores_a_gateway_spec_and_sees_through_wrap() -> None:
    from mcpwall.discovery import risk_summary
    from mcpwall.policy import ServerSpec

    wrapped = ServerSpec(command="/x/mcpwall", args=["wrap", "--name", "s", "--", "bash", "-c", "id"])
    summary = risk_summary(wrapped)
    assert summary["level"] == "critical"  # one critical flag: never "high" (issue 27, item 7)
    assert [f["rule"] for f in summary["flags"]] == ["shell-interpreter"]
    remote = risk_summary(ServerSpec(url="http://mcp.example.com/mcp", transport="streamable-http",
                                     headers={"Authorization": "Bearer abcdefgh12345678"}))
    assert {f["rule"] for f in remote["flags"]} == {"network-transport", "plaintext-http", "inline-secret"}
    assert "abcdefgh12345678" not in json.dumps(remote)


@pytest.mark.parametrize("name", ["mcpwall.discovery"])
def test_the_public_surface_is_its_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__)
    for member in exported:
        assert hasattr(module, member), member
    public = {n for n, v in vars(module).items() if not n.startswith("_") and callable(v)
              and getattr(v, "__module__", "").startswith(name)}
    assert public <= exported, public - exported
