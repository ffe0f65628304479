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
import re
from typing import Any

from mcpwall.security.dlp import Scanner

#: Types that are a finding only at medium: a generic `secret = ...` assignment may be a sample value.
_MEDIUM = frozenset({"secret", "api-key", "url-secret", "db-password"})


#: A documented example or a placeholder, not a credential: AWS's documentation keys end in EXAMPLE
#: (AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY: in countless READMEs and fixtures, and
#: allowlisted by gitleaks and GitHub secret scanning), and templates fill a key with one repeated
#: filler character (sk_test_xxxxxxxx, 00000000, ********). A generated key holds neither: a run of six of
#: these in 40 random characters is rarer than one in a million. A private key is never a placeholder (its
#: base64 holds runs of A and 0 for zero bytes). The gateway's DLP stage still masks them all.
_PLACEHOLDER = re.compile(r"EXAMPLE|([xX0*#.])\1{5}")


def placeholder(kind: str, secret: str) -> bool:
    """Whether `secret` (of type `kind`) is a documented example key or a template's placeholder."""
    return kind != "private-key" and _PLACEHOLDER.search(secret) is not None


@functools.lru_cache(maxsize=1)
def _scanner() -> Scanner:
    return Scanner(disabled=("high-entropy", "credit-card"))


def secrets_in(result: Any) -> list[tuple[str, str, str]]:
    """(type, JSON path, severity) of each secret in a tool result, first of each type and path."""
    seen: dict[tuple[str, str], str] = {}
    for found in _scanner().findings(result, "result"):
        if placeholder(found.type, found.secret):
            continue
        seen.setdefault((found.type, found.path), "medium" if found.type in _MEDIUM else "high")
    return [(kind, path, severity) for (kind, path), severity in seen.items()]


__all__ = ["secrets_in"]
