"""`evaluate(policy, facts, context) -> Decision`: pure, deny-overrides.

How a decision is made (docs/POLICY.md has the long form):

1. Each rule, corp rules first, is checked: scope (servers, tools, methods,
   clients, agents), time window, target match, context condition. A matched
   rule whose `argConstraints` fail counts as a deny.
2. Tools on the allowlist skip the profile's deny, ask and warn rules and
   the default; corp rules and redaction still apply. Allowlisted paths and
   hosts are exempt from the profile's restrictive rules and allow the call.
3. The deciding rules (allow, deny, warn, ask; rewrite and hooks count as
   allow) are combined: deny > ask > warn > allow. Only when none matched
   does `defaultAction` apply (mcp-seatbelt started from it instead, which
   made its allow rules dead under `defaultAction: deny`).
4. Redaction collects the argument keys (at any depth) named by redact rules
   and applies in every mode.
5. Audit mode never denies or asks; the decision records what enforce mode
   would have done. A corp policy in enforce mode still denies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Final

from mcpwall.policy._calls import FACT_INDEX
from mcpwall.policy._compile import CompiledPolicy, CRule
from mcpwall.policy._decision import PRECEDENCE, Action, Decision, RuleTrace
from mcpwall.policy._facts import Call, Context, Facts
from mcpwall.policy._plan import INERT_BLIND, Hooks, decide_fast
from mcpwall.policy._view import View

_DECIDING = {"allow": "allow", "deny": "deny", "warn": "warn", "ask": "ask",
             "rewrite": "allow", "preprocess": "allow", "postprocess": "allow"}
_BY_LEVEL = {v: k for k, v in PRECEDENCE.items()}
def name_texts(rule: CRule, call: Call) -> tuple[str, ...] | None:
    """The name-level texts a rule's target looks at, or None for argument-level targets."""
    target = rule.target
    if target in ("command", "process"):
        return (call.name, call.description) if call.description else (call.name,)
    if target == "tool":
        return (call.name,) if call.method in ("tools/call", "tools/list") else ()
    if target == "server":
        return (call.server,)
    if target == "resource":
        return (call.name,) if call.method.startswith("resources/") else ()
    if target == "prompt":
        return (call.name,) if call.method.startswith("prompts/") else ()
    return None


def _texts(rule: CRule, view: View, exempt: bool) -> Iterator[tuple[str, str]]:
    """(text, where) pairs the rule's target looks at; restrictive rules see every spelling."""
    facts = view.facts
    call = facts.call
    target = rule.target
    if rule.action == "redact" and target != "response":
        # mcp-seatbelt's redact rules name argument keys, whatever their target.
        for path, key in facts.keys:
            yield key, f"key {path}"
        return
    names = name_texts(rule, call)
    if names is not None:
        for text in names:
            yield text, "name"
        if target == "resource" and names:
            for v in facts.values:
                if v.path == "uri":
                    if rule.restrictive:
                        yield from ((t, "uri") for t in v.variants)
                    elif v.canonical == v.raw or rule.matches_text(v.raw):
                        yield v.canonical, "uri"
        if target != "process":
            return
    elif target == "argName":
        for path, key in facts.keys:
            yield key, f"key {path}"
        return
    elif target == "response":
        for text in facts.response_texts:
            yield text, "response"
        return
    elif target in FACT_INDEX:
        # What the call touches, runs and sends (`_calls.py`): facts, not spellings, so allow and
        # restrictive rules alike see them; the argument they come from is the evidence.
        index = FACT_INDEX[target]
        for kind, text, path in facts.derived:
            if kind == index:
                yield text, f"{target} of {path or 'the call'}:"
        return
    if target == "network" and exempt:
        values = view.free_net_values()
    elif exempt and target in ("file", "process", "argValue", "runnable"):
        values = view.free_path_values()
    else:
        values = facts.values
    if facts.inert and target in INERT_BLIND:
        values = tuple(v for v in values if v.path not in facts.inert)
    if rule.restrictive:
        for v in values:
            for text in v.variants:
                yield text, v.path
    else:
        # An allow rule needs the canonical spelling and the text as sent: normalising may make a
        # decision stricter, never looser (`/workspace/../etc/passwd` does not reach an allow rule
        # for `/etc/passwd` that its text would not have reached; issue 29 item 2).
        for v in values:
            if v.canonical == v.raw or rule.matches_text(v.raw):
                yield v.canonical, v.path
    if target == "env":
        allow_env = view.policy.allow_env if exempt else frozenset()
        for key in facts.env_keys:
            if key not in allow_env:
                yield key, "env key"


def _in_window(rule: CRule, ctx: Context) -> bool:
    return rule.window is None or rule.window.contains(ctx.now)


def _names_match(allowed: list[str] | None, value: str, restrictive: bool) -> bool:
    if not allowed:
        return True
    if restrictive:
        folded = value.casefold()
        return any(a.casefold() == folded for a in allowed)
    return value in allowed


def _context_ok(rule: CRule, facts: Facts, ctx: Context) -> str | None:
    cond = rule.context
    if cond is None:
        return None
    call = facts.call
    if not _names_match(cond.clientIn, call.client, rule.restrictive):
        return f"client {call.client or '(none)'!r} not in clientIn"
    if not _names_match(cond.agentIn, call.agent, rule.restrictive):
        return f"agent {call.agent or '(none)'!r} not in agentIn"
    if cond.maxRequestsPerMinute is not None and ctx.requests_last_minute <= cond.maxRequestsPerMinute:
        return f"{ctx.requests_last_minute} requests/min <= {cond.maxRequestsPerMinute}"
    return None


def _lookup(arguments: Any, path: str) -> Any:
    value = arguments.get(path) if isinstance(arguments, dict) else None
    if value is not None or "." not in path:
        return value
    current = arguments
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def _texts_inside(value: Any, limit: int = 256) -> list[str]:
    """The scalar texts inside a list or mapping argument (breadth first, at most `limit`)."""
    out: list[str] = []
    queue = [value]
    while queue and len(out) < limit:
        item = queue.pop(0)
        if isinstance(item, dict):
            queue.extend(item.values())
        elif isinstance(item, list | tuple):
            queue.extend(item)
        elif isinstance(item, str):
            out.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            out.append(str(item))
    return out


def _constraint_failure(rule: CRule, facts: Facts) -> str | None:
    """None when the constraints hold; else why the call must be denied."""
    spellings: tuple[str, ...]
    for c in rule.constraints:
        raw = _lookup(facts.call.arguments, c.arg)
        if raw is None:
            # Leaving the constrained argument out must not get past the constraint (issue 29):
            # it fails, whatever its kind, as in seatbelt ("Arg 'db' is missing").
            return f"Arg '{c.arg}' is missing (constraint {c.kind} {list(c.values)!r})"
        if isinstance(raw, str):
            canonical, spellings = raw, (raw,)
            for v in facts.values:
                if v.path == c.arg:
                    canonical, spellings = v.canonical, v.variants
                    break
        else:
            canonical = json.dumps(raw, separators=(",", ":"), sort_keys=True)
            spellings = (canonical,)
        # The text as sent must satisfy the constraint too: normalising only ever makes it stricter.
        sent = raw if isinstance(raw, str) else canonical
        if c.kind != "notIn" and "\x00" in "".join(spellings):
            # A C API stops at the NUL; the canonical spelling is the text before it,
            # which must not be what lets `/workspace/a\0/../../etc/passwd` through.
            ok = False
        elif c.kind == "equals" or c.kind == "in":
            ok = canonical in c.values and sent in c.values
        elif c.kind == "startsWith":
            ok = canonical.startswith(c.values) and sent.startswith(c.values)
        elif c.kind == "regex":
            ok = any(r.search(canonical) for r in c.regexes) and any(r.search(sent) for r in c.regexes)
        else:  # notIn restricts, so any spelling in any case, trimmed, counts, and so does any text inside
            inner = () if isinstance(raw, str) else _texts_inside(raw)  # ["push"] and {"name": "push"} too
            ok = not any(s.strip().casefold() in c.folded for s in (*spellings, canonical, *inner))
        if not ok:
            return f"Arg '{c.arg}'={canonical!r} fails {c.kind} {list(c.values)!r}"
    return None


def in_scope(rule: CRule, call: Call) -> bool:
    r = rule
    return not (
        (r.methods is not None and not r.methods.fullmatch(call.method))
        or (r.servers is not None and not r.servers.fullmatch(call.server))
        or (r.tools is not None and not r.tools.fullmatch(call.name))
        or (r.clients is not None and not r.clients.fullmatch(call.client))
        or (r.agents is not None and not r.agents.fullmatch(call.agent)))


def finish(rule: CRule, facts: Facts, ctx: Context, detail: str) -> tuple[str, str]:
    """Status of a rule whose scope and target already matched: window, context, constraints.

    Only a constraint failure's detail is always spelled out (it becomes a reason);
    the others are spelled out when `detail` is non-empty, i.e. when tracing.
    """
    if rule.window is not None and not _in_window(rule, ctx):
        return "outside-window", f"outside time window ({rule.window.describe()})" if detail else ""
    if rule.context is not None:
        why_not = _context_ok(rule, facts, ctx)
        if why_not is not None:
            return "context-not-met", why_not
    if rule.constraints and rule.action != "redact":
        failure = _constraint_failure(rule, facts)
        if failure is not None:
            return "constraint-failed", failure
    return "matched", detail


def _check(rule: CRule, view: View, ctx: Context, exempt: bool) -> tuple[str, str]:
    """Return (status, detail) for one rule on one call."""
    r = rule
    if not in_scope(r, view.facts.call):
        return "out-of-scope", "scope (servers/tools/methods/clients/agents) does not include this call"
    if r.window is not None and not _in_window(r, ctx):
        return "outside-window", f"outside time window ({r.window.describe()})"
    if r.target is not None:
        hit = None
        for text, where in _texts(r, view, exempt):
            if r.matches_text(text):
                hit = (text, where)
                break
        if hit is None:
            return "no-match", f"no {r.target} value matched"
        detail = f"{hit[1]} {hit[0][:120]!r} matched {r.match}"
    else:
        detail = "matches every call in scope"
    return finish(r, view.facts, ctx, detail)


def _redact_keys(rule: CRule, facts: Facts) -> list[str]:
    return [path for path, key in facts.keys if rule.matches_text(key)]


def _tool_allowlisted(names: frozenset[str], facts: Facts) -> bool:
    call = facts.call
    if call.method != "tools/call" or not names:
        return False
    return call.name in names or f"{call.server}__{call.name}" in names or f"{call.server}/{call.name}" in names


def evaluate(policy: CompiledPolicy, facts: Facts, ctx: Context, *, trace: bool = False) -> Decision:
    """Decide one request. Pure: the same inputs give the same Decision.

    Plans and memoised decisions are caches keyed by their full inputs, so they
    do not make the result depend on anything but the arguments.
    """
    if trace or facts.truncated or policy.fast.slow_only or not facts.call.name.isascii():
        # A non-ASCII tool name goes the reference way: its case folding (`kıll` is `kill` to a
        # restrictive rule, as RE2 folds it) is not what the fast path's name index does.
        return evaluate_slow(policy, facts, ctx, trace=trace)
    return decide_fast(policy, facts, ctx, _HOOKS)


def _allowlisted(policy: CompiledPolicy, facts: Facts) -> tuple[bool, bool]:
    corp_allow = _tool_allowlisted(policy.corp_allow_tools, facts)
    return corp_allow or _tool_allowlisted(policy.allow_tools, facts), corp_allow


def evaluate_slow(policy: CompiledPolicy, facts: Facts, ctx: Context, *, trace: bool = False) -> Decision:
    """The reference evaluation: every rule, one at a time, optionally traced."""
    traces: list[RuleTrace] | None = [] if trace else None
    if facts.truncated:
        return _decide(policy, [], traces, facts, uninspectable=True)
    view = View(facts, policy)
    matched: list[tuple[CRule, str, str]] = []
    corp_allow = _tool_allowlisted(policy.corp_allow_tools, facts)
    allowlisted = corp_allow or _tool_allowlisted(policy.allow_tools, facts)
    for layer_rules, layer in ((policy.corp_rules, "corp"), (policy.rules, "profile")):
        for rule in layer_rules:
            skip = rule.action in ("deny", "ask", "warn") and (
                (layer == "profile" and allowlisted) or (layer == "corp" and corp_allow))
            if skip:
                status, detail = "allowlisted", "tool is on the allowlist"
            else:
                status, detail = _check(rule, view, ctx, layer == "profile")
            if traces is not None:
                traces.append(RuleTrace(rule.id, layer, rule.action, status, detail,
                                        None if rule.window is None else
                                        ("inside" if _in_window(rule, ctx) else "outside")))
            if status in ("matched", "constraint-failed"):
                matched.append((rule, status, detail))
    implicit = view.implicit_allows()
    return _decide(policy, matched, traces, facts, allowlisted=allowlisted, implicit=implicit)


def _decide(policy: CompiledPolicy, matched: list[tuple[CRule, str, str]], traces: list[RuleTrace] | None,
            facts: Facts, *, allowlisted: bool = False, implicit: list[str] | None = None,
            uninspectable: bool = False) -> Decision:
    corp_level = 0
    profile_level = 0
    contributors: dict[int, list[tuple[CRule, str, str]]] = {1: [], 2: [], 3: [], 4: []}
    redacted: list[str] = []
    redact_rules: list[CRule] = []
    rewrite: dict[str, Any] | None = None
    hooks: list[tuple[str, str]] = []
    timeout = None
    for rule, status, detail in matched:
        if timeout is None and rule.timeout_ms is not None:
            timeout = rule.timeout_ms  # the first matched rule's, in file order (redact rules too)
        if rule.action == "redact":
            keys = _redact_keys(rule, facts)
            if keys:
                redact_rules.append(rule)
                redacted += [k for k in keys if k not in redacted]
            continue
        level = PRECEDENCE["deny"] if status == "constraint-failed" else PRECEDENCE[_DECIDING[rule.action]]
        contributors[level].append((rule, status, detail))
        if rule.layer == "corp":
            corp_level = max(corp_level, level)
        else:
            profile_level = max(profile_level, level)
        if rule.action == "rewrite" and rewrite is None and rule.rewrite is not None:
            rewrite = rule.rewrite.model_dump(exclude_none=True)
        elif rule.action in ("preprocess", "postprocess") and rule.hook:
            hooks.append((rule.action, rule.hook))
    reasons: list[str] = []
    rule_ids: list[str] = []
    if uninspectable:
        profile_level = PRECEDENCE["deny"]
        reasons.append("[mcpwall.uninspectable] arguments too large or too deep to inspect")
        rule_ids.append("mcpwall.uninspectable")
    if implicit and profile_level == 0:
        profile_level = PRECEDENCE["allow"]
        rule_ids += implicit
        reasons += [f"[{i}] value is on the policy allowlist" for i in implicit]
    # Each layer in its own mode: a corp in audit mode only records, whatever the profile's mode,
    # and a corp in enforce mode holds even when the profile only records.
    corp_enforced = corp_level if policy.corp_mode == "enforce" else 0
    if allowlisted and profile_level <= PRECEDENCE["allow"] and corp_enforced == 0:
        profile_level = PRECEDENCE["allow"]
        reasons.append(f"Tool {facts.call.name!r} is explicitly allowlisted")
    decided = max(corp_level, profile_level)
    used_default = decided == 0
    enforced_level = decided or PRECEDENCE.get(policy.default_action, PRECEDENCE["deny"])
    for rule, status, detail in contributors.get(enforced_level, []):
        reasons.append(rule.reason)
        if status == "constraint-failed":
            reasons.append(detail)
        if rule.id not in rule_ids:
            rule_ids.append(rule.id)
    if used_default:
        reasons.append("No matching allow rule found (default deny)" if policy.default_action == "deny"
                       else f"No matching rule found (default {policy.default_action})")
    enforced = _BY_LEVEL[enforced_level]
    if policy.mode == "enforce":
        level = max(corp_enforced, profile_level) or PRECEDENCE.get(policy.default_action, PRECEDENCE["deny"])
        if level != enforced_level:
            reasons.append(f"Corp audit mode: would {enforced}")
        if corp_enforced == profile_level == 0 and not used_default:
            # only a corp in audit mode matched: the profile's default decides
            reasons.append("No matching allow rule found (default deny)" if policy.default_action == "deny"
                           else f"No matching rule found (default {policy.default_action})")
    else:
        level = corp_enforced if corp_enforced > PRECEDENCE["allow"] else PRECEDENCE["allow"]
        if enforced_level > level:
            reasons.append(f"Audit mode: would {enforced}")
    if level != PRECEDENCE["deny"]:
        # A refused call is not sent, so nothing of it is redacted: a redact rule is no reason for the refusal,
        # and a default deny is not a rule's (bench/efficacy_calls.py counts a deny with rule ids as a rule's).
        for rule in redact_rules:
            reasons.append(rule.reason)
            rule_ids.append(rule.id)
    action: Action = _BY_LEVEL[level]  # type: ignore[assignment]
    if level <= PRECEDENCE["warn"]:
        if redacted:
            action = "redact"
        elif rewrite is not None:
            action = "rewrite"
    contributing = [r for lvl in (enforced_level,) for r, _, _ in contributors.get(lvl, [])] + redact_rules
    return Decision(
        action=action,
        reasons=tuple(reasons),
        rule_ids=tuple(rule_ids),
        mode=policy.mode,
        enforced_action=enforced,  # type: ignore[arg-type]
        revision=policy.revision,
        timeout_ms=timeout or policy.default_timeout_ms,
        redacted_keys=tuple(redacted),
        warned=bool(contributors[PRECEDENCE["warn"]]),
        rewrite=rewrite,
        hooks=tuple(hooks),
        compliance=tuple(dict.fromkeys(c for r in contributing for c in r.compliance)),
        owasp=tuple(dict.fromkeys(o for r in contributing for o in r.owasp)),
        trace=tuple(traces) if traces is not None else None,
    )




_MAY_ALLOW = frozenset({"allow", "warn", "ask", "rewrite", "preprocess", "postprocess"})


def visible(policy: CompiledPolicy, call: Call, ctx: Context) -> bool:
    """Whether a tool (prompt, resource) should be listed to this client.

    Hidden iff every call to it would be denied: a deny rule matches on
    name-level fields alone (name, description, server, identity) and is in
    force now, or the default denies and no rule that could allow a call to it
    is in scope. Audit mode hides nothing.
    """
    if policy.mode != "enforce" and policy.corp_mode != "enforce":
        return True
    facts = Facts(call, (), (), (), ())
    from mcpwall.policy._plan import plan_for

    plan = plan_for(policy, facts, _HOOKS)
    for rule in plan.name_hits:
        if rule.action != "deny" or rule.constraints:
            continue
        if (policy.mode if rule.layer == "profile" else policy.corp_mode) != "enforce":
            continue
        if finish(rule, facts, ctx, "")[0] == "matched":
            return False
    if policy.mode == "enforce" and policy.default_action == "deny" and not plan.allowlisted \
            and not policy.allow_paths and not policy.allow_hosts:
        rules = policy.fast.rules
        if not any(r.action in _MAY_ALLOW for r in plan.name_hits) and \
                not any(rules[i].action in _MAY_ALLOW for i in plan.arg_scope):
            return False
    return True




def evaluate_response(policy: CompiledPolicy, facts: Facts, ctx: Context) -> Decision:
    """Decide on an upstream's result with the `target: response` rules.

    deny (and ask, which cannot wait on a response) withholds the result; warn
    records; redact masks the matching text; rewrite replaces the result.
    Audit mode only records.
    """
    matched: list[tuple[CRule, str, str]] = []
    traces: list[RuleTrace] = []
    for rule in policy.response_rules:
        if not in_scope(rule, facts.call):
            continue
        hit = next((t for t in facts.response_texts if rule.matches_text(t)), None)
        if hit is None and rule.target is not None:
            continue
        status, detail = finish(rule, facts, ctx, "response matched")
        if status == "matched":
            matched.append((rule, status, detail))
        traces.append(RuleTrace(rule.id, rule.layer, rule.action, status, detail))
    deciding = [(r, s, d) for r, s, d in matched if r.action != "redact"]
    redactors = [r for r, _, _ in matched if r.action == "redact"]
    level = max((PRECEDENCE["deny"] if r.action == "ask" else PRECEDENCE[_DECIDING[r.action]]
                 for r, _, _ in deciding), default=PRECEDENCE["allow"])
    enforced = _BY_LEVEL[level]
    # Each layer in its own mode, as on the request side.
    enforcing = [r for r, _, _ in deciding if (policy.mode if r.layer == "profile" else policy.corp_mode) == "enforce"]
    effective = _BY_LEVEL[max((PRECEDENCE["deny"] if r.action == "ask" else PRECEDENCE[_DECIDING[r.action]]
                               for r in enforcing), default=PRECEDENCE["allow"])]
    contributors = [r for r, _, _ in deciding
                    if (PRECEDENCE["deny"] if r.action == "ask" else PRECEDENCE[_DECIDING[r.action]]) == level]
    rewrite = next((r.rewrite.model_dump(exclude_none=True) for r in contributors
                    if r.action == "rewrite" and r.rewrite is not None), None)
    action: Action = effective  # type: ignore[assignment]
    if effective in ("allow", "warn"):
        if redactors:
            action = "redact"
        elif rewrite is not None:
            action = "rewrite"
    used = [r for r in contributors if level > PRECEDENCE["allow"] or r.action != "allow"] + redactors
    return Decision(
        action=action, reasons=tuple(r.reason for r in used), rule_ids=tuple(r.id for r in used),
        mode=policy.mode, enforced_action=enforced,  # type: ignore[arg-type]
        revision=policy.revision, timeout_ms=policy.default_timeout_ms,
        redacted_keys=tuple(r.id for r in redactors), warned=any(r.action == "warn" for r in contributors),
        rewrite=rewrite, trace=tuple(traces))


def redact_text(rules: Sequence[CRule], text: str) -> str:
    """Mask every match of the given redact rules' values in `text`."""
    for rule in rules:
        for pattern in rule.substitution_patterns():
            text = pattern.sub(f"[REDACTED-{rule.id}]", text)
    return text


#: The reference path's pieces the fast path uses (see `_plan.Hooks`).
_HOOKS: Final = Hooks(finish, _decide, _allowlisted, name_texts, in_scope)

__all__ = ["evaluate", "evaluate_response", "evaluate_slow", "in_scope", "name_texts", "redact_text", "visible"]
