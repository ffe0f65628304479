"""Every feature mcp-seatbelt's rules express, with the same meaning, plus ours.

Strategy: each test compiles a small seatbelt-format policy from YAML and
decides fixture calls through both the fast path and the reference path
(`helpers.decide` asserts they agree), checking the action, rule ids and
redacted keys a user would see in `simulate` or in the ledger.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.policy.helpers import WEEKEND, WORKDAY, compile_text, decide, rules

SHELL = """id: block-shell
description: no shells
target: command
match: pattern
values: ['^bash$', '\\bsh\\s+-c\\b']
action: deny"""


class TestTargets:
    def test_command_target_matches_tool_name_and_description(self) -> None:
        p = compile_text(rules(SHELL, default="allow"))
        assert decide(p, "bash").action == "deny"
        assert decide(p, "run", description="runs sh -c on the host").action == "deny"
        assert decide(p, "run", {"cmd": "bash"}).action == "allow"  # args are not a command target

    def test_file_target_matches_argument_values_at_any_depth(self) -> None:
        p = compile_text(rules("id: f\ntarget: file\nmatch: pattern\nvalues: ['^/etc(/|$)']\naction: deny",
                               default="allow"))
        assert decide(p, "read", {"path": "/etc/passwd"}).action == "deny"
        assert decide(p, "read", {"opts": {"files": ["/tmp/a", {"p": "/etc/x"}]}}).action == "deny"
        assert decide(p, "read", {"path": "/tmp/etc"}).action == "allow"

    def test_network_target_matches_urls(self) -> None:
        p = compile_text(rules("id: n\ntarget: network\nmatch: contains\nvalues: [evil.example]\naction: deny",
                               default="allow"))
        assert decide(p, "fetch", {"url": "https://EVIL.example/x"}).action == "deny"
        assert decide(p, "fetch", {"url": "https://good.example/x"}).action == "allow"

    def test_env_target_matches_values_and_env_keys(self) -> None:
        p = compile_text(rules("id: e\ntarget: env\nmatch: exact\nvalues: [AWS_SECRET_ACCESS_KEY]\naction: deny",
                               default="allow"))
        assert decide(p, "spawn", {"env": {"AWS_SECRET_ACCESS_KEY": "x"}}).action == "deny"
        assert decide(p, "spawn", {"name": "AWS_SECRET_ACCESS_KEY"}).action == "deny"
        assert decide(p, "spawn", {"env": {"PATH": "/bin"}}).action == "allow"

    def test_process_target_matches_name_description_and_args(self) -> None:
        p = compile_text(rules("id: p\ntarget: process\nmatch: pattern\nvalues: ['\\bexec\\b']\naction: deny",
                               default="allow"))
        assert decide(p, "exec").action == "deny"
        assert decide(p, "t", description="will exec things").action == "deny"
        assert decide(p, "t", {"code": "os.exec now"}).action == "deny"
        assert decide(p, "t", {"code": "executive"}).action == "allow"

    def test_numbers_and_booleans_are_matched_too(self) -> None:
        p = compile_text(rules("id: port\ntarget: argValue\nmatch: exact\nvalues: ['22']\naction: deny",
                               default="allow"))
        assert decide(p, "connect", {"port": 22}).action == "deny"
        assert decide(p, "connect", {"port": 2222}).action == "allow"


class TestMatchTypes:
    @pytest.mark.parametrize(("match", "value", "text", "hit"), [
        ("exact", "read_file", "read_file", True),
        ("exact", "read_file", "read_file2", False),
        ("contains", "secret", "my_SECRET_thing", True),
        ("pattern", "^rm\\s", "rm -rf /", True),
        ("pattern", "^rm\\s", "firm ", False),
    ])
    def test_match_types(self, match: str, value: str, text: str, hit: bool) -> None:
        p = compile_text(rules(f"id: r\ntarget: command\nmatch: {match}\nvalues: ['{value}']\naction: deny",
                               default="allow"))
        assert (decide(p, text).action == "deny") is hit

    def test_dollar_means_end_of_text_as_in_javascript(self) -> None:
        p = compile_text(rules("id: r\ntarget: argValue\nmatch: pattern\nvalues: ['^ok$']\naction: allow"))
        assert decide(p, "t", {"v": "ok"}).action == "allow"
        assert decide(p, "t", {"v": "ok\n"}).action == "deny"


class TestArgConstraints:
    BASE = """id: ws
description: workspace only
target: file
match: pattern
values: ['/workspace/']
action: allow
argConstraints:
  - {argName: path, constraint: %s, values: %s}"""

    @pytest.mark.parametrize(("kind", "values", "arg", "expected"), [
        ("startsWith", "['/workspace/']", "/workspace/a", "allow"),
        # The allow rule sees only the canonical /etc/passwd, so it does not even match:
        ("startsWith", "['/workspace/']", "/workspace/../etc/passwd", "default"),
        ("equals", "['/workspace/a']", "/workspace/a", "allow"),
        ("equals", "['/workspace/a']", "/workspace/b", "deny"),
        ("regex", "['^/workspace/[a-z]+$']", "/workspace/abc", "allow"),
        ("regex", "['^/workspace/[a-z]+$']", "/workspace/ABC", "deny"),
        ("in", "['/workspace/a', '/workspace/b']", "/workspace/b", "allow"),
        ("in", "['/workspace/a']", "/workspace/c", "deny"),
        ("notIn", "['/workspace/secret']", "/workspace/ok", "allow"),
        ("notIn", "['/workspace/secret']", "/workspace/SECRET", "deny"),
    ])
    def test_a_failed_constraint_turns_a_matching_rule_into_a_deny(
            self, kind: str, values: str, arg: str, expected: str) -> None:
        p = compile_text(rules(self.BASE % (kind, values)))
        d = decide(p, "write_file", {"path": arg})
        if expected == "default":
            assert (d.action, d.rule_ids) == ("deny", ())
        else:
            assert d.action == expected
            assert "ws" in d.rule_ids

    @pytest.mark.parametrize(("value", "expected"), [
        ("pull", "allow"), ("push", "deny"), ("PUSH", "deny"), ("push\n", "deny"), (" push ", "deny"),
        (["push"], "deny"), (["pull", ["push"]], "deny"), ({"name": "push"}, "deny"), (["pull"], "allow"),
    ])
    def test_not_in_sees_through_whitespace_case_and_containers(self, value: object, expected: str) -> None:
        # A server may trim, or take the first element of a list: none of those spellings may pass notIn.
        p = compile_text(rules("""id: git
tools: [git]
action: allow
argConstraints:
  - {argName: subcommand, constraint: notIn, values: [push]}"""))
        assert decide(p, "git", {"subcommand": value}).action == expected

    def test_every_constraint_must_hold_so_an_absent_argument_denies(self) -> None:
        """Issue 29, item 1 (seatbelt's rule): the constraint on `filePath` fails when only `path` is sent."""
        p = compile_text(rules("""id: ws
target: file
match: pattern
values: ['/workspace/']
action: allow
argConstraints:
  - {argName: filePath, constraint: startsWith, values: ['/workspace/']}
  - {argName: path, constraint: startsWith, values: ['/workspace/']}"""))
        assert decide(p, "read", {"path": "/workspace/x"}).action == "deny"
        assert decide(p, "read", {"path": "/workspace/x", "filePath": "/workspace/x"}).action == "allow"
        assert decide(p, "copy", {"source": "/workspace/x", "dest": "/tmp/y"}).action == "deny"


class TestTimeWindow:
    def test_days_and_hours(self) -> None:
        p = compile_text(rules("""id: office
target: command
match: exact
values: [deploy]
action: allow
timeWindow: {days: [Monday, Tuesday, Wednesday, Thursday, Friday], startHour: 9, endHour: 17}"""))
        assert decide(p, "deploy", now=WORKDAY).action == "allow"
        assert decide(p, "deploy", now=WEEKEND).action == "deny"
        assert decide(p, "deploy", now=datetime(2026, 12, 1, 18, 0).astimezone()).action == "deny"

    @pytest.mark.parametrize(("hour", "inside"), [(22, True), (23, True), (0, True), (5, True),
                                                  (6, False), (12, False), (21, False)])
    def test_hour_ranges_wrap_past_midnight(self, hour: int, inside: bool) -> None:
        p = compile_text(rules("""id: night
target: command
match: exact
values: [backup]
action: deny
timeWindow: {startHour: 22, endHour: 5}""", default="allow"))
        d = decide(p, "backup", now=datetime(2026, 12, 1, hour, 30).astimezone())
        assert (d.action == "deny") is inside

    def test_trace_reports_the_window_state(self) -> None:
        p = compile_text(rules("""id: night
target: command
match: exact
values: [backup]
action: deny
timeWindow: {startHour: 22, endHour: 5}""", default="allow"))
        d = decide(p, "backup", now=WORKDAY, trace=True)
        assert d.trace is not None
        assert d.trace[0].time_window == "outside"
        assert d.trace[0].status == "outside-window"


class TestContextCondition:
    def test_client_in(self) -> None:
        p = compile_text(rules("""id: cursor-only
target: command
match: exact
values: [deploy]
action: deny
contextCondition: {clientIn: [cursor]}""", default="allow"))
        assert decide(p, "deploy", client="Cursor").action == "deny"
        assert decide(p, "deploy", client="claude-code").action == "allow"

    def test_max_requests_per_minute_applies_above_the_rate(self) -> None:
        p = compile_text(rules("""id: slow-down
target: command
match: pattern
values: ['.*']
action: deny
contextCondition: {maxRequestsPerMinute: 10}""", default="allow"))
        assert decide(p, "t", rate=10).action == "allow"
        assert decide(p, "t", rate=11).action == "deny"

    def test_agent_in_is_ours(self) -> None:
        p = compile_text(rules("""id: bot
target: command
match: exact
values: [deploy]
action: deny
contextCondition: {agentIn: [ci-bot]}""", default="allow"))
        assert decide(p, "deploy", agent="ci-bot").action == "deny"
        assert decide(p, "deploy", agent="alice").action == "allow"


class TestPrecedenceAndActions:
    def test_deny_beats_ask_beats_warn_beats_allow(self) -> None:
        body = [f"id: {a}\ntarget: command\nmatch: exact\nvalues: [t]\naction: {a}"
                for a in ("allow", "warn", "ask", "deny")]
        for n in range(1, 5):
            p = compile_text(rules(*body[:n]))
            assert decide(p, "t").action == ("allow", "warn", "ask", "deny")[n - 1]

    def test_block_is_an_alias_for_deny(self) -> None:
        p = compile_text(rules("id: b\ntarget: command\nmatch: exact\nvalues: [t]\naction: block", default="allow"))
        assert decide(p, "t").action == "deny"

    def test_timeout_is_the_first_matching_rule_with_one_else_the_default(self) -> None:
        p = compile_text(rules("id: a\ntarget: command\nmatch: exact\nvalues: [t]\naction: allow\ntimeoutMs: 1000",
                               "id: b\ntarget: command\nmatch: exact\nvalues: [t]\naction: warn\ntimeoutMs: 2000",
                               extra="defaultTimeoutMs: 7000\n"))
        assert decide(p, "t").timeout_ms == 1000
        assert decide(p, "other").timeout_ms == 7000

    def test_redaction_removes_named_keys_at_any_depth_and_combines(self) -> None:
        p = compile_text(rules("id: r\ntarget: command\nmatch: contains\nvalues: [password, token]\naction: redact",
                               "id: ok\ntarget: command\nmatch: exact\nvalues: [login]\naction: allow"))
        d = decide(p, "login", {"user": "u", "password": "p", "nested": {"api_token": "t", "x": 1}})
        assert d.action == "redact"
        assert d.redacted_keys == ("password", "nested.api_token")
        assert decide(p, "other", {"password": "p"}).action == "deny"  # redact never allows on its own

    def test_rewrite_and_hooks_allow_with_a_modification(self) -> None:
        p = compile_text(rules(
            "id: rw\ntarget: command\nmatch: exact\nvalues: [search]\naction: rewrite\n"
            "rewrite: {arguments: {limit: 10}}",
            "id: hook\ntarget: command\nmatch: exact\nvalues: [search]\naction: postprocess\nhook: strip-ansi"))
        d = decide(p, "search", {"q": "x"})
        assert d.action == "rewrite"
        assert d.rewrite == {"arguments": {"limit": 10}}
        assert d.hooks == (("postprocess", "strip-ansi"),)

    def test_compliance_tags_of_deciding_rules_are_reported(self) -> None:
        p = compile_text(rules("""id: t
target: command
match: exact
values: [t]
action: deny
compliance:
  - {framework: soc2, controls: [CC6.1]}
  - {framework: hipaa, controls: ['164.312(a)(1)']}""", default="allow"))
        assert decide(p, "t").compliance == ("soc2:CC6.1", "hipaa:164.312(a)(1)")


class TestModes:
    def test_audit_mode_allows_but_records_what_enforce_would_do(self) -> None:
        p = compile_text(rules(SHELL, mode="audit"))
        d = decide(p, "bash")
        assert d.action == "allow"
        assert d.enforced_action == "deny"
        assert "block-shell" in d.rule_ids
        assert any("Audit mode" in r for r in d.reasons)

    def test_audit_mode_still_redacts(self) -> None:
        p = compile_text(rules("id: r\ntarget: command\nmatch: contains\nvalues: [secret]\naction: redact",
                               mode="audit"))
        d = decide(p, "t", {"client_secret": "s"})
        assert d.action == "redact"
        assert d.redacted_keys == ("client_secret",)


class TestAllowlist:
    def test_allowlisted_tool_skips_deny_rules_and_the_default_but_not_redaction(self) -> None:
        p = compile_text(rules(SHELL, "id: r\ntarget: command\nmatch: contains\nvalues: [token]\naction: redact",
                               extra="").replace("tools: []", "tools: [bash]"))
        d = decide(p, "bash", {"token": "t", "cmd": "ls"})
        assert d.action == "redact"
        assert d.redacted_keys == ("token",)
        assert decide(p, "zsh").action == "deny"

    def test_allowlisted_paths_allow_and_exempt_from_profile_file_rules(self) -> None:
        p = compile_text(rules("id: var\ntarget: file\nmatch: pattern\nvalues: ['^/var(/|$)']\naction: deny")
                         .replace("paths: []", "paths: [/var/www]"))
        assert decide(p, "write", {"path": "/var/www/index.html"}).action == "allow"
        assert decide(p, "write", {"path": "/var/www/../log/syslog"}).action == "deny"
        assert decide(p, "write", {"path": "/var/wwwx/a"}).action == "deny"

    def test_allowlisted_hosts_match_case_insensitively_and_subdomains_with_a_dot(self) -> None:
        p = compile_text(rules().replace("hosts: []", "hosts: ['.example.com', api.test]"))
        assert decide(p, "fetch", {"url": "https://docs.EXAMPLE.com/x"}).action == "allow"
        assert decide(p, "fetch", {"url": "https://API.test/"}).action == "allow"
        assert decide(p, "fetch", {"url": "https://api.test.evil.com/"}).action == "deny"
        assert decide(p, "fetch", {"url": "https://example.com@evil.com/"}).action == "deny"


class TestOurTargets:
    def test_resource_uri_rules_see_through_file_urls(self) -> None:
        p = compile_text(rules("id: res\ntarget: resource\nmatch: pattern\nvalues: ['^/etc/']\naction: deny",
                               default="allow"))
        assert decide(p, "file:///etc/shadow", {"uri": "file:///etc/shadow"},
                      method="resources/read").action == "deny"
        assert decide(p, "file:///tmp/x", {"uri": "file:///tmp/x"}, method="resources/read").action == "allow"

    def test_prompt_rules_apply_to_prompts_get_only(self) -> None:
        p = compile_text(rules("id: pr\ntarget: prompt\nmatch: exact\nvalues: [jailbreak]\naction: deny",
                               default="allow"))
        assert decide(p, "jailbreak", method="prompts/get").action == "deny"
        assert decide(p, "jailbreak", method="tools/call").action == "allow"

    def test_argument_name_rules(self) -> None:
        p = compile_text(rules("id: an\ntarget: argName\nmatch: exact\nvalues: [sudo]\naction: deny",
                               default="allow"))
        assert decide(p, "run", {"opts": {"sudo": False}}).action == "deny"
        assert decide(p, "run", {"opts": {"user": "sudo"}}).action == "allow"

    def test_server_and_agent_scopes(self) -> None:
        p = compile_text(rules("id: s\nservers: [prod-*]\nagents: [intern]\naction: deny", default="allow"))
        assert decide(p, "anything", server="prod-db", agent="intern").action == "deny"
        assert decide(p, "anything", server="prod-db", agent="lead").action == "allow"
        assert decide(p, "anything", server="dev-db", agent="intern").action == "allow"

    def test_tool_scoped_rules_with_globs(self) -> None:
        p = compile_text(rules("id: w\ntools: ['write_*', edit_file]\naction: ask", default="allow"))
        assert decide(p, "write_file").action == "ask"
        assert decide(p, "edit_file").action == "ask"
        assert decide(p, "read_file").action == "allow"


class TestCaseRule:
    def test_restrictive_rules_ignore_case_permissive_rules_do_not(self) -> None:
        p = compile_text(rules("id: d\ntarget: command\nmatch: exact\nvalues: [Bash]\naction: deny",
                               "id: a\ntarget: command\nmatch: exact\nvalues: [read_file]\naction: allow"))
        assert decide(p, "BASH").action == "deny"
        assert decide(p, "read_file").action == "allow"
        assert decide(p, "READ_FILE").action == "deny"  # default deny: the allow rule is exact


class TestCaches:
    def test_plans_and_memoised_decisions_stay_bounded_under_a_stream_of_new_shapes(self) -> None:
        # An agent (or an attacker) calling ever new tool names must not grow the engine's
        # caches without bound, and decisions must stay right across the clears.
        p = compile_text(rules("id: no-etc\ntarget: file\nmatch: pattern\nvalues: ['^/etc']\naction: deny",
                               "id: t7\ntools: [tool_7]\naction: deny", default="allow"))
        for i in range(20_000):
            d = decide(p, f"tool_{i}", {"path": "/etc/passwd" if i % 3 == 0 else f"/srv/{i}"})
            assert d.action == ("deny" if i % 3 == 0 or i == 7 else "allow"), i
        held = sum(len(plan.by_found) for plan in p.fast.plans.values())
        assert len(p.fast.plans) <= 8192
        assert held <= p.fast.memo_entries <= 8192
        assert len(p.fast.memo) <= 8192
