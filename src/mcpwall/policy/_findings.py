"""The findings behind a decision made on a call's facts: which rule, which fact, from which argument.

A decision says which rules decided it (`Decision.rule_ids`); for a rule on a
fact (`secrets_out`, `sinks`, `touches.*`: `_calls.py`) that is not enough to
act on, so the policy stage writes each finding into the ledger row's notes
(`findings`) and `mcpwall simulate` prints them: the rule id, the fact target,
the evidence (the fact's text: a secret's *type*, never the secret; a sink with
its destination; a path or a command), the argument it came from, and a
severity from the rule's action (deny: high, ask: medium, warn: low).
Computed only for a decision that a fact rule took part in, so the usual call
pays nothing.
"""

from __future__ import annotations

from typing import Any, Final

from mcpwall.policy._calls import FACT_INDEX, INJECTED
from mcpwall.policy._compile import CompiledPolicy
from mcpwall.policy._decision import Decision
from mcpwall.policy._facts import Facts

SEVERITY: Final = {"deny": "high", "ask": "medium", "warn": "low"}
#: Longest evidence kept per finding (a sink's URL may be long).
MAX_EVIDENCE: Final = 200


def findings(policy: CompiledPolicy, facts: Facts, decision: Decision) -> list[dict[str, Any]]:
    """One finding per fact that a rule of the decision matched on (empty when no fact rule decided)."""
    if not facts.derived or not decision.rule_ids:
        return []
    out: list[dict[str, Any]] = []
    by_id = {r.id: r for r in policy.all_rules}
    for rule_id in decision.rule_ids:
        rule = by_id.get(rule_id)
        if rule is None or rule.target not in FACT_INDEX:
            continue
        index = FACT_INDEX[rule.target]
        seen: set[str] = set()
        for kind, text, path in dict.fromkeys(facts.derived):  # a fact once, however many times derived
            if kind == index and (kind != INJECTED or path not in seen) and rule.matches_text(text):
                seen.add(path)  # shell syntax in one argument is one finding, whichever spellings show it
                out.append(
                    {
                        "rule_id": rule_id,
                        "target": rule.target,
                        "evidence": text[:MAX_EVIDENCE],
                        "argument": path,
                        "severity": SEVERITY.get(rule.action, "info"),
                    }
                )
    return out


__all__ = ["SEVERITY", "findings"]
