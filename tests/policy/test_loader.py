"""Loading policy files: seatbelt files unchanged, clear errors, extends and corp.

Strategy: write real YAML files into a temporary directory and load them the
way every command does (`load_policy`). Error tests assert the one line a user
sees: file, line and rule id.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcpwall.errors import PolicyError
from mcpwall.policy import compile_policy, load_policy, load_template, template_text
from tests.policy.helpers import decide

SEATBELT_FULL = """\
version: "1.0"
mode: enforce
defaultAction: deny
defaultTimeoutMs: 20000
rules:
  - id: block-shell-execution
    description: Block shells
    target: command
    match: pattern
    values: ['^bash$', '\\bsh\\s+-c\\b']
    action: deny
    timeoutMs: 10000
    compliance:
      - framework: soc2
        controls: [CC6.1]
        remediation: Remove shell tools
  - id: redact-credentials
    description: Redact secrets
    target: command
    match: contains
    values: [password, token]
    action: redact
  - id: office-hours
    description: Writes in office hours
    target: file
    match: pattern
    values: ['^/srv/']
    action: allow
    timeWindow: {days: [Monday, Friday], startHour: 9, endHour: 17}
    contextCondition: {clientIn: [cursor], maxRequestsPerMinute: 30}
    argConstraints:
      - {argName: path, constraint: startsWith, values: [/srv/]}
      - {argName: mode, constraint: in, values: [read, write]}
      - {argName: user, constraint: notIn, values: [root]}
      - {argName: ext, constraint: regex, values: ['^\\.(txt|md)$']}
      - {argName: owner, constraint: equals, values: [app]}
  - id: warn-network
    description: Warn on network
    target: network
    match: contains
    values: [http]
    action: warn
  - id: env-secrets
    description: No secret env
    target: env
    match: exact
    values: [AWS_SECRET_ACCESS_KEY]
    action: deny
  - id: no-exec
    description: No exec
    target: process
    match: pattern
    values: ['\\bexec\\b']
    action: deny
allowlist:
  tools: [safe_tool]
  paths: [/srv/public]
  hosts: [example.com]
  envVars: [PATH]
allowSampling: false
notifications:
  webhooks:
    - url: https://hooks.slack.com/services/T000/B000/XXX
      events: [deny, warn]
      format: slack
    - url: http://127.0.0.1:9999/hook
      events: [redact]
      format: json
"""


def test_a_seatbelt_policy_with_every_feature_loads_unchanged(write_policy: Callable[..., Path]) -> None:
    resolved = load_policy(write_policy(SEATBELT_FULL, "policy.yml"))
    assert [p.rule.id for p in resolved.rules] == [
        "block-shell-execution", "redact-credentials", "office-hours", "warn-network", "env-secrets", "no-exec"]
    assert resolved.default_timeout_ms == 20000
    assert resolved.allow_sampling is False
    assert resolved.notifications.webhooks is not None
    assert [w.format for w in resolved.notifications.webhooks] == ["slack", "json"]
    compiled = compile_policy(resolved)
    assert decide(compiled, "bash").action == "deny"
    assert decide(compiled, "safe_tool", {"password": "x"}).action == "redact"


@pytest.mark.parametrize("name", ["default", "minimal-workstation", "pci-compliance", "strict-production"])
def test_templates_load_and_compile(name: str) -> None:
    compiled = compile_policy(load_template(name))
    assert compiled.mode == "enforce"
    assert template_text(name).startswith("#")


SEATBELT_DEFAULT_IDS = ["block-shell-execution", "block-sensitive-paths", "block-credential-access",
                        "redact-credentials", "block-private-network", "block-process-execution",
                        "allow-filesystem-writes-business-hours", "allow-workspace-filesystem",
                        "block-credential-leakage"]


def test_the_default_policy_starts_with_seatbelts_nine_rules_and_their_compliance_tags() -> None:
    resolved = load_template("default")
    assert [p.rule.id for p in resolved.rules[:9]] == SEATBELT_DEFAULT_IDS
    assert (resolved.mode, resolved.default_action) == ("enforce", "deny")
    tagged = {p.rule.id for p in resolved.rules[:9] if p.rule.compliance}
    assert tagged == {"block-shell-execution", "block-sensitive-paths", "block-credential-access",
                      "block-private-network"}
    # mcpwall's defence rules follow, and only deny (or ask, issue 25: a command line that reaches the network,
    # a package installed from a URL off the registries, a push that overwrites a remote's history, SQL that
    # drops or empties a table)
    assert all(p.rule.action in ("deny", "ask") for p in resolved.rules[9:])
    assert [p.rule.id for p in resolved.rules[9:] if p.rule.action == "ask"] == [
        "ask-shell-network", "ask-package-install-url", "ask-history-rewrite", "ask-destructive-sql"]


class TestErrors:
    @pytest.mark.parametrize(("text", "line", "rule", "fragment"), [
        ("version: '1'\nmode: enforce\nrules:\n  - id: a\n    target: file\n    match: regexp\n"
         "    values: [x]\n    action: deny\n", 6, "a", "match"),
        ("version: '1'\nrules:\n  - id: bad-re\n    target: file\n    values: ['(unclosed']\n"
         "    action: deny\n", 3, "bad-re", "invalid regex"),
        ("version: '1'\nrules:\n  - id: t\n    target: file\n    values: [x]\n    action: deny\n"
         "    timeoutMs: 50\n", 7, "t", "timeoutMs"),
        ("version: '1'\nrules:\n  - id: t\n    target: file\n    values: [x]\n    action: deny\n"
         "    argConstraint: []\n", 7, "t", "unknown key 'argConstraint'"),
        ("mode: enforce\nmode: audit\n", 2, None, "duplicate key 'mode'"),
        ("rules:\n  - id: t\n    action: deny\n    compliance:\n      - {framework: sox, controls: [a]}\n",
         5, "t", "framework"),
        ("rules: [\n", 2, None, "invalid YAML"),
        ("version: '1'\nrules:\n  - id: d\n    timeWindow: {days: [Funday]}\n    action: deny\n", 4, "d", "Funday"),
    ])
    def test_a_broken_file_names_file_line_and_rule(self, write_policy: Callable[..., Path], text: str,
                                                    line: int, rule: str | None, fragment: str) -> None:
        path = write_policy(text)
        with pytest.raises(PolicyError) as info:
            compile_policy(load_policy(path))
        err = info.value
        assert err.file == str(path)
        assert err.line == line
        assert err.rule_id == rule
        assert fragment in str(err)
        assert "\n" not in str(err)
        assert str(err).startswith(f"{path}:{line}: ")


class TestExtends:
    def test_recursive_extends_same_id_overrides_and_allowlists_union(
            self, write_policy: Callable[..., Path]) -> None:
        write_policy("rules:\n  - {id: a, target: command, match: exact, values: [a], action: deny}\n"
                     "  - {id: b, target: command, match: exact, values: [b], action: deny}\n"
                     "allowlist: {tools: [x]}\n", "grand.yaml")
        write_policy("extends: grand.yaml\nrules:\n  - {id: c, target: command, match: exact, values: [c], "
                     "action: deny}\nallowlist: {tools: [y]}\n", "base.yaml")
        top = write_policy("extends: [base.yaml]\nmode: enforce\ndefaultAction: allow\nrules:\n"
                           "  - {id: a, target: command, match: exact, values: [a], action: warn}\n"
                           "allowlist: {tools: [z, x]}\n")
        resolved = load_policy(top)
        assert [(p.rule.id, p.rule.action) for p in resolved.rules] == [("a", "warn"), ("b", "deny"),
                                                                        ("c", "deny")]
        assert sorted(resolved.allowlist.tools) == ["x", "y", "z"]
        compiled = compile_policy(resolved)
        assert decide(compiled, "a").action == "warn"
        assert decide(compiled, "c").action == "deny"

    def test_cycles_are_refused(self, write_policy: Callable[..., Path]) -> None:
        write_policy("extends: b.yaml\n", "a.yaml")
        write_policy("extends: a.yaml\n", "b.yaml")
        with pytest.raises(PolicyError, match="extends cycle"):
            load_policy(write_policy("extends: a.yaml\n", "top.yaml"))

    def test_a_missing_base_is_an_error_with_the_line(self, write_policy: Callable[..., Path]) -> None:
        with pytest.raises(PolicyError, match="not found") as info:
            load_policy(write_policy("mode: audit\nextends: nowhere.yaml\n"))
        assert info.value.line == 2


class TestCorp:
    CORP = ("mode: enforce\nrules:\n  - {id: corp-no-shell, target: command, match: exact, values: [bash], "
            "action: deny}\n")

    def test_a_profile_can_never_loosen_a_corp_deny(self, write_policy: Callable[..., Path]) -> None:
        write_policy(self.CORP, "corp.yaml")
        profile = write_policy(
            "corp: corp.yaml\nmode: audit\ndefaultAction: allow\n"
            "rules:\n  - {id: allow-bash, target: command, match: exact, values: [bash], action: allow}\n"
            "allowlist: {tools: [bash]}\n")
        compiled = compile_policy(load_policy(profile))
        d = decide(compiled, "bash")
        assert d.action == "deny"
        assert d.rule_ids == ("corp-no-shell",)
        assert decide(compiled, "ls").action == "allow"

    def test_overriding_a_corp_rule_by_id_is_refused(self, write_policy: Callable[..., Path]) -> None:
        write_policy(self.CORP, "corp.yaml")
        profile = write_policy("corp: corp.yaml\nrules:\n  - {id: corp-no-shell, action: allow}\n")
        with pytest.raises(PolicyError, match="corp") as info:
            load_policy(profile)
        assert (info.value.rule_id, info.value.line) == ("corp-no-shell", 3)

    def test_each_layer_decides_in_its_own_mode(self, write_policy: Callable[..., Path]) -> None:
        """POLICY.md: corp rules are evaluated in the corp's own mode. An audit corp under an
        enforcing profile only records; an enforcing corp holds its response rules too when the
        profile only records (both were the other way round)."""
        from mcpwall.policy import Call, Context, prepare
        from mcpwall.policy._evaluate import evaluate_response
        from tests.policy.helpers import WEEKEND

        write_policy("mode: audit\nrules:\n  - {id: corp-no-shell, target: command, match: exact, values: [bash], "
                     "action: deny}\n", "corp-audit.yaml")
        enforcing = compile_policy(load_policy(write_policy("corp: corp-audit.yaml\nmode: enforce\n"
                                                            "defaultAction: allow\n")))
        d = decide(enforcing, "bash")
        assert (d.action, d.enforced_action) == ("allow", "deny")
        assert "Corp audit mode: would deny" in d.reasons
        listed = compile_policy(load_policy(write_policy("corp: corp-audit.yaml\nmode: enforce\n"
                                                         "defaultAction: deny\nallowlist: {tools: [bash]}\n")))
        assert decide(listed, "bash").action == "allow"  # the profile's allowlist, the corp only recording
        write_policy("mode: audit\nrules:\n  - {id: corp-ok, tools: [ls], action: allow}\n", "corp-audit-allow.yaml")
        strict = compile_policy(load_policy(write_policy("corp: corp-audit-allow.yaml\nmode: enforce\n"
                                                         "defaultAction: deny\n")))
        d = decide(strict, "ls")
        assert d.action == "deny"
        assert "No matching allow rule found (default deny)" in d.reasons
        write_policy("rules:\n  - {id: corp-hide, target: response, match: contains, values: [CORPHIDDEN], "
                     "action: deny}\n", "corp-resp.yaml")
        auditing = compile_policy(load_policy(write_policy("corp: corp-resp.yaml\nmode: audit\n"
                                                           "defaultAction: allow\n")))
        facts = prepare(Call(name="echo", result={"content": [{"type": "text", "text": "Echo: CORPHIDDEN"}]}))
        assert evaluate_response(auditing, facts, Context(now=WEEKEND)).action == "deny"

    def test_an_error_inside_an_inline_corp_names_its_line_and_rule(self, write_policy: Callable[..., Path]) -> None:
        path = write_policy("defaultAction: allow\ncorp:\n  rules:\n    - {id: c1, tools: [rm], action: nope}\n")
        with pytest.raises(PolicyError, match=r"corp\.rules\[0\]\.action") as info:
            load_policy(path)
        assert (info.value.line, info.value.rule_id) == (4, "c1")

    def test_a_corps_path_and_env_allowlists_are_said_to_have_no_effect(
            self, write_policy: Callable[..., Path], caplog: pytest.LogCaptureFixture) -> None:
        write_policy("allowlist: {paths: [/srv/data], envVars: [AWS_REGION]}\nrules: []\n", "corp.yaml")
        load_policy(write_policy("corp: corp.yaml\n"))
        assert "allowlist.paths and allowlist.envVars has no effect" in caplog.text

    def test_inline_corp_block(self, write_policy: Callable[..., Path]) -> None:
        profile = write_policy("defaultAction: allow\ncorp:\n  rules:\n    - {id: c, tools: [rm], action: deny}\n")
        assert decide(compile_policy(load_policy(profile)), "rm").action == "deny"


def test_rules_that_repeat_an_id_in_one_file_all_apply(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # mcp-seatbelt evaluates every rule: a repeated id must not make the earlier deny vanish.
    path = tmp_path / "policy.yaml"
    path.write_text("defaultAction: allow\nrules:\n"
                    "  - {id: dup, tools: [rm_all], action: deny}\n"
                    "  - {id: dup, tools: [read_file], action: warn}\n")
    policy = compile_policy(load_policy(path))
    assert decide(policy, "rm_all").action == "deny"
    warned = decide(policy, "read_file")
    assert (warned.action, warned.rule_ids) == ("warn", ("dup#2",))
    assert "rule id 'dup' is used again in the same file" in caplog.text
    assert f"{path}:4" in caplog.text  # where the second one is


def test_a_rule_of_the_same_id_in_an_extending_file_still_overrides_the_base(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("rules:\n  - {id: r, tools: [t], action: deny}\n")
    (tmp_path / "policy.yaml").write_text("extends: [base.yaml]\ndefaultAction: allow\n"
                                          "rules:\n  - {id: r, tools: [t], action: warn}\n")
    policy = compile_policy(load_policy(tmp_path / "policy.yaml"))
    assert decide(policy, "t").action == "warn"


def test_a_tool_written_as_an_aggregated_name_is_warned_about(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rules:\n  - {id: no-delete, tools: [fs__delete_file], action: deny}\n")
    load_policy(path)
    assert f"{path}:2: rule 'no-delete' names tools as an aggregating client sees them" in caplog.text
    assert "`tools: [delete_file]` with `servers: [fs]`" in caplog.text
