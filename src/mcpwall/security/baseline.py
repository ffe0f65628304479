"""Behavioural baseline: what normal tool use looks like, and calls that depart from it.

mcp-seatbelt's model, replayed in order: for each tool, a profile of its call
count, a 24-bucket histogram of the hours it is called at, the argument keys
it is called with and their average serialised size. Each call is first
compared with the profile built from the calls before it, then added to it,
so a replay of a ledger flags what a live baseline would have flagged then.

Deviations (the same four kinds as seatbelt; the thresholds are ours):
- `new_tool`: a tool never seen before, once the baseline has learnt from
  `learning_calls` (100) calls in all;
- `new_args`: argument keys this tool was never called with, once the tool
  has `min_tool_calls` (10) calls;
- `size_anomaly`: arguments more than `size_factor` (3) times the tool's
  average size and at least `size_slack` (256) bytes above it;
- `hour_anomaly`: an hour of the day in which fewer than `hour_share` (1 %)
  of the tool's calls happened, once the baseline is past its learning calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

KINDS = ("new_tool", "new_args", "size_anomaly", "hour_anomaly")


@dataclass(frozen=True)
class Observation:
    """One tool call to learn from: which tool, its argument keys and size, when."""

    tool: str
    keys: tuple[str, ...]
    size: int
    when: datetime
    #: where it came from (e.g. "seq 42" or "line 7"), for reports
    ref: str = ""

    @classmethod
    def from_args(cls, tool: str, args: Mapping[str, Any], when: datetime, ref: str = "") -> Observation:
        import json

        size = len(json.dumps(args, separators=(",", ":"), ensure_ascii=False, default=str))
        return cls(tool, tuple(sorted(str(k) for k in args)), size, when, ref)


@dataclass(frozen=True)
class Deviation:
    kind: str
    tool: str
    detail: str
    ref: str = ""
    when: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "tool": self.tool, "detail": self.detail, "ref": self.ref, "when": self.when}


@dataclass
class ToolProfile:
    tool: str
    calls: int = 0
    hours: list[int] = field(default_factory=lambda: [0] * 24)
    keys: dict[str, int] = field(default_factory=dict)
    total_size: int = 0
    first_seen: str = ""
    last_seen: str = ""

    @property
    def avg_size(self) -> float:
        return self.total_size / self.calls if self.calls else 0.0

    def typical_keys(self, share: float = 0.1) -> list[str]:
        """Keys present in at least `share` of the calls."""
        return sorted(k for k, n in self.keys.items() if self.calls and n / self.calls >= share)

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "calls": self.calls, "hours": list(self.hours),
                "typical_keys": self.typical_keys(), "keys": dict(sorted(self.keys.items())),
                "avg_size": round(self.avg_size, 1), "first_seen": self.first_seen, "last_seen": self.last_seen}


class BehavioralBaseline:
    """Per-tool profiles and the deviations of new calls from them."""

    def __init__(self, *, learning_calls: int = 100, min_tool_calls: int = 10, size_factor: float = 3.0,
                 size_slack: int = 256, hour_share: float = 0.01) -> None:
        self.learning_calls = learning_calls
        self.min_tool_calls = min_tool_calls
        self.size_factor = size_factor
        self.size_slack = size_slack
        self.hour_share = hour_share
        self.profiles: dict[str, ToolProfile] = {}
        self.total = 0

    def detect(self, obs: Observation) -> list[Deviation]:
        """How `obs` departs from what was observed so far (it is not added)."""
        when = obs.when.isoformat(timespec="seconds")
        profile = self.profiles.get(obs.tool)
        if profile is None:
            if self.total >= self.learning_calls:
                return [Deviation("new_tool", obs.tool, f"first call of {obs.tool!r} after {self.total} calls "
                                  "of other tools", obs.ref, when)]
            return []
        out: list[Deviation] = []
        if profile.calls >= self.min_tool_calls:
            new = [k for k in obs.keys if k not in profile.keys]
            if new:
                out.append(Deviation("new_args", obs.tool, f"argument(s) never seen with this tool: "
                                     f"{', '.join(new)}", obs.ref, when))
            avg = profile.avg_size
            if obs.size > avg * self.size_factor and obs.size - avg >= self.size_slack:
                out.append(Deviation("size_anomaly", obs.tool, f"arguments of {obs.size} bytes, "
                                     f"{obs.size / max(avg, 1):.1f}x the average of {avg:.0f}", obs.ref, when))
        if self.total >= self.learning_calls and profile.calls >= self.min_tool_calls:
            hour = obs.when.hour
            share = profile.hours[hour] / profile.calls
            if share < self.hour_share:
                out.append(Deviation("hour_anomaly", obs.tool, f"called at {hour:02d}h, when "
                                     f"{share:.1%} of its {profile.calls} calls happened", obs.ref, when))
        return out

    def observe(self, obs: Observation) -> None:
        profile = self.profiles.get(obs.tool)
        if profile is None:
            profile = self.profiles[obs.tool] = ToolProfile(obs.tool)
            profile.first_seen = obs.when.isoformat(timespec="seconds")
        profile.calls += 1
        profile.hours[obs.when.hour] += 1
        for key in obs.keys:
            profile.keys[key] = profile.keys.get(key, 0) + 1
        profile.total_size += obs.size
        profile.last_seen = obs.when.isoformat(timespec="seconds")
        self.total += 1

    def replay(self, observations: Iterable[Observation]) -> list[Deviation]:
        """Detect then learn, call by call; returns every deviation in order."""
        found: list[Deviation] = []
        for obs in observations:
            found.extend(self.detect(obs))
            self.observe(obs)
        return found

    def report(self, deviations: list[Deviation]) -> dict[str, Any]:
        counts = {k: sum(1 for d in deviations if d.kind == k) for k in KINDS}
        return {"observed": self.total,
                "profiles": [p.as_dict() for p in sorted(self.profiles.values(), key=lambda p: (-p.calls, p.tool))],
                "anomalies": [d.as_dict() for d in deviations], "counts": counts,
                "thresholds": {"learning_calls": self.learning_calls, "min_tool_calls": self.min_tool_calls,
                               "size_factor": self.size_factor, "size_slack": self.size_slack,
                               "hour_share": self.hour_share}}


__all__ = ["KINDS", "BehavioralBaseline", "Deviation", "Observation", "ToolProfile"]
