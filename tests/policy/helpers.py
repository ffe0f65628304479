"""Typed helpers for policy tests: compile YAML text, decide one call."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcpwall.policy import Call, CompiledPolicy, Context, Decision, compile_policy, evaluate, prepare
from mcpwall.policy._evaluate import evaluate_slow
from mcpwall.policy._loader import parse_policy_text, resolve_document

#: A Saturday evening: outside seatbelt's business-hours window.
WEEKEND = datetime(2026, 11, 28, 20, 0).astimezone()
#: A Tuesday morning: inside it.
WORKDAY = datetime(2026, 12, 1, 10, 0).astimezone()


def compile_text(text: str) -> CompiledPolicy:
    doc, _ = parse_policy_text(text, "test.yaml")
    return compile_policy(resolve_document(doc, "test.yaml"))


def decide(policy: CompiledPolicy, name: str = "tool", args: dict[str, Any] | None = None, *,
           now: datetime = WEEKEND, rate: int = 1, trace: bool = False, **call: Any) -> Decision:
    facts = prepare(Call(name=name, arguments=args or {}, **call))
    ctx = Context(now=now, requests_last_minute=rate)
    fast = evaluate(policy, facts, ctx, trace=trace)
    slow = evaluate_slow(policy, facts, ctx)
    # The fast path and the reference path must always agree.
    assert (fast.action, fast.rule_ids, fast.redacted_keys, fast.timeout_ms) == \
        (slow.action, slow.rule_ids, slow.redacted_keys, slow.timeout_ms), (fast, slow)
    return fast


def rules(*body: str, mode: str = "enforce", default: str = "deny", extra: str = "") -> str:
    """A seatbelt-style policy with the given rule YAML blocks."""
    joined = "\n".join("  - " + b.strip().replace("\n", "\n    ") for b in body)
    return (f"version: '1'\nmode: {mode}\ndefaultAction: {default}\nrules:\n{joined or '  []'}\n"
            f"allowlist: {{tools: [], paths: [], hosts: [], envVars: []}}\n{extra}")
