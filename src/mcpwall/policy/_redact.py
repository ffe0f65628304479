"""Applying a decision's redaction to the arguments that are forwarded."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import orjson


def redact_arguments(arguments: Mapping[str, Any], paths: Collection[str]) -> dict[str, Any]:
    """A copy of `arguments` without the keys at `paths` (as in `Decision.redacted_keys`).

    Paths use the same spelling as the policy facts: `a.b` for nested keys, `a[0].b`
    inside lists, and `a#json.b` inside JSON carried in the string `a` (which is then
    forwarded re-serialised, without the key). Nothing else is changed.
    """
    drop = frozenset(paths)
    result = _strip(arguments, "", drop) if drop else dict(arguments)
    assert isinstance(result, dict)
    return result


def _strip(value: Any, prefix: str, drop: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if path in drop:
                continue
            out[k] = _strip(v, path, drop)
        return out
    if isinstance(value, list):
        return [_strip(v, f"{prefix}[{i}]", drop) for i, v in enumerate(value)]
    if isinstance(value, str) and value[:1] in ("{", "["):
        inside = f"{prefix}#json"
        if any(p.startswith((f"{inside}.", f"{inside}[")) for p in drop):
            # The facts found the keys by parsing this string with orjson; parse it the same way.
            return orjson.dumps(_strip(orjson.loads(value), inside, drop)).decode()
    return value


__all__ = ["redact_arguments"]
