"""`check`, `report` (Markdown, JSON, SARIF) and `diff` of reports, through the real CLI in-process.

Strategy: fake homes on disk, `CliRunner` invocations, assertions on exit
codes and on the documents produced. The SARIF log is validated against the
official SARIF 2.1.0 JSON schema shipped beside this file (from the npm
package @microsoft/sarif-multitool-linux 5.7.0, file `sarif-2.1.0.json`),
and, when the SARIF Multitool binary is available, by its `validate`
command (the SARIF SDK's own reader, as used by the SARIF viewers).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from tests.discovery.homes import build_home, build_project, write

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCHEMA = json.loads((HERE / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def report(home: Path, fmt: str, *extra: str) -> str:
    result = run("report", "--scan-home", str(home), "--platform", "linux", "--format", fmt, *extra)
    assert result.exit_code == 0, result.output
    return str(result.stdout)


def multitool() -> str | None:
    candidates = [os.environ.get("MCPWALL_SARIF_MULTITOOL", ""),
                  str(ROOT / "tests" / "tools" / "node_modules" / "@microsoft" / "sarif-multitool-linux" / "Sarif.Multitool")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


# -- check ------------------------------------------------------------------------------------

def test_check_exits_1_on_a_bash_dash_c_server(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {"shell": {"command": "bash",
                                                                             "args": ["-c", "npx some-server"]}}}))
    result = run("check", "--scan-home", str(tmp_path), "--platform", "linux")
    assert result.exit_code == 1
    assert "shell-interpreter" in result.output
    assert "Critical risks found" in result.output


def test_check_exits_0_on_a_clean_config(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    result = run("check", "--scan-home", str(tmp_path), "--platform", "linux")
    assert result.exit_code == 0, result.output
    assert "No critical risks found." in result.output


def test_check_json_names_the_critical_servers(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {"a": {"command": "sudo", "args": ["x"]},
                                                                   "b": {"command": "mcp-server-time"}}}))
    result = run("check", "--json", "--scan-home", str(tmp_path), "--platform", "linux")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert [c["name"] for c in data["critical"]] == ["a"]
    assert data["critical"][0]["flags"] == ["privilege-escalation"]


def test_check_takes_the_scan_home_from_the_environment(tmp_path: Path) -> None:
    write(tmp_path, "AppData/Roaming/Claude/claude_desktop_config.json",
          json.dumps({"mcpServers": {"sh": {"command": "cmd.exe", "args": ["/c", "dir"]}}}))
    result = run("check", env={"MCPWALL_SCAN_HOME": str(tmp_path), "MCPWALL_SCAN_PLATFORM": "win32"})
    assert result.exit_code == 1
    assert "claude-desktop" in result.output


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")}


def test_check_and_report_write_nothing(tmp_path: Path) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux")
    before = _tree(tmp_path)
    assert run("check", "--home", str(state), "--scan-home", str(home), "--platform", "linux").exit_code == 1
    assert run("report", "--home", str(state), "--scan-home", str(home), "--platform", "linux",
               "--format", "sarif").exit_code == 0
    assert _tree(tmp_path) == before
    assert not state.exists()


# -- report -----------------------------------------------------------------------------------

def test_the_json_report_keeps_seatbelts_fields_and_adds_locations(tmp_path: Path) -> None:
    build_home(tmp_path, "linux", ["cursor", "claude-desktop"])
    data = json.loads(report(tmp_path, "json"))
    assert set(data["summary"]) >= {"totalServers", "highRisk", "mediumRisk", "lowRisk"}
    server = next(s for s in data["servers"] if s["name"] == "github")
    assert set(server) >= {"name", "client", "risk", "tools", "proxied", "clients", "locations", "envKeys"}
    assert server["locations"][0]["path"].endswith(".cursor/mcp.json")
    assert server["locations"][0]["line"] == 3
    assert server["envKeys"] == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert {f["rule"] for f in server["risk"]["flags"]} >= {"package-runner", "unpinned-package", "sensitive-env"}


def test_the_sarif_report_validates_against_the_official_schema(tmp_path: Path) -> None:
    home = tmp_path / "home"
    build_home(home, "linux")
    write(home, ".gemini/settings.json", "{broken")
    build_project(tmp_path / "proj")
    sarif = json.loads(report(home, "sarif", "--project", str(tmp_path / "proj")))
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(sarif)
    assert sarif["version"] == "2.1.0"


def test_sarif_results_point_at_the_config_file_and_line_with_owasp_tags(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json",
          '{\n  "mcpServers": {\n    "ok": {"command": "mcp-server-time"},\n    "shell": {"command": "bash", '
          '"args": ["-c", "x"]}\n  }\n}\n')
    sarif = json.loads(report(tmp_path, "sarif"))
    run0 = sarif["runs"][0]
    rules = run0["tool"]["driver"]["rules"]
    (result,) = [r for r in run0["results"] if r["ruleId"] == "shell-interpreter"]
    assert rules[result["ruleIndex"]]["id"] == "shell-interpreter"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": ".cursor/mcp.json", "uriBaseId": "HOME", "index": 0}
    assert run0["originalUriBaseIds"]["HOME"]["uri"] == tmp_path.as_uri() + "/"
    assert loc["region"]["startLine"] == 4
    assert result["level"] == "error"
    tags = rules[result["ruleIndex"]]["properties"]["tags"]
    assert "OWASP-LLM06:2025" in tags
    assert "security" in tags
    assert {t["id"] for t in result["taxa"]} == {"LLM06", "LLM05"}
    taxonomy = run0["taxonomies"][0]
    assert taxonomy["name"] == "OWASP LLM Top 10"
    assert taxonomy["version"] == "2025"
    assert len(taxonomy["taxa"]) == 10
    assert rules[result["ruleIndex"]]["properties"]["security-severity"] == "9.5"


@pytest.mark.skipif(multitool() is None, reason="SARIF Multitool not installed (npm @microsoft/sarif-multitool-linux, "
                    "or set MCPWALL_SARIF_MULTITOOL)")
def test_the_sarif_report_loads_in_the_sarif_sdk_and_passes_its_validator(tmp_path: Path) -> None:
    build_home(tmp_path / "home", "linux")
    write(tmp_path / "home", ".gemini/settings.json", b"\x00binary")
    path = tmp_path / "report.sarif"
    path.write_text(report(tmp_path / "home", "sarif"), encoding="utf-8")
    out = tmp_path / "validation.sarif"
    tool = multitool()
    assert tool is not None
    proc = subprocess.run([tool, "validate", str(path), "-o", str(out), "--level", "Error;Warning",
                           "--json-schema", str(HERE / "sarif-2.1.0.json")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    findings = json.loads(out.read_text(encoding="utf-8"))["runs"][0]["results"]
    problems = [r["ruleId"] for r in findings if r.get("level", "warning") in ("error", "warning")]
    assert set(problems) <= {"SARIF2005"}, problems  # SARIF2005: no informationUri (no public page yet)


def test_markdown_escapes_what_configs_put_in_names(tmp_path: Path) -> None:
    write(tmp_path, ".cursor/mcp.json", json.dumps({"mcpServers": {
        "x|<script>alert(1)</script>": {"command": "node", "args": ["a`b", "](javascript:alert(1))"]}}}))
    md = report(tmp_path, "markdown")
    assert "<script>" not in md
    assert "|<" not in md
    assert "# mcpwall risk report" in md
    assert "| Server | Clients |" in md


def test_report_writes_to_an_output_file(tmp_path: Path) -> None:
    build_home(tmp_path, "linux", ["cursor"])
    out = tmp_path / "out" / "r.md"
    result = run("report", "--scan-home", str(tmp_path), "--platform", "linux", "-o", str(out))
    assert result.exit_code == 0
    assert out.read_text(encoding="utf-8").startswith("# mcpwall risk report")


def test_report_refuses_two_formats_at_once(tmp_path: Path) -> None:
    result = run("report", "--scan-home", str(tmp_path), "--sarif", "--format", "json")
    assert result.exit_code == 2


# -- diff -------------------------------------------------------------------------------------

def test_diff_of_two_json_reports_lists_servers_added_removed_and_score_changes(tmp_path: Path) -> None:
    write(tmp_path, "a/.cursor/mcp.json", json.dumps({"mcpServers": {
        "stay": {"command": "mcp-server-time"}, "gone": {"command": "x"}}}))
    write(tmp_path, "b/.cursor/mcp.json", json.dumps({"mcpServers": {
        "stay": {"command": "bash", "args": ["-c", "mcp-server-time"]}, "new": {"command": "y"}}}))
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(report(tmp_path / "a", "json"), encoding="utf-8")
    new.write_text(report(tmp_path / "b", "json"), encoding="utf-8")
    result = run("diff", str(old), str(new), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["kind"] == "report"
    assert data["added"] == ["new"]
    assert data["removed"] == ["gone"]
    (change,) = data["riskScoreChanges"]
    assert (change["name"], change["oldScore"], change["newScore"]) == ("stay", 0, 40)
    assert data["flags"]["stay"]["added"] == ["shell-interpreter"]
    text = run("diff", str(old), str(new)).output
    assert "+ new" in text
    assert "- gone" in text
    assert "stay: score 0 -> 40" in text


def test_diff_reads_mcp_seatbelt_reports_too(tmp_path: Path) -> None:
    def seatbelt(score: int) -> dict[str, Any]:
        return {"generatedAt": "2025-01-01T00:00:00Z", "summary": {"totalServers": 1}, "recommendations": [],
                "servers": [{"name": "fs", "client": "cursor", "proxied": True, "tools": [],
                             "risk": {"score": score, "level": "low", "flags": []}}]}

    (tmp_path / "a.json").write_text(json.dumps(seatbelt(10)))
    (tmp_path / "b.json").write_text(json.dumps(seatbelt(35)))
    data = json.loads(run("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json").stdout)
    assert data["riskScoreChanges"][0]["delta"] == 25
