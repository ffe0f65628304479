"""Which of several Python regexes can match a text, in one RE2 pass.

A detector that runs a dozen `re` searches over every string of every call pays for each one
although almost no text matches any (the judge's heuristics: ~70 searches and 40 us a call).
One RE2 set over the same patterns says which can match; only those run in Python, for the
match object the detector reports. The answer must never miss a match Python would find, so a
text is screened only where the two engines agree on every pattern the set holds: ASCII (Python's
`\\w`, `\\b`, `\\d` and case folding are Unicode-wide, RE2's are not), none of the characters
Python's `\\s` takes and RE2's does not (vertical tab, the separators 0x1c-0x1f), and no newline
at its end (Python's `$` also matches before one). Patterns RE2 cannot take (lookarounds,
backreferences, verbose mode) are screened by the pattern with its lookarounds left out, which
matches wherever the pattern does; one RE2 cannot take even so always runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import re2

from mcpwall._re2 import search_set

#: where the engines may disagree on a text (see the module's docstring)
_UNSCREENABLE = re.compile(r"[\x0b\x1c-\x1f]|\n\Z")
#: a pattern RE2 refuses is expected here (it runs in Python): not an error to log
_QUIET = re2.Options()
_QUIET.log_errors = False


def _re2_source(rx: re.Pattern[str]) -> str | None:
    """The pattern as RE2 takes it: as written, else with its lookarounds left out (a looser
    pattern, so a screen of it can only say "may match" more often, never less), else None."""
    if rx.flags & re.VERBOSE:
        return None
    flags = "".join(f for bit, f in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s")) if rx.flags & bit)
    for pattern in dict.fromkeys((rx.pattern, _without_lookarounds(rx.pattern))):
        if pattern is None:
            continue
        source = f"(?{flags}){pattern}" if flags else pattern
        try:
            re2.compile(source, _QUIET)
        except re2.error:
            continue
        return source
    return None


def _without_lookarounds(pattern: str) -> str | None:
    """`pattern` with each `(?=...)`, `(?!...)`, `(?<=...)` and `(?<!...)` taken out whole. An
    assertion only ever narrows where a match may be, so what is left matches wherever the pattern
    does. None when the pattern cannot be read so (an unbalanced group)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            end = _group_end(pattern, i)
            if end is None:
                return None
            i = end
            continue
        step = _atom_end(pattern, i)
        out.append(pattern[i:step])
        i = step
    return "".join(out)


def _atom_end(pattern: str, i: int) -> int:
    """Where the atom at `i` ends for scanning: an escape is two characters, a class runs to its `]`."""
    if pattern[i] == "\\":
        return min(i + 2, len(pattern))
    if pattern[i] == "[":
        j = i + 1
        if j < len(pattern) and pattern[j] == "^":
            j += 1
        if j < len(pattern) and pattern[j] == "]":
            j += 1  # a ] first in a class is a character
        while j < len(pattern) and pattern[j] != "]":
            j += 2 if pattern[j] == "\\" else 1
        return min(j + 1, len(pattern))
    return i + 1


def _group_end(pattern: str, start: int) -> int | None:
    """The index after the `)` closing the group opened at `start`, or None."""
    depth, i = 0, start
    while i < len(pattern):
        c = pattern[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i = _atom_end(pattern, i) if c in "\\[" else i + 1
    return None


class Prefilter:
    """`screen(text)`: the patterns that may match `text`, or None when it cannot say (run them all)."""

    __slots__ = ("_always", "_match", "_patterns")

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        screened: list[re.Pattern[str]] = []
        sources: list[str] = []
        always: list[re.Pattern[str]] = []
        for rx in dict.fromkeys(patterns):
            source = _re2_source(rx)
            if source is None:
                always.append(rx)
            else:
                screened.append(rx)
                sources.append(source)
        self._patterns = tuple(screened)
        self._always = frozenset(always)
        self._match = search_set(sources) if sources else None

    def screen(self, text: str) -> frozenset[re.Pattern[str]] | None:
        if self._match is None or not text.isascii() or _UNSCREENABLE.search(text) is not None:
            return None
        hits = self._match(text.encode())
        if not hits:
            return self._always
        patterns = self._patterns
        return self._always.union(patterns[i] for i in hits)


__all__ = ["Prefilter"]
