"""Compiling a resolved policy once, so that each decision is cheap.

Compilation turns every rule's values into one regular expression (or a set
for `exact`), scope globs into regexes, and indexes rules by the tool names
they are scoped to. It also fixes the case rule (docs/POLICY.md):

    Rules that restrict (deny, ask, warn, redact, rewrite, hooks) ignore case.
    Rules that permit (allow) and argConstraints compare case exactly,
    except `notIn`, which ignores case because it restricts.

An invalid regex refuses the whole policy with file, line and rule id
(mcp-seatbelt silently never matched it).
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcpwall.errors import PolicyError
from mcpwall.policy._loader import PlacedRule, ResolvedPolicy
from mcpwall.policy._match import Matcher, js_to_python
from mcpwall.policy._normalize import canonical_host
from mcpwall.policy._plan import FastIndex

if TYPE_CHECKING:  # only named here: a plain read of a policy (`_plain`) imports no pydantic (issue 29)
    from mcpwall.policy._model import ContextCondition, Rewrite, TimeWindow

_DAY_INDEX = {d: i for i, d in enumerate(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}

#: Targets that look only at the message's name-level fields, never at arguments.
NAME_TARGETS = frozenset({"command", "tool", "server", "resource", "prompt"})


def _matcher(values: Sequence[str], match: str, ignore_case: bool, fail: PolicyError) -> Matcher | None:
    if not values:
        return None
    for value in values:
        problem = Matcher.check(value, match)
        if problem is not None:
            raise PolicyError(f"invalid regex {value!r}: {problem}", file=fail.file, line=fail.line,
                              rule_id=fail.rule_id)
    return Matcher(values, match, ignore_case)


def _globs(patterns: Sequence[str] | None, ignore_case: bool) -> re.Pattern[str] | None:
    if not patterns:
        return None
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), flags)


@dataclass(frozen=True, slots=True)
class CConstraint:
    arg: str
    kind: str
    values: tuple[str, ...]
    folded: frozenset[str]
    regexes: tuple[re.Pattern[str], ...]


@dataclass(frozen=True, slots=True)
class CWindow:
    days: frozenset[int] | None
    start: int | None
    end: int | None
    tz: ZoneInfo | None

    def contains(self, now: datetime) -> bool:
        """Whether `now` (aware or naive local time) falls inside the window."""
        if self.tz is not None:
            now = now.astimezone(self.tz)
        elif now.tzinfo is not None:
            now = now.astimezone()  # no timezone on the rule: the gateway's local time, whatever `now`'s offset
        if self.days is not None and now.weekday() not in self.days:
            return False
        if self.start is None and self.end is None:
            return True
        hour = now.hour
        start = self.start if self.start is not None else 0
        end = self.end if self.end is not None else 23
        if start <= end:
            return start <= hour <= end
        return hour >= start or hour <= end

    def describe(self) -> str:
        days = ",".join(sorted(d for d, i in _DAY_INDEX.items() if self.days and i in self.days)) or "any day"
        hours = "any hour" if self.start is None and self.end is None else f"{self.start or 0}-{self.end if self.end is not None else 23}h"
        return f"{days} {hours}"


@dataclass(frozen=True, slots=True)
class CRule:
    """A rule ready to be matched."""

    id: str
    layer: str
    order: int
    action: str
    description: str
    target: str | None
    match: str
    restrictive: bool
    values: tuple[str, ...]
    matcher: Matcher | None
    servers: re.Pattern[str] | None
    tools: re.Pattern[str] | None
    methods: re.Pattern[str] | None
    clients: re.Pattern[str] | None
    agents: re.Pattern[str] | None
    window: CWindow | None
    context: ContextCondition | None
    constraints: tuple[CConstraint, ...]
    timeout_ms: int | None
    compliance: tuple[str, ...]
    owasp: tuple[str, ...]
    rewrite: Rewrite | None
    hook: str | None
    file: str
    line: int | None
    tool_names: tuple[str, ...] | None = None

    @property
    def reason(self) -> str:
        return f"[{self.id}] {self.description}" if self.description else f"[{self.id}]"

    def matches_text(self, text: str) -> bool:
        return self.matcher is not None and self.matcher.hit(text)

    def substitution_patterns(self) -> list[re.Pattern[str]]:
        """Python regexes of the values, for masking matched text (response redaction)."""
        flags = re.ASCII | (re.IGNORECASE if self.restrictive else 0)
        out = []
        for v in self.values:
            source = re.escape(v) if self.match != "pattern" else js_to_python(v)
            with contextlib.suppress(re.error):
                out.append(re.compile(source, flags))
        return out


@dataclass(frozen=True)
class CompiledPolicy:
    """A policy ready for `evaluate`; immutable, so it can be swapped atomically on reload."""

    source: ResolvedPolicy
    revision: str
    mode: str
    corp_mode: str
    default_action: str
    default_timeout_ms: int
    corp_rules: tuple[CRule, ...]
    rules: tuple[CRule, ...]
    response_rules: tuple[CRule, ...]
    allow_tools: frozenset[str]
    corp_allow_tools: frozenset[str]
    allow_paths: tuple[str, ...]
    allow_hosts: tuple[str, ...]
    allow_env: frozenset[str]
    allow_sampling: bool
    #: The fast path's sets and indexes, and memoised decisions (see `_plan.py`).
    fast: FastIndex = field(compare=False, repr=False)

    @property
    def all_rules(self) -> tuple[CRule, ...]:
        return self.corp_rules + self.rules


def _window(tw: TimeWindow | None, fail: PolicyError) -> CWindow | None:
    if tw is None:
        return None
    tz = None
    if tw.timezone:
        try:
            tz = ZoneInfo(tw.timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise PolicyError(f"unknown timezone {tw.timezone!r}", file=fail.file, line=fail.line,
                              rule_id=fail.rule_id) from exc
    days = frozenset(_DAY_INDEX[d.lower()] for d in tw.days) if tw.days else None
    return CWindow(days, tw.startHour, tw.endHour, tz)


def _compile_rule(placed: PlacedRule, layer: str, order: int) -> CRule:
    rule = placed.rule
    fail = PolicyError("", file=placed.origin.file, line=placed.origin.line, rule_id=rule.id)
    action = "deny" if rule.action == "block" else rule.action
    restrictive = action != "allow"
    matcher = _matcher(rule.values, rule.match, restrictive, fail)
    constraints = []
    for c in rule.argConstraints or []:
        regexes: tuple[re.Pattern[str], ...] = ()
        if c.constraint == "regex":
            try:
                regexes = tuple(re.compile(js_to_python(v), re.ASCII) for v in c.values)
            except re.error as exc:
                raise PolicyError(f"invalid argConstraints regex for {c.argName!r}: {exc}",
                                  file=fail.file, line=fail.line, rule_id=rule.id) from exc
        constraints.append(CConstraint(c.argName, c.constraint, tuple(c.values),
                                       frozenset(v.casefold() for v in c.values), regexes))
    return CRule(
        id=rule.id, layer=layer, order=order, action=action, description=rule.description,
        target=rule.target, match=rule.match, restrictive=restrictive, values=tuple(rule.values),
        matcher=matcher,
        servers=_globs(rule.servers, restrictive), tools=_globs(rule.tools, restrictive),
        methods=_globs(rule.methods, restrictive), clients=_globs(rule.clients, restrictive),
        agents=_globs(rule.agents, restrictive),
        window=_window(rule.timeWindow, fail), context=rule.contextCondition,
        constraints=tuple(constraints), timeout_ms=rule.timeoutMs,
        compliance=tuple(f"{c.framework}:{ctl}" for c in rule.compliance or [] for ctl in c.controls),
        owasp=tuple(rule.owasp or ()), rewrite=rule.rewrite, hook=rule.hook,
        file=placed.origin.file, line=placed.origin.line,
        tool_names=tuple(rule.tools) if rule.tools else None,
    )


def _norm_path(p: str) -> str:
    p = p.rstrip("/") or "/"
    return p


def _host_pattern(h: str) -> str:
    h = h.strip()
    if h.startswith("*."):
        return "." + canonical_host(h[2:])
    if h.startswith("."):
        return "." + canonical_host(h[1:])
    return canonical_host(h)


def compile_policy(resolved: ResolvedPolicy) -> CompiledPolicy:
    """Compile once; raises PolicyError (file, line, rule id) on an unusable rule."""
    corp = tuple(_compile_rule(p, "corp", i) for i, p in enumerate(resolved.corp_rules) if p.rule.enabled)
    base = len(corp)
    profile_all = [_compile_rule(p, "profile", base + i) for i, p in enumerate(resolved.rules) if p.rule.enabled]
    response = tuple(r for r in (*corp, *profile_all) if r.target == "response")
    profile = tuple(r for r in profile_all if r.target != "response")
    corp = tuple(r for r in corp if r.target != "response")
    allow_paths = tuple(_norm_path(p) for p in _iter_nonempty(resolved.allowlist.paths))
    allow_hosts = tuple(_host_pattern(h) for h in _iter_nonempty(resolved.allowlist.hosts))
    return CompiledPolicy(
        source=resolved,
        revision=resolved.revision,
        mode=resolved.mode,
        corp_mode=resolved.corp_mode,
        default_action=resolved.default_action,
        default_timeout_ms=resolved.default_timeout_ms,
        corp_rules=corp,
        rules=profile,
        response_rules=response,
        allow_tools=frozenset(resolved.allowlist.tools),
        corp_allow_tools=frozenset(resolved.corp_allowlist.tools),
        allow_paths=allow_paths,
        allow_hosts=allow_hosts,
        allow_env=frozenset(resolved.allowlist.envVars),
        allow_sampling=resolved.allow_sampling,
        fast=FastIndex(corp + profile, slow_only=bool(allow_paths or allow_hosts or resolved.allowlist.envVars)),
    )


def _iter_nonempty(items: Iterable[str]) -> Iterable[str]:
    return (i for i in items if i.strip())


__all__ = ["NAME_TARGETS", "CConstraint", "CRule", "CWindow", "CompiledPolicy", "compile_policy"]
