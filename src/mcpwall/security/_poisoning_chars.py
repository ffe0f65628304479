"""Characters a person cannot see but a model reads: invisible Unicode and terminal escapes.

Tool poisoning hides text in places a reviewer's screen does not show: Unicode
tag characters (U+E0000 block, which spell ASCII invisibly), zero-width and
bidirectional controls, variation-selector smuggling, and ANSI escape
sequences that move the cursor or recolour text in a terminal. This module
finds them (with evidence a person can read) and normalises text so the
phrase rules in `_poisoning_rules` see what the model sees.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from mcpwall.security.hooks import strip_ansi

#: ESC-introduced sequences (CSI, OSC, two-byte) and the 8-bit CSI.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
#: C0/C1 controls other than tab, newline and carriage return (backspace and friends rewrite a terminal line).
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9a\x9c-\x9f]")

_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C}
#: Format (Cf) characters, private use, variation selectors and tags: everything a screen does not show.
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb\ue000-\uf8ff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef\U000f0000-\U0010fffd]")

#: Latin look-alikes from Cyrillic and Greek, folded before the phrase rules run, so
#: "ignоre" spelt with a Cyrillic o still reads as "ignore".
_CONFUSABLES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ɡ": "g", "һ": "h", "ӏ": "l", "ո": "n", "ս": "u", "ν": "v", "ο": "o", "α": "a", "ε": "e",
    "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "А": "A", "В": "B", "Е": "E", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "Ι": "I", "Ο": "O",
})


@dataclass(frozen=True, slots=True)
class HiddenChars:
    """What is hidden in one string: a kind, how bad, and evidence a person can read."""

    kind: str
    severity: str
    evidence: str


def _is_emoji_context(text: str, index: int) -> bool:
    """ZWJ and VS16 are legitimate inside emoji sequences ("⚠️", "👨‍💻")."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if not before:
        return False
    return unicodedata.category(before) == "So" or ord(before) >= 0x1F000 or \
        (bool(after) and unicodedata.category(after) == "So")


def _describe(points: list[int], limit: int = 6) -> str:
    shown = " ".join(f"U+{p:04X}" for p in points[:limit])
    return shown + (f" (+{len(points) - limit} more)" if len(points) > limit else "")


def decode_tags(text: str) -> str:
    """The ASCII text spelt by Unicode tag characters (U+E0020..U+E007E), in order."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in text if 0xE0020 <= ord(ch) <= 0xE007E)


def _emoji_joiner(text: str, index: int) -> bool:
    cp = ord(text[index])
    return (cp == 0x200D or 0xFE00 <= cp <= 0xFE0F) and _is_emoji_context(text, index)


def find_hidden(text: str) -> list[HiddenChars]:
    """Invisible Unicode and terminal escapes in `text`, at most one entry per kind."""
    found: list[HiddenChars] = []
    if "\x1b" in text or "\x9b" in text or CONTROL_CHARS.search(text):
        seqs = _ANSI.findall(text)
        controls = CONTROL_CHARS.findall(text)
        shown = [repr(s)[1:-1] for s in seqs[:3]] + [f"U+{ord(c):04X}" for c in controls[:3]]
        found.append(HiddenChars("ansi_escape", "high",
                                 f"{len(seqs)} ANSI escape sequence(s), {len(controls)} control character(s): "
                                 + ", ".join(shown)))
    if text.isascii():
        return found
    tags: list[int] = []
    selectors: list[int] = []
    others: list[int] = []
    for match in _INVISIBLE.finditer(text):
        cp = ord(match.group())
        if 0xE0000 <= cp <= 0xE007F:
            tags.append(cp)
        elif 0xE0100 <= cp <= 0xE01EF or 0xFE00 <= cp <= 0xFE0F:
            if not _emoji_joiner(text, match.start()):
                selectors.append(cp)
        elif cp == 0x200D and _emoji_joiner(text, match.start()):
            continue
        elif cp != 0x00AD:
            others.append(cp)
    if tags:
        found.append(HiddenChars("invisible_unicode", "high",
                                 f"{len(tags)} Unicode tag character(s) spelling {decode_tags(text)[:160]!r}"))
    if selectors:
        found.append(HiddenChars("invisible_unicode", "high",
                                 f"{len(selectors)} stray variation selector(s): {_describe(selectors)}"))
    if others:
        bidi = sum(1 for p in others if p in _BIDI)
        label = "bidirectional control(s)" if bidi == len(others) else "zero-width/format character(s)"
        found.append(HiddenChars("invisible_unicode", "high" if bidi or len(others) > 2 else "medium",
                                 f"{len(others)} {label}: {_describe(others)}"))
    return found


def clean(text: str) -> str:
    """The text with ANSI escapes, control and invisible characters removed (what a client should get).

    Emoji joiners and presentation selectors stay: they are visible as part of the emoji."""
    if text.isascii() and "\x1b" not in text and not CONTROL_CHARS.search(text):
        return text
    # strip_ansi is the gateway's postprocess hook; _ANSI adds the 8-bit CSI it leaves. Invisible
    # characters are removed here rather than by hooks.strip_invisible, which would also break
    # emoji sequences and walks the text a character at a time (slow on a large result).
    # (an ESC or 8-bit CSI left without a sequence after it goes too: find_hidden reports it)
    text = CONTROL_CHARS.sub("", _ANSI.sub("", strip_ansi(text))).replace("\x1b", "").replace("\x9b", "")
    if text.isascii():
        return text
    return _INVISIBLE.sub(lambda m: m.group() if _emoji_joiner(m.string, m.start()) else "", text)


def visible_text(text: str) -> str:
    """What a model reads once escapes are gone: ANSI and invisible characters removed,
    tag-character text appended (a model can decode it), NFKC-folded, confusables mapped."""
    if text.isascii() and "\x1b" not in text:
        return text
    hidden = decode_tags(text)
    cleaned = clean(text)
    if _INVISIBLE.search(text):
        # Removed, an invisible character may join two words ("tool\u200bignore previous
        # instructions" reads as "toolignore ..."); kept apart, it may split one ("ig\u200bnore").
        # Both readings are scanned.
        spaced = _INVISIBLE.sub(" ", CONTROL_CHARS.sub("", _ANSI.sub("", strip_ansi(text))))
        if spaced.split() != cleaned.split():
            cleaned = f"{cleaned}\n{spaced}"
    if hidden:
        cleaned = f"{cleaned}\n{hidden}"
    return unicodedata.normalize("NFKC", cleaned).translate(_CONFUSABLES)


__all__ = ["CONTROL_CHARS", "HiddenChars", "clean", "decode_tags", "find_hidden", "visible_text"]
