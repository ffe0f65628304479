"""Walking JSON values: every string with its path, at any depth.

Shared by the detectors that look inside tool arguments and results. Paths use
the familiar `a.b[0].c` form; a string that itself holds JSON is entered with a
`{json}` step (`content[0].text{json}.db.password`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

try:  # (mypyc's own marks; without mypy installed the module runs as Python and needs none)
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover
    def mypyc_attr(*_: str, **__: object) -> Any:  # type: ignore[misc]
        return lambda cls: cls

MAX_DEPTH = 32


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def strings(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str, str]]:
    """(path, key, text) for every string at every depth; numbers are skipped."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        yield path, path.rsplit(".", 1)[-1].split("[", 1)[0], value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, join(path, str(k)), depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from strings(v, join(path, i), depth + 1)


@mypyc_attr(native_class=False)  # (a list subclass: mypyc compiles only the functions around it)
class Flat(list[tuple[str, str, str]]):
    """(path, key, text) of every string of one value, in `strings`' order. `plain`: the value held
    only dicts and lists down to `MAX_DEPTH` (a JSON document's shape), so a walk of it meets no string
    this list leaves out."""

    # A class default, set on the instance only when False: a list subclass with an `__init__` of its
    # own (and `__slots__`) cost ~2,400 instructions to build from compiled code, twice a call; without,
    # it is built as a list is.
    plain: bool = True


def flatten(value: Any) -> Flat:
    """`list(strings(value))`, built by one recursion that appends instead of a generator per level:
    what a message's stages share (`stages._kit.flat`) instead of each walking the value again."""
    out = Flat()
    _flatten(value, "", "", 0, out)
    return out


def _flatten(value: Any, path: str, key: str, depth: int, out: Flat) -> None:
    # `key` is what `strings` derives from the path (its last name, a list's items share their
    # list's), passed down instead of split out of every path.
    if depth > MAX_DEPTH:
        out.plain = False
        return
    if isinstance(value, str):
        out.append((path, key, value))
    elif isinstance(value, dict):
        for k, v in value.items():
            name = str(k)
            sub = f"{path}.{name}" if path else name
            if "." in name or "[" in name:
                _flatten(v, sub, sub.rsplit(".", 1)[-1].split("[", 1)[0], depth + 1, out)
            else:
                _flatten(v, sub, name, depth + 1, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", key, depth + 1, out)
    elif isinstance(value, tuple):
        out.plain = False
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", key, depth + 1, out)


_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")


def decodings(text: str) -> Iterator[str]:
    """Texts hidden in `text` by common encodings: percent, base64 (std and URL-safe), hex.

    Used on outgoing arguments, where an agent told to exfiltrate a secret may
    encode it first. One level deep; each decoded text is yielded once.
    """
    seen: set[str] = set()
    if "%" in text:
        decoded = unquote(text)
        if decoded != text:
            seen.add(decoded)
            yield decoded
    for m in _B64_RUN.finditer(text):
        run = m.group(0)
        raw = run.replace("-", "+").replace("_", "/")
        raw += "=" * (-len(raw.rstrip("=")) % 4) if "=" not in raw else ""
        try:
            out = base64.b64decode(raw, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue
        if out and out not in seen and (out.isprintable() or "\n" in out):
            seen.add(out)
            yield out
    for m in _HEX_RUN.finditer(text):
        try:
            out = bytes.fromhex(m.group(0)).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        if out not in seen and out.isprintable():
            seen.add(out)
            yield out


__all__ = ["MAX_DEPTH", "Flat", "decodings", "flatten", "join", "strings"]
