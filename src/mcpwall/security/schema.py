"""Argument validation against each tool's `inputSchema`, and path safety.

`SchemaCache` compiles a tool's JSON Schema once (keyed by server, tool and a
hash of the schema, so a changed schema is recompiled) with the validator
class the schema's `$schema` names (draft 2020-12 by default). A schema that
is itself invalid is remembered as unusable: calls pass, and the stage says so
in its status, rather than every call of that tool failing.

`path_violations` is schema-independent: in every string argument it finds NUL
bytes, and in every path-like one (by key name or shape) traversal that
escapes where the path started, overlong-UTF-8 and look-alike dots, and
sensitive locations (system directories, credential files). Paths are judged
in every spelling the policy engine derives (`mcpwall.policy.forms`), so
`%2e%2e%2f`, `..%252f`, `file:///etc/` and `~/.ssh` are caught as what they are.
"""

from __future__ import annotations

import hashlib
import json
import ntpath
import posixpath
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpwall.policy import forms
from mcpwall.protocol import json_text
from mcpwall.security._json import Flat, strings
from mcpwall.security._paths import SECRET_FILES, looks_like_path, sensitive, system_path

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MAX_ERRORS = 20


def _pointer(path: Iterable[Any]) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


class SchemaCache:
    """Compiled validators by (server, tool, schema hash); bounded, least recently used first out."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._by_key: OrderedDict[tuple[str, str, str], Validator | None] = OrderedDict()
        #: id(schema) -> (schema, key): the catalog keeps the same dict until it refreshes,
        #: so the hash is computed once per schema object, not per call
        self._by_id: dict[int, tuple[Any, tuple[str, str, str]]] = {}
        self.max_entries = max_entries
        self.compiled = 0
        self.unusable: dict[str, str] = {}
        self._checked: dict[tuple[Any, ...], list[dict[str, str]]] = {}

    def _key(self, server: str, tool: str, schema: Any) -> tuple[str, str, str]:
        hit = self._by_id.get(id(schema))
        if hit is not None and hit[0] is schema and hit[1][:2] == (server, tool):
            return hit[1]
        digest = hashlib.sha256(json.dumps(schema, sort_keys=True, default=str).encode()).hexdigest()[:32]
        key = (server, tool, digest)
        if len(self._by_id) > self.max_entries * 2:
            self._by_id.clear()
        self._by_id[id(schema)] = (schema, key)
        return key

    def validator(self, server: str, tool: str, schema: Any) -> Validator | None:
        if not isinstance(schema, dict):
            return None
        return self._compiled(self._key(server, tool, schema), schema)

    def _compiled(self, key: tuple[str, str, str], schema: dict[str, Any]) -> Validator | None:
        server, tool, _ = key
        if key in self._by_key:
            self._by_key.move_to_end(key)
            return self._by_key[key]
        from jsonschema import Draft202012Validator  # here: `simulate` builds the stage, never a validator
        from jsonschema.validators import validator_for
        from referencing import Registry

        compiled: Validator | None
        try:
            cls = validator_for(schema, default=Draft202012Validator)
            cls.check_schema(schema)
            # An empty registry: a `$ref` resolves inside the schema (and the bundled metaschemas) only.
            # jsonschema's default would GET a network `$ref` at call time, which lets a server's tool
            # listing make the gateway fetch any URL (SEP-2106: MUST NOT dereference network refs).
            compiled = cls(schema, registry=Registry())
            self.compiled += 1
        except Exception as exc:  # SchemaError and worse: a broken schema must not break the tool
            self.unusable[f"{server}/{tool}"] = str(exc).split("\n", 1)[0][:200]
            compiled = None
        self._by_key[key] = compiled
        while len(self._by_key) > self.max_entries:
            self._by_key.popitem(last=False)
        return compiled

    def errors(self, server: str, tool: str, schema: Any, arguments: Any) -> list[dict[str, str]]:
        """[] when the arguments are valid (or the schema unusable); else the errors, path first.

        A pure function of (schema, arguments), memoised on both: agents repeat calls.
        """
        if not isinstance(schema, dict):
            return []
        key = self._key(server, tool, schema)
        validator = self._compiled(key, schema)
        if validator is None:
            return []
        try:
            memo_key: tuple[Any, ...] | None = (key, json_text(arguments, sort_keys=True))
        except TypeError:
            memo_key = None
        if memo_key is not None and (hit := self._checked.get(memo_key)) is not None:
            return hit
        from referencing.exceptions import Unresolvable

        try:
            found = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
        except Unresolvable as exc:  # a `$ref` outside the schema: not fetched, so the arguments are unchecked
            return [{"path": "", "validator": "$ref",
                     "message": f"the schema's $ref {str(exc)[:200]!r} is not resolved: network references "
                                "are never fetched"}]
        errors = [{"path": _pointer(e.absolute_path), "message": _message(e)[:300], "validator": str(e.validator)}
                  for e in found[:MAX_ERRORS]]
        if memo_key is not None:
            if len(self._checked) >= 4096:
                self._checked.clear()
            self._checked[memo_key] = errors
        return errors


def _message(e: Any) -> str:
    """jsonschema's message without the argument's value: it quotes the value (`'ghp_...' is not of
    type 'number'`), and the refusal goes back to the agent and into the ledger unmasked (issue 22:
    a secret sent in the wrong field came back in clear). The schema's own words stay."""
    message = str(e.message)
    instance = e.instance
    if isinstance(instance, bool) or instance is None:
        return message
    shown = repr(instance)
    if shown in message:
        message = message.replace(shown, _describe(instance))
    return message


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return f"an object with {len(value)} keys"
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    return f"a {type(value).__name__}"


@dataclass(frozen=True, slots=True)
class Violation:
    """One unsafe path: what kind, which argument, why."""

    kind: str
    path: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail}


_OVERLONG = re.compile(r"%(?:c0%(?:ae|af|9v)|c1%(?:9c|pc|1c)|e0%80%(?:ae|af)|f0%80%80%(?:ae|af))|%u(?:002e|2215|ff0e)"
                       r"|[\u2024\u2025\uff0e\uff0f\u2215\u29f8]", re.IGNORECASE)


def _escapes(spelling: str) -> bool:
    """Does `..` take this path above where it started?"""
    if ".." not in spelling:
        return False
    windows = "\\" in spelling and "/" not in spelling
    norm = ntpath.normpath(spelling).replace("\\", "/") if windows else posixpath.normpath(spelling)
    raw = spelling.replace("\\", "/") if windows else spelling
    if not raw.startswith("/") and not re.match(r"^[a-zA-Z]:/", raw):
        return norm == ".." or norm.startswith("../")
    parts = [p for p in raw.split("/") if p and p != "."]
    top = parts[0] if parts else ""
    if top == "..":
        return True
    norm_parts = [p for p in norm.split("/") if p]
    return bool(top) and (not norm_parts or norm_parts[0] != top)


def _under(canonical: str, prefixes: Sequence[str]) -> bool:
    for prefix in prefixes:
        p = prefix.rstrip("/")
        if canonical == p or canonical.startswith(p + "/"):
            return True
    return False


def path_violations(arguments: Any, *, home: str | None = None, allow: Sequence[str] = (),
                    extra: Sequence[tuple[str, re.Pattern[str]]] = (), flat: Flat | None = None) -> list[Violation]:
    """Every unsafe value in `arguments`; `allow` exempts paths under these roots from the location checks;
    `flat`: the arguments' strings when the caller has them (`_json.flatten`)."""
    out: list[Violation] = []
    for path, key, value in strings(arguments) if flat is None else flat:
        if "\x00" in value or "%00" in value:
            out.append(Violation("nul-byte", path, "NUL byte in an argument (truncates the path in C APIs)"))
            continue
        if not looks_like_path(key, value):
            continue
        if _OVERLONG.search(value):
            out.append(Violation("encoded-traversal", path, "overlong UTF-8 or look-alike dot/slash encoding"))
            continue
        variants, canonical = forms(value, home)
        if any(_escapes(v) for v in variants if ".." in v):
            out.append(Violation("traversal", path, f"'..' escapes the starting directory ({value[:120]!r})"))
            continue
        if allow and _under(canonical, allow):
            continue
        label = system_path(value, home) or sensitive(value, home) or \
            (sensitive(value, home, extra) if extra else None)
        if label is not None:
            out.append(Violation("sensitive-path", path, f"{label}: {canonical[:160]!r}"))
    return out


__all__ = ["MAX_ERRORS", "SECRET_FILES", "SchemaCache", "Violation", "path_violations"]
