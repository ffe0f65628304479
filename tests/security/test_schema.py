"""Schema validation and path safety.

Strategy: validate against real tool schemas (the filesystem server's shapes) with valid, invalid
and edge arguments; the cache must recompile a changed schema and survive a broken one. Path
safety gets the attacks (traversal in every encoding, NUL bytes, sensitive locations) and the
benign look-alikes that must pass (dots in names, `..` that stays inside, prose, URLs).
"""

from __future__ import annotations

import pytest

from mcpwall.security.schema import SchemaCache, path_violations

READ = {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "number"}},
        "required": ["path"], "additionalProperties": False}


def test_valid_arguments_pass_and_invalid_ones_list_every_error_with_its_path() -> None:
    cache = SchemaCache()
    assert cache.errors("fs", "read", READ, {"path": "/workspace/a", "head": 3}) == []
    errors = cache.errors("fs", "read", READ, {"head": "three", "extra": 1})
    assert {e["validator"] for e in errors} == {"required", "type", "additionalProperties"}
    assert any(e["path"] == "$.head" for e in errors)


def test_a_changed_schema_is_recompiled_and_the_same_one_is_not() -> None:
    cache = SchemaCache()
    cache.errors("fs", "read", READ, {"path": "a"})
    cache.errors("fs", "read", dict(READ), {"path": "a"})
    assert cache.compiled == 1
    changed = {**READ, "properties": {"path": {"type": "integer"}}}
    assert cache.errors("fs", "read", changed, {"path": "a"})
    assert cache.compiled == 2


def test_a_broken_schema_lets_calls_through_and_is_reported() -> None:
    cache = SchemaCache()
    broken = {"type": "object", "properties": {"path": {"type": "strang"}}}
    assert cache.errors("fs", "odd", broken, {"path": 1}) == []
    assert "fs/odd" in cache.unusable


def test_draft_07_schemas_are_validated_with_their_own_rules() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}}}
    cache = SchemaCache()
    assert cache.errors("s", "t", schema, {"n": 1}) == []
    assert cache.errors("s", "t", schema, {"n": 0})


@pytest.mark.parametrize(("value", "kind"), [
    ("../../etc/passwd", "traversal"),
    ("..\\..\\windows\\win.ini", "traversal"),
    ("src/../../secrets", "traversal"),
    ("/workspace/../etc/passwd", "traversal"),
    ("..%2f..%2fetc%2fpasswd", "traversal"),
    ("%2e%2e%2f%2e%2e%2fetc%2fpasswd", "traversal"),
    ("%252e%252e%252fetc%252fpasswd", "traversal"),
    ("..%c0%af..%c0%afetc/passwd", "encoded-traversal"),
    ("\u2025/\u2025/etc/passwd", "encoded-traversal"),
    ("/tmp/report.txt\x00.png", "nul-byte"),
    ("report.pdf%00.exe", "nul-byte"),
    ("/etc/shadow", "sensitive-path"),
    ("//etc//./shadow", "sensitive-path"),
    ("file:///etc/passwd", "sensitive-path"),
    ("~/.ssh/id_rsa", "sensitive-path"),
    ("/proc/self/environ", "sensitive-path"),
    ("C:\\Windows\\System32\\config\\SAM", "sensitive-path"),
    ("/workspace/.env", "sensitive-path"),
    ("/home/dev/.aws/credentials", "sensitive-path"),
])
def test_unsafe_paths_are_caught_in_every_spelling(value: str, kind: str) -> None:
    found = path_violations({"path": value})
    assert [v.kind for v in found] == [kind]
    assert found[0].path == "path"


@pytest.mark.parametrize("args", [
    {"path": "/workspace/src/app.py"},
    {"path": "/workspace/a/../b.txt"},            # '..' that stays inside
    {"path": "notes..txt"},
    {"path": "/workspace/.env.example"},
    {"path": "/dev/null"},
    {"content": "see ../README.md and /etc/hosts in the docs"},   # prose, not a path argument
    {"url": "https://example.com/a/../b"},
    {"query": "SELECT 1"},
    {"paths": ["/workspace/a", "/workspace/b"]},
])
def test_benign_paths_and_look_alikes_pass(args: dict[str, object]) -> None:
    assert path_violations(args) == []


def test_allowed_roots_exempt_locations_but_not_traversal_or_nul() -> None:
    assert path_violations({"path": "/etc/hosts"}, allow=["/etc/hosts"]) == []
    assert path_violations({"path": "/etc/../root/.ssh/id_rsa"}, allow=["/etc"])
    assert path_violations({"path": "/etc/hosts\x00"}, allow=["/etc"])


def test_nested_path_arguments_are_checked() -> None:
    found = path_violations({"edits": [{"file": "../../.ssh/authorized_keys"}]})
    assert found
    assert found[0].path == "edits[0].file"
