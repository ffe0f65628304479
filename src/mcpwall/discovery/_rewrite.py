"""Editing one server entry inside a client config, leaving the rest of the file alone.

`init` changes a few entries in files the user wrote by hand (comments,
order, other settings). Each format is edited in place: JSON/JSONC by
replacing the entry's value between its offsets, TOML by replacing the
entry's tables (`[mcp_servers.NAME]` and its sub-tables), YAML by replacing
the entry's node with a one-line flow mapping. Every edit is then verified:
the new text must parse to exactly the old data with only those entries
changed, or the file is not touched.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from typing import Any

import yaml

from mcpwall.discovery import _jsonc
from mcpwall.discovery._formats import toml_tables
from mcpwall.errors import InternalError

Path_ = tuple[str | int, ...]


class NotEditable(InternalError):
    """This entry cannot be rewritten in place (the reason is the message)."""


def edit_text(text: str, fmt: str, edits: Sequence[tuple[Path_, dict[str, Any]]]) -> str:
    """The text with each (key path, new entry) applied, verified by re-parsing."""
    try:
        return _edit_text(text, fmt, edits)
    except NotEditable:
        raise
    except (ValueError, KeyError, IndexError, TypeError, yaml.YAMLError) as exc:
        raise NotEditable(f"could not rewrite in place ({type(exc).__name__}); left unchanged") from exc


def _edit_text(text: str, fmt: str, edits: Sequence[tuple[Path_, dict[str, Any]]]) -> str:
    if fmt == "json":
        new = _json_edit(text, edits)
        before, after = _jsonc.parse(text).value, _jsonc.parse(new).value
    elif fmt == "toml":
        new = text
        for path, value in edits:
            new = _toml_edit(new, path, value)
        before, after = tomllib.loads(text), tomllib.loads(new)
    elif fmt == "yaml":
        new = text
        for path, value in edits:
            new = _yaml_edit(new, path, value)
        before, after = yaml.safe_load(text), yaml.safe_load(new)
    else:
        raise NotEditable(f"{fmt} files are not rewritten (configure these servers in the client's settings)")
    expected = copy.deepcopy(before)
    for path, value in edits:
        _set(expected, path, value)
    if after != expected:
        raise NotEditable("the rewritten file did not read back as intended; left unchanged")
    return new


def _set(data: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


# -- JSON --------------------------------------------------------------------------------------

def _json_edit(text: str, edits: Sequence[tuple[Path_, dict[str, Any]]]) -> str:
    root = _jsonc.parse(text)
    spans = []
    for path, value in edits:
        found = _jsonc.find(root, path)
        if found is None:
            raise NotEditable(f"entry {'.'.join(map(str, path))} not found")
        node = found[1]
        spans.append((node.start, node.end, _jsonc.render_like(text, node, value)))
    for start, end, body in sorted(spans, reverse=True):
        text = text[:start] + body + text[end:]
    return text


# -- TOML --------------------------------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key, ensure_ascii=False)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }" \
            if value else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise NotEditable(f"cannot write a {type(value).__name__} to TOML")


def toml_table(path: Path_, value: Mapping[str, Any]) -> list[str]:
    lines = ["[" + ".".join(toml_key(str(p)) for p in path) + "]"]
    lines += [f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()]
    return lines


def _toml_edit(text: str, path: Path_, value: Mapping[str, Any]) -> str:
    want = tuple(str(p) for p in path)
    lines = text.splitlines(keepends=True)
    tables = toml_tables(text)
    owned: list[tuple[int, int]] = []
    main: int | None = None
    for i, (line_no, key) in enumerate(tables):
        if key is None or key[:len(want)] != want:
            continue
        end = tables[i + 1][0] if i + 1 < len(tables) else len(lines)
        while end > line_no + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # blank lines and comments before the next table belong to it
        owned.append((line_no, end))
        if key == want:
            main = line_no
    if main is None:
        raise NotEditable(f"[{'.'.join(want)}] is not written as its own table; edit it by hand")
    newline = "\r\n" if "\r\n" in text else "\n"
    block = [line + newline for line in toml_table(path, value)]
    out: list[str] = []
    for i, line in enumerate(lines):
        if i == main:
            out.extend(block)
        if any(start <= i < end for start, end in owned):
            continue
        out.append(line)
    return "".join(out)


# -- YAML --------------------------------------------------------------------------------------

def _yaml_end(node: yaml.Node) -> int:
    """Where a node's own text ends (block collections end at their last value, not at the next key)."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return int(node.end_mark.index)
    if isinstance(node, yaml.MappingNode) and node.value:
        return _yaml_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value:
        return _yaml_end(node.value[-1])
    return int(node.end_mark.index)


def _yaml_edit(text: str, path: Path_, value: Any) -> str:
    node = yaml.compose(text)
    if node is None:
        raise NotEditable("empty YAML document")
    for part in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    node = v
                    break
            else:
                raise NotEditable(f"entry {'.'.join(map(str, path))} not found")
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            raise NotEditable(f"entry {'.'.join(map(str, path))} not found")
    start, end = int(node.start_mark.index), _yaml_end(node)
    return text[:start] + json.dumps(value, ensure_ascii=False) + text[end:]


__all__ = ["NotEditable", "edit_text", "toml_key", "toml_table", "toml_value"]
