"""`mcpwall fuzz` and the fuzzer: zero bypasses on the default policy with the defence rules.

Strategy: the policy under test is the shipped default (seatbelt's nine rules
plus mcpwall's defence rules), fuzzed offline at a business hour and at night and over
the whole week of window instants; seatbelt's nine rules alone are shown to leak (so the defence rules are what
closes the gap). The CLI is run in-process with CliRunner; one test fuzzes the real filesystem
server's tool schemas. Ordinary calls must still be allowed by the merged policy.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.policy import Call, PolicyEngine, compile_policy, load_policy
from mcpwall.security.fuzz import COMMON_TOOLS, CORPUS, base_arguments, fuzz_tool, instants

TEMPLATES = Path(__file__).resolve().parents[2] / "src" / "mcpwall" / "policy" / "templates"
BIN = Path(__file__).resolve().parents[2] / "node_modules" / ".bin"
BUSINESS = datetime(2026, 11, 25, 10, 15).astimezone()   # a Wednesday morning
NIGHT = datetime(2026, 11, 29, 3, 0).astimezone()        # a Sunday night


@pytest.fixture
def merged(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(f"extends: [{TEMPLATES / 'default.yaml'}]\n")
    return path


def test_the_corpus_covers_every_attack_family_of_the_issue() -> None:
    assert {p.category for p in CORPUS} == {"path-traversal", "destructive-command", "exfiltration-url",
                                           "sensitive-file", "loopback-or-metadata", "nul-byte", "sql-injection",
                                           "jndi", "shell-substitution"}
    assert len(COMMON_TOOLS) == 21


@pytest.mark.parametrize("when", [BUSINESS, NIGHT])
def test_default_plus_defence_rules_has_no_bypass_offline(merged: Path, when: datetime) -> None:
    policy = compile_policy(load_policy(merged))
    bypasses = [b for tool in COMMON_TOOLS for b in fuzz_tool(policy, tool, iterations=4, now=when).bypasses]
    assert bypasses == []


def test_seatbelts_nine_rules_alone_let_payloads_through_in_business_hours(tmp_path: Path) -> None:
    from mcpwall.policy import parse_policy_text, resolve_document, template_text

    doc, _ = parse_policy_text(template_text("default"))
    seatbelt_only = doc.model_copy(update={"rules": doc.rules[:9]})
    policy = compile_policy(resolve_document(seatbelt_only))
    result = fuzz_tool(policy, "read_file", iterations=4, now=BUSINESS)
    assert result.bypasses
    assert {b.category for b in result.bypasses} >= {"sql-injection", "jndi", "nul-byte"}


def test_instants_cover_every_combination_of_time_windows(merged: Path) -> None:
    policy = compile_policy(load_policy(merged))
    moments = instants(policy, NIGHT)
    assert len(moments) == 2
    assert any(m.weekday() < 5 and 9 <= m.hour <= 17 for m in moments)


@pytest.mark.parametrize(("tool", "args"), [
    ("read_file", {"path": "/workspace/src/app.py"}),
    ("write_file", {"path": "/workspace/README.md", "content": "See ../docs. Run `make`; it's fine -- really."}),
    ("read_file", {"path": "/workspace/.env.example"}),
    ("edit_file", {"path": "/workspace/a.sql", "content": "SELECT * FROM users WHERE id = 1"}),
])
def test_ordinary_workspace_calls_are_still_allowed(merged: Path, tool: str, args: dict[str, object]) -> None:
    engine = PolicyEngine(compile_policy(load_policy(merged)))
    decision = engine.decide(Call(name=tool, arguments=args), now=NIGHT, resolve_symlinks=False)
    assert decision.action == "allow", decision.reasons


def test_fetching_https_urls_is_not_denied_by_a_defence_rule(merged: Path) -> None:
    engine = PolicyEngine(compile_policy(load_policy(merged)))
    for url in ("https://docs.python.org/3/", "https://github.com/org/repo?tab=readme", "https://example.com/a?q=1"):
        decision = engine.decide(Call(name="fetch", arguments={"url": url}), now=BUSINESS)
        assert not any(r.startswith("block-") for r in decision.rule_ids), (url, decision.rule_ids)


def test_schema_valid_bases_respect_the_schema() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "integer", "minimum": 1},
                                               "mode": {"enum": ["r", "w"]}}, "required": ["path", "mode"]}
    bases = base_arguments(schema, 8)
    assert bases
    assert all(isinstance(b["path"], str) and b["mode"] in ("r", "w") for b in bases)


def test_the_cli_reports_zero_bypasses_and_exits_0(merged: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["fuzz", "--policy", str(merged), "--home", str(tmp_path), "--json",
                                      "-n", "2", "--now", BUSINESS.isoformat()])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    assert summary["bypasses"] == 0
    assert summary["tools"] == 21
    assert summary["mode"] == "offline"


def test_the_cli_exits_1_and_lists_bypasses_for_a_leaky_policy(tmp_path: Path) -> None:
    leaky = tmp_path / "leaky.yaml"
    leaky.write_text("version: '1'\nmode: enforce\ndefaultAction: allow\n")
    result = CliRunner().invoke(cli, ["fuzz", "--policy", str(leaky), "--home", str(tmp_path), "-n", "1"])
    assert result.exit_code == 1
    assert "bypass" in result.output
    assert "sql-injection" in result.output


def test_an_unknown_server_is_a_usage_error(merged: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["fuzz", "--policy", str(merged), "--home", str(tmp_path), "--server", "nope"])
    assert result.exit_code == 2


@pytest.mark.integration
@pytest.mark.skipif(not (BIN / "mcp-server-filesystem").exists(), reason="npm servers not installed")
def test_the_real_filesystem_servers_tools_have_no_bypass(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: [{TEMPLATES / 'default.yaml'}]\n"
                      f"servers:\n  fs: {{command: {BIN / 'mcp-server-filesystem'}, args: [{tmp_path}]}}\n")
    result = CliRunner().invoke(cli, ["fuzz", "--policy", str(policy), "--home", str(tmp_path), "--json",
                                      "-n", "3", "--now", BUSINESS.isoformat()])
    assert result.exit_code == 0, result.output[-2000:]
    data = json.loads(result.output)
    assert data["summary"]["mode"] == "servers"
    assert data["summary"]["bypasses"] == 0
    assert {"read_text_file", "write_file", "edit_file"} <= {r["tool"] for r in data["results"]}
