"""Secrets inside a tool result, as `mcpwall inspect` reports them.

The gateway's DLP stage masks secrets in every result it relays; a saved
result read by `mcpwall inspect` has no gateway in front of it, so the same
detectors (`mcpwall.security.dlp.Scanner`) report them as findings there: a
server author's CI learns that a tool leaks a key, a person auditing a
transcript learns which call did. Evidence names the type and where, never
the secret.

The two catch-alls DLP also uses on arguments only with care, long random
runs and card numbers, are left out: results are full of hashes, ids and
sample numbers, and a finding here should mean a credential.
"""

from __future__ import annotations

import functools
from typing import Any

from mcpwall.security.dlp import Scanner

#: Types that are a finding only at medium: a generic `secret = ...` assignment may be a sample value.
_MEDIUM = frozenset({"secret", "api-key", "url-secret", "db-password"})


@functools.lru_cache(maxsize=1)
def _scanner() -> Scanner:
    return Scanner(disabled=("high-entropy", "credit-card"))


def secrets_in(result: Any) -> list[tuple[str, str, str]]:
    """(type, JSON path, severity) of each secret in a tool result, first of each type and path."""
    seen: dict[tuple[str, str], str] = {}
    for found in _scanner().findings(result, "result"):
        seen.setdefault((found.type, found.path), "medium" if found.type in _MEDIUM else "high")
    return [(kind, path, severity) for (kind, path), severity in seen.items()]


__all__ = ["secrets_in"]
