"""Matching texts against rule values, fast.

Seatbelt policies are written in JavaScript regex syntax. We compile each value
with RE2 (google-re2) where its syntax allows: RE2's `$` means end of text as in
JavaScript, it has no catastrophic backtracking, and an `RE2::Set` answers
"which of these N patterns match?" in one pass, which is what the per-call plan
in `_plan.py` needs. Measured here: Python `re` with IGNORECASE spends 2-16 us
on one of the default policy's rules against a tool description; one RE2 Set
over all of a call's rules costs about 1.2 us per text (bench/policy_eval.py).

Values RE2 cannot parse (lookaround, backreferences) fall back to Python `re`,
with `$` rewritten to `\\Z` so that both engines agree with JavaScript.

The fast path's sets (`PatternSet.mask`) go through `_re2set.cpp`, a thin
binding of the same RE2::Set, when the native build has it: google-re2's
pybind11 binding costs ~1,100 ns a text here, the thin one ~310.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence

import re2

_JS_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")


def js_to_python(source: str) -> str:
    """JavaScript regex source to Python `re` syntax (named groups, `$`)."""
    source = _JS_NAMED_GROUP.sub("(?P<", source)
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source):
            out.append(source[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "$":
            ch = r"\Z"
        out.append(ch)
        i += 1
    return "".join(out)


def js_to_re2(source: str) -> str:
    return _JS_NAMED_GROUP.sub("(?P<", source)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20
#: a value RE2 cannot parse falls back to Python `re` (or is reported with file:line): RE2 must not
#: also print its own absl lines on stderr ahead of that
_RE2_OPTIONS.log_errors = False


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def re2_pattern(value: str, match: str, ignore_case: bool) -> str | None:
    """The RE2 source for one rule value, or None when RE2 cannot parse it."""
    if match == "contains":
        source = str(re2.escape(value))
    elif match == "exact":
        source = r"\A" + str(re2.escape(value)) + r"\z"
    else:
        source = js_to_re2(value)
    if ignore_case:
        source = "(?i)" + source
    try:
        probe = re2.Set.SearchSet(_RE2_OPTIONS)
        probe.Add(source)
    except re2.error:
        return None
    return source


class Matcher:
    """Answers "does this text match any of the rule's values?"."""

    __slots__ = ("fallback", "patterns", "set")

    def __init__(self, values: Sequence[str], match: str, ignore_case: bool) -> None:
        patterns: list[str] = []
        fallback: list[re.Pattern[str]] = []
        flags = re.ASCII | (re.IGNORECASE if ignore_case else 0)
        for value in values:
            pattern = re2_pattern(value, match, ignore_case)
            if pattern is not None:
                patterns.append(pattern)
            else:  # raises re.error for a value neither engine accepts
                fallback.append(re.compile(js_to_python(value), flags))
        self.patterns: tuple[str, ...] = tuple(patterns)
        self.fallback: tuple[re.Pattern[str], ...] = tuple(fallback)
        self.set: object | None = None
        if patterns:
            rs = re2.Set.SearchSet(_RE2_OPTIONS)
            for p in patterns:
                rs.Add(p)
            rs.Compile()
            self.set = rs._set

    @staticmethod
    def check(value: str, match: str) -> str | None:
        """Why a value is unusable in either engine, or None."""
        if match != "pattern" or re2_pattern(value, match, False) is not None:
            return None
        try:
            re.compile(js_to_python(value), re.ASCII)
        except re.error as exc:
            return str(exc)
        return None

    def hit(self, text: str) -> bool:
        if self.set is not None and self.set.Match(encode(text)):  # type: ignore[attr-defined]
            return True
        return any(p.search(text) for p in self.fallback)


def native_sets() -> Callable[[tuple[str, ...], tuple[int, ...], int], Callable[[str], int]] | None:
    """`compile_set` of the thin RE2::Set binding (`_re2set.cpp`), when it was built and is in use.

    It is built by tools/build_native.py next to the compiled modules (when g++ and the RE2
    headers are there) and found only while that build is current (see mcpwall._native).
    """
    try:
        module = importlib.import_module("mcpwall.policy._re2set")
    except ImportError:
        return None

    def compile_set(patterns: tuple[str, ...], owners: tuple[int, ...], max_mem: int) -> Callable[[str], int]:
        mask: Callable[[str], int] = module.compile_set(patterns, owners, max_mem).mask
        return mask

    return compile_set


_NATIVE_SETS = native_sets()


class PatternSet:
    """Many matchers' RE2 patterns in one set; `match(text)` returns owner indices."""

    __slots__ = ("_bits", "_match", "_native_mask", "_owners", "_set")

    def __init__(self, owners_patterns: Sequence[tuple[int, Sequence[str]]], *, native: bool = True) -> None:
        owners: list[int] = []
        patterns: list[str] = []
        for owner, values in owners_patterns:
            for p in values:
                owners.append(owner)
                patterns.append(p)
        self._owners = tuple(owners)
        self._bits: tuple[int, ...] = ()
        self._set: object | None = None
        #: The binding's bound `Match`, looked up once: finding a method on a pybind11
        #: object costs about as much as a short match (bench/policy_eval.py).
        self._match: Callable[[bytes], list[int]] | None = None
        #: `mask` of the same set in the thin binding: 3.5x faster a text than google-re2's
        #: pybind11 one (its dispatcher, buffer and result list; see _re2set.cpp).
        self._native_mask: Callable[[str], int] | None = None
        if not owners:
            return
        if native and _NATIVE_SETS is not None:
            try:
                self._native_mask = _NATIVE_SETS(tuple(patterns), self._owners, _RE2_OPTIONS.max_mem)
                return
            except ValueError:  # the system's RE2 refuses a pattern google-re2 took: use google-re2
                self._native_mask = None
        rs = re2.Set.SearchSet(_RE2_OPTIONS)
        for p in patterns:
            rs.Add(p)
        rs.Compile()
        self._set = rs._set
        self._match = rs._set.Match
        self._bits = tuple(1 << owner for owner in owners)

    def match(self, text: str) -> frozenset[int]:
        native = self._native_mask
        if native is not None:
            found = native(text)
            owners = []
            while found:
                low = found & -found
                owners.append(low.bit_length() - 1)
                found ^= low
            return frozenset(owners)
        if self._set is None:
            return frozenset()
        hits = self._set.Match(encode(text))  # type: ignore[attr-defined]
        if not hits:
            return frozenset()
        owners_of = self._owners
        return frozenset(owners_of[i] for i in hits)

    def mask(self, text: str) -> int:
        """The owners of the patterns `text` matches, as a bit set (bit i: owner i)."""
        native = self._native_mask
        if native is not None:
            return native(text)
        match = self._match
        if match is None:
            return 0
        found = 0
        bits = self._bits
        for i in match(text.encode("utf-8", "surrogatepass")):
            found |= bits[i]
        return found


__all__ = ["Matcher", "PatternSet", "encode", "js_to_python", "native_sets", "re2_pattern"]
