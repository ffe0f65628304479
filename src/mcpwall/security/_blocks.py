"""The shapes of encoded content in text: base64 blocks, hex dumps, key bodies, PEM armor.

Pure functions and patterns that `dlp.Scanner` uses to find encoded runs worth decoding
(`B64_BLOCK`, `HEX_BLOCK`, `DUMP`) and to tell a key body from data (`key_fragment`), a
public PEM block from a private one (`outside_public_armor`), and a line of a MIME body
from a lone token (`in_data_block`).
"""

from __future__ import annotations

import re

import re2

#: where encoded content may be: a run of 32 base64 characters (the entropy catch-all's prefilter,
#: so one RE2 set entry serves both; a shorter payload is decoded when it is a whole string)
ENCODED_PREFILTER = r"[A-Za-z0-9+/_-]{32}"
#: a base64 run whose lines may be broken by real or JSON-escaped newlines (PEM bodies, `base64` output)
B64_BLOCK = re2.compile(rb"[A-Za-z0-9+/_][A-Za-z0-9+/_-]{31,}={0,2}"
                        rb"(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*[A-Za-z0-9+/_][A-Za-z0-9+/_-]*={0,2})*")
HEX_PREFILTER = r"[0-9a-fA-F]{40}"
#: a hex dump's line: an offset, then bytes in groups of one (`hexdump -C`) or two (`xxd`)
DUMP_PREFILTER = r"(?:^|\n)[0-9a-f]{6,8}:? +[0-9a-f]{2,4} [0-9a-f]{2,4} "
DUMP = re.compile(r"(?m)(?:^[0-9a-f]{6,8}:? +[0-9a-f]{2,4} [0-9a-f]{2,4} .*(?:\n|\Z))+")
HEX_TOKEN = re.compile(r"[0-9a-f]+")
#: hex digits in lines (`xxd -p` wraps at 60): a SHA-1 is 40 of them, and decodes to no text
HEX_BLOCK = re2.compile(rb"[0-9a-fA-F]{40,}(?:(?:\r?\n|(?:\\r)?\\n)[0-9a-fA-F]{2,})*")
#: a whole base64 run that is base32 (`base32` output: capitals and 2-7, wrapped at 76)
B32_BLOCK = re2.compile(rb"[A-Z2-7]+(?:(?:\r?\n|(?:\\r)?\\n)[A-Z2-7]+)*=*")
#: eight percent-escapes in a row (every byte escaped, `%41%4B%49%41...`), and the run around them
PERCENT_PREFILTER = r"(?:%[0-9A-Fa-f]{2}){8}"
PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9._~+-])*(?:%[0-9A-Fa-f]{2}){8}(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9._~+-])*")
#: a uuencoded file: its `begin <mode> <name>` line, its lines, up to `end`
UU_PREFILTER = r"begin [0-7]{3,4} "
UU_BLOCK = re.compile(r"begin [0-7]{3,4} [^\n]*\n((?:[ -`][^\n]*\n){1,200000}?)(?:end\b|\Z)")
#: three or more lines that are each a short base64 run (`base64 -w 16`): no 32-character run to find
SHORT_LINES_PREFILTER = r"(?:^|\n)[A-Za-z0-9+/]{8,}={0,2}\r?\n[A-Za-z0-9+/]{8,}={0,2}\r?\n[A-Za-z0-9+/]{8}"
SHORT_LINES = re2.compile(rb"(?m)^(?:[ \t]*[A-Za-z0-9+/]{8,}={0,2}[ \t]*(?:\r?\n|\z)){3,}"
                          rb"(?:[ \t]*[A-Za-z0-9+/]{2,7}={0,2}[ \t]*(?:\r?\n|\z))?")
#: the line widths of PEM (64) and OpenSSH (70) key bodies; MIME and `base64` wrap at 76
_KEY_WIDTHS = (64, 70)


def lines(run: str) -> list[str]:
    """The lines of a base64 block, broken by real or JSON-escaped newlines."""
    return run.replace("\\r", "").replace("\\n", "\n").replace("\r", "").split("\n")


def key_fragment(run: str, raw: bytes, before: bytes) -> bool:
    """Lines of a private key's base64 body, cut from its header and first line (`sed -n 5,9p id_rsa`):
    two or more full lines of a key's width, random bytes that are no known format, and no public
    armor (`-----BEGIN CERTIFICATE-----`, a PGP public key block) just before."""
    if "\n" not in run and "\\" not in run:
        return False
    rows = [line.strip() for line in lines(run.strip())]
    width = len(rows[0])
    if len(rows) < 2 or width not in _KEY_WIDTHS or any(len(line) != width for line in rows[1:-1]):
        return False
    if len(rows[-1]) > width:
        return False
    armor = before.rfind(b"-----BEGIN ")
    return armor < 0 or b"PRIVATE" in before[armor:armor + 60]


_ARMOR = re.compile(r"-----BEGIN ([A-Z0-9 ]{1,40})-----[\s\S]*?(?:-----END \1-----|\Z)")


def outside_public_armor(text: str, taken: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """`taken` without the entropy catch-all's hits inside a public PEM block (a certificate, a public
    key, a PGP public key block): their bodies are random-looking and not secrets."""
    public = [m.span() for m in _ARMOR.finditer(text) if "PRIVATE" not in m.group(1)]
    if not public:
        return taken
    return [t for t in taken if t[2] != "high-entropy" or not any(s <= t[0] and t[1] <= e for s, e in public)]


def in_data_block(data: bytes, start: int, end: int, full: bool = True) -> bool:
    """A line of a multi-line base64 block (MIME bodies, embedded files), not a lone key.

    `full` (a line of 56 characters or more): a base64 line next to it is enough. A shorter
    run is the block's last line only after a base64 line of full width (a certificate's or a
    plist's `...AAECAw==`). Key bodies are found by their content, in `Scanner._with_encoded`.
    """
    if not full:
        if data[start:start + 1] == b"n" and data[start - 1:start] == b"\\":
            start += 1  # the run began with the `n` of an escaped newline
        head = data[max(0, start - 120):start].rstrip(b" \t\"'")
        if not head.endswith((b"\n", b"\\n")):
            return False
        prev = _LAST_LINE.split(head[:-1].rstrip(b"\\\r"))[-1].strip(b" \t\"'")
        return len(prev) >= 56 and all(c in _B64_BYTES for c in prev)
    after = data[end:end + 80].lstrip(b" \t\"'")
    if after.startswith((b"\n", b"\\n", b"\r\n")):
        # past the line break, a real one or JSON's escaped `\n` (splitting on the letter n was a bug)
        nxt = _NEXT_LINE.sub(b"", after, 1).lstrip(b" \t\"'")[:16]
        if len(nxt) >= 16 and all(c in _B64_BYTES for c in nxt):
            return True
    before = data[max(0, start - 80):start].rstrip(b" \t\"'")
    if before.endswith((b"\n", b"\\n")):
        prev = before[:-1].rstrip(b"\\\r \t\"'")[-16:]
        if len(prev) >= 16 and all(c in _B64_BYTES for c in prev):
            return True
    return False


_LAST_LINE = re.compile(rb"\r?\n|(?:\\r)?\\n")
_NEXT_LINE = re.compile(rb"^(?:\r?\n|(?:\\r)?\\n)")
_B64_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")


__all__ = ["B32_BLOCK", "B64_BLOCK", "DUMP", "DUMP_PREFILTER", "ENCODED_PREFILTER", "HEX_BLOCK",
           "HEX_PREFILTER", "HEX_TOKEN", "PERCENT_PREFILTER", "PERCENT_RUN", "SHORT_LINES",
           "SHORT_LINES_PREFILTER", "UU_BLOCK",
           "UU_PREFILTER", "in_data_block", "key_fragment", "lines",
           "outside_public_armor"]
