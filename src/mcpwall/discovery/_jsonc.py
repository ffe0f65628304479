"""JSON with comments and trailing commas (VS Code's and Zed's settings), with positions.

Client configs are JSON, but VS Code and Zed settings are JSONC, and people
put comments in the others too. This parser accepts both and remembers where
every value starts and ends, so that discovery can point at the line of a
server in reports and SARIF, and `init` can replace one server's value in
place without touching the rest of the file (comments, order, formatting).

Duplicate keys keep the last value, as JavaScript's JSON.parse does (which is
what the clients run): a benign first definition cannot hide a second one.
Error messages carry positions only, never the text around them (a config may
hold secrets).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcpwall.errors import InternalError

_WS = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)+", re.S)
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_MAX_DEPTH = 200


class JsoncError(InternalError, ValueError):
    """The text is not JSON(C); the message gives line and column only."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"{message} at line {line}, column {col}")
        self.line = line


@dataclass
class Node:
    """A parsed value with its [start, end) offsets in the text."""

    value: Any
    start: int
    end: int
    #: For objects: key -> (offset of the key's opening quote, value node).
    members: dict[str, tuple[int, Node]] = field(default_factory=dict)
    items: list[Node] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        m = _WS.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        if self.text.startswith("/*", self.pos):
            raise JsoncError("unterminated comment", self.text, self.pos)

    def fail(self, message: str) -> JsoncError:
        return JsoncError(message, self.text, self.pos)

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nesting too deep")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of input")
        c = self.text[self.pos]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            return self.string()
        start = self.pos
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node(val, start, self.pos)
        m = _NUMBER.match(self.text, start)
        if m:
            self.pos = m.end()
            return Node(json.loads(m.group()), start, self.pos)
        raise self.fail("unexpected character")

    def string(self) -> Node:
        m = _STRING.match(self.text, self.pos)
        if not m:
            raise self.fail("invalid string")
        start, self.pos = self.pos, m.end()
        raw = m.group()
        if "\\" not in raw:
            return Node(raw[1:-1], start, self.pos)
        try:
            return Node(json.loads(raw), start, self.pos)
        except ValueError as exc:
            raise JsoncError("invalid string escape", self.text, start) from exc

    def obj(self, depth: int) -> Node:
        start = self.pos
        self.pos += 1
        node = Node({}, start, start)
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                break
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a key")
            key_node = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            child = self.value(depth + 1)
            key = str(key_node.value)
            node.value.pop(key, None)  # last duplicate wins, and keeps its order
            node.value[key] = child.value
            node.members.pop(key, None)
            node.members[key] = (key_node.start, child)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                break
            raise self.fail("expected ',' or '}'")
        node.end = self.pos
        return node

    def arr(self, depth: int) -> Node:
        start = self.pos
        self.pos += 1
        node = Node([], start, start)
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                break
            child = self.value(depth + 1)
            node.value.append(child.value)
            node.items.append(child)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                break
            raise self.fail("expected ',' or ']'")
        node.end = self.pos
        return node


def parse(text: str) -> Node:
    """Parse JSON or JSONC; raises JsoncError with a position on bad input."""
    if text.startswith("\ufeff"):
        text = " " + text[1:]
    p = _Parser(text)
    node = p.value(0)
    p.skip()
    if p.pos != len(text):
        raise p.fail("unexpected text after the value")
    return node


def find(node: Node, path: tuple[str | int, ...]) -> tuple[int, Node] | None:
    """(offset of the key, node) at a key path, or None."""
    key_at = node.start
    for part in path:
        if isinstance(part, int):
            if part >= len(node.items):
                return None
            node = node.items[part]
            key_at = node.start
        else:
            member = node.members.get(part)
            if member is None:
                return None
            key_at, node = member
    return key_at, node


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def render_like(text: str, node: Node, value: Any) -> str:
    """`value` as JSON, indented to sit where `node` is in `text`."""
    line_start = text.rfind("\n", 0, node.start) + 1
    indent = re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]
    unit = "\t" if indent.startswith("\t") else "  "
    body = json.dumps(value, indent=2, ensure_ascii=False)
    if unit == "\t":
        body = re.sub(r"(?m)^((?:  )+)", lambda m: "\t" * (len(m.group(1)) // 2), body)
    return body.replace("\n", "\n" + indent)


def replace(text: str, path: tuple[str | int, ...], value: Any) -> str:
    """The text with the value at `path` replaced; everything else is kept byte for byte."""
    found = find(parse(text), path)
    if found is None:
        raise KeyError(path)
    _, node = found
    return text[:node.start] + render_like(text, node, value) + text[node.end:]


__all__ = ["JsoncError", "Node", "find", "line_of", "parse", "render_like", "replace"]
