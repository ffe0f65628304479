"""Decisions are values with a trace.

A `Decision` says what happens to one message and why. It is frozen, typed and
carries the policy revision it was made under, so a ledger row can always be
traced back to the exact rules that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["allow", "deny", "warn", "redact", "ask", "rewrite"]

#: The one combining strategy: deny-overrides, then ask, then warn, then allow.
PRECEDENCE: dict[str, int] = {"deny": 4, "ask": 3, "warn": 2, "allow": 1}


@dataclass(frozen=True, slots=True)
class RuleTrace:
    """How one rule fared on one call (only built when a trace is asked for)."""

    rule_id: str
    layer: str
    action: str
    status: str
    detail: str = ""
    time_window: str | None = None

    @property
    def matched(self) -> bool:
        return self.status in ("matched", "constraint-failed")

    def as_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "layer": self.layer, "action": self.action,
                "matched": self.matched, "status": self.status, "detail": self.detail,
                "time_window": self.time_window}


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of evaluating one call.

    `action` is what the gateway does. In audit mode it is never `deny` or
    `ask`; `enforced_action` then says what enforce mode would have done.
    """

    action: Action
    reasons: tuple[str, ...]
    rule_ids: tuple[str, ...]
    mode: str
    enforced_action: Action
    revision: str
    timeout_ms: int
    redacted_keys: tuple[str, ...] = ()
    warned: bool = False
    rewrite: dict[str, Any] | None = None
    hooks: tuple[tuple[str, str], ...] = ()
    compliance: tuple[str, ...] = ()
    owasp: tuple[str, ...] = ()
    trace: tuple[RuleTrace, ...] | None = field(default=None, compare=False)

    @property
    def blocked(self) -> bool:
        return self.action == "deny"

    def as_dict(self, *, with_trace: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "reasons": list(self.reasons),
            "rule_ids": list(self.rule_ids),
            "mode": self.mode,
            "enforced_action": self.enforced_action,
            "revision": self.revision,
            "timeout_ms": self.timeout_ms,
            "redacted_keys": list(self.redacted_keys),
            "compliance": list(self.compliance),
            "owasp": list(self.owasp),
        }
        if self.rewrite is not None:
            out["rewrite"] = self.rewrite
        if self.hooks:
            out["hooks"] = [{"phase": p, "hook": h} for p, h in self.hooks]
        if with_trace and self.trace is not None:
            out["trace"] = [t.as_dict() for t in self.trace]
        return out


__all__ = ["PRECEDENCE", "Action", "Decision", "RuleTrace"]
