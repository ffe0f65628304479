"""Property-based tests of the policy engine's guarantees (hypothesis).

Strategy: generate small random policies over a shared vocabulary so that
rules and calls actually collide, then check the invariants users rely on:
deny cannot be undone by adding allow rules, audit never blocks, redaction
removes exactly the named keys, every spelling of a denied path is denied,
and the fast path decides exactly like the reference path.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwall.policy import Call, Context, compile_policy, evaluate, prepare, redact_arguments
from mcpwall.policy._evaluate import evaluate_slow
from mcpwall.policy._loader import resolve_document
from mcpwall.policy._model import PolicyFile
from tests.policy.helpers import WEEKEND, WORKDAY

TOOLS = ["read_file", "write_file", "bash", "fetch", "echo"]
WORDS = ["/etc/passwd", "/workspace/a", "http://10.0.0.1/x", "secret", "hello", "/tmp/x", "rm -rf /",
         # spellings that only some parsers resolve (probe 2: F1, F2, F4, F10)
         "/workspace/a && rm -rf /", "http://10.0.0.1\\@a.example/", "http:167772161/", "167772161"]
KEYS = ["path", "url", "token", "password", "content", "cmd", "Api_Key", "host"]

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rule(idx: int, action: str) -> st.SearchStrategy[dict[str, Any]]:
    targets = st.sampled_from(["command", "file", "network", "process", "argValue", "argName", "tool"])
    return st.fixed_dictionaries(
        {"id": st.just(f"r{idx}-{action}"), "target": targets, "action": st.just(action),
         "match": st.sampled_from(["exact", "contains", "pattern"]),
         "values": st.lists(st.sampled_from(TOOLS + WORDS + KEYS + ["^/", "a", "."]), min_size=1, max_size=3)},
        optional={"timeWindow": st.fixed_dictionaries({"startHour": st.integers(0, 23),
                                                       "endHour": st.integers(0, 23)}),
                  "argConstraints": st.lists(st.fixed_dictionaries({
                      "argName": st.sampled_from(KEYS),
                      "constraint": st.sampled_from(["equals", "startsWith", "in", "notIn"]),
                      "values": st.lists(st.sampled_from(WORDS), min_size=1, max_size=2)}), max_size=2)})


def rules_of(actions: list[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.tuples(*[rule(i, a) for i, a in enumerate(actions)]).map(list)


json_leaf = st.one_of(st.sampled_from(WORDS + TOOLS), st.integers(-3, 3), st.booleans())
arguments = st.recursive(
    st.dictionaries(st.sampled_from(KEYS), json_leaf, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from(KEYS), st.one_of(inner, st.lists(inner, max_size=2)),
                                  max_size=3),
    max_leaves=8)
calls = st.builds(lambda name, args: Call(name=name, arguments=args, description=""),
                  st.sampled_from(TOOLS), arguments)


def compile_doc(rules: list[dict[str, Any]], mode: str = "enforce", default: str = "deny") -> Any:
    doc = PolicyFile.model_validate({"mode": mode, "defaultAction": default, "rules": rules})
    return compile_policy(resolve_document(doc))


def ctx(now_workday: bool) -> Context:
    return Context(now=WORKDAY if now_workday else WEEKEND, requests_last_minute=1)


@SETTINGS
@given(st.lists(st.sampled_from(["deny", "allow", "warn", "ask", "redact"]), min_size=1, max_size=6)
       .flatmap(rules_of), st.lists(st.just("allow"), min_size=1, max_size=4).flatmap(rules_of),
       calls, st.booleans(), st.sampled_from(["deny", "allow", "warn"]))
def test_adding_allow_rules_never_turns_a_rule_deny_into_an_allow(
        base: list[dict[str, Any]], extra: list[dict[str, Any]], call: Call, workday: bool,
        default: str) -> None:
    for i, r in enumerate(extra):
        r["id"] = f"extra{i}"
    before = evaluate(compile_doc(base, default=default), prepare(call), ctx(workday))
    after = evaluate(compile_doc(base + extra, default=default), prepare(call), ctx(workday))
    # A default deny is what allow rules exist to lift; a deny from a rule is final.
    by_rule = any(rid.endswith(("-deny", "-ask")) for rid in before.rule_ids) or any(
        "fails" in r or "constrained" in r for r in before.reasons)
    if before.action == "deny" and by_rule:
        assert after.action == "deny"
        assert set(before.rule_ids) <= set(after.rule_ids)
    if before.action == "ask" and by_rule:
        assert after.action in ("ask", "deny")


@SETTINGS
@given(st.lists(st.sampled_from(["deny", "ask", "warn", "allow", "redact"]), max_size=6).flatmap(rules_of),
       calls, st.booleans(), st.sampled_from(["deny", "allow", "ask"]))
def test_audit_mode_never_denies_or_asks(rules: list[dict[str, Any]], call: Call, workday: bool,
                                         default: str) -> None:
    d = evaluate(compile_doc(rules, mode="audit", default=default), prepare(call), ctx(workday))
    assert d.action in ("allow", "warn", "redact", "rewrite")


def _key_paths(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else k
            out.append((path, k))
            out += _key_paths(v, path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _key_paths(v, f"{prefix}[{i}]")
    return out


@SETTINGS
@given(arguments, st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
def test_redaction_removes_exactly_the_named_keys(args: dict[str, Any], named: list[str]) -> None:
    policy = compile_doc([{"id": "r", "target": "argName", "match": "exact", "values": named,
                           "action": "redact"}], default="allow")
    d = evaluate(policy, prepare(Call(name="t", arguments=args)), ctx(False))
    folded = {n.casefold() for n in named}
    expected = [p for p, k in _key_paths(args) if k.casefold() in folded]
    assert list(d.redacted_keys) == expected
    cleaned = redact_arguments(args, d.redacted_keys)
    remaining = _key_paths(cleaned)
    assert not any(k.casefold() in folded for _, k in remaining)
    # Everything not named survives untouched.
    kept = [p for p, k in _key_paths(args) if not any(p == e or p.startswith(e + ".") or
                                                      p.startswith(e + "[") for e in expected)]
    assert [p for p, _ in remaining] == kept


segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)


@st.composite
def etc_spellings(draw: st.DrawFn) -> str:
    parts = draw(st.lists(segment, min_size=1, max_size=3))
    out = "/etc"
    for p in parts:
        noise = draw(st.sampled_from(["/", "//", "/./", "/x/../", "/./x/../"]))
        out += noise + p
    prefix = draw(st.sampled_from(["", "/tmp/..", "/var/../", "//", "/./"]))
    out = (prefix + out) if not prefix.endswith("/") else prefix + out.lstrip("/")
    wrap = draw(st.sampled_from(["plain", "file", "quote", "quote2", "nul"]))
    if wrap == "file":
        return "file://" + out
    if wrap == "quote":
        return quote(out, safe="")
    if wrap == "quote2":
        return quote(quote(out, safe=""), safe="")
    if wrap == "nul":
        return out + "\x00.txt"
    return out


@SETTINGS
@given(etc_spellings(), st.sampled_from(["path", "file", "target"]))
def test_every_spelling_of_a_denied_path_is_denied(path: str, key: str) -> None:
    policy = compile_doc([{"id": "etc", "target": "file", "match": "pattern", "values": ["^/etc(/|$)"],
                           "action": "deny"},
                          {"id": "ok", "target": "file", "match": "pattern", "values": ["^/"],
                           "action": "allow"}], default="allow")
    d = evaluate(policy, prepare(Call(name="read_file", arguments={key: path})), ctx(False))
    assert d.action == "deny", path


@SETTINGS
@given(st.lists(st.sampled_from(["deny", "allow", "warn", "ask", "redact"]), max_size=7).flatmap(rules_of),
       st.lists(calls, min_size=1, max_size=4), st.booleans(), st.sampled_from(["audit", "enforce"]))
def test_fast_path_decides_exactly_like_the_reference(rules: list[dict[str, Any]], batch: list[Call],
                                                      workday: bool, mode: str) -> None:
    policy = compile_doc(rules, mode=mode)
    for call in batch:
        facts = prepare(call)
        fast = evaluate(policy, facts, ctx(workday))
        slow = evaluate_slow(policy, facts, ctx(workday))
        assert fast == slow


def test_redaction_reaches_into_json_carried_in_a_string() -> None:
    """The facts read JSON inside a string argument (the server parses it), and name its keys
    `arg#json.key`: the forwarded string must lose them too, at any depth, in objects and lists."""
    policy = compile_doc([{"id": "r", "target": "argName", "match": "contains", "values": ["password"],
                           "action": "redact"}], default="allow")
    inner = {"user": "ada", "password": "hunter2", "more": [{"db_password": "x", "id": 1}],
             "again": json.dumps({"password": "deeper", "ok": True})}
    args = {"payload": json.dumps(inner), "list": json.dumps([{"password": "p"}, 2]), "plain": "{not json",
            "password": "top"}
    d = evaluate(policy, prepare(Call(name="t", arguments=args)), ctx(False))
    assert set(d.redacted_keys) == {"payload#json.password", "payload#json.more[0].db_password",
                                    "payload#json.again#json.password", "list#json[0].password", "password"}
    cleaned = redact_arguments(args, d.redacted_keys)
    assert "password" not in cleaned
    assert cleaned["plain"] == "{not json"
    assert json.loads(cleaned["list"]) == [{}, 2]
    payload = json.loads(cleaned["payload"])
    assert json.loads(payload.pop("again")) == {"ok": True}
    assert payload == {"user": "ada", "more": [{"id": 1}]}
    assert "hunter2" not in json.dumps(cleaned)
    assert "deeper" not in json.dumps(cleaned)
