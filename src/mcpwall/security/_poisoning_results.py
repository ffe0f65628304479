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
from typing import Any

from mcpwall.security import _poisoning_rules as rules
from mcpwall.security._poisoning_chars import CONTROL_CHARS, clean, find_hidden, visible_text
from mcpwall.security._poisoning_decoded import other_readings
from mcpwall.security._poisoning_finding import Finding

REDACTED = "[mcpwall: removed text aimed at the agent]"
#: keys whose values are not read as text (kinds, addresses, payloads, metadata)
_SKIPPED = frozenset({"type", "mimeType", "uri", "blob", "data", "_meta"})


class ResultScan:
    """What scanning one tool result found, and the result as it may go to the client.

    (A plain class, not a dataclass: compiled, a dataclass's `__init__` stays interpreted, and one is
    built for every tools/call result.)"""

    findings: list[Finding]
    result: Any
    stripped: int
    redacted: int

    def __init__(self, findings: list[Finding], result: Any, stripped: int = 0, redacted: int = 0) -> None:
        self.findings = findings
        self.result = result
        self.stripped = stripped
        self.redacted = redacted

    def __repr__(self) -> str:
        return (f"ResultScan(findings={self.findings!r}, result={self.result!r}, stripped={self.stripped}, "
                f"redacted={self.redacted})")


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
    findings: list[Finding]
    if text.isascii() and (text.isprintable() or ("\x1b" not in text and CONTROL_CHARS.search(text) is None)):
        # ASCII with no escape and no control character: nothing is hidden in it, and it is what a
        # model reads (find_hidden finds nothing and clean and visible_text give it back; every tool
        # result passes here, and those are two interpreted calls)
        findings, cleaned, visible = [], text, text
    else:
        findings = [Finding(tool, h.kind, h.severity, h.evidence, where, server) for h in find_hidden(text)]
        cleaned = clean(text) if findings else text
        visible = visible_text(text)
    # (`can_match` first: most results match no rule, and `hits` is an interpreted call)
    matched = rules.can_match(visible)
    found = rules.hits(visible, response=True, matched=matched) if matched else []
    score = rules.score(found) if found else 0
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


class _Walk:
    """One result's scan under way: what it found so far, and the characters it may still read.

    (Methods of a compiled class call each other directly; the closure this replaced was called
    through the interpreter's call protocol at every level of every result.)"""

    def __init__(self, tool: str, server: str, redact: bool, limit: int) -> None:
        self.tool = tool
        self.server = server
        self.redact = redact
        self.budget = limit
        self.findings: list[Finding] = []
        self.stripped = 0
        self.redacted = 0

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, dict):
            return self.keyed(value, where)
        if isinstance(value, list):
            return self.listed(value, where)
        return value

    def text(self, value: str, where: str) -> str:
        if self.budget <= 0 or (len(value) < 8 and value.isascii() and value.isprintable()):
            return value  # (too short for a phrase; a short string is still read for escapes and hidden characters)
        self.budget -= len(value)
        found, cleaned, redacted = scan_text(value, tool=self.tool, server=self.server, where=where,
                                             redact=self.redact)
        self.findings.extend(found)
        if cleaned != value:
            self.stripped += 1
        self.redacted += redacted
        return cleaned

    # A container is copied only when a string in it changed: an untouched result stays the object the
    # stages before read (stages._kit.flat), so the stages after do not flatten it again. (A loop for
    # each kind: compiled, each iterates its container directly, where one loop over
    # `items() if keyed else enumerate()` went through the generic iterator.)
    def keyed(self, value: dict[str, Any], where: str) -> dict[str, Any]:
        out: dict[str, Any] | None = None
        for k, v in value.items():
            if k in _SKIPPED or not isinstance(v, (str, dict, list)):
                continue
            new = self.value(v, f"{where}.{k}")
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out

    def listed(self, value: list[Any], where: str) -> list[Any]:
        out: list[Any] | None = None
        for i, v in enumerate(value):
            if not isinstance(v, (str, dict, list)):
                continue
            new = self.value(v, f"{where}[{i}]")
            if new is not v:
                if out is None:
                    out = list(value)
                out[i] = new
        return value if out is None else out


def scan_result(result: Any, *, tool: str = "", server: str = "", redact: bool = False,
                limit: int = 4 * 1024 * 1024) -> ResultScan:
    """A tools/call (or prompts/get, resources/read) result: every string in its content, structured
    content and embedded resources is scanned and cleaned. Strings beyond `limit` characters in total
    are passed through unscanned (the gateway bounds message size before this)."""
    walk = _Walk(tool, server, redact, limit)
    cleaned = walk.value(result, "result")
    return ResultScan(walk.findings, cleaned, walk.stripped, walk.redacted)


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
