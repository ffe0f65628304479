"""A plain read of a policy (`policy._plain`, for `simulate`) means what the pydantic models mean.

Strategy: the plain reader may only ever take a document the models take, and must then hold the
same values; anything else it hands to the models, which give their own error. So (1) its
classes have the models' fields, defaults and literals; (2) every single change of one field of
a document that uses every field (each of a list of probe values, the key removed, an unknown
key added) is either handed over or read to the same `model_dump` as the models read it, and
every change the models refuse is handed over; (3) whole files (the templates, the example with
`extends`, a file with repeated ids, a corp path, servers and webhooks) resolve to the same
revision, rules and decisions; (4) only a plain read is plain: the gateway's `load_policy` still
gives the models.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from mcpwall.errors import PolicyError
from mcpwall.policy import _model, _plain, compile_policy, load_policy, load_template, template_text
from mcpwall.policy._loader import parse_policy_text
from tests.policy.helpers import WORKDAY, decide

KINDS = ("ArgConstraint", "TimeWindow", "ContextCondition", "Compliance", "Rewrite", "Rule", "Allowlist", "Webhook",
         "Notifications", "SandboxSpec", "ServerSpec", "PolicyFile")
LITERALS = {"TARGETS": "Target", "MATCH_TYPES": "MatchType", "RULE_ACTIONS": "RuleAction", "MODES": "Mode",
            "DEFAULT_ACTIONS": "DefaultAction", "CONSTRAINT_KINDS": "ConstraintKind", "FRAMEWORKS": "Framework",
            "WEBHOOK_FORMATS": "WebhookFormat", "WEBHOOK_EVENTS": "WebhookEvent"}

#: a document that sets every field of every model (the corp as a path: a mapping is the models')
FULL: dict[str, Any] = {
    "version": "1", "mode": "enforce", "defaultAction": "deny", "defaultTimeoutMs": 20000,
    "rules": [{
        "id": "r", "description": "d", "target": "file", "match": "pattern", "values": ["^/etc"],
        "action": "rewrite",
        "argConstraints": [{"argName": "db", "constraint": "in", "values": ["prod", "staging"]}],
        "timeWindow": {"days": ["Monday", "friday"], "startHour": 9, "endHour": 17, "timezone": "UTC"},
        "contextCondition": {"clientIn": ["c"], "agentIn": ["a"], "maxRequestsPerMinute": 5},
        "timeoutMs": 1000,
        "compliance": [{"framework": "soc2", "controls": ["CC6.1"], "remediation": "fix"}],
        "servers": ["s*"], "tools": ["t"], "methods": ["tools/call"], "clients": ["c"], "agents": ["a"],
        "rewrite": {"arguments": {"path": "{{args.path}}", "n": None}, "result": "x"},
        "hook": "h", "owasp": ["MCP01"], "enabled": True,
    }],
    "allowlist": {"tools": ["t"], "paths": ["/w"], "hosts": ["example.com"], "envVars": ["HOME"]},
    "allowSampling": False, "extends": [],
    "notifications": {"webhooks": [{"url": "https://h.example/x", "events": ["deny", "ask"], "format": "slack",
                                    "headers": {"X-A": "b"}}]},
    "servers": {"s": {"command": "node", "args": ["a"], "env": {"A": "b"}, "cwd": "/w", "transport": "stdio",
                      "headers": {"H": "v"}, "timeoutMs": 500,
                      "sandbox": {"read": ["/r"], "write": ["/w"], "network": True},
                      "roots": ["/w"], "disabled": False, "era": "legacy"}},
    "corp": "corp.yaml",
    "dlp": {"a": None}, "honeytokens": True, "ledger": {"path": "x"}, "rbac": {}, "stages": {"pins": {}},
    "telemetry": False, "auth": {"issuers": []},
}

PROBES: tuple[Any, ...] = (
    None, "", " ", "x", "Monday", "allow", "deny", "rewrite", "preprocess", "exact", "soc2", "stdio", "audit",
    "json", "https://x", "500", "1", 0, 1, 5, 23, 24, 99, 100, 300_000, 300_001, -1, True, False, 1.0, 2.5,
    [], [""], [" "], ["x"], ["monday"], ["deny"], [1], [None], ["x", " "], [{}], ("x",),
    {}, {"a": 1}, {"a": "b"}, {"a": None}, {1: "b"}, {"days": ["sunday"]}, {"command": "x"},
    {"argName": "a", "constraint": "regex", "values": ["^a"]},
    {"framework": "nist", "controls": ["AC-1"]}, {"url": "u", "events": []},
    [{"id": "z", "action": "deny"}], [{"argName": "a", "constraint": "in", "values": ["b"]}],
    [{"framework": "gdpr", "controls": ["5"]}], [{"url": "u", "events": ["allow"]}],
)


def _mappings(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every model-shaped mapping in FULL (not the free-form sections' insides)."""
    if isinstance(node, dict):
        yield path
        for key, value in node.items():
            if path == () and key in ("dlp", "ledger", "rbac", "stages", "auth"):
                continue
            if key == "arguments" or (len(path) >= 2 and path[-1] in ("env", "headers")):
                continue
            yield from _mappings(value, (*path, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _mappings(item, (*path, i))


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _variants() -> Iterator[tuple[str, dict[str, Any]]]:
    yield "as is", FULL
    for path in _mappings(FULL):
        mapping = _at(FULL, path)
        extra = copy.deepcopy(FULL)
        _at(extra, path)["bogus"] = 1
        yield f"{path} + unknown key", extra
        for key in list(mapping):
            dropped = copy.deepcopy(FULL)
            del _at(dropped, path)[key]
            yield f"{(*path, key)} removed", dropped
            for probe in PROBES:
                changed = copy.deepcopy(FULL)
                _at(changed, path)[key] = copy.deepcopy(probe)
                yield f"{(*path, key)} = {probe!r}", changed


def _models_read(data: dict[str, Any]) -> _model.PolicyFile | None:
    try:
        return _model.PolicyFile.model_validate(copy.deepcopy(data))
    except pydantic.ValidationError:
        return None


@pytest.mark.parametrize("name", KINDS)
def test_each_plain_class_has_its_models_fields_in_order_with_the_same_defaults(name: str) -> None:
    model: type[pydantic.BaseModel] = getattr(_model, name)
    plain = getattr(_plain, name)
    assert [field for field, _, _ in plain.FIELDS] == list(model.model_fields)
    for (field, default, _), info in zip(plain.FIELDS, model.model_fields.values(), strict=True):
        if info.is_required():
            assert default is _plain.REQUIRED, field
        elif info.default_factory is not None:
            assert isinstance(default, type), field  # made anew for each object
            assert default() == info.default_factory(), field  # type: ignore[call-arg]
        else:
            assert default == info.default, field


def test_plain_objects_are_frozen_and_compare_by_their_fields() -> None:
    rule = _plain.Rule.of({"id": "r", "action": "deny"})
    with pytest.raises(AttributeError):
        rule.id = "other"
    assert rule == _plain.Rule.of({"id": "r", "action": "deny"})
    assert rule != _plain.Rule.of({"id": "r", "action": "allow"})
    assert rule.model_copy(update={"id": "r#2"}).id == "r#2"
    assert rule.id == "r"
    assert _plain.Allowlist().tools is not _plain.Allowlist().tools  # a default list is each object's own


@pytest.mark.parametrize(("mine", "theirs"), sorted(LITERALS.items()))
def test_the_plain_literals_are_the_models(mine: str, theirs: str) -> None:
    assert getattr(_plain, mine) == typing.get_args(getattr(_model, theirs))
    assert _plain.DAY_NAMES == _model.DAY_NAMES


def test_a_change_to_any_field_is_read_plain_only_as_the_models_read_it() -> None:
    read_plain = refused = 0
    for what, data in _variants():
        theirs = _models_read(data)
        mine = _plain.document(copy.deepcopy(data))
        if theirs is None:
            assert mine is None, f"{what}: the models refuse it, the plain read took it"
            refused += 1
        elif mine is not None:
            assert mine.model_dump() == theirs.model_dump(), what
            assert mine.model_dump(exclude_none=True) == theirs.model_dump(exclude_none=True), what
            read_plain += 1
    assert _plain.document(FULL) is not None  # the whole document, every field set, is read plain
    assert read_plain > 300, read_plain  # both sides are exercised
    assert refused > 300, refused


@pytest.mark.parametrize("given", ["500", 500.0, True])
def test_what_the_models_would_coerce_is_left_to_them(given: Any) -> None:
    data = {"rules": [{"id": "r", "action": "deny", "timeoutMs": given}]}
    assert _plain.document(data) is None
    text = yaml.safe_dump(data) if not isinstance(given, bool) else "rules: [{id: r, action: deny, timeoutMs: 1000}]"
    doc, _ = parse_policy_text(text, "p.yaml", plain=True)
    theirs, _ = parse_policy_text(text, "p.yaml")
    assert doc.model_dump() == theirs.model_dump()


def test_an_invalid_file_gives_the_same_error_read_plain(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("rules:\n  - id: r\n    action: deny\n    timeoutMs: 50\n")
    errors = []
    for plain in (False, True):
        with pytest.raises(PolicyError) as caught:
            load_policy(policy, plain=plain)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert errors[0] == f"{policy}:4: rule 'r': rules[0].timeoutMs: Input should be greater than or equal to 100"


_CALLS = [("read_file", {"path": "/etc/shadow"}), ("read_file", {"path": "/workspace/a"}),
          ("query-db", {"sql": "select 1"}), ("query-db", {"db": "prod", "sql": "x"}),
          ("run_command", {"command": "rm -rf /"}), ("fetch", {"url": "https://example.com/"}),
          ("write_file", {"path": "/home/u/.ssh/id_rsa", "content": "x"}), ("t", {"path": "x"})]


def _same(plain: Any, models: Any) -> None:
    assert plain.revision == models.revision
    assert [p.rule.model_dump() for p in plain.rules] == [p.rule.model_dump() for p in models.rules]
    assert [p.origin for p in plain.rules] == [p.origin for p in models.rules]
    assert [p.rule.model_dump() for p in plain.corp_rules] == [p.rule.model_dump() for p in models.corp_rules]
    assert (plain.files, dict(plain.sections), plain.mode, plain.corp_mode) == \
        (models.files, dict(models.sections), models.mode, models.corp_mode)
    assert {k: v.model_dump() for k, v in plain.servers.items()} == {k: v.model_dump() for k, v in models.servers.items()}
    assert plain.notifications.model_dump() == models.notifications.model_dump()
    assert plain.corp_allowlist.model_dump() == models.corp_allowlist.model_dump()
    a, b = compile_policy(plain), compile_policy(models)
    for name, args in _CALLS:
        assert decide(a, name, args, now=WORKDAY).as_dict() == decide(b, name, args, now=WORKDAY).as_dict(), name


@pytest.mark.parametrize("name", ["default", "minimal-workstation", "pci-compliance", "strict-production"])
def test_each_template_resolves_the_same_read_plain(name: str) -> None:
    assert _plain.document(yaml.safe_load(template_text(name))) is not None
    _same(load_template(name, plain=True), load_template(name))


def test_a_file_with_extends_a_corp_servers_webhooks_and_repeated_ids_resolves_the_same(tmp_path: Path) -> None:
    (tmp_path / "corp.yaml").write_text("mode: audit\nrules:\n  - {id: corp-no-rm, target: command, "
                                        "values: ['rm -rf'], action: deny}\nallowlist: {tools: [ping]}\n")
    (tmp_path / "base.yaml").write_text(template_text("default") + "\nservers:\n  fs: {command: node, args: [x]}\n")
    (tmp_path / "policy.yaml").write_text(
        "version: 1\nextends: base.yaml\ncorp: corp.yaml\ndefaultAction: allow\nrules:\n"
        "  - {id: db, tools: [query-db], action: allow, argConstraints: [{argName: db, constraint: in, values: [prod]}]}\n"
        "  - {id: db, tools: [query-db], action: warn, description: again}\n"
        "  - {id: late, target: tool, values: [t], action: rewrite, rewrite: {arguments: {path: /safe}},"
        " timeWindow: {days: [Tuesday], startHour: 9, endHour: 17}, contextCondition: {maxRequestsPerMinute: 100}}\n"
        "notifications:\n  webhooks: [{url: 'https://h.example/', events: [deny]}]\n"
        "dlp: {enabled: true}\n")
    plain, models = load_policy(tmp_path / "policy.yaml", plain=True), load_policy(tmp_path / "policy.yaml")
    assert _plain.is_plain(plain.rules[0].rule)
    assert not _plain.is_plain(models.rules[0].rule)
    assert [p.rule.id for p in plain.rules][-3:] == ["db", "db#2", "late"]
    _same(plain, models)


def test_only_a_plain_read_is_plain() -> None:
    models = load_template("default")
    assert isinstance(models.rules[0].rule, _model.Rule)
    assert isinstance(models.allowlist, _model.Allowlist)
    example = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"
    assert isinstance(load_policy(example).rules[0].rule, _model.Rule)
    _same(load_policy(example, plain=True), load_policy(example))
