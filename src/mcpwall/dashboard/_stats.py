"""The numbers on the dashboard's cards and chart, folded from ledger rows as they arrive.

Rows come in seq order (first a backlog of the last 24 hours, capped, then
each new row once). `Stats` keeps one small tuple per row in the window and
answers the cards (calls, blocked, redacted, p50/p99 latency) and a
per-minute series of calls and blocks for the last hour.

Latency is the time a call spent in the gateway (`gateway_ms`): its duration
less the time its server took and the time it waited for a person (an `ask`
answered after 82 s is 82 s of someone's attention, not of the gateway's).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from datetime import datetime
from typing import Any

WINDOW_S = 24 * 3600
MAX_ROWS = 100_000
BUCKET_S = 60
BUCKETS = 60
BLOCKED = frozenset({"deny"})


def row_time(ts: Any) -> float:
    """A ledger `ts` (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) as epoch seconds."""
    if isinstance(ts, int | float):
        return float(ts)
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def is_redacted(row: Mapping[str, Any]) -> bool:
    if row.get("decision") == "redact" or row.get("redacted_keys"):
        return True
    dlp = row.get("dlp")
    return isinstance(dlp, dict) and bool(dlp.get("erased") or dlp.get("masked"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def waited_ms(row: Mapping[str, Any]) -> float | None:
    """How long the call waited for a person to answer its ask (`notes.approval.waited_ms`)."""
    notes = row.get("notes")
    approval = notes.get("approval") if isinstance(notes, Mapping) else None
    return _number(approval.get("waited_ms")) if isinstance(approval, Mapping) else None


def gateway_ms(row: Mapping[str, Any]) -> float | None:
    """The row's time in the gateway: its duration less its upstream time and its wait for a person."""
    total = _number(row.get("duration_ms"))
    if total is None:
        return None
    return max(0.0, total - (_number(row.get("upstream_ms")) or 0.0) - (waited_ms(row) or 0.0))


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return None
    rank = max(1, math.ceil(p / 100 * len(values)))
    return values[min(rank, len(values)) - 1]


class Stats:
    """Tool-call figures over a sliding window.

    One row costs 17 bytes: times and durations live in a ring of `array('d')`
    and flags in a `bytearray` (a deque of tuples cost ~140 bytes a row, 14 MiB
    at the cap, all of it resident in a gateway that never shows a dashboard).
    """

    def __init__(self, window_s: float = WINDOW_S, max_rows: int = MAX_ROWS) -> None:
        self.window_s = window_s
        self.max_rows = max_rows
        self._time = array("d", bytes(8 * max_rows))
        #: time in the gateway in ms (`gateway_ms`), NaN when unknown
        self._duration = array("d", bytes(8 * max_rows))
        #: bit 0 blocked, bit 1 redacted
        self._flags = bytearray(max_rows)
        self._head = 0  # index of the oldest row
        self._count = 0
        self.last_seq = 0
        self.capped = False

    def __len__(self) -> int:
        return self._count

    def add(self, row: Mapping[str, Any], at: float | None = None) -> None:
        """Fold one row in; `at` is its time in epoch seconds when the caller has it (saves parsing `ts`)."""
        if row.get("method", "tools/call") != "tools/call":
            return
        seq = row.get("seq")
        if isinstance(seq, int):
            if seq <= self.last_seq:
                return
            self.last_seq = seq
        if self._count == self.max_rows:  # full: the oldest row makes room
            self.capped = True
            self._head = (self._head + 1) % self.max_rows
            self._count -= 1
        i = (self._head + self._count) % self.max_rows
        duration = gateway_ms(row)
        self._time[i] = row_time(row.get("ts")) if at is None else at
        self._duration[i] = math.nan if duration is None else duration
        self._flags[i] = (row.get("decision") in BLOCKED) | (is_redacted(row) << 1)
        self._count += 1

    def snapshot(self, now: float, pending_asks: int) -> dict[str, Any]:
        start = now - self.window_s
        size = self.max_rows
        while self._count and self._time[self._head] < start:
            self._head = (self._head + 1) % size
            self._count -= 1
        calls = blocked = redacted = 0
        durations: list[float] = []
        series_start = (math.floor(now / BUCKET_S) - BUCKETS + 1) * BUCKET_S
        series_calls = [0] * BUCKETS
        series_blocks = [0] * BUCKETS
        for k in range(self._count):
            i = (self._head + k) % size
            t, flags, d = self._time[i], self._flags[i], self._duration[i]
            b = flags & 1
            calls += 1
            blocked += b
            redacted += flags >> 1
            if d == d:  # not NaN
                durations.append(d)
            if t >= series_start:
                j = min(BUCKETS - 1, int((t - series_start) // BUCKET_S))
                series_calls[j] += 1
                series_blocks[j] += b
        durations.sort()
        p50, p99 = percentile(durations, 50), percentile(durations, 99)
        return {"window_s": self.window_s, "calls": calls, "blocked": blocked, "redacted": redacted,
                "asks_pending": pending_asks, "p50_ms": round(p50, 2) if p50 is not None else None,
                "p99_ms": round(p99, 2) if p99 is not None else None, "capped": self.capped,
                "series": {"start": series_start, "bucket_s": BUCKET_S, "calls": series_calls,
                           "blocks": series_blocks}, "last_seq": self.last_seq}


__all__ = ["BUCKETS", "BUCKET_S", "WINDOW_S", "Stats", "gateway_ms", "is_redacted", "percentile", "row_time",
           "waited_ms"]
