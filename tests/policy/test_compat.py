"""Each deliberate difference from mcp-seatbelt, one test each (docs/COMPATIBILITY.md).

Strategy: state seatbelt's behaviour in the docstring, then assert ours on the
same policy text. Numbers match the sections of docs/COMPATIBILITY.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcpwall.errors import PolicyError
from mcpwall.policy import PolicyEngine, compile_policy, load_policy
from tests.policy.helpers import WEEKEND, WORKDAY, compile_text, decide, rules


def test_c1_default_action_applies_only_when_no_rule_matches() -> None:
    """Seatbelt starts from defaultAction, so under `deny` its allow rules are dead."""
    default = PolicyEngine.from_template("default").compiled
    assert decide(default, "write_file", {"path": "/workspace/notes.md"}).action == "allow"
    assert decide(default, "write_file", {"path": "/tmp/notes.md"}, now=WORKDAY).action == "allow"
    assert decide(default, "write_file", {"path": "/tmp/notes.md"}, now=WEEKEND).action == "deny"
    # deny still beats allow:
    assert decide(default, "write_file", {"path": "/workspace/../etc/passwd"}, now=WORKDAY).action == "deny"
    # and a warn rule under a warn or deny default really warns rather than being swallowed:
    p = compile_text(rules("id: w\ntarget: command\nmatch: exact\nvalues: [t]\naction: warn"))
    assert decide(p, "t").action == "warn"


def test_c2_every_command_honours_extends(write_policy: Callable[..., Path]) -> None:
    """Seatbelt's simulate and test-policy ignore `extends`."""
    write_policy("rules:\n  - {id: base-deny, target: command, match: exact, values: [rm], action: deny}\n",
                 "base.yaml")
    top = write_policy("extends: base.yaml\ndefaultAction: allow\n")
    assert decide(compile_policy(load_policy(top)), "rm").rule_ids == ("base-deny",)


def test_c3_client_and_agent_identity_reach_the_decision() -> None:
    """Seatbelt's proxy passes no client, so clientIn never applies in production."""
    p = compile_text(rules("id: c\ntarget: command\nmatch: exact\nvalues: [t]\naction: deny\n"
                           "contextCondition: {clientIn: [cursor]}", default="allow"))
    assert decide(p, "t", client="cursor").action == "deny"
    assert decide(p, "t", client="zed").action == "allow"


def test_c4_an_allowlisted_tool_is_still_redacted() -> None:
    """Seatbelt returns `allow` for allowlisted tools before redaction."""
    p = compile_text(rules("id: r\ntarget: command\nmatch: contains\nvalues: [password]\naction: redact")
                     .replace("tools: []", "tools: [login]"))
    d = decide(p, "login", {"password": "hunter2"})
    assert (d.action, d.redacted_keys) == ("redact", ("password",))


def test_c5_arguments_are_walked_at_every_depth_including_numbers() -> None:
    """Seatbelt looks one level deep and skips numbers and booleans."""
    p = compile_text(rules("id: etc\ntarget: file\nmatch: pattern\nvalues: ['^/etc/']\naction: deny",
                           "id: port\ntarget: argValue\nmatch: exact\nvalues: ['6379']\naction: deny",
                           default="allow"))
    assert decide(p, "t", {"a": {"b": {"c": ["/etc/shadow"]}}}).action == "deny"
    assert decide(p, "t", {"opts": {"port": 6379}}).action == "deny"


def test_c6_one_case_rule_for_patterns_and_constraints() -> None:
    """Seatbelt: patterns ignore case, argConstraints regexes do not, exact is case-sensitive."""
    p = compile_text(rules("id: d\ntarget: command\nmatch: exact\nvalues: [rm]\naction: deny",
                           "id: a\ntarget: file\nmatch: pattern\nvalues: ['^/srv/']\naction: allow\n"
                           "argConstraints: [{argName: path, constraint: regex, values: ['^/srv/app/']}]"))
    assert decide(p, "RM").action == "deny"  # restrictive: any case
    assert decide(p, "put", {"path": "/srv/app/x"}).action == "allow"
    assert decide(p, "put", {"path": "/SRV/app/x"}).action == "deny"  # permissive: exact case


def test_c7_an_invalid_regex_refuses_the_policy(write_policy: Callable[..., Path]) -> None:
    """Seatbelt catches the exception and the rule silently never matches."""
    path = write_policy("rules:\n  - {id: bad, target: file, match: pattern, values: ['[a-'], action: deny}\n")
    with pytest.raises(PolicyError, match="invalid regex") as info:
        compile_policy(load_policy(path))
    assert (info.value.line, info.value.rule_id) == (2, "bad")


@pytest.mark.parametrize("kind", ["equals", "in", "startsWith", "regex", "notIn"])
def test_a_constraint_whose_argument_is_absent_fails_whatever_its_kind_issue_29(kind: str) -> None:
    """Issue 29, item 1: `db in [prod, staging]` allowed a call that left `db` out. As in seatbelt,
    a constrained argument that is absent (or null) fails the constraint, which denies."""
    values = {"equals": "['prod']", "in": "[prod, staging]", "startsWith": "[prod]", "regex": "['^prod$']",
              "notIn": "[dev]"}[kind]
    p = compile_text(rules(f"id: query-db\ntools: [query]\naction: allow\n"
                           f"argConstraints: [{{argName: db, constraint: {kind}, values: {values}}}]"))
    assert decide(p, "query", {"db": "prod", "sql": "select 1"}).action == "allow"
    for args in ({"sql": "select 1"}, {"db": None, "sql": "select 1"}, {}):
        decision = decide(p, "query", args)
        assert decision.action == "deny", args
        assert any("Arg 'db' is missing" in r for r in decision.reasons)
    assert decide(p, "query", {"db": "dev"}).action == "deny"


def test_the_default_workspace_rule_allows_path_tools_inside_workspace_and_is_no_trap() -> None:
    """Issue 27, item 4: the shipped rule's unanchored '/workspace/' with a constraint that then failed
    denied any path merely containing /workspace/, even one a user's own allow rule allowed."""
    default = PolicyEngine.from_template("default").compiled
    assert decide(default, "read_file", {"path": "/workspace/a"}).action == "allow"
    assert decide(default, "read_text_file", {"path": "/workspace/../etc/hosts"}).action == "deny"
    assert decide(default, "move_file", {"source": "/home/u/notes.txt", "destination": "/workspace/y"}).action \
        == "deny"
    import yaml

    shipped = (Path(__file__).resolve().parents[2] / "src" / "mcpwall" / "policy" / "templates" / "default.yaml")
    doc = yaml.safe_load(shipped.read_text())
    doc["rules"].append({"id": "mine", "tools": ["read_file"], "target": "file", "match": "pattern",
                         "values": ["^/home/u/workspace/"], "action": "allow"})
    with_mine = compile_text(yaml.safe_dump(doc))
    decision = decide(with_mine, "read_file", {"path": "/home/u/workspace/a"})
    assert decision.action == "allow", decision.reasons
    assert "allow-workspace-filesystem" not in decision.rule_ids


def test_c13_a_profile_rule_cannot_reuse_a_corp_rule_id(write_policy: Callable[..., Path]) -> None:
    write_policy("rules:\n  - {id: x, tools: [rm], action: deny}\n", "corp.yaml")
    with pytest.raises(PolicyError, match="corp"):
        load_policy(write_policy("corp: corp.yaml\nrules:\n  - {id: x, tools: [rm], action: allow}\n"))


def test_c14_redaction_names_nested_keys() -> None:
    """Seatbelt redacts only top-level argument keys."""
    p = compile_text(rules("id: r\ntarget: command\nmatch: contains\nvalues: [token]\naction: redact",
                           default="allow"))
    assert decide(p, "t", {"auth": {"token": "x"}, "list": [{"refresh_token": "y"}]}).redacted_keys == (
        "auth.token", "list[0].refresh_token")


def test_c15_allowlisted_tools_may_be_qualified_by_server() -> None:
    p = compile_text(rules().replace("tools: []", "tools: ['fs__read_file']"))
    assert decide(p, "read_file", server="fs").action == "allow"
    assert decide(p, "read_file", server="other").action == "deny"


def test_c16_the_words_file_system_do_not_make_a_tool_a_process_spawner() -> None:
    """Seatbelt's `block-process-execution` matched the word `system`, so the reference filesystem
    server's tools ("... from the file system") were all denied and hidden by its own default."""
    default = PolicyEngine.from_template("default").compiled
    reads = "Read the complete contents of a file from the file system as text."
    decision = decide(default, "read_text_file", {"path": "/workspace/a.txt"}, description=reads)
    assert decision.action == "allow", decision.reasons
    assert "block-process-execution" in decide(default, "run", {"code": "import os; os.system('id')"}).rule_ids
    assert "block-process-execution" in decide(default, "run", {"code": "system ( \"id\" )"}).rule_ids
    assert "block-process-execution" in decide(default, "run", {"cmd": "child_process.exec('x')"}).rule_ids


def test_a_matched_redact_rules_timeout_counts_like_any_rules() -> None:
    """POLICY.md: a call's timeout is that of the first matched rule with `timeoutMs`; seatbelt's own
    `redact-credentials` sets 5000, which was skipped."""
    p = compile_text(rules("id: redact-creds\ntarget: command\nmatch: contains\nvalues: [password]\naction: redact\n"
                           "timeoutMs: 5000",
                           "id: slow-warn\ntools: [u]\naction: warn\ntimeoutMs: 9000", default="allow"))
    assert decide(p, "u", {"password": "x"}).timeout_ms == 5000
    assert decide(p, "u", {"other": "x"}).timeout_ms == 9000


def test_c17_of_two_bases_with_one_rule_id_the_later_base_wins(write_policy: Callable[..., Path]) -> None:
    """Seatbelt keeps the first base's rule; mcpwall lets each later file replace it, as the
    including file does (one rule for `extends: [a, b]` reads left to right)."""
    write_policy("rules:\n  - {id: shared, tools: [rm], action: deny}\n", "a.yml")
    write_policy("rules:\n  - {id: shared, tools: [rm], action: warn}\n", "b.yml")
    policy = compile_policy(load_policy(write_policy("defaultAction: allow\nextends: [a.yml, b.yml]\n")))
    assert decide(policy, "rm").action == "warn"


def test_a_file_cannot_replace_the_corp_a_base_names(write_policy: Callable[..., Path]) -> None:
    """SPEC 3: a profile can never loosen a corp deny, and dropping the corp its team base names
    (`corp: {rules: []}`, or another file) would."""
    write_policy("rules:\n  - {id: corp-no-rm, tools: [rm], action: deny}\n", "corp.yaml")
    write_policy("rules: []\n", "lax.yaml")
    write_policy("corp: corp.yaml\n", "team.yaml")
    for override in ("corp: {rules: []}", "corp: lax.yaml"):
        with pytest.raises(PolicyError, match="cannot be replaced") as info:
            load_policy(write_policy(f"defaultAction: allow\nextends: [team.yaml]\n{override}\n"))
        assert info.value.line == 3
    same = compile_policy(load_policy(write_policy("defaultAction: allow\nextends: [team.yaml]\ncorp: corp.yaml\n")))
    assert decide(same, "rm").action == "deny"
    write_policy("corp: {rules: []}\n", "other-team.yaml")  # nor through a second base
    with pytest.raises(PolicyError, match="cannot be replaced"):
        load_policy(write_policy("defaultAction: allow\nextends: [team.yaml, other-team.yaml]\n"))


def test_a_window_without_a_timezone_reads_any_instant_in_local_time() -> None:
    """`simulate --now 2026-11-30T12:00:00+09:00` judged a rule without `timezone` by Tokyo's clock."""
    from datetime import datetime, timedelta, timezone

    p = compile_text(rules("id: office\ntools: [t]\naction: allow\ntimeWindow: {startHour: 9, endHour: 17}",
                           default="deny"))
    for offset in (9, -7, 0):
        now = datetime(2026, 11, 30, 12, 0, tzinfo=timezone(timedelta(hours=offset)))
        expected = "allow" if 9 <= now.astimezone().hour <= 17 else "deny"
        assert decide(p, "t", now=now).action == expected, offset
