"""The fast path of `evaluate`: one RE2 set per policy, one plan per call shape.

At compile time, a `FastIndex` puts the values of every rule into two RE2
sets (name-level texts, argument-level texts) and indexes rules by the tool
names they are scoped to. Most of a decision depends only on the call's
*shape* (method, server, tool name, description, client, agent); a `Plan`
records, once per shape, which rules are in scope and which already matched
on the name-level fields. A call then costs one cached set lookup per distinct
argument text plus the window/context/constraint checks of the few rules that
matched.

The slow path in `_evaluate.py` (every rule, one at a time) stays the
reference: it builds traces and handles allowlisted paths and hosts, and a
property test checks that both paths decide the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpwall.policy._facts import Call, Context, Facts
from mcpwall.policy._match import PatternSet

if TYPE_CHECKING:
    from mcpwall.policy._compile import CompiledPolicy, CRule
    from mcpwall.policy._decision import Decision

# What kind of text an argument-level rule accepts.
VALUES, KEYS, ENV, URI = 1, 2, 4, 8
_CACHE_SIZE = 65536
_PLAN_CACHE_SIZE = 8192
_EMPTY: frozenset[int] = frozenset()


def text_kinds(rule: CRule) -> int:
    if rule.action == "redact":
        return KEYS
    t = rule.target
    if t == "argName":
        return KEYS
    if t == "env":
        return VALUES | ENV
    if t in ("file", "network", "argValue", "process"):
        return VALUES
    if t == "resource":
        return URI
    return 0


def _literal_tools(rule: CRule, tools: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Tool names a rule is scoped to when that is its only, literal, scope."""
    if not tools or any(ch in t for t in tools for ch in "*?[") or rule.servers or rule.methods \
            or rule.clients or rule.agents:
        return None
    return tools


class FastIndex:
    """Per-policy matching structures for the fast path (built once at compile time)."""

    def __init__(self, rules: tuple[CRule, ...]) -> None:
        self.rules = rules
        self.kinds = tuple(text_kinds(r) for r in rules)
        self.arg_set = PatternSet([(i, r.matcher.patterns) for i, r in enumerate(rules)
                                   if self.kinds[i] and r.matcher is not None])
        self.name_set = PatternSet([(i, r.matcher.patterns) for i, r in enumerate(rules)
                                    if r.target in ("command", "process", "tool", "server", "resource", "prompt")
                                    and r.action != "redact" and r.matcher is not None])
        self.fallback = tuple(i for i, r in enumerate(rules) if r.matcher is not None and r.matcher.fallback)
        self.unscoped: list[int] = []
        # Rules scoped only to literal tool names, by exact name (permissive rules)
        # or by case-folded name (restrictive rules ignore case).
        self.by_tool: dict[str, list[int]] = {}
        self.by_folded_tool: dict[str, list[int]] = {}
        self.scoped: list[int] = []
        for i, r in enumerate(rules):
            has_scope = any(x is not None for x in (r.servers, r.tools, r.methods, r.clients, r.agents))
            literal = _literal_tools(r, r.tool_names)
            if not has_scope:
                self.unscoped.append(i)
            elif literal is not None:
                table = self.by_folded_tool if r.restrictive else self.by_tool
                for t in literal:
                    table.setdefault(t.casefold() if r.restrictive else t, []).append(i)
            else:
                self.scoped.append(i)
        self.texts: dict[str, frozenset[int]] = {}
        self.plans: dict[tuple[str, ...], Plan] = {}

    def arg_hits(self, text: str) -> frozenset[int]:
        hits = self.texts.get(text)
        if hits is None:
            hits = self.arg_set.match(text)
            if self.fallback:
                extra = [i for i in self.fallback if self.kinds[i] and self.rules[i].matches_text(text)]
                if extra:
                    hits = hits | frozenset(extra)
            if len(self.texts) >= _CACHE_SIZE:
                self.texts.clear()
            self.texts[text] = hits or _EMPTY
        return hits


class Plan:
    """What is already known about every call of one shape."""

    __slots__ = ("allowlisted", "arg_scope", "name_hits")

    def __init__(self, name_hits: tuple[CRule, ...], arg_scope: frozenset[int], allowlisted: bool) -> None:
        self.name_hits = name_hits
        self.arg_scope = arg_scope
        self.allowlisted = allowlisted


def build_plan(index: FastIndex, call: Call, allowlisted: bool, corp_allow: bool,
               name_texts: Callable[[CRule, Call], tuple[str, ...] | None],
               in_scope: Callable[[CRule, Call], bool]) -> Plan:
    candidates = set(index.unscoped)
    candidates.update(index.by_tool.get(call.name, ()))
    candidates.update(index.by_folded_tool.get(call.name.casefold(), ()))
    candidates.update(i for i in index.scoped if in_scope(index.rules[i], call))
    by_name: dict[str, frozenset[int]] = {}
    name_hits: list[CRule] = []
    arg_scope: set[int] = set()
    for i in sorted(candidates):
        rule = index.rules[i]
        if rule.action in ("deny", "ask", "warn") and (
                (rule.layer == "profile" and allowlisted) or (rule.layer == "corp" and corp_allow)):
            continue
        if rule.target is None:
            name_hits.append(rule)
            continue
        names = None if rule.action == "redact" else name_texts(rule, call)
        matched = False
        if names:
            for text in names:
                hits = by_name.get(text)
                if hits is None:
                    hits = by_name[text] = index.name_set.match(text)
                if i in hits or (rule.matcher is not None and rule.matcher.fallback and rule.matches_text(text)):
                    matched = True
                    break
        if matched:
            name_hits.append(rule)
        elif index.kinds[i] and (names is None or rule.target in ("process", "resource")):
            arg_scope.add(i)
    return Plan(tuple(name_hits), frozenset(arg_scope), allowlisted)


def fast_matches(index: FastIndex, plan: Plan, facts: Facts) -> list[CRule]:
    """Rules whose target matched this call's arguments."""
    scope = plan.arg_scope
    if not scope:
        return []
    found: set[int] = set()
    kinds = index.kinds
    rules = index.rules
    arg_hits = index.arg_hits
    for v in facts.values:
        canonical = v.canonical
        for text in v.variants:
            hits = arg_hits(text)
            if hits:
                for i in hits & scope:
                    k = kinds[i]
                    if (k & VALUES or (k & URI and v.path == "uri")) and \
                            (rules[i].restrictive or text == canonical):
                        found.add(i)
    for _, key in facts.keys:
        hits = arg_hits(key)
        if hits:
            found.update(i for i in hits & scope if kinds[i] & KEYS)
    for key in facts.env_keys:
        hits = arg_hits(key)
        if hits:
            found.update(i for i in hits & scope if kinds[i] & ENV)
    return [rules[i] for i in sorted(found)]


def plan_for(policy: CompiledPolicy, facts: Facts,
             allowlisted_fn: Callable[[CompiledPolicy, Facts], tuple[bool, bool]],
             name_texts: Callable[[CRule, Call], tuple[str, ...] | None],
             in_scope: Callable[[CRule, Call], bool]) -> Plan:
    """The cached plan for this call's shape."""
    index: FastIndex = policy.fast
    call = facts.call
    key = (call.method, call.server, call.name, call.description, call.client, call.agent)
    plan = index.plans.get(key)
    if plan is None:
        allowlisted, corp_allow = allowlisted_fn(policy, facts)
        plan = build_plan(index, call, allowlisted, corp_allow, name_texts, in_scope)
        if len(index.plans) >= _PLAN_CACHE_SIZE:
            index.plans.clear()
        index.plans[key] = plan
    return plan


def decide_fast(policy: CompiledPolicy, facts: Facts, ctx: Context,
                finish: Callable[[CRule, Facts, Context, str], tuple[str, str]],
                decide: Callable[..., Decision], allowlisted_fn: Callable[[CompiledPolicy, Facts], tuple[bool, bool]],
                name_texts: Callable[[CRule, Call], tuple[str, ...] | None],
                in_scope: Callable[[CRule, Call], bool]) -> Decision:
    index: FastIndex = policy.fast
    call = facts.call
    plan = plan_for(policy, facts, allowlisted_fn, name_texts, in_scope)
    if plan.arg_scope:
        candidates = list(plan.name_hits) + fast_matches(index, plan, facts)
        candidates.sort(key=_order)
    else:
        candidates = list(plan.name_hits)
    matched = []
    signature: list[object] = []
    redacts = False
    for rule in candidates:
        if rule.window is None and rule.context is None and not rule.constraints:
            status, detail = "matched", ""
        else:
            status, detail = finish(rule, facts, ctx, "")
        if status == "matched":
            matched.append((rule, status, detail))
            signature.append(rule.order)
            redacts = redacts or rule.action == "redact"
        elif status == "constraint-failed":
            matched.append((rule, status, detail))
            signature.append((rule.order, detail))
    # A Decision is a function of which rules matched (and, for redaction and the
    # allowlist reason, of the argument keys and tool name): reuse equal ones.
    memo_key = (tuple(signature), facts.keys if redacts else None, call.name if plan.allowlisted else None)
    memo: dict[Any, Decision] = policy.memo
    decision = memo.get(memo_key)
    if decision is None:
        decision = decide(policy, matched, None, facts, allowlisted=plan.allowlisted, implicit=None)
        if len(memo) >= _PLAN_CACHE_SIZE:
            memo.clear()
        memo[memo_key] = decision
    return decision


def _order(rule: CRule) -> int:
    return rule.order


__all__ = ["FastIndex", "Plan", "build_plan", "decide_fast", "fast_matches", "plan_for", "text_kinds"]
