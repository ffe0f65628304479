"""Findings: what the poisoning scan reports, one problem in one definition or result."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SEVERITIES = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in one tool definition or result."""

    tool: str
    kind: str
    severity: str
    evidence: str
    where: str = "description"
    server: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"server": self.server, "tool": self.tool, "kind": self.kind, "severity": self.severity,
                "evidence": self.evidence, "where": self.where}

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)


def worst(findings: Iterable[Finding]) -> str | None:
    """The highest severity among `findings`, or None when there are none."""
    ranks = [f.rank for f in findings]
    return SEVERITIES[max(ranks)] if ranks else None


__all__ = ["SEVERITIES", "Finding", "worst"]
