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

from mcpwall.policy._calls import FACT_INDEX, FACT_TARGETS
from mcpwall.policy._facts import ArgValue, Call, Context, Facts
from mcpwall.policy._match import PatternSet

if TYPE_CHECKING:
    from mcpwall.policy._compile import CompiledPolicy, CRule
    from mcpwall.policy._decision import Decision

# What kind of text an argument-level rule accepts.
VALUES, KEYS, ENV, URI, FACTS = 1, 2, 4, 8, 16
_CACHE_SIZE = 65536
_PLAN_CACHE_SIZE = 8192
#: Targets whose rules look at a call's names (tool, description, server, URI, prompt).
_NAME_LEVEL = frozenset({"command", "process", "tool", "server", "resource", "prompt"})
#: Targets about what a call touches, reaches and runs: they skip the data a tool keeps or sends (`Facts.inert`).
INERT_BLIND = frozenset({"file", "network", "process", "runnable"})


def text_kinds(rule: CRule) -> int:
    if rule.action == "redact":
        return KEYS
    t = rule.target
    if t == "argName":
        return KEYS
    if t == "env":
        return VALUES | ENV
    if t in ("file", "network", "argValue", "process", "runnable"):
        return VALUES
    if t == "resource":
        return URI
    if t in FACT_INDEX:
        return FACTS
    return 0


def _literal_tools(rule: CRule, tools: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """Tool names a rule is scoped to when that is its only, literal, scope."""
    if not tools or any(ch in t for t in tools for ch in "*?[") or rule.servers or rule.methods \
            or rule.clients or rule.agents:
        return None
    return tools


class FastIndex:
    """Per-policy matching structures for the fast path (built once at compile time).

    Rule sets are Python ints used as bit sets (bit i is `rules[i]`, and `rules`
    is in evaluation order): a union, an intersection or an emptiness test is one
    C operation, where frozensets cost an allocation each (bench/policy_eval.py).
    """

    def __init__(self, rules: tuple[CRule, ...], *, slow_only: bool = False) -> None:
        self.rules = rules
        #: Allowlisted paths, hosts or env var names exempt calls value by value: only the reference
        #: path does that.
        self.slow_only = slow_only
        self.kinds = tuple(text_kinds(r) for r in rules)
        # The facts' rules (`_calls.py`) have a set and a text cache of their own: an argument's text never
        # needs their patterns, nor a fact's text the argument rules'.
        self.arg_set = PatternSet([(i, r.matcher.patterns) for i, r in enumerate(rules)
                                   if self.kinds[i] and self.kinds[i] != FACTS and r.matcher is not None])
        self.fact_set = PatternSet([(i, r.matcher.patterns) for i, r in enumerate(rules)
                                    if self.kinds[i] == FACTS and r.matcher is not None])
        self.name_set = PatternSet([(i, r.matcher.patterns) for i, r in enumerate(rules)
                                    if r.target in ("command", "process", "tool", "server", "resource", "prompt")
                                    and r.action != "redact" and r.matcher is not None])
        self.fallback = tuple(i for i, r in enumerate(rules) if r.matcher is not None and r.matcher.fallback
                              and self.kinds[i] != FACTS)
        self.fact_fallback = tuple(i for i, r in enumerate(rules) if r.matcher is not None and r.matcher.fallback
                                   and self.kinds[i] == FACTS)
        # Where build_plan looks for the rules in scope of a call: rules without a scope,
        # rules scoped only to literal tool names (by exact name for permissive rules, by
        # case-folded name for restrictive ones, which ignore case), and the rest, tested.
        self.unscoped_mask = 0
        self.by_tool_mask: dict[str, int] = {}
        self.by_folded_mask: dict[str, int] = {}
        self.scoped: list[int] = []
        for i, r in enumerate(rules):
            has_scope = any(x is not None for x in (r.servers, r.tools, r.methods, r.clients, r.agents))
            literal = _literal_tools(r, r.tool_names)
            if not has_scope:
                self.unscoped_mask |= 1 << i
            elif literal is not None:
                table = self.by_folded_mask if r.restrictive else self.by_tool_mask
                for t in literal:
                    name = t.casefold() if r.restrictive else t
                    table[name] = table.get(name, 0) | 1 << i
            else:
                self.scoped.append(i)

        def mask(pick: Callable[[int, CRule], bool]) -> int:
            return sum(1 << i for i, r in enumerate(rules) if pick(i, r))

        kinds = self.kinds
        self.values_restrictive = mask(lambda i, r: bool(kinds[i] & VALUES) and r.restrictive)
        self.values_canonical = mask(lambda i, r: bool(kinds[i] & VALUES) and not r.restrictive)
        self.uri_restrictive = mask(lambda i, r: bool(kinds[i] & URI) and r.restrictive)
        self.uri_canonical = mask(lambda i, r: bool(kinds[i] & URI) and not r.restrictive)
        #: Rules that do not read the values a tool keeps or sends as data (`Facts.inert`).
        self.inert_blind = mask(lambda i, r: r.target in INERT_BLIND)
        self.key_rules = mask(lambda i, r: bool(kinds[i] & KEYS))
        self.env_rules = mask(lambda i, r: bool(kinds[i] & ENV))
        self.window_rules = mask(lambda i, r: r.window is not None)
        #: Rules whose match still depends on the call beyond its texts.
        self.finish_rules = mask(lambda i, r: r.context is not None or bool(r.constraints))
        self.redact_rules = mask(lambda i, r: r.action == "redact")
        #: The rules on each of the call's facts (`_calls.FACT_TARGETS`), by fact index.
        self.fact_rules = tuple(sum(1 << i for i, r in enumerate(rules) if r.target == name and r.action != "redact")
                                for name in FACT_TARGETS)
        # How build_plan sorts the rules in scope of a call shape, without looking at
        # each: rules with no target match every call; argument-level rules (and every
        # redact rule: seatbelt's name argument keys) only ever match arguments; the
        # few name-level rules are checked against the call's names.
        self.targetless = mask(lambda i, r: r.target is None)
        self.argument_level = mask(lambda i, r: r.target is not None and bool(kinds[i])
                                   and (r.action == "redact" or r.target not in _NAME_LEVEL))
        self.name_level = mask(lambda i, r: r.target in _NAME_LEVEL and r.action != "redact")
        self.profile_restrictive = mask(lambda i, r: r.action in ("deny", "ask", "warn") and r.layer == "profile")
        self.corp_restrictive = mask(lambda i, r: r.action in ("deny", "ask", "warn") and r.layer == "corp")
        self.texts: dict[str, int] = {}
        #: The fact rules each fact's text matches (`fact_hits`).
        self.fact_texts: dict[str, int] = {}
        self.plans: dict[tuple[str, ...], Plan] = {}
        #: Decisions by (plan, rules matched, constraint failures[, argument keys]).
        self.memo: dict[Any, Decision] = {}
        #: How many decisions the plans hold (`Plan.by_found`), all plans together.
        self.memo_entries = 0
        #: (the `now` it was computed for, rules outside their time window then).
        self.outside: tuple[object, int] = (None, 0)

    def arg_hits(self, text: str) -> int:
        """Rules (as a bit set) whose values match one argument-level text."""
        hits = self.texts.get(text)
        return self.new_text(text) if hits is None else hits

    def new_text(self, text: str) -> int:
        """`arg_hits` of a text not in the cache yet."""
        hits = self.arg_set.mask(text)
        for i in self.fallback:
            if self.kinds[i] and self.rules[i].matches_text(text):
                hits |= 1 << i
        if len(self.texts) >= _CACHE_SIZE:
            self.texts.clear()
        self.texts[text] = hits
        return hits

    def fact_hits(self, text: str) -> int:
        """Fact rules (as a bit set) whose values match a fact's text (not in the cache yet)."""
        hits = self.fact_set.mask(text)
        for i in self.fact_fallback:
            if self.rules[i].matches_text(text):
                hits |= 1 << i
        if len(self.fact_texts) >= _CACHE_SIZE:
            self.fact_texts.clear()
        self.fact_texts[text] = hits
        return hits

    def outside_window(self, ctx: Context) -> int:
        """Rules outside their time window at `ctx.now`, recomputed when `now` changes."""
        now, outside = self.outside
        if now is not ctx.now:
            outside = 0
            for i in bits(self.window_rules):
                window = self.rules[i].window
                if window is not None and not window.contains(ctx.now):
                    outside |= 1 << i
            self.outside = (ctx.now, outside)
        return outside


class Plan:
    """What is already known about every call of one shape."""

    __slots__ = ("allowlisted", "any_spelling", "arg_mask", "by_found", "canonical", "decision", "env_scope",
                 "fact_scope", "key_scope", "name_mask", "rules", "uri_any_spelling", "uri_canonical")

    def __init__(self, name_mask: int, arg_mask: int, allowlisted: bool, index: FastIndex) -> None:
        self.name_mask = name_mask
        self.arg_mask = arg_mask
        self.allowlisted = allowlisted
        self.rules = index.rules
        # What a value's text can match, by spelling: restrictive rules see every
        # spelling, permissive ones only the canonical one (see `_evaluate._texts`).
        self.any_spelling = index.values_restrictive & arg_mask
        self.canonical = (index.values_restrictive | index.values_canonical) & arg_mask
        self.uri_any_spelling = index.uri_restrictive & arg_mask
        self.uri_canonical = (index.uri_restrictive | index.uri_canonical) & arg_mask
        self.key_scope = index.key_rules & arg_mask
        self.env_scope = index.env_rules & arg_mask
        #: The fact rules in scope, by fact index; None when there are none.
        scope = tuple(m & arg_mask for m in index.fact_rules)
        self.fact_scope = scope if any(scope) else None
        #: The decision of every call of this shape, when nothing else can change it.
        self.decision: Decision | None = None
        #: Decisions by the rules matched, for calls with no failed constraint and no redaction.
        self.by_found: dict[int, Decision] = {}

    @property
    def name_hits(self) -> tuple[CRule, ...]:
        """Rules that match every call of this shape on its names (or have no target)."""
        return tuple(self.rules[i] for i in bits(self.name_mask))

    @property
    def arg_scope(self) -> frozenset[int]:
        """Indices of the rules that may still match on the call's arguments."""
        return frozenset(bits(self.arg_mask))


def bits(mask: int) -> list[int]:
    """The indices of the set bits, in order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def build_plan(index: FastIndex, call: Call, allowlisted: bool, corp_allow: bool,
               name_texts: Callable[[CRule, Call], tuple[str, ...] | None],
               in_scope: Callable[[CRule, Call], bool]) -> Plan:
    candidates = index.unscoped_mask | index.by_tool_mask.get(call.name, 0) \
        | index.by_folded_mask.get(call.name.casefold(), 0)
    for i in index.scoped:
        if in_scope(index.rules[i], call):
            candidates |= 1 << i
    if allowlisted:
        candidates &= ~index.profile_restrictive
    if corp_allow:
        candidates &= ~index.corp_restrictive
    name_mask = candidates & index.targetless
    arg_mask = candidates & index.argument_level
    by_name: dict[str, frozenset[int]] = {}
    for i in bits(candidates & index.name_level):
        rule = index.rules[i]
        names = name_texts(rule, call)
        matched = False
        for text in names or ():
            hits = by_name.get(text)
            if hits is None:
                hits = by_name[text] = index.name_set.match(text)
            if i in hits or (rule.matcher is not None and rule.matcher.fallback and rule.matches_text(text)):
                matched = True
                break
        if matched:
            name_mask |= 1 << i
        elif index.kinds[i] and (rule.target == "process" or (rule.target == "resource" and names)):
            # A resource rule looks at `uri` values only on resources/* (its names are empty on a
            # tools/call, whose `uri` argument is no resource URI): as `_evaluate._texts` does.
            arg_mask |= 1 << i
    return Plan(name_mask, arg_mask, allowlisted, index)


def _value_hits(plan: Plan, v: ArgValue, text: str, hits: int, raw_hits: int) -> int:
    """Which of the rules `text` (a spelling of `v`) matches apply to it: restrictive rules
    see every spelling, permissive ones the canonical one, and only when the text as sent
    (`raw_hits`) matches them too (see `_evaluate._texts`)."""
    if text != v.canonical:
        found = hits & plan.any_spelling
        if plan.uri_canonical and v.path == "uri":
            found |= hits & plan.uri_any_spelling
        return found
    found = hits & plan.canonical
    if text != v.raw:
        found &= raw_hits | plan.any_spelling
    if plan.uri_canonical and v.path == "uri":
        uri = hits & plan.uri_canonical
        found |= uri & (raw_hits | plan.uri_any_spelling) if text != v.raw else uri
    return found


def _key_hits(index: FastIndex, plan: Plan, facts: Facts) -> int:
    """Rules matched by the call's argument keys and environment keys, key by key from the
    text cache (hashing and comparing the tuple of all keys, as a dict key, cost more)."""
    found = 0
    key_scope = plan.key_scope
    if key_scope:
        for pair in facts.keys:
            found |= index.arg_hits(pair[1]) & key_scope
    env_scope = plan.env_scope
    if env_scope:
        for key in facts.env_keys:
            found |= index.arg_hits(key) & env_scope
    return found


def plan_for(policy: CompiledPolicy, facts: Facts, hooks: Hooks) -> Plan:
    """The cached plan for this call's shape."""
    key = _shape(facts.call)
    plan = policy.fast.plans.get(key)
    return plan if plan is not None else _new_plan(policy, facts, key, hooks)


def _shape(call: Call) -> tuple[str, ...]:
    """A call's shape: (method, name, server, description, client, agent).

    By index: compiled, each is one read of the tuple (an `itemgetter` was the fastest as
    Python, but compiled code calling it pays a generic call, ~900 instructions)."""
    return (call[0], call[1], call[3], call[4], call[5], call[6])


def _new_plan(policy: CompiledPolicy, facts: Facts, key: tuple[str, ...], hooks: Hooks) -> Plan:
    index: FastIndex = policy.fast
    allowlisted, corp_allow = hooks.allowlisted(policy, facts)
    plan = build_plan(index, facts.call, allowlisted, corp_allow, hooks.name_texts, hooks.in_scope)
    if len(index.plans) >= _PLAN_CACHE_SIZE:
        index.plans.clear()
        index.memo_entries = 0
    index.plans[key] = plan
    return plan


class Hooks:
    """What the fast path uses of the reference path (`_evaluate` imports this module, so
    they come in as values), bundled once: five module globals passed on every call cost a
    dict lookup each when compiled."""

    __slots__ = ("allowlisted", "decide", "finish", "in_scope", "name_texts")

    def __init__(self, finish: Callable[[CRule, Facts, Context, str], tuple[str, str]],
                 decide: Callable[..., Decision], allowlisted: Callable[[CompiledPolicy, Facts], tuple[bool, bool]],
                 name_texts: Callable[[CRule, Call], tuple[str, ...] | None],
                 in_scope: Callable[[CRule, Call], bool]) -> None:
        self.finish = finish
        self.decide = decide
        self.allowlisted = allowlisted
        self.name_texts = name_texts
        self.in_scope = in_scope


def decide_fast(policy: CompiledPolicy, facts: Facts, ctx: Context, hooks: Hooks) -> Decision:
    index: FastIndex = policy.fast
    key = _shape(facts.call)
    plan = index.plans.get(key)
    if plan is None:
        plan = _new_plan(policy, facts, key, hooks)
    if plan.decision is not None:
        return plan.decision
    found = plan.name_mask
    scope = plan.arg_mask
    if scope:  # the rules the call's argument texts match (a call frame here would be ~3% of a decision)
        texts = index.texts
        inert = facts.inert
        for v in facts.values:
            raw_hits = -1  # variants[0] is the text as sent
            seen = scope & ~index.inert_blind if inert and v.path in inert else scope
            for text in v.variants:
                hits = texts.get(text)
                if hits is None:
                    hits = index.new_text(text)
                if raw_hits == -1:
                    raw_hits = hits
                if hits & seen:
                    found |= _value_hits(plan, v, text, hits & seen, raw_hits)
        if plan.key_scope or plan.env_scope:
            found |= _key_hits(index, plan, facts)
        fact_scope = plan.fact_scope
        if fact_scope is not None and facts.derived:
            fact_texts = index.fact_texts
            for fact in facts.derived:
                in_scope = fact_scope[fact[0]]
                if in_scope:
                    text = fact[1]
                    hits = fact_texts.get(text)
                    if hits is None:
                        hits = index.fact_hits(text)
                    found |= hits & in_scope
    if found & index.window_rules:
        found &= ~index.outside_window(ctx)
    # A Decision is a function of which rules matched, how constraints failed and,
    # for redaction, of the argument keys (the plan fixes the tool name).
    failures: tuple[tuple[int, str], ...] = ()
    pending = found & index.finish_rules
    if pending:
        failed: list[tuple[int, str]] = []
        for i in bits(pending):
            status, detail = hooks.finish(index.rules[i], facts, ctx, "")
            if status == "constraint-failed":
                failed.append((i, detail))
            elif status != "matched":
                found ^= 1 << i
        failures = tuple(failed)
    if not failures and not found & index.redact_rules:
        # The usual case: the decision is a function of the plan and the rules matched, and
        # an int-keyed dict on the plan is cheaper to probe than a tuple-keyed one.
        decision = plan.by_found.get(found)
        if decision is None:
            index.memo_entries += 1
            if index.memo_entries > _PLAN_CACHE_SIZE:  # bounds them all: plans hold their decisions
                index.plans.clear()
                index.memo_entries = 1
            decision = plan.by_found[found] = _decide_mask(policy, plan, facts, found, {}, hooks.decide)
            if not plan.arg_mask and not plan.name_mask & (index.window_rules | index.finish_rules):
                plan.decision = decision
        return decision
    memo_key: Any = (plan, found, failures, facts.keys) if found & index.redact_rules else (plan, found, failures)
    memo = index.memo
    decision = memo.get(memo_key)
    if decision is None:
        decision = _decide_mask(policy, plan, facts, found, dict(failures), hooks.decide)
        if len(memo) >= _PLAN_CACHE_SIZE:
            memo.clear()
        memo[memo_key] = decision
    return decision


def _decide_mask(policy: CompiledPolicy, plan: Plan, facts: Facts, found: int, failures: dict[int, str],
                 decide: Callable[..., Decision]) -> Decision:
    rules = policy.fast.rules
    matched = []
    for i in bits(found):
        detail = failures.get(i)
        matched.append((rules[i], "matched", "") if detail is None else (rules[i], "constraint-failed", detail))
    return decide(policy, matched, None, facts, allowlisted=plan.allowlisted, implicit=None)


__all__ = ["INERT_BLIND", "FastIndex", "Hooks", "Plan", "build_plan", "decide_fast", "plan_for", "text_kinds"]
