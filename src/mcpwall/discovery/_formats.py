"""Reading a config file whatever its format, without ever failing the scan.

`read_document()` classifies a file as unreadable, binary, empty or
malformed (each becomes a finding in the report) or returns a `Document`:
the parsed data plus a way to find the line of any key path, which reports
and SARIF point at. JSON files are parsed by the C parser when they are
strict JSON and by the JSONC parser otherwise; TOML by tomllib; YAML by
PyYAML's safe loader (no tags that construct objects); JetBrains XML by
ElementTree after refusing any DTD (no entity tricks).

Error messages are built from positions only: PyYAML's and others' messages
quote the offending line, which may hold a secret.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import yaml

from mcpwall.discovery import _jsonc
from mcpwall.errors import InternalError

#: PyYAML's safe loader, in C when libyaml is there (a scan of many YAML configs is 10x faster).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Files larger than this are not read (a config file is kilobytes; ~/.claude.json can be megabytes).
MAX_BYTES = 32 * 1024 * 1024
#: Above this size, line numbers of JSON keys are not computed (the span parser is pure Python).
SPAN_LIMIT = 4 * 1024 * 1024


class ReadProblem(InternalError):
    """Why a file could not be used: status is unreadable, binary, empty, malformed or unsupported."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Document:
    """A parsed config file."""

    path: Path
    fmt: str
    text: str
    data: Any
    _spans: Any = field(default=None, repr=False)

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        """The 1-based line where the key at `path` is written, when it can be told."""
        try:
            if self.fmt == "json":
                return self._json_line(path)
            if self.fmt == "yaml":
                if self._spans is None:
                    self._spans = yaml.compose(self.text, Loader=_LOADER)
                return _yaml_line(self._spans, path)
            if self.fmt == "toml":
                if self._spans is None:
                    self._spans = toml_tables(self.text)
                return _toml_line(self._spans, path)
        except Exception:  # a line number is a nicety; never let it fail a scan
            return None
        return None

    def _json_line(self, path: tuple[str | int, ...]) -> int | None:
        if len(self.text) > SPAN_LIMIT:
            return None
        if self._spans is None:
            self._spans = _jsonc.parse(self.text)
        found = _jsonc.find(self._spans, path)
        return _jsonc.line_of(self.text, found[0]) if found else None


def fmt_for(path: Path, shape: str) -> str:
    if shape == "jetbrains_xml" or path.suffix.lower() == ".xml":
        return "xml"
    if path.suffix.lower() == ".toml":
        return "toml"
    if path.suffix.lower() in (".yaml", ".yml"):
        return "yaml"
    return "json"


def read_text(path: Path) -> str:
    """The file as text, or ReadProblem (unreadable, binary, empty)."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except PermissionError as exc:
        raise ReadProblem("unreadable", f"permission denied ({exc.strerror or 'EACCES'})") from exc
    except IsADirectoryError as exc:
        raise ReadProblem("unreadable", "is a directory") from exc
    except OSError as exc:
        raise ReadProblem("unreadable", f"cannot read: {exc.strerror or type(exc).__name__}") from exc
    if len(raw) > MAX_BYTES:
        raise ReadProblem("unsupported", f"larger than {MAX_BYTES // (1024 * 1024)} MiB; not read")
    if b"\x00" in raw:
        raise ReadProblem("binary", "binary content (NUL bytes); not a text config file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadProblem("binary", f"not UTF-8 text (invalid byte at offset {exc.start})") from exc
    if not text.strip():
        raise ReadProblem("empty", "empty file")
    return text


def read_document(path: Path, fmt: str) -> Document:
    text = read_text(path)
    try:
        data = _parse(text, fmt)
    except ReadProblem:
        raise
    except Exception as exc:
        raise ReadProblem("malformed", _describe(exc, fmt)) from None
    return Document(path, fmt, text, data)


def _parse(text: str, fmt: str) -> Any:
    if fmt == "json":
        try:
            return json.loads(text)
        except ValueError:
            return _jsonc.parse(text).value
    if fmt == "toml":
        return tomllib.loads(text)
    if fmt == "yaml":
        data = yaml.load(text, Loader=_LOADER)  # a safe loader: libyaml's when available
        _check_expansion(data)
        return data
    if fmt == "xml":
        if re.search(r"<!(DOCTYPE|ENTITY)", text, re.I):
            raise ReadProblem("unsupported", "XML with a DTD or entities is not read")
        return ElementTree.fromstring(text)
    raise ReadProblem("unsupported", f"unknown format {fmt}")


def _check_expansion(data: Any, budget: int = 200_000) -> None:
    """Refuse YAML whose aliases expand into a huge or cyclic structure (billion laughs)."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > budget or depth > 100:
            raise ReadProblem("unsupported", "YAML too large or too deep once its aliases are expanded")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
            stack.extend((k, depth + 1) for k in value)
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _describe(exc: Exception, fmt: str) -> str:
    """A one-line reason with a position and without any quoted file content."""
    if isinstance(exc, _jsonc.JsoncError):
        return f"invalid JSON: {exc}"
    if isinstance(exc, tomllib.TOMLDecodeError):
        m = re.search(r"\(at (line \d+, column \d+)\)", str(exc))
        return f"invalid TOML{' at ' + m.group(1) if m else ''}"
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"invalid YAML: {exc.problem or 'syntax error'}{where}"
    if isinstance(exc, yaml.YAMLError):
        return "invalid YAML"
    if isinstance(exc, ElementTree.ParseError):
        line, col = getattr(exc, "position", (0, 0))
        return f"invalid XML at line {line}, column {col + 1}"
    if isinstance(exc, RecursionError):
        return f"invalid {fmt.upper()}: nesting too deep"
    return f"invalid {fmt.upper()}"


# -- line numbers for TOML and YAML ------------------------------------------------------------

_TOML_KEY = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_TOML_HEADER = re.compile(r"^[ \t]*\[(?!\[)[ \t]*(" + _TOML_KEY + r"(?:[ \t]*\.[ \t]*" + _TOML_KEY
                          + r")*)[ \t]*\][ \t]*(?:#.*)?$")
_TOML_ANY_HEADER = re.compile(r"^[ \t]*\[")


def toml_key_path(header: str) -> tuple[str, ...]:
    """The key path of a TOML table header's inside (`mcp_servers."my server"`)."""
    parts = re.findall(_TOML_KEY, header)
    out = []
    for p in parts:
        if p.startswith('"'):
            out.append(json.loads(p))
        elif p.startswith("'"):
            out.append(p[1:-1])
        else:
            out.append(p)
    return tuple(out)


def toml_tables(text: str) -> list[tuple[int, tuple[str, ...] | None]]:
    """(line index, key path or None for array tables) for each table header, outside multi-line strings."""
    out: list[tuple[int, tuple[str, ...] | None]] = []
    in_string: str | None = None
    for i, line in enumerate(text.splitlines()):
        if in_string is None:
            m = _TOML_HEADER.match(line)
            if m:
                out.append((i, toml_key_path(m.group(1))))
            elif _TOML_ANY_HEADER.match(line):
                out.append((i, None))
        for quote in re.findall(r'"""|\'\'\'', line):
            if in_string is None:
                in_string = quote
            elif in_string == quote:
                in_string = None
    return out


def toml_line(text: str, path: tuple[str | int, ...]) -> int | None:
    return _toml_line(toml_tables(text), path)


def _toml_line(tables: list[tuple[int, tuple[str, ...] | None]], path: tuple[str | int, ...]) -> int | None:
    want = tuple(str(p) for p in path)
    for index, key in tables:
        if key == want:
            return index + 1
    return None


def _yaml_line(node: Any, path: tuple[str | int, ...]) -> int | None:
    line = None
    for part in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return None
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return None
    return line


__all__ = ["Document", "ReadProblem", "fmt_for", "read_document", "read_text", "toml_key_path", "toml_line",
           "toml_tables"]
