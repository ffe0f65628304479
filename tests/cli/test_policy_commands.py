"""`simulate`, `test-policy` and `diff`, run in-process with click's CliRunner.

Strategy: real policy and test files in a temporary directory; assert on exit
codes and on the fields scripts rely on (`--json`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.policy import load_template

SEATBELT_TESTS = """\
tests:
  - name: blocks shell
    tool: bash
    expect: deny
    matchReason: shell
  - name: workspace read is allowed
    tool: read_file
    args: {path: /workspace/readme.md}
    expect: allow
  - name: sensitive path
    tool: read_file
    args: {path: /etc/passwd}
    expect: block
    matchReason: sensitive
  - name: credentials are redacted
    tool: write_file
    args: {path: /workspace/x, password: hunter2}
    expect: redact
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_simulate_prints_action_reasons_and_rule_ids_as_json(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["simulate", "read_file", "--args", '{"path": "/etc/../etc/shadow"}',
                                 "--json", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["action"] == "deny"
    assert data["rule_ids"][0] == "block-sensitive-paths"
    assert "block-path-traversal" in data["rule_ids"]
    assert data["reasons"]
    assert "trace" not in data


def test_simulate_verbose_includes_the_trace_of_every_rule(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["simulate", "write_file", "--args", '{"path": "/tmp/x"}', "--json", "-v",
                                 "--now", "2026-12-01T10:00:00", "--home", str(tmp_path)])
    data = json.loads(result.output)
    assert data["action"] == "allow"
    assert len(data["trace"]) == len(load_template("default").rules)
    window = next(t for t in data["trace"] if t["rule_id"] == "allow-filesystem-writes-business-hours")
    assert (window["matched"], window["time_window"]) == (True, "inside")


def test_simulate_uses_the_home_policy_when_present(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text("mode: enforce\ndefaultAction: allow\n")
    result = runner.invoke(cli, ["simulate", "anything", "--json", "--home", str(tmp_path)])
    assert json.loads(result.output)["action"] == "allow"


def test_simulate_rejects_bad_json_args_with_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["simulate", "t", "--args", "{nope"])
    assert result.exit_code == 2


@pytest.mark.parametrize(("section", "where", "line"), [
    ("dlp: {action: shred}", 4, "policy dlp: action"),
    ("ledger: {durability: sometimes}", 4, "ledger.durability"),
    ("stages:\n  ratelimit: {requestsPerMinute: 0}\n  poisoning: {actions: {made_up: block}}", 6,
     "stages.poisoning"),
])
def test_simulate_refuses_a_file_the_gateway_would_refuse(runner: CliRunner, tmp_path: Path, section: str,
                                                          where: int, line: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f'version: "1"\nmode: enforce\ndefaultAction: allow\n{section}\n')
    result = runner.invoke(cli, ["simulate", "read_file", "--policy", str(policy)])
    assert result.exit_code == 2, result.output
    assert f"{policy}:{where}:" in result.output
    assert line in result.output


def test_test_policy_passes_seatbelt_style_tests(runner: CliRunner, tmp_path: Path) -> None:
    tests = tmp_path / "tests.yml"
    tests.write_text(SEATBELT_TESTS)
    result = runner.invoke(cli, ["test-policy", str(tests), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "4 passed" in result.output


def test_test_policy_exits_1_on_a_failure(runner: CliRunner, tmp_path: Path) -> None:
    tests = tmp_path / "tests.yml"
    tests.write_text("tests:\n  - {name: wrong, tool: bash, expect: allow}\n")
    result = runner.invoke(cli, ["test-policy", str(tests), "--json", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert json.loads(result.output)["failed"] == 1


def test_a_broken_policy_gives_one_line_with_file_line_and_rule_and_exit_2(
        runner: CliRunner, write_policy: Callable[..., Path]) -> None:
    policy = write_policy("version: '1'\nrules:\n  - id: oops\n    target: files\n    values: [x]\n"
                          "    action: deny\n")
    result = runner.invoke(cli, ["simulate", "t", "--policy", str(policy)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith(f"mcpwall: {policy}:4: rule 'oops': ")


def test_diff_lists_rules_added_removed_and_modified(runner: CliRunner,
                                                     write_policy: Callable[..., Path]) -> None:
    old = write_policy("rules:\n  - {id: a, tools: [x], action: deny}\n  - {id: b, tools: [y], action: deny}\n",
                       "old.yaml")
    new = write_policy("mode: audit\nrules:\n  - {id: a, tools: [x], action: warn}\n"
                       "  - {id: c, tools: [z], action: deny}\n", "new.yaml")
    result = runner.invoke(cli, ["diff", str(old), str(new), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["added"], data["removed"]) == (["c"], ["b"])
    assert data["modified"][0]["id"] == "a"
    assert data["modified"][0]["changes"]["action"] == {"old": "deny", "new": "warn"}
    assert data["settings"]["mode"] == {"old": "enforce", "new": "audit"}


def test_every_command_has_help(runner: CliRunner) -> None:
    listed = cli.list_commands(None)  # type: ignore[arg-type]
    assert {"simulate", "test-policy", "diff"} <= set(listed)
    for name in listed:
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "--home" in result.output, name


def test_a_bad_pattern_is_reported_in_one_line_without_the_regex_engines_own_logging(tmp_path: Path) -> None:
    import subprocess
    import sys

    policy = tmp_path / "policy.yaml"
    policy.write_text('version: "1"\nmode: enforce\ndefaultAction: allow\nrules:\n'
                      '  - {id: look, target: file, match: pattern, values: ["(?<=a)b"], action: deny}\n'
                      '  - {id: bad, target: file, match: pattern, values: ["(unclosed"], action: deny}\n')
    mcpwall = Path(sys.executable).parent / "mcpwall"
    done = subprocess.run([str(mcpwall), "simulate", "read_file", "--policy", str(policy)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"mcpwall: {policy}:6: rule 'bad': invalid regex '(unclosed': missing ), "
                                        "unterminated subpattern at position 0"]


def test_simulate_checks_the_ledger_section_without_opening_the_ledger(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "elsewhere.db"
    policy = tmp_path / "policy.yaml"
    policy.write_text(f'version: "1"\nmode: enforce\ndefaultAction: allow\nledger: {{url: "{db}"}}\n')
    result = runner.invoke(cli, ["simulate", "read_file", "--policy", str(policy), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["action"] == "allow"
    assert not db.exists()
