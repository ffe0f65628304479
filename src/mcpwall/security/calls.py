"""Secrets leaving in a call's arguments: the `secrets_out` facts of the policy (issue 25).

The policy layer (`mcpwall.policy._calls`) asks `secret_types(text)` for each
argument text it has not seen before; importing this module installs it there.
It reuses the DLP detectors that mask results (`dlp.Scanner`: keys, tokens,
JWTs, private keys by their content with or without a BEGIN line, passwords
in URLs, and the same in base64, hex, percent-escaped or compressed form) and
adds what only matters on the way out:

- `seed-phrase`: a run of 12 or more BIP-39 words (a wallet's recovery phrase,
  numbered or not, separated by blanks, commas or newlines);
- `env-dump`: a process environment (`env`, `printenv`, `/proc/self/environ`
  output): four or more `NAME=value` lines or NUL-separated entries among
  which the usual variables (PATH, HOME, USER, SHELL...) appear.

`high-entropy` is reported as DLP finds it (random material of 32 characters
or more that is not a digest, an id or encoded prose); the policy makes it a
secret going out only when the call also reaches a network sink.
Card numbers are left alone in arguments, as the DLP stage does.
"""

from __future__ import annotations

import re
from typing import Final

from mcpwall.policy._calls import set_secret_finder
from mcpwall.policy._calls_secrets import MAYBE_SECRET
from mcpwall.security._bip39 import WORDS
from mcpwall.security.dlp import Scanner

#: The fewest words of a seed phrase (BIP-39: 12, 15, 18, 21 or 24).
SEED_WORDS: Final = 12
_ENV_LINE = re.compile(r"(?m)^(?:export\s+|declare -x\s+)?([A-Z_][A-Z0-9_]{0,63})=")
_ENV_USUAL: Final = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "SHELL",
        "PWD",
        "HOSTNAME",
        "LANG",
        "TERM",
        "LOGNAME",
        "OLDPWD",
        "SHLVL",
        "TMPDIR",
        "MAIL",
        "PS1",
        "USERNAME",
        "USERPROFILE",
        "APPDATA",
    }
)

_SCANNER: list[Scanner] = []


def _scanner() -> Scanner:
    if not _SCANNER:
        _SCANNER.append(Scanner(disabled=["credit-card"]))
    return _SCANNER[0]


def seed_phrase(text: str) -> bool:
    """Whether `text` holds a run of SEED_WORDS or more BIP-39 words (numbering like `1.` or `2)` between
    them, commas and line breaks do not break a run)."""
    if text.count(" ") + text.count("\n") + text.count(",") < SEED_WORDS - 1:
        return False
    words = text.lower().replace(",", " ").split()
    if len(words) < SEED_WORDS:
        return False
    run = 0
    left = len(words)
    for word in words:
        left -= 1
        if word in WORDS:
            run += 1
            if run >= SEED_WORDS:
                return True
        elif not word.rstrip(".):").isdigit():
            if left < SEED_WORDS:
                return False  # too few words left for a run
            run = 0
    return False


def env_dump(text: str) -> bool:
    """Whether `text` is (or holds) a process environment: several `NAME=value` entries, some usual ones."""
    if "=" not in text or ("\n" not in text and "\x00" not in text):
        return False
    names = _ENV_LINE.findall(text.replace("\x00", "\n"))
    return len(names) >= 4 and len(_ENV_USUAL.intersection(names)) >= 2


def secret_types(text: str) -> tuple[str, ...]:
    """The types of the secrets in one argument text, each once, in the order found."""
    found = [kind for _, _, kind, _ in _scanner().spans(text)] if MAYBE_SECRET.search(text) else []
    if seed_phrase(text):
        found.append("seed-phrase")
    if env_dump(text):
        found.append("env-dump")
    return tuple(dict.fromkeys(found))


set_secret_finder(secret_types, seed_phrase)

__all__ = ["SEED_WORDS", "env_dump", "secret_types", "seed_phrase"]
