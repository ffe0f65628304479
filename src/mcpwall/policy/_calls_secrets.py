"""Secrets leaving in a call's arguments (`secrets_out`): who finds them, and which texts are worth asking.

Secrets are found by the DLP detectors of `mcpwall.security` (a layer above this one):
`mcpwall.security.calls` installs its finder with `set_secret_finder` when imported, and
`secret_finder()` imports it on first use, so every caller of `prepare` gets the same facts.

Most argument texts hold no secret, and asking the detectors costs a microsecond or more a text.
`may_hold_secret` is the one cheap test in front of them, and the finder's contract: a finder
reports nothing in a text it turns down. A secret the detectors know has one of `MAYBE_SECRET`'s
shapes; a seed phrase needs twelve words (eleven separators); an environment dump needs `=` and a
line break or NUL.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Final

#: The types of the secrets in a text (`mcpwall.security.calls.secret_types`).
SecretFinder = Callable[[str], tuple[str, ...]]
_FINDER: list[SecretFinder | None] = [None]
#: Whether a text of plain words holds a wallet's seed phrase (`mcpwall.security.calls.seed_phrase`).
_SEED: list[Callable[[str], bool] | None] = [None]

#: What any secret the DLP detectors find has somewhere: a run of 16 token characters (not counting `/`
#: and `.`, so that paths and host names do not count), an armour or PuTTY line, an assignment of 8
#: characters or more, a password in a URL, a Slack webhook, a JWT.
MAYBE_SECRET: Final = re.compile(
    r"[A-Za-z0-9+=_~-]{16}|BEGIN|Private-Lines|[=:]\s*[\"']?[^\s\"'/]{8}|"
    r"://[^\s/@]+:[^\s/@]+@|hooks\.slack\.com|eyJ"
)
#: The fewest separators between the words of a seed phrase (BIP-39: 12 words or more).
SEED_SEPARATORS: Final = 11


def set_secret_finder(finder: SecretFinder | None, seed: Callable[[str], bool] | None = None) -> None:
    """Install the function that names the secrets in a text and the one that finds a seed phrase in plain
    words (None: the defaults, on next use). The finder is asked only about texts `may_hold_secret` keeps."""
    _FINDER[0] = finder
    _SEED[0] = seed


def secret_finder() -> SecretFinder:
    finder = _FINDER[0]
    if finder is None:
        # The DLP detectors live in mcpwall.security, above the policy layer: importing the module
        # installs them (`set_secret_finder`), once per process.
        importlib.import_module("mcpwall.security.calls")
        finder = _FINDER[0]
        if finder is None:  # pragma: no cover - the module always installs one
            raise RuntimeError("mcpwall.security.calls installed no secret finder")
    return finder


def seed_finder() -> Callable[[str], bool] | None:
    seed = _SEED[0]
    if seed is None:
        secret_finder()
        seed = _SEED[0]
    return seed


def may_hold_secret(text: str) -> bool:
    """Whether the detectors could find anything in `text` (see the module's docstring)."""
    if MAYBE_SECRET.search(text) is not None:
        return True
    if "=" in text and ("\n" in text or "\x00" in text):
        return True
    return text.count(" ") + text.count("\n") + text.count(",") >= SEED_SEPARATORS


def secret_facts(text: str) -> tuple[str, ...]:
    """The types of the secrets in one argument text (none in a text shorter than 8 characters)."""
    if len(text) < 8 or not may_hold_secret(text):
        return ()
    return secret_finder()(text)


def seed_only(text: str) -> bool:
    """Whether a text that can hold no other secret (no `MAYBE_SECRET` shape) holds a seed phrase."""
    if text.count(" ") + text.count(",") < SEED_SEPARATORS:
        return False
    seed = seed_finder()
    return seed is not None and seed(text)


__all__ = [
    "MAYBE_SECRET",
    "SEED_SEPARATORS",
    "SecretFinder",
    "may_hold_secret",
    "secret_facts",
    "secret_finder",
    "seed_finder",
    "seed_only",
    "set_secret_finder",
]
