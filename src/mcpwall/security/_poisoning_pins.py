"""The pin book: pinned tool definitions and pending changes, kept in a `StateStore`.

Shared by the pins stage (which compares live lists with it) and the `pin`
command (which lists, accepts and forgets). Everything lives in the state
namespace "pins":

- `SERVER/KIND:NAME` (KIND is tool, prompt, resource or template; NAME is the
  URI of a resource, the URI template of a template): `{server, kind, name, hash, definition, pinned_at, removed_at,
  pending}`. `hash` is None for a name that was never accepted (a renamed
  copy, or a new tool under `onNew: warn|block`). `pending` is None or
  `{hash, definition, change, of, seen_at}`.
- `SERVER/#KIND`: `{first_seen}`, so that a server's first list is pinned
  whole and later newcomers are told apart.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from mcpwall.state import StateStore

NAMESPACE = "pins"
KINDS: dict[str, tuple[str, ...]] = {
    "tool": ("name", "title", "description", "inputSchema", "outputSchema", "annotations"),
    "prompt": ("name", "title", "description", "arguments"),
    "resource": ("uri", "name", "title", "description", "mimeType"),
    "template": ("uriTemplate", "name", "title", "description", "mimeType"),
}
_NAME_FIELD = {"resource": "uri", "template": "uriTemplate"}
#: Tool pins written before `outputSchema` was pinned (records without "fields"): they are
#: compared on these fields once, and rewritten with the current ones when they still match.
_TOOL_FIELDS_V1 = ("name", "title", "description", "inputSchema", "annotations")
FIELDS_VERSION = 2
#: A description shorter than this is too generic to prove that a new tool is a renamed old one.
RENAME_MIN_DESCRIPTION = 20
#: A new name whose description is at least this similar to a pinned tool's that disappeared is
#: that tool renamed (difflib ratio or word Jaccard, on case- and space-folded descriptions) ...
RENAME_SIMILARITY = 0.8
#: ... or at least this similar when its input schema has the same shape (property names, types, required).
RENAME_SIMILARITY_SAME_SHAPE = 0.5
#: Characters of each description compared (difflib is quadratic in the worst case).
_COMPARED = 2000
_WORDS = re.compile(r"\w+")


def pin_key(server: str, kind: str, name: str) -> str:
    return f"{server}/{kind}:{name}"


def item_name(kind: str, item: Mapping[str, Any]) -> str | None:
    value = item.get(_NAME_FIELD.get(kind, "name"))
    return value if isinstance(value, str) and value else None


def fingerprint(kind: str, item: Mapping[str, Any], fields: Sequence[str] | None = None) -> tuple[str, dict[str, Any]]:
    """(hash, the pinned fields) of one list entry."""
    definition = {k: item[k] for k in (fields or KINDS[kind]) if item.get(k) is not None}
    digest = hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()
    return digest, definition


def _description(definition: Mapping[str, Any] | None) -> str:
    text = (definition or {}).get("description")
    return " ".join(text.split()) if isinstance(text, str) else ""


def similarity(a: str, b: str) -> float:
    """How alike two descriptions read, 0..1: the better of difflib's ratio and word Jaccard,
    case and spacing folded. A one-character edit of a long description scores about 0.99."""
    a, b = " ".join(a.casefold().split())[:_COMPARED], " ".join(b.casefold().split())[:_COMPARED]
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    words_a, words_b = set(_WORDS.findall(a)), set(_WORDS.findall(b))
    jaccard = len(words_a & words_b) / len(words_a | words_b) if words_a | words_b else 0.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ratio = matcher.ratio() if matcher.real_quick_ratio() > jaccard and matcher.quick_ratio() > jaccard else 0.0
    return max(jaccard, ratio)


def shape(kind: str, definition: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """The shape of a tool's input schema (a prompt's arguments): sorted (name, type) and the
    required names; None when it has no parameters (an empty shape proves nothing)."""
    definition = definition or {}
    if kind == "prompt":
        args = definition.get("arguments")
        named = [a for a in args if isinstance(a, dict)] if isinstance(args, list) else []
        if not named:
            return None
        return (tuple(sorted((str(a.get("name")), "") for a in named)),
                tuple(sorted(str(a.get("name")) for a in named if a.get("required"))))
    schema = definition.get("inputSchema")
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return None
    required = schema.get("required") if isinstance(schema, dict) else None
    return (tuple(sorted((str(k), str(v.get("type")) if isinstance(v, dict) else "") for k, v in props.items())),
            tuple(sorted(str(r) for r in required)) if isinstance(required, list) else ())


def renamed_from(kind: str, definition: Mapping[str, Any], gone: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The pinned definition in `gone` (name -> record of a pinned item no longer listed) that
    `definition` most likely is, renamed: a similar description, or a same-shaped schema with a
    description still somewhat alike (or none on either side, with two or more parameters)."""
    text = _description(definition)
    mine = shape(kind, definition)
    best: tuple[float, str] | None = None
    for name, record in gone.items():
        theirs = record.get("definition")
        other = _description(theirs)
        same_shape = mine is not None and mine == shape(kind, theirs)
        score = similarity(text, other)
        long_enough = min(len(text), len(other)) >= RENAME_MIN_DESCRIPTION
        if (long_enough and score >= RENAME_SIMILARITY) or (same_shape and score >= RENAME_SIMILARITY_SAME_SHAPE) \
                or (same_shape and not text and not other and mine is not None and len(mine[0]) >= 2):
            candidate = (score + (0.5 if same_shape else 0.0), name)
            if best is None or candidate > best:
                best = candidate
    return best[1] if best else None


@dataclass(frozen=True, slots=True)
class PinChange:
    """A change that now waits for a person: what changed, and what it copies for a rename."""

    server: str
    kind: str
    name: str
    change: str
    of: str | None = None


class PinBook:
    """Pins over a StateStore; every method reads the store afresh (another process may write it)."""

    def __init__(self, store: StateStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    # ------------------------------------------------------------------ reading

    def seen(self, server: str, kind: str) -> bool:
        return self.store.get_state(NAMESPACE, f"{server}/#{kind}") is not None

    def get(self, server: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.store.get_state(NAMESPACE, pin_key(server, kind, name))

    def all(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.store.all_state(NAMESPACE).items() if "/#" not in k}

    def records(self, server: str, kind: str) -> dict[str, dict[str, Any]]:
        prefix = f"{server}/{kind}:"
        return {k[len(prefix):]: v for k, v in self.all().items() if k.startswith(prefix)}

    def pending(self) -> list[dict[str, Any]]:
        return [r for r in self.all().values() if r.get("pending") or r.get("hash") is None]

    # ------------------------------------------------------------------ comparing

    def sync(self, server: str, kind: str, items: Sequence[Mapping[str, Any]], *, full: bool,
             on_new: str = "pin") -> list[PinChange]:
        """Compare one list with the pins; record new pending changes and return them.

        `full` says the list is complete (every page): pinned names missing from
        it are then marked removed (their pins stay)."""
        now = self.clock()
        current: dict[str, tuple[str, dict[str, Any]]] = {}
        by_name: dict[str, Mapping[str, Any]] = {}
        for item in items:
            name = item_name(kind, item)
            if name is not None:
                current[name] = fingerprint(kind, item)
                by_name[name] = item
        if not self.seen(server, kind):
            for name, (digest, definition) in current.items():
                self._put(server, kind, name, {"hash": digest, "definition": definition, "pinned_at": now,
                                               "removed_at": None, "pending": None, "fields": FIELDS_VERSION})
            self.store.put_state(NAMESPACE, f"{server}/#{kind}", {"first_seen": now})
            return []
        # fast path: one read per item while nothing changed
        unchanged = True
        for name, (digest, definition) in current.items():
            record = self.get(server, kind, name)
            if record is not None and record.get("hash") != digest:
                record = self._upgraded(server, kind, name, record, by_name[name], digest, definition)
            if record is None or record.get("hash") != digest or record.get("pending") or record.get("removed_at"):
                unchanged = False
                break
        if unchanged and not full:
            return []
        records = self.records(server, kind)
        # pinned items no longer listed: a new name like one of them is that item renamed. Not for
        # resources: they are data a server lists (files, notes), often many with one description
        # pattern and coming and going; a new one is pinned on sight, as a copy is still caught.
        gone = {n: r for n, r in records.items() if r.get("hash") and n not in current
                and (full or r.get("removed_at"))} if kind != "resource" else {}
        if kind == "resource":
            on_new = "pin"
        changes: list[PinChange] = []
        for name, (digest, definition) in current.items():
            record = records.get(name)
            if record is not None and record.get("hash") != digest:
                record = self._upgraded(server, kind, name, record, by_name[name], digest, definition)
            if record is None:
                changes += self._new(server, kind, name, digest, definition, records, gone, on_new, now)
            elif record.get("hash") is None and (record.get("pending") or {}).get("change") == "added" \
                    and (record.get("pending") or {}).get("hash") == digest and gone \
                    and (original := renamed_from(kind, definition, gone)) is not None:
                # seen as new before its original was known to be gone (a partial list, a call):
                # now that it is, the newcomer is the original renamed
                self._put(server, kind, name, {**record, "pending": {**record["pending"], "change": "renamed",
                                                                     "of": original}})
                changes.append(PinChange(server, kind, name, "renamed", original))
            elif record.get("hash") == digest:
                if record.get("pending") or record.get("removed_at"):
                    # back to what was pinned: nothing waits any more
                    self._put(server, kind, name, {**record, "pending": None, "removed_at": None})
            else:
                pending = record.get("pending") or {}
                if pending.get("hash") != digest:
                    of = None
                    if record.get("hash") is None:
                        change, of = pending.get("change", "added"), pending.get("of")
                    elif record.get("removed_at"):
                        change = "readded"
                    else:
                        change = pending.get("change", "changed")
                    self._put(server, kind, name, {**record, "removed_at": None, "pending": {
                        "hash": digest, "definition": definition, "change": change, "of": of, "seen_at": now}})
                    changes.append(PinChange(server, kind, name, change, of))
                elif record.get("removed_at"):
                    self._put(server, kind, name, {**record, "removed_at": None})
        if full:
            for name, record in records.items():
                if name not in current and not record.get("removed_at"):
                    self._put(server, kind, name, {**record, "removed_at": now})
        return changes

    def _upgraded(self, server: str, kind: str, name: str, record: dict[str, Any], item: Mapping[str, Any],
                  digest: str, definition: dict[str, Any]) -> dict[str, Any]:
        """A tool pin from before `outputSchema` was pinned, rewritten with today's fields if the
        definition is unchanged on the fields it was pinned on; any other record as it is."""
        if kind != "tool" or record.get("fields") or not record.get("hash") \
                or fingerprint(kind, item, _TOOL_FIELDS_V1)[0] != record["hash"]:
            return record
        upgraded = {**record, "hash": digest, "definition": definition, "fields": FIELDS_VERSION}
        self._put(server, kind, name, upgraded)
        return upgraded

    def _new(self, server: str, kind: str, name: str, digest: str, definition: dict[str, Any],
             records: Mapping[str, dict[str, Any]], gone: Mapping[str, dict[str, Any]], on_new: str,
             now: float) -> list[PinChange]:
        text = _description(definition)
        original = None
        if len(text) >= RENAME_MIN_DESCRIPTION:
            # the very description of a pinned item, whether or not that item is still listed: a copy
            original = next((other for other, r in records.items() if other != name and r.get("hash")
                             and _description(r.get("definition")) == text), None)
        if original is None and gone:
            original = renamed_from(kind, definition, gone)
        if original is None and on_new == "pin":
            self._put(server, kind, name, {"hash": digest, "definition": definition, "pinned_at": now,
                                           "removed_at": None, "pending": None, "fields": FIELDS_VERSION})
            return []
        change = "renamed" if original else "added"
        self._put(server, kind, name, {"hash": None, "definition": None, "pinned_at": None, "removed_at": None,
                                       "pending": {"hash": digest, "definition": definition, "change": change,
                                                   "of": original, "seen_at": now}})
        return [PinChange(server, kind, name, change, original)]

    def _put(self, server: str, kind: str, name: str, record: dict[str, Any]) -> None:
        self.store.put_state(NAMESPACE, pin_key(server, kind, name),
                             {"server": server, "kind": kind, "name": name, **record})

    # ------------------------------------------------------------------ a person decides

    def _matching(self, target: str) -> list[tuple[str, dict[str, Any]]]:
        server, _, name = target.partition("/")
        out = []
        for key, record in self.all().items():
            if record.get("server") != server:
                continue
            if name in ("", "*") or record.get("name") == name:
                out.append((key, record))
        return out

    def accept(self, target: str) -> list[str]:
        """Accept what is pending for SERVER or SERVER/NAME: the seen definition becomes the pin."""
        accepted = []
        for key, record in self._matching(target):
            pending = record.get("pending")
            if not pending:
                continue
            self.store.put_state(NAMESPACE, key, {**record, "hash": pending["hash"],
                                                  "definition": pending["definition"], "pinned_at": self.clock(),
                                                  "removed_at": None, "pending": None, "fields": FIELDS_VERSION})
            accepted.append(key)
        return accepted

    def forget(self, target: str) -> list[str]:
        """Drop the pins of SERVER (and its first-sight markers) or of SERVER/NAME."""
        removed = [key for key, _ in self._matching(target)]
        for key in removed:
            self.store.delete_state(NAMESPACE, key)
        server, _, name = target.partition("/")
        if name in ("", "*"):
            for kind in KINDS:
                self.store.delete_state(NAMESPACE, f"{server}/#{kind}")
        return removed


def diff(record: Mapping[str, Any], original: Mapping[str, Any] | None = None) -> str:
    """A unified diff from the pinned definition (for a renamed copy: the original's) to the pending one."""
    pending = record.get("pending") or {}

    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True).splitlines() if value else []

    before = record.get("definition")
    label = f"{record.get('server')}/{record.get('name')}"
    before_label = f"pinned {label}"
    if before is None and original is not None:
        before = original.get("definition")
        before_label = f"pinned {original.get('server')}/{original.get('name')}"
    return "\n".join(difflib.unified_diff(lines(before), lines(pending.get("definition")),
                                          before_label, f"seen {label}", lineterm=""))


__all__ = ["KINDS", "NAMESPACE", "PinBook", "PinChange", "diff", "fingerprint", "item_name", "pin_key", "renamed_from",
           "shape", "similarity"]
