"""Encoded content inside a text: finding the runs, decoding them, and saying what they hold.

`EncodedScan` is the part of `dlp.Scanner` that reads encoded content: base64 blocks (lines
broken by real or escaped newlines), base32, hex runs and hex dumps, percent-escapes and
uuencoded files. Each run is decoded within the message's `Budget`, unpacked (`_decode`), and
scanned with the scanner's own detectors, so that a run that holds a secret becomes one span,
masked whole. Key material is recognised by its structure (`_decode.key_material`) or, for
lines cut from a key's body, by their shape (`_blocks.key_fragment`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from urllib.parse import unquote_to_bytes

from mcpwall.security import _blocks, _decode
from mcpwall.security._decode import Budget, Unreadable
from mcpwall.security._secrets import FILE_MAGIC

#: what `EncodedScan._inspect` says of content it knows and found no secret in (an image, a certificate);
#: compared by value (no secret has an empty type): compiled, a tuple is rebuilt where it is passed on,
#: so it is never the same object
KNOWN = ("", "")

Span = tuple[int, int, str, str]


class EncodedScan:
    """Mixed into `dlp.Scanner`: the methods that decode runs; `spans` is the scanner's own."""

    #: the scanner for the text inside binary content (None: decoding is off)
    _binary: EncodedScan | None = None

    def spans(self, text: str, budget: Budget | None = None, depth: int = 0) -> list[Span]:
        raise NotImplementedError

    def _with_encoded(self, text: str, data: bytes, taken: list[tuple[int, int, str, str]], budget: Budget,
                      depth: int, hexa: bool = False, short: bool = False) -> list[tuple[int, int, str, str]]:
        """`taken` with every encoded run (base64; with `hexa` hex; with `short` base64 in short lines,
        `base64 -w 16`) that holds a secret masked whole, absorbing the spans inside it."""
        ascii_only = len(data) == len(text)
        finder = _blocks.HEX_BLOCK if hexa else _blocks.SHORT_LINES if short else _blocks.B64_BLOCK
        for m in finder.finditer(data):
            start, end = m.start(), m.end()
            # (a run after `=` is the usual `NAME=<base64>`: decoded like any other)
            if any(s <= start and end <= e and kind != "high-entropy" for s, e, kind, _ in taken):
                continue
            run = data[start:end]
            if hexa:
                found = self._inspect_hex(run.decode("ascii"), budget, depth)
            elif run.isupper() and _blocks.B32_BLOCK.fullmatch(run):
                found = self._inspect_b32(run.decode("ascii"), budget, depth)
            elif run.islower() or run.isupper():
                continue  # names, words, paths and digests, not base64 (which mixes cases)
            else:
                found = self._inspect_run(run.decode("ascii"), data[max(0, start - 300):start], budget, depth)
            if found is None:
                continue
            if not ascii_only:
                start = len(data[:start].decode("utf-8", "surrogatepass"))
                end = start + (m.end() - m.start())
            inside = [t for t in taken if t[0] < end and start < t[1]]
            if found == KNOWN:
                # a certificate, an image, prose: the entropy catch-all's hits inside it are not keys
                taken = [t for t in taken if t not in inside or t[2] != "high-entropy"]
                continue
            if inside:
                taken = [t for t in taken if t not in inside]
                start, end = min(start, *(t[0] for t in inside)), max(end, *(t[1] for t in inside))
            taken.append((start, end, *found))
        return taken

    def _with_dump(self, text: str, taken: list[tuple[int, int, str, str]], budget: Budget,
                   depth: int) -> list[tuple[int, int, str, str]]:
        """`taken` with every hex dump (`xxd`, `hexdump -C`) whose bytes hold a secret masked whole: its
        ASCII column cuts a key or a header line across lines, where no pattern sees it."""
        for m in _blocks.DUMP.finditer(text):
            raw = bytearray()
            for line in m.group(0).splitlines():
                count = 0
                for token in line.split(":", 1)[-1].split()[(0 if ":" in line else 1):]:
                    if count >= 16 or len(token) not in (2, 4) or not _blocks.HEX_TOKEN.fullmatch(token):
                        break
                    raw += bytes.fromhex(token)
                    count += len(token) // 2
            if len(raw) < 20 or not budget.take(len(raw)):
                continue
            found = self._inspect(bytes(raw), budget, depth, None)
            if found is not None and found != KNOWN:
                start, end = m.span()
                taken = [t for t in taken if not (t[0] < end and start < t[1])]
                taken.append((start, end, *found))
        return taken

    def _inspect_b32(self, run: str, budget: Budget, depth: int) -> tuple[str, str] | None:
        """A base32 run (`base32 .env`): what its bytes hold."""
        body = "".join(_blocks.lines(run)).replace(" ", "").rstrip("=")
        try:
            raw = base64.b32decode(body + "=" * (-len(body) % 8))
        except (binascii.Error, ValueError):
            return None
        return self._inspect_bytes(raw, budget, depth)

    def _with_percent(self, text: str, taken: list[tuple[int, int, str, str]], budget: Budget,
                      depth: int) -> list[tuple[int, int, str, str]]:
        """`taken` with every run of percent-escapes (`%41%4B%49%41...`) that holds a secret masked whole."""
        for m in _blocks.PERCENT_RUN.finditer(text):
            decoded = unquote_to_bytes(m.group(0))
            found = self._inspect_bytes(decoded, budget, depth)
            if found is not None:
                start, end = m.span()
                taken = [t for t in taken if not (t[0] < end and start < t[1])]
                taken.append((start, end, *found))
        return taken

    def _with_uu(self, text: str, taken: list[tuple[int, int, str, str]], budget: Budget,
                 depth: int) -> list[tuple[int, int, str, str]]:
        """`taken` with every uuencoded file (`begin 644 name` ... `end`) that holds a secret masked whole."""
        for m in _blocks.UU_BLOCK.finditer(text):
            raw = bytearray()
            for line in m.group(1).splitlines():
                with contextlib.suppress(binascii.Error):
                    raw += binascii.a2b_uu(line)
            found = self._inspect_bytes(bytes(raw), budget, depth)
            if found is not None:
                start, end = m.span()
                taken = [t for t in taken if not (t[0] < end and start < t[1])]
                taken.append((start, end, *found))
        return taken

    def _inspect_bytes(self, raw: bytes, budget: Budget, depth: int) -> tuple[str, str] | None:
        if len(raw) < 12:
            return None
        if not budget.take(len(raw)):
            return "unscanned", ""
        found = self._inspect(raw, budget, depth, None)
        return None if found == KNOWN else found

    def _inspect_hex(self, run: str, budget: Budget, depth: int) -> tuple[str, str] | None:
        """A hex dump (`xxd -p`, `od`-free hex, a hex-encoded DER key): what its bytes hold."""
        digits = "".join(_blocks.lines(run)).replace(" ", "")
        raw = bytes.fromhex(digits[:len(digits) & ~1])
        return self._inspect_bytes(raw, budget, depth) if len(raw) >= 20 else None

    def _inspect_run(self, run: str, before: bytes, budget: Budget, depth: int) -> tuple[str, str] | None:
        raw = _decode.b64_bytes(run)
        if raw is None and ("\n" in run or "\\" in run):
            # lines cut from a longer body (padding and groups misaligned), or a block that
            # swallowed a word of the line after it: decoded as far as whole groups go
            raw = _decode.b64_bytes(run, loose=True)
        if raw is None or len(raw) < 12:
            return None
        if not budget.take(len(raw)):
            return "unscanned", ""
        return self._inspect(raw, budget, depth, run, before)

    def _inspect(self, raw: bytes, budget: Budget, depth: int, run: str | None,
                 before: bytes = b"") -> tuple[str, str] | None:
        """(type, secret) of what decoded bytes hold: key material, a secret in their text, or nothing."""
        layers: list[bytes] = []
        try:
            while len(layers) < _decode.MAX_LAYERS and _decode.compressed(raw):
                out = _decode.unpack(raw, budget)
                if not out:
                    break  # it only began like a stream (`x^...` is a zlib header): read it as it is
                layers.append(raw)
                raw = out
        except Unreadable:
            return "unscanned", ""
        if self._binary is not None:
            # What a client reads of a stream is its bytes: text put beside or after the compressed
            # data (a valid header, then plain text) is found here, not in what inflates.
            for layer in layers:
                outside = self._binary.spans(_decode.binary_text(layer))
                if outside:
                    return outside[0][2], outside[0][3]
        if _decode.key_material(raw):
            return "private-key", run or ""
        text = _decode.readable(raw)
        if text is not None:
            if depth >= _decode.MAX_LAYERS:
                return None
            inner = self.spans(text, budget, depth + 1)
            return (inner[0][2], inner[0][3]) if inner else KNOWN
        known = bool(layers) or raw.startswith(FILE_MAGIC) or _decode.public_der(raw)
        if run is not None and not known and _blocks.key_fragment(run, raw, before):
            return "private-key", run
        if len(raw) >= 64 and self._binary is not None:
            inner = self._binary.spans(_decode.binary_text(raw))
            if inner:
                return inner[0][2], inner[0][3]
        return KNOWN if known else None


__all__ = ["KNOWN", "EncodedScan", "Span"]
