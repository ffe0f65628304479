"""How many ledger rows one source may add a minute, for rows that anyone may cause.

Calls refused at the door (no token, unknown server) and the roots traffic the gateway records
(a server asking `roots/list` in a loop, a client repeating `roots/list_changed`) each cost a
ledger row; a flood of them must not fill the ledger's disk. Beyond the budget they are only
counted by the caller.
"""

from __future__ import annotations

import time

#: sources remembered at most; past that the windows start over (an attacker with many peers
#: gains at most one more window each)
MAX_KEYS = 10_000


class MinuteBudget:
    """`per_minute` rows for each key in a window of 60 s that starts with the key's first row."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        #: key -> [window start, rows recorded in it]
        self._windows: dict[str, list[float]] = {}

    def take(self, key: str) -> bool:
        """Whether one more row may be recorded for `key` now (and count it if so)."""
        now = time.monotonic()
        window = self._windows.get(key)
        if window is None or now - window[0] >= 60.0:
            if len(self._windows) > MAX_KEYS:
                self._windows.clear()
            self._windows[key] = [now, 1]
            return True
        if window[1] < self.per_minute:
            window[1] += 1
            return True
        return False


__all__ = ["MinuteBudget"]
