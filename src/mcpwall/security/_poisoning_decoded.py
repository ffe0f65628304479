"""Orders hidden in an encoding: a tool result read again as what it decodes to.

A result has no reason to carry an order at all, and less to carry one
encoded: "note from the server: SWdub3JlIHByZXZpb3Vz..." is read by a model
that decodes base64 on sight, and by no phrase rule. `other_readings` gives
the texts a result also says, for the same phrase rules to read:

- each long base64 (std or URL-safe) or hex run, decoded, when it decodes to
  prose (readable text with spaces: an image, an archive, a hash or a key
  decodes to bytes, not sentences);
- the text percent-decoded, when it holds several escapes
  ("Ignore%20previous%20instructions");
- the text with leetspeak spelled out, when several short words mix letters
  with the digits that stand for them ("1gn0re prev10us 1nstruct10ns"), and
  with words spelled a letter at a time joined ("I.g.n.o.r.e p.r.e.v.i.o.u.s").

Bounded: runs of at most `MAX_RUN` characters, at most `MAX_RUNS` runs and
`MAX_DECODED` decoded bytes per string. Ordinary text (no run, no escape, no
mixed word) costs one regex search of each kind.
"""

from __future__ import annotations

import binascii
import itertools
import re
from urllib.parse import unquote

import re2

from mcpwall._re2 import search_set
from mcpwall.security._decode import b64_bytes, readable

MAX_RUN = 16 << 10
MAX_RUNS = 32
MAX_DECODED = 64 << 10
_OPTIONS = re2.Options()
_OPTIONS.max_mem = 16 << 20
#: a base64 run long enough to hold a sentence (24 characters: 18 bytes), whole (RE2, linear: a 1 MiB result of
#: ordinary text is searched in about 2 ms); hex runs are found the same way
_RUN = re2.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}", _OPTIONS)
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")
_PROSE = re.compile(r"[A-Za-z\u00c0-\uffff]{2,}\s+\S+\s+\S")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
#: a word of letters and the digits leetspeak puts for them, with at least one of each; spelled out only when
#: several words hold such a digit between letters ("1gn0re", "prev10us": "h264", "ipv4", "14C" do not)
_LEET_WORD = re2.compile(r"\b(?:[A-Za-z@$]+[013457]|[013457]+[A-Za-z@$])[A-Za-z013457@$]*\b", _OPTIONS)
_LEET_INSIDE = re2.compile(r"[A-Za-z][013457]+[A-Za-z]", _OPTIONS)
_LEET = str.maketrans("013457@$", "oieastas")
#: a word spelled one letter at a time: "I.g.n.o.r.e", "i-g-n-o-r-e", "i_g_n_o_r_e"
#: any of the shapes below: ordinary text is searched once (each RE2 call costs about 2 us)
_ANY = re2.compile(r"[A-Za-z0-9+/_-]{24}|%[0-9A-Fa-f]{2}|[A-Za-z][013457]+[A-Za-z]|[A-Za-z][._-][A-Za-z][._-][A-Za-z]"
                   r"[._-][A-Za-z]", _OPTIONS)
#: `_ANY` as a one-pattern set of the thin binding, which keeps the GIL: google-re2's `search` releases it
#: around every match, and in the gateway, where the ledger's writer thread waits for it, that cost tens of
#: microseconds a result (bench/stage_costs.py --shipped: the poisoning stage +9 -> +34 us a call)
_ANY_MATCH = search_set([_ANY.pattern], _OPTIONS.max_mem)
_SPELLED = re2.compile(r"\b[A-Za-z](?:\.[A-Za-z]){3,}\b|\b[A-Za-z](?:-[A-Za-z]){3,}\b|\b[A-Za-z](?:_[A-Za-z]){3,}\b",
                       _OPTIONS)


def _decoded(text: str) -> list[str]:
    out: list[str] = []
    left = MAX_DECODED
    for n, m in enumerate(_RUN.finditer(text)):
        run = m.group()
        if n >= MAX_RUNS or left <= 0:
            break
        if len(run) > MAX_RUN:
            continue
        if _HEX.fullmatch(run):
            try:
                data: bytes | None = binascii.unhexlify(run)
            except (binascii.Error, ValueError):
                data = None
        else:
            data = b64_bytes(run, loose=True)
        if not data:
            continue
        left -= len(data)
        words = readable(data)
        if words is not None and _PROSE.search(words):
            out.append(words)
    return out


def other_readings(text: str) -> list[str]:
    """What `text` also says once decoded (base64, hex, percent-escapes, leetspeak); empty for ordinary text."""
    if not _ANY_MATCH(text):
        return []
    out = _decoded(text)
    if len(_ESCAPE.findall(text, 0, 4096)) >= 3:
        out.append(unquote(text))
    head = text[:1 << 16]
    if sum(1 for _ in itertools.islice(_LEET_INSIDE.finditer(head), 2)) >= 2:
        out.append(_LEET_WORD.sub(lambda m: m.group().translate(_LEET), head))
    if len(_SPELLED.findall(head)) >= 2:
        out.append(_SPELLED.sub(lambda m: m.group()[::2], head))
    return out


__all__ = ["other_readings"]
