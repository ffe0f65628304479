"""mcp-seatbelt's signed JSONL audit format, written and checked byte for byte.

Seatbelt (src/audit.ts) writes one JSON object per line: `_seq`, `_hmac`,
then the entry (`toolName`, `description`, `args`, `action`, `timestamp`,
`reason`, optional `context`), where `_hmac` = HMAC-SHA256(secret,
String(_seq) + JSON.stringify(entry)) and the secret is a string used as
UTF-8. Checking it from Python needs JavaScript's JSON.stringify exactly:
key order (integer-like keys first), number formatting (`1` not `1.0`,
`1e+21`, `1e-7`) and string escaping (`\\u001f`, lone surrogates) - hence
`js_stringify`.

Seatbelt restarts `_seq` at 0 each time its proxy starts and appends to the
same file, so a restart at 0 is accepted; any other gap or repeat is
reported. A truncated file cannot be detected in this format.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from mcpwall.ledger._chain import same_mac
from mcpwall.ledger._verify import VerifyReport

_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")
_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def js_number(value: float) -> str:
    """Number::toString, as JSON.stringify prints numbers."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0:
        return "0"
    sign, digits_t, exp = Decimal(repr(float(value))).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0")
    assert isinstance(exp, int)
    exp += len(digits_t) - len(digits)
    k = len(digits)
    n = exp + k
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + text


def js_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _js_keys(obj: dict[str, Any]) -> list[str]:
    index = sorted((k for k in obj if _INDEX_KEY.match(k) and int(k) < 2**32 - 1), key=int)
    return index + [k for k in obj if k not in set(index)]


def js_stringify(value: Any) -> str:
    """JSON.stringify(value) for JSON-shaped Python values."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= 2**53 else js_number(float(value))
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
        obj = dict(items)
        return "{" + ",".join(js_string(k) + ":" + js_stringify(obj[k]) for k in _js_keys(obj)) + "}"
    return js_string(str(value))


def entry_hmac(secret: bytes, seq: Any, entry: dict[str, Any]) -> str:
    seq_text = js_stringify(seq) if isinstance(seq, int | float) and not isinstance(seq, bool) else str(seq)
    return hmac.new(secret, (seq_text + js_stringify(entry)).encode("utf-8"), hashlib.sha256).hexdigest()


def signed_line(secret: bytes, seq: int, entry: dict[str, Any]) -> str:
    return js_stringify({"_seq": seq, "_hmac": entry_hmac(secret, seq, entry), **entry})


#: seatbelt's `action` is allow | deny | warn | redact; our other decision words say how a call
#: ended, which `outcome` keeps: failed ones, and an `ask` a person approved, had been allowed;
#: every other word (invalid, rejected, rate limited, circuit open...) is a refusal.
_SEATBELT_ACTION = {"allow": "allow", "warn": "warn", "redact": "redact", "error": "allow", "timeout": "allow",
                    "failed": "allow", "cancelled": "allow", "ask": "allow", "rewrite": "allow",
                    "preprocess": "allow", "postprocess": "allow"}
_MICROS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\d*Z$")


def entry_from_row(row: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """A ledger `tool_calls` row as a seatbelt audit entry (plus our fields, which the HMAC covers too).

    `action` and `timestamp` are in seatbelt's vocabulary and precision (milliseconds, as
    `Date.toISOString()` writes them), so seatbelt's readers can filter on them.
    """
    decision = str(row.get("decision") or "")
    entry: dict[str, Any] = {
        "toolName": row.get("tool_name") or "",
        "description": "",
        "args": args,
        "action": _SEATBELT_ACTION.get(decision, "deny"),
        "timestamp": _MICROS.sub(r"\1Z", str(row.get("ts") or "")),
        "reason": "; ".join(row.get("reasons") or []),
    }
    extras = {"server": row.get("server_name"), "client": row.get("client"), "agent": row.get("agent_id"),
              "session": row.get("session_id"), "outcome": row.get("outcome"),
              "decisionId": row.get("decision_id"), "ledgerSeq": row.get("seq")}
    entry.update({k: v for k, v in extras.items() if v not in (None, "")})
    return entry


def write_jsonl(out: IO[str], secret: bytes, entries: Iterable[dict[str, Any]], start: int = 0) -> int:
    n = start
    for entry in entries:
        out.write(signed_line(secret, n, entry) + "\n")
        n += 1
    return n - start


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield number, line.strip()


def verify_jsonl(path: Path, secret: bytes) -> VerifyReport:
    """Check every line's HMAC and the `_seq` sequence; `first_bad_seq` is the file's line number."""
    report = VerifyReport()
    report.warnings.append("signed JSONL cannot show a truncated tail")
    previous: Any = None
    for number, line in _lines(path):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            return report.fail(number, f"line {number} is not JSON ({exc.msg})")
        except (RecursionError, ValueError) as exc:  # nested too deep, a number too long to read
            return report.fail(number, f"line {number} is not JSON this verifier can read ({exc.__class__.__name__})")
        if not isinstance(entry, dict) or "_seq" not in entry or "_hmac" not in entry:
            return report.fail(number, f"line {number} is not a signed entry (no _seq/_hmac)")
        seq, mac = entry.pop("_seq"), entry.pop("_hmac")
        if not isinstance(seq, int) or isinstance(seq, bool):
            return report.fail(number, f"line {number}: _seq is not an integer")
        try:
            expected = entry_hmac(secret, seq, entry)
        except (RecursionError, ValueError, TypeError, OverflowError) as exc:
            return report.fail(number, f"line {number} (_seq {seq}) holds a value that cannot be checked "
                                       f"({exc.__class__.__name__})")
        if not same_mac(str(mac), expected):
            return report.fail(number, f"line {number} (_seq {seq}) was altered or signed with another secret")
        if previous is not None and seq != previous + 1 and seq != 0:
            kind = "missing entries (deleted)" if seq > previous + 1 else "out of order or repeated (inserted)"
            return report.fail(number, f"line {number}: _seq {seq} follows _seq {previous}: {kind}")
        previous = seq
        report.rows += 1
        report.last_seq = seq
    return report


__all__ = ["entry_from_row", "entry_hmac", "js_number", "js_string", "js_stringify", "signed_line",
           "verify_jsonl", "write_jsonl"]
