"""Tool results: instructions aimed at the agent inside what a tool returns, and cleaning.

A result is data; it has no business to give the model orders. Every string
of a tools/call (prompts/get, resources/read) result is read by the same
phrase rules as a definition, weighted for results (`_poisoning_rules`:
an order to call a named tool, an error that sends the agent to a tool, a
line of data that orders file work weigh more here). `scan_result` returns
the findings and the result as it may go to the client: escapes and
invisible characters always removed, and, when asked, the offending lines
replaced by `REDACTED`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcpwall.security import _poisoning_rules as rules
from mcpwall.security._poisoning_chars import clean, find_hidden, visible_text
from mcpwall.security._poisoning_decoded import other_readings
from mcpwall.security._poisoning_finding import Finding

REDACTED = "[mcpwall: removed text aimed at the agent]"
#: keys whose values are not read as text (kinds, addresses, payloads, metadata)
_SKIPPED = frozenset({"type", "mimeType", "uri", "blob", "data", "_meta"})


@dataclass
class ResultScan:
    """What scanning one tool result found, and the result as it may go to the client."""

    findings: list[Finding]
    result: Any
    stripped: int = 0
    redacted: int = 0


def _lines_to_redact(text: str) -> list[bool]:
    lines = text.split("\n")
    marks = [bool(rules.hits(visible_text(line), response=True)) for line in lines]
    inside = False
    opener = re.compile(r"<\s*(important|information|info|instructions?|system|secret|hidden|critical[\w\s]*"
                        r"|urgent[\w\s]*|admin|override)\s*>", re.I)
    for i, line in enumerate(lines):
        opened, closed = opener.search(line), re.search(r"</\s*\w[\w\s]*>", line)
        if opened and not closed:
            inside = True
        if inside:
            marks[i] = True
        if closed:
            inside = False
    return marks


def scan_text(text: str, *, tool: str = "", server: str = "", where: str = "content",
              redact: bool = False) -> tuple[list[Finding], str, int]:
    """One string of a tool result: (findings, the text as it may go to the client, lines redacted).

    ANSI escapes and invisible characters are always removed from the returned text."""
    findings = [Finding(tool, h.kind, h.severity, h.evidence, where, server) for h in find_hidden(text)]
    cleaned = clean(text) if findings else text
    visible = visible_text(text)
    found = rules.hits(visible, response=True)
    score = rules.score(found)
    redacted = 0
    flagged = score >= 2 and rules.aimed(found)
    if flagged:
        severity = "high" if any(h.weight >= 2 for h in found) or score >= 3 else "medium"
        findings.append(Finding(tool, "result_injection", severity, rules.evidence(visible, found), where, server))
    else:
        # an order no phrase rule can read until it is decoded (base64, hex, percent-escapes, leetspeak)
        for prose in other_readings(visible):
            inner = rules.hits(visible_text(prose), response=True)
            if rules.score(inner) >= 2 and rules.aimed(inner):
                flagged = True
                findings.append(Finding(tool, "result_injection", "high", "decoded: "
                                        + rules.evidence(visible_text(prose), inner), where, server))
                break
    if flagged and redact:
        lines = cleaned.split("\n")
        marks = _lines_to_redact(cleaned)
        if not any(marks):
            marks = [True] * len(lines)
        kept: list[str] = []
        for line, mark in zip(lines, marks, strict=True):
            if not mark:
                kept.append(line)
            elif not kept or kept[-1] != REDACTED:
                kept.append(REDACTED)
        redacted = sum(marks)
        cleaned = "\n".join(kept)
    return findings, cleaned, redacted


def scan_result(result: Any, *, tool: str = "", server: str = "", redact: bool = False,
                limit: int = 4 * 1024 * 1024) -> ResultScan:
    """A tools/call (or prompts/get, resources/read) result: every string in its content, structured
    content and embedded resources is scanned and cleaned. Strings beyond `limit` characters in total
    are passed through unscanned (the gateway bounds message size before this)."""
    scan = ResultScan([], result)
    budget = [limit]

    def walk(value: Any, where: str) -> Any:
        if isinstance(value, str):
            if budget[0] <= 0 or len(value) < 8:
                return value
            budget[0] -= len(value)
            found, cleaned, redacted = scan_text(value, tool=tool, server=server, where=where, redact=redact)
            scan.findings.extend(found)
            if cleaned != value:
                scan.stripped += 1
            scan.redacted += redacted
            return cleaned
        # A container is copied only when a string in it changed: an untouched result stays the object the
        # stages before read (stages._kit.flat), so the stages after do not flatten it again.
        keyed = isinstance(value, dict)
        if not keyed and not isinstance(value, list):
            return value
        out: Any = None
        for k, v in value.items() if keyed else enumerate(value):
            if keyed and k in _SKIPPED:
                continue
            new = walk(v, f"{where}.{k}" if keyed else f"{where}[{k}]")
            if new is not v:
                if out is None:
                    out = dict(value) if keyed else list(value)
                out[k] = new
        return value if out is None else out

    scan.result = walk(result, "result")
    return scan


def sanitize(value: Any, _depth: int = 0) -> Any:
    """`value` with ANSI escapes and invisible characters removed from every string (keys included).

    Levels past `_SANITIZE_DEPTH` are returned as they are: they belong to a definition the scan
    reports unscannable (hidden in enforce mode), and recursing further could exhaust the stack."""
    if isinstance(value, str):
        return clean(value)
    if _depth > _SANITIZE_DEPTH:
        return value
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: sanitize(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitize(v, _depth + 1) for v in value]
    return value


_SANITIZE_DEPTH = 256


__all__ = ["REDACTED", "ResultScan", "sanitize", "scan_result", "scan_text"]
