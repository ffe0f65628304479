"""The ledger's integrity as the overview shows it: the published head and the last chain check.

`verify-audit` walks the whole HMAC chain, which takes a while on a large
ledger, so the dashboard runs it on a worker thread, one at a time, and
keeps the last report: the overview asks for the status (a check starts when
there is none yet or the last one is older than `max_age_s`, and the ledger
holds at most `AUTO_ROWS` rows), and "Verify now" waits for a fresh one.
Reading the status never blocks on the check. Past `AUTO_ROWS` a check only
runs when a person asks: inside the gateway it shares the process (and the
GIL) with the calls, and reading millions of rows every few minutes is not
a cost the dashboard should impose by being open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpwall.dashboard._console import Console

log = logging.getLogger("mcpwall.dashboard")

#: How old the last check may be before looking at the overview starts another.
VERIFY_EVERY_S = 600.0
#: Up to how many rows the overview checks the chain by itself.
AUTO_ROWS = 100_000


class Integrity:
    """The last chain check of one dashboard's ledger, and the check under way."""

    def __init__(self, console: Console, max_age_s: float = VERIFY_EVERY_S) -> None:
        self.console = console
        self.max_age_s = max_age_s
        self.last: dict[str, Any] | None = None
        self._task: asyncio.Task[dict[str, Any]] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def status(self) -> dict[str, Any] | None:
        """None without a ledger; else the head now, the last report (with its time) and whether a check runs."""
        ledger = self.console.ledger
        if ledger is None:
            return None
        head = ledger.published_head()
        stale = self.last is None or time.time() - self.last["checked_at"] > self.max_age_s
        automatic = int(head.get("seq") or 0) <= AUTO_ROWS
        if stale and automatic and not self.running:
            self._start()
        return {"head": head, "verify": self.last, "verifying": self.running, "automatic": automatic}

    async def verify(self) -> dict[str, Any] | None:
        """A fresh check (joining the one under way, if it started after the last report); None without a ledger."""
        if self.console.ledger is None:
            return None
        task = self._task if self.running else self._start()
        assert task is not None
        return await asyncio.shield(task)

    def _start(self) -> asyncio.Task[dict[str, Any]]:
        self._task = asyncio.ensure_future(self._run())
        return self._task

    async def _run(self) -> dict[str, Any]:
        ledger = self.console.ledger
        assert ledger is not None
        started = time.time()
        try:
            report: dict[str, Any] = (await asyncio.to_thread(ledger.verify)).as_dict()
        except Exception as exc:  # the ledger is unreadable: that is the finding
            log.warning("dashboard: the ledger check failed: %s", exc)
            report = {"ok": False, "problem": f"the ledger cannot be checked: {exc}"}
        report["checked_at"] = time.time()
        report["took_s"] = round(report["checked_at"] - started, 3)
        self.last = report
        return report

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None


__all__ = ["AUTO_ROWS", "VERIFY_EVERY_S", "Integrity"]
