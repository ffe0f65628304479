"""Orders hidden in an encoding: a base64 or hex run in a tool result that decodes to text aimed at the agent.

A result has no reason to carry an order at all, and less to carry one
encoded: "note from the server: SWdub3JlIHByZXZpb3Vz..." is read by a model
that decodes base64 on sight, and by no phrase rule. Each long base64 (std or
URL-safe) or hex run of a result's string is decoded; when it decodes to
prose (readable text with spaces: an image, an archive, a hash or a key
decodes to bytes, not sentences) that prose is read by the same phrase rules
as the result itself. Bounded: runs of at most `MAX_RUN` characters, at most
`MAX_RUNS` runs and `MAX_DECODED` decoded bytes per string.
"""

from __future__ import annotations

import binascii
import re

from mcpwall.security._decode import b64_bytes, readable

MAX_RUN = 16 << 10
MAX_RUNS = 32
MAX_DECODED = 64 << 10
#: a base64 run long enough to hold a sentence (24 characters: 18 bytes); hex runs are found the same way
_RUN = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/_=-])")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")
_PROSE = re.compile(r"[A-Za-z\u00c0-\uffff]{2,}\s+\S+\s+\S")


def decoded_prose(text: str) -> list[str]:
    """The prose that the base64 and hex runs of `text` decode to (empty when none decodes to sentences)."""
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


__all__ = ["decoded_prose"]
