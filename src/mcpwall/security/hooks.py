"""Named hooks for `preprocess` / `postprocess` rules.

A hook is a pure function over a JSON value (arguments before forwarding, or
the result before it reaches the client). An unknown hook name fails the
stage, which denies the call (fail closed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_INVISIBLE_CATEGORIES = {"Cf", "Co", "Cn"}


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def strip_invisible(text: str) -> str:
    """Remove format characters (zero-width, bidi controls, tag characters) and private-use code points."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE_CATEGORIES or ch in "\n\t\r")


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value


HOOKS: dict[str, Callable[[Any], Any]] = {
    "strip-ansi": lambda v: _map_strings(v, strip_ansi),
    "strip-invisible": lambda v: _map_strings(v, strip_invisible),
    "strip-control": lambda v: _map_strings(v, lambda s: strip_invisible(strip_ansi(s))),
}


class UnknownHook(LookupError):
    """A rule names a hook that does not exist."""


def run_hooks(names: Sequence[str], value: Any) -> Any:
    for name in names:
        hook = HOOKS.get(name)
        if hook is None:
            raise UnknownHook(f"unknown hook {name!r}; known: {', '.join(sorted(HOOKS))}")
        value = hook(value)
    return value


__all__ = ["HOOKS", "UnknownHook", "run_hooks", "strip_ansi", "strip_invisible"]
