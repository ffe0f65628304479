"""Data loss prevention: find secrets in what servers return, and notice when they go back out.

`Scanner.redact(value)` walks every string of a JSON value (entering strings
that themselves hold JSON), replaces each secret with `[REDACTED-<type>]` and
returns what it found: the type and the JSON path, never the secret.
Encoded content is read as what it decodes to (`_encoded.EncodedScan`): base64,
base32, hex, percent-escapes, uuencode, and the compressed streams and archives
inside them (`_decode`), within one decoding budget per call. A payload that
holds a secret is masked whole; under a `blob`/`data` key it is replaced by
`withheld_blob`, which keeps the field base64.

`Fingerprints` remembers, per session, keyed hashes of the secrets redacted
from that session's responses. An agent that was shown a secret (or that got
it past DLP some other way, e.g. a look-alike pattern DLP missed in one place
but caught in another) and then puts it into a tool's arguments is trying to
exfiltrate it; `Fingerprints.match` finds it in the arguments, also when
percent-, base64- or hex-encoded. Hashes are keyed with a per-process random
key, so the table in memory cannot be brute-forced offline.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import secrets as _secrets
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from mcpwall._re2 import search_set
from mcpwall.security import _blocks, _decode
from mcpwall.security._decode import MAX_DECODED, Budget
from mcpwall.security._encoded import KNOWN, EncodedScan
from mcpwall.security._json import MAX_DEPTH, Flat, decodings, join, strings
from mcpwall.security._secrets import PATTERNS, SecretPattern

#: Strings longer than this are not parsed as JSON (they are still scanned as text).
MAX_JSON_TEXT = 1 << 20
MIN_FINGERPRINT = 8
#: keys whose string value is a base64 payload (MCP image/audio `data`, resource `blob`): when its
#: decoded content holds a secret, the whole value is replaced by `withheld_blob`
BLOB_KEYS = frozenset({"blob", "data"})
#: a whole string that is a short base64 payload (20 to 31 characters: no set entry finds those)
_SHORT_B64 = re.compile(r"[A-Za-z0-9+/_-]{20,31}={0,2}")


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret found: its type and where. `secret` stays in memory, never in a note or log."""

    type: str
    path: str
    secret: str

    def public(self) -> dict[str, str]:
        return {"type": self.type, "path": self.path}


def mask(kind: str) -> str:
    return f"[REDACTED-{kind}]"


class Scanner(EncodedScan):
    """The secret patterns, ready to scan text and JSON values.

    One RE2 set pass over the text's UTF-8 bytes says which patterns can match
    at all (most texts: none); only those run their precise Python regex and
    validator. Measured on the standard library's sources split into 2 KB
    chunks, the set pass costs about 9 us per chunk.
    """

    def __init__(self, patterns: Sequence[SecretPattern] = PATTERNS, disabled: Iterable[str] = (),
                 decode: bool = True, max_decoded: int = MAX_DECODED) -> None:
        off = set(disabled)
        self.patterns = tuple(p for p in patterns if p.type not in off)
        self.types = tuple(dict.fromkeys(p.type for p in self.patterns))
        self.max_decoded = max_decoded
        prefilters = [p.prefilter for p in self.patterns]

        def add(pattern: str) -> int:
            prefilters.append(pattern)
            return len(prefilters) - 1

        #: the set entry that says where encoded content may be (-1: decoding is off); its own entry
        #: only when the entropy catch-all (whose prefilter it shares) is disabled
        self._encoded_index = self._hex_index = self._dump_index = self._percent_index = self._uu_index = -1
        self._short_index = -1
        self._encoded_own = False
        #: scans the text inside binary content: without the catch-alls, which random bytes trip (typed
        #: as `EncodedScan` declares it: compiled, a subclass may not narrow an attribute's type)
        self._binary = None
        if decode:
            shared = [i for i, p in enumerate(self.patterns) if p.prefilter == _blocks.ENCODED_PREFILTER]
            self._encoded_own = not shared
            self._encoded_index = shared[0] if shared else add(_blocks.ENCODED_PREFILTER)
            self._hex_index = add(_blocks.HEX_PREFILTER)
            self._dump_index = add(_blocks.DUMP_PREFILTER)
            self._percent_index = add(_blocks.PERCENT_PREFILTER)
            self._uu_index = add(_blocks.UU_PREFILTER)
            self._short_index = add(_blocks.SHORT_LINES_PREFILTER)
            self._binary = Scanner([p for p in self.patterns if p.type not in ("high-entropy", "credit-card")],
                                   decode=False)
        #: which prefilters the UTF-8 bytes match, ascending (the GIL kept: see search_set)
        self._match: Callable[[bytes], list[int]] = search_set(prefilters, 64 << 20)
        self._finders = {i: re2.compile(p.regex.pattern.encode()) for i, p in enumerate(self.patterns)
                         if p.bytes_finder}
        #: where each pattern can match: its prefilter, located with RE2 (Python `re` then runs on windows
        #: around these places only, so its cost does not grow with the text)
        self._locators = [re2.compile(p.prefilter.encode()) for p in self.patterns]

    def spans(self, text: str, budget: Budget | None = None, depth: int = 0) -> list[tuple[int, int, str, str]]:
        """(start, end, type, secret) of every secret in `text`, without overlaps, in text order.

        Patterns earlier in the list win an overlap: specific formats before
        generic assignments before the entropy catch-all. Encoded content
        (a base64 run, a compressed stream) whose decoded form holds a secret
        is one span, the whole run, typed by what it holds (`unscanned` when
        it is past the decoding bounds, which fails closed).
        """
        if len(text) < 8:
            return []
        if text.startswith("\x1f\x8b") and self._binary is not None:
            # a compressed file read as Latin-1 text: its bytes are intact
            with contextlib.suppress(UnicodeEncodeError):
                packed = self._inspect(text.encode("latin-1"), budget or Budget(self.max_decoded), depth, None)
                if packed is not None and packed != KNOWN:
                    return [(0, len(text), *packed)]
        if "\x00" in text and self._binary is not None and text.count("\x00") * 10 >= len(text) * 4:
            # UTF-16 text read as UTF-8 (`iconv -t utf-16 .env`): every other character a NUL
            inner = self.spans(text.replace("\x00", ""), budget, depth + 1) if depth < _decode.MAX_LAYERS else []
            if inner:
                return [(0, len(text), inner[0][2], inner[0][3])]
        data = text.encode("utf-8", "surrogatepass")
        hits = self._match(data)
        if not hits:
            if len(text) < 34 and self._binary is not None and _SHORT_B64.fullmatch(text):
                packed = self._inspect_run(text, b"", budget or Budget(self.max_decoded), depth)
                return [] if packed is None or packed == KNOWN else [(0, len(text), *packed)]
            return []
        taken: list[tuple[int, int, str, str]] = []
        for index in sorted(hits):
            if (index == self._encoded_index and self._encoded_own) or index in (
                    self._hex_index, self._dump_index, self._percent_index, self._uu_index, self._short_index):
                continue
            pattern = self.patterns[index]
            finder = self._finders.get(index)
            if finder is not None:
                found: Iterable[tuple[int, int, str]] = self._bytes_spans(finder, text, data)
            else:
                found = self._spans(pattern, text, self._windows(index, text, data))
            for start, end, secret in found:
                if pattern.check is not None and not pattern.check(secret):
                    continue
                if any(start < e and s < end for s, e, _, _ in taken):
                    continue
                taken.append((start, end, pattern.type, secret))
        if taken and "-----BEGIN " in text:
            taken = _blocks.outside_public_armor(text, taken)
        if self._encoded_index in hits:
            taken = self._with_encoded(text, data, taken, budget or Budget(self.max_decoded), depth)
        if self._hex_index in hits:
            taken = self._with_encoded(text, data, taken, budget or Budget(self.max_decoded), depth, hexa=True)
        if self._short_index in hits:
            taken = self._with_encoded(text, data, taken, budget or Budget(self.max_decoded), depth, short=True)
        if self._dump_index in hits:
            taken = self._with_dump(text, taken, budget or Budget(self.max_decoded), depth)
        if self._percent_index in hits:
            taken = self._with_percent(text, taken, budget or Budget(self.max_decoded), depth)
        if self._uu_index in hits:
            taken = self._with_uu(text, taken, budget or Budget(self.max_decoded), depth)
        taken.sort()
        return taken

    # ------------------------------------------------------------------ encoded content

    def _windows(self, index: int, text: str, data: bytes) -> list[tuple[int, int]]:
        """Character ranges around each place the pattern's prefilter matched, merged."""
        ascii_only = len(data) == len(text)
        reach, back = self.patterns[index].window, self.patterns[index].lookback
        out: list[tuple[int, int]] = []
        for m in self._locators[index].finditer(data):
            start, end = m.start(), m.end()
            if not ascii_only:
                start = len(data[:start].decode("utf-8", "surrogatepass"))
                end = len(data[:end].decode("utf-8", "surrogatepass"))
            lo, hi = max(0, start - back), min(len(text), end + reach)
            if out and lo <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], hi))
            else:
                out.append((lo, hi))
        return out

    @staticmethod
    def _spans(pattern: SecretPattern, text: str, windows: list[tuple[int, int]]) -> Iterator[tuple[int, int, str]]:
        seen: set[tuple[int, int]] = set()
        for lo, hi in windows:
            for m in pattern.regex.finditer(text, lo, hi):
                start, end = m.span(pattern.group)
                if 0 <= start < end and (start, end) not in seen:
                    seen.add((start, end))
                    yield start, end, m.group(pattern.group)

    @staticmethod
    def _bytes_spans(finder: Any, text: str, data: bytes) -> Iterator[tuple[int, int, str]]:
        ascii_only = len(data) == len(text)
        for m in finder.finditer(data):
            start, end = m.start(), m.end()
            # RE2 runs are maximal; reject runs glued to '.', '=' or more '=' (dotted names, padding soup)
            if (start > 0 and data[start - 1] in b".=") or (end < len(data) and data[end] in b"="):
                continue
            if data[max(0, start - 3):start].lower() in (b"?b?", b"?q?"):
                continue  # a MIME encoded-word (=?utf-8?b?...?=) is encoded text
            if _blocks.in_data_block(data, start, end, end - start >= 56):
                continue
            secret = data[start:end].decode("ascii")
            if not ascii_only:
                start = len(data[:start].decode("utf-8", "surrogatepass"))
                end = start + len(secret)
            yield start, end, secret

    def redact_text(self, text: str, path: str = "", budget: Budget | None = None) -> tuple[str, list[Finding]]:
        found = self.spans(text, budget)
        if not found:
            return text, []
        parts: list[str] = []
        last = 0
        for start, end, kind, _ in found:
            parts.append(text[last:start])
            parts.append(mask(kind))
            last = end
        parts.append(text[last:])
        return "".join(parts), [Finding(kind, path, secret) for _, _, kind, secret in found]

    def redact(self, value: Any, path: str = "", depth: int = 0,
               budget: Budget | None = None) -> tuple[Any, list[Finding]]:
        """A copy of `value` with every secret masked (the same object when nothing was found).

        All the content decoded for one call shares one `Budget`. A base64 payload under a
        `blob`/`data` key whose decoded form holds a secret is replaced whole (`withheld_blob`),
        and a `mimeType` beside it becomes `text/plain`.
        """
        if budget is None:
            budget = Budget(self.max_decoded)
        if isinstance(value, str):
            return self._redact_string(value, path, depth, budget)
        if depth > MAX_DEPTH:
            return value, []
        findings: list[Finding] = []
        if isinstance(value, dict):
            out: dict[str, Any] | None = None
            for k, v in value.items():
                new, found = self.redact(v, join(path, str(k)), depth + 1, budget)
                if found:
                    findings.extend(found)
                    if out is None:
                        out = dict(value)
                    if k in BLOB_KEYS and isinstance(new, str) and _whole(new):
                        new = withheld_blob(found)
                        if isinstance(out.get("mimeType"), str):
                            out["mimeType"] = "text/plain"
                    out[k] = new
            return (value if out is None else out), findings
        if isinstance(value, list):
            items: list[Any] | None = None
            for i, v in enumerate(value):
                new, found = self.redact(v, join(path, i), depth + 1, budget)
                if found:
                    findings.extend(found)
                    if items is None:
                        items = list(value)
                    items[i] = new
            return (value if items is None else items), findings
        return value, []

    def finds_nothing(self, flat: Flat) -> bool:
        """Whether `redact` of the value whose strings `flat` lists would find no secret (and return it
        as it is), told from those strings alone, scanned in `redact`'s order with one budget as it
        does: False, for `redact` to walk the value, when a string may hold JSON (read as a document
        of its own), when one holds a secret, or when the value is not plain JSON."""
        if not flat.plain:
            return False
        budget = Budget(self.max_decoded)
        return not any(text.lstrip()[:1] in ("{", "[") or self.spans(text, budget) for _, _, text in flat)

    def _redact_string(self, text: str, path: str, depth: int, budget: Budget) -> tuple[str, list[Finding]]:
        new, findings = self.redact_text(text, path, budget)
        head = new.lstrip()[:1]
        if head in ("{", "[") and len(new) <= MAX_JSON_TEXT and path.count("{json}") < 3:
            # JSON inside text: escapes (\u0041KIA..., \"password\") hide secrets from the text scan.
            try:
                parsed = json.loads(new)
            except ValueError:
                return new, findings
            redacted, inner = self.redact(parsed, path + "{json}", depth + 1, budget)
            if inner:
                findings.extend(inner)
                new = json.dumps(redacted, ensure_ascii=False, indent=2 if "\n" in new else None)
        return new, findings

    def findings(self, value: Any, path: str = "") -> list[Finding]:
        return self.redact(value, path)[1]


def withheld_blob(findings: Sequence[Finding]) -> str:
    """What replaces a base64 payload whose decoded content holds a secret: the base64 of a notice
    (a blob cannot be partially masked; the field stays base64, so every schema still holds)."""
    kinds = ", ".join(sorted({f.type for f in findings}))
    notice = f"[mcpwall withheld this content: its decoded form holds a secret ({kinds})] {mask(findings[0].type)}"
    return base64.b64encode(notice.encode()).decode()


def _whole(masked: str) -> bool:
    body = masked.strip()
    return body.startswith("[REDACTED-") and body.endswith("]") and body.count("[") == 1


# ---------------------------------------------------------------------- exfiltration

_RUN = re.compile(r"[^\s\"'`,;()<>\[\]{}|&?\\]{8,}")
_PIECES = re.compile(r"[=:@/]")
_PEM_BODY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----([\s\S]*?)(?:-----END|\Z)")


def secret_forms(finding_type: str, secret: str) -> Iterator[str]:
    """The spellings of a secret worth remembering: itself, and for a PEM key its body and lines."""
    if finding_type == "private-key":
        text = secret.replace("\\n", "\n")
        m = _PEM_BODY.search(text)
        body = m.group(1) if m else text  # a key found by its content has no header
        yield re.sub(r"\s+", "", body)
        for line in body.split():
            if len(line) >= 40:
                yield line
        return
    yield secret


def argument_candidates(text: str, scanner: Scanner, depth: int = 0) -> Iterator[str]:
    """Every substring of `text` that could be a remembered secret (and the same in decoded text)."""
    for _, _, kind, secret in scanner.spans(text):
        yield from secret_forms(kind, secret)
    if "PRIVATE KEY" in text:
        m = _PEM_BODY.search(text.replace("\\n", "\n"))
        if m:
            yield re.sub(r"\s+", "", m.group(1))
    for m in _RUN.finditer(text):
        run = m.group(0)
        yield run
        for piece in _PIECES.split(run):
            if len(piece) >= MIN_FINGERPRINT and piece != run:
                yield piece
    if depth == 0:
        for decoded in decodings(text):
            yield from argument_candidates(decoded, scanner, 1)


class Fingerprints:
    """Keyed hashes of the secrets each session was shown, bounded in sessions and entries."""

    def __init__(self, key: bytes | None = None, max_sessions: int = 10_000, per_session: int = 4096) -> None:
        self._key = key or _secrets.token_bytes(32)
        self._sessions: OrderedDict[str, dict[bytes, str]] = OrderedDict()
        self.max_sessions = max_sessions
        self.per_session = per_session

    def _fp(self, text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=self._key, digest_size=16).digest()

    def add(self, session: str, findings: Iterable[Finding]) -> int:
        table = self._sessions.get(session)
        added = 0
        for f in findings:
            for form in secret_forms(f.type, f.secret):
                if len(form) < MIN_FINGERPRINT:
                    continue
                if table is None:
                    table = self._sessions[session] = {}
                    while len(self._sessions) > self.max_sessions:
                        self._sessions.popitem(last=False)
                if len(table) < self.per_session:
                    table.setdefault(self._fp(form), f.type)
                    added += 1
        if table is not None:
            self._sessions.move_to_end(session)
        return added

    def has(self, session: str) -> bool:
        return session in self._sessions

    def forget(self, session: str) -> None:
        self._sessions.pop(session, None)

    def sessions(self) -> list[str]:
        return list(self._sessions)

    def match(self, session: str, value: Any, scanner: Scanner) -> list[dict[str, str]]:
        """[{type, path}] for every remembered secret of `session` found in `value`."""
        table = self._sessions.get(session)
        if not table:
            return []
        hits: list[dict[str, str]] = []
        for path, _, text in strings(value):
            if len(text) < MIN_FINGERPRINT:
                continue
            for candidate in argument_candidates(text, scanner):
                kind = table.get(self._fp(candidate))
                if kind is not None:
                    hits.append({"type": kind, "path": path})
                    break
        return hits

    def __len__(self) -> int:
        return sum(len(t) for t in self._sessions.values())


__all__ = ["Finding", "Fingerprints", "Scanner", "argument_candidates", "mask", "secret_forms"]
