"""The dashboard's live side: new ledger rows and approval changes, pushed to browsers (SSE).

While at least one browser listens on `/api/events`, the feed polls the
ledger every `interval_s` for `tool_calls` rows after the last seq it saw
(one indexed query), folds them into `Stats` and publishes each as a "call"
event; it also publishes "approvals" when the pending set changes (answers
may come from another process) and "stats" when the figures move. A gateway
without a ledger feeds rows in directly (`record`), kept in memory.

Everything shown to a browser passes `present`: secrets DLP recognises are
masked in previews, reasons and errors, and long texts are cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import itertools
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.approvals import mask_secrets, safe_arguments
from mcpwall.dashboard._stats import Stats, gateway_ms, is_redacted, row_time, waited_ms
from mcpwall.ledger import LedgerQuery, Page, iso, parse_cursor
from mcpwall.metrics import decision_word
from mcpwall.protocol import json_text

if TYPE_CHECKING:
    from mcpwall.dashboard._console import Console
    from mcpwall.pipeline import RequestContext

log = logging.getLogger("mcpwall.dashboard")

BACKLOG_ROWS = 20_000
MAX_TEXT = 400
QUEUE_SIZE = 500


def _cut(value: Any, limit: int = MAX_TEXT) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class MemoryRows:
    """Rows of a gateway without a ledger, newest kept, queried like the ledger."""

    def __init__(self, size: int = 5000) -> None:
        self.rows: deque[dict[str, Any]] = deque(maxlen=size)
        self._seq = itertools.count(1)

    def add(self, row: dict[str, Any]) -> dict[str, Any]:
        row["seq"] = next(self._seq)
        self.rows.append(row)
        return row

    def query(self, q: LedgerQuery) -> Page:
        q = q.normalised()
        after = before = None
        if q.cursor:
            order, seq = parse_cursor(q.cursor)
            after, before = (seq, None) if order == "asc" else (None, seq)

        def keep(r: Mapping[str, Any]) -> bool:
            checks = ((q.server, r.get("server_name")), (q.tool, r.get("tool_name")), (q.client, r.get("client")),
                      (q.method, r.get("method")))
            if any(p and not fnmatch.fnmatchcase(str(v or ""), p) for p, v in checks):
                return False
            if q.session and not str(r.get("session_id") or "").startswith(q.session.replace("*", "")):
                return False
            if q.decision and r.get("decision") not in q.decision:
                return False
            if q.since and str(r.get("ts")) < q.since:
                return False
            if q.until and str(r.get("ts")) > q.until:
                return False
            seq = int(r["seq"])
            return not ((after is not None and seq <= after) or (before is not None and seq >= before))

        # A copy taken in one C call: this runs on a worker thread (Feed.query) while the event
        # loop adds rows, and iterating the deque itself fails once a row is added meanwhile.
        rows = [r for r in self.rows.copy() if keep(r)]
        if q.order == "desc":
            rows.reverse()
        rows = [preview_row(r) for r in rows[: q.limit]]
        cursor = (f"asc:{rows[-1]['seq'] if rows else after or 0}" if q.order == "asc"
                  else (f"desc:{rows[-1]['seq']}" if len(rows) == q.limit else None))
        return Page(rows, cursor, q.order)


#: Arguments up to this size (JSON) are kept as text, under this key, and previewed when a
#: dashboard reads the row.
_LAZY_ARGS_BYTES = 4096
_PENDING = "_arguments_json"


def row_from_context(ctx: RequestContext) -> dict[str, Any]:
    """A ledger-shaped row for a finished tools/call (gateways without a ledger).

    Runs for every call, dashboard open or not, so the preview (redaction, DLP
    masking) waits until someone reads the row: small arguments are kept as
    JSON text (immutable, bounded) and previewed by `preview_row`.
    """
    decision = ctx.decision
    args = ctx.params.get("arguments")
    response = ctx.response or {}
    err = response.get("error")
    given = err.get("data") if isinstance(err, dict) else None
    data: dict[str, Any] = given if isinstance(given, dict) else {}
    rule_ids = list(data.get("rule_ids") or (decision.rule_ids if decision else ()))
    reasons = list(data.get("reasons") or (decision.reasons if decision else ()))
    redacted = list(decision.redacted_keys) if decision else []
    args = args if isinstance(args, dict) else {}
    row = {"ts": iso(ctx.started_wall), "server_name": ctx.server, "tool_name": ctx.target, "method": ctx.method,
           "decision": decision_word(ctx), "outcome": ctx.outcome, "rule_ids": rule_ids, "reasons": reasons,
           "duration_ms": round((time.perf_counter() - ctx.started) * 1000, 3), "client": ctx.session.client_name,
           "agent_id": ctx.session.agent, "session_id": ctx.session.id, "error_message": ctx.error_message,
           "redacted_keys": redacted, "dlp": ctx.notes.get("dlp") or {}, "upstream_ms": ctx.upstream_ms}
    approval = ctx.notes.get("approval")
    if isinstance(approval, dict) and "waited_ms" in approval:
        row["notes"] = {"approval": {"waited_ms": approval["waited_ms"]}}
    try:
        raw = json_text(args)
    except TypeError:
        raw = None
    if raw is not None and len(raw) <= _LAZY_ARGS_BYTES:
        row[_PENDING] = raw
    else:
        row["request_preview"] = _cut(safe_arguments(args, redacted), 512)
    return row


def preview_row(row: dict[str, Any]) -> dict[str, Any]:
    """Fill in the request preview of a row from `row_from_context` (idempotent)."""
    raw = row.get(_PENDING)
    if raw is not None:
        row["request_preview"] = _cut(safe_arguments(orjson.loads(raw), row.get("redacted_keys") or ()), 512)
        row.pop(_PENDING, None)
    return row


class Feed:
    """Rows, approvals and stats for one dashboard."""

    def __init__(self, console: Console, interval_s: float = 0.3) -> None:
        self.console = console
        self.interval_s = interval_s
        self.stats = Stats()
        self.memory = MemoryRows()
        self._cursor = 0
        self._primed = False
        self._subscribers: set[asyncio.Queue[tuple[str, Any] | None]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._approvals_seen: tuple[str, ...] | None = None
        self._stats_seen: tuple[Any, ...] | None = None
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ reading

    def _source(self) -> Any:
        return self.console.ledger if self.console.ledger is not None else self.memory

    async def query(self, q: LedgerQuery, present: bool = True) -> tuple[list[dict[str, Any]], str | None]:
        """One page of rows, presented for the browser (or as the ledger has them: `present=False`)."""
        source = self._source()
        page = await asyncio.to_thread(source.query, q)
        if not present:
            return page.rows, page.next_cursor
        rows = await asyncio.to_thread(self.present_rows, page.rows)
        return rows, page.next_cursor

    def present_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows as the browser is shown them (`present`), with the policy's badges; on a worker thread."""
        badges = self.console.rule_badges()
        return [self.present(r, badges) for r in rows]

    def present(self, row: Mapping[str, Any], badges: Mapping[str, Mapping[str, list[str]]]) -> dict[str, Any]:
        rule_ids = [str(r) for r in row.get("rule_ids") or []]
        owasp: list[str] = []
        compliance: list[str] = []
        ledger = self.console.ledger
        seq = row.get("seq")
        if rule_ids and ledger is not None and isinstance(seq, int) and row.get("table", "tool_calls") == "tool_calls":
            with contextlib.suppress(Exception):
                for rule in ledger.rule_events(seq):
                    owasp.extend(rule.get("owasp") or [])
                    compliance.extend(rule.get("compliance") or [])
        if not owasp and not compliance:
            for rid in rule_ids:
                owasp.extend(badges.get(rid, {}).get("owasp", []))
                compliance.extend(badges.get(rid, {}).get("compliance", []))
        return {
            "seq": seq, "ts": row.get("ts"), "time": row_time(row.get("ts")), "server": row.get("server_name"),
            "tool": row.get("tool_name"), "method": row.get("method"), "decision": row.get("decision"),
            "outcome": row.get("outcome"), "rule_ids": rule_ids,
            "reasons": [_cut(r) for r in mask_secrets(list(row.get("reasons") or []))],
            "duration_ms": row.get("duration_ms"), "gateway_ms": _ms(gateway_ms(row)),
            "upstream_ms": row.get("upstream_ms"), "waited_ms": waited_ms(row),
            "client": row.get("client"), "agent": row.get("agent_id"),
            "session": str(row.get("session_id") or "")[:8], "session_id": row.get("session_id"),
            "preview": _cut(mask_secrets(row.get("request_preview"))),
            "error": _cut(mask_secrets(row.get("error_message"))), "redacted": is_redacted(row),
            "owasp": sorted(set(owasp)), "compliance": sorted(set(compliance)),
        }

    # ------------------------------------------------------------------ new rows

    async def _prime(self) -> None:
        if self._primed:
            return
        self._primed = True
        ledger = self.console.ledger
        if ledger is None:
            return
        from mcpwall.ledger import parse_time

        q = LedgerQuery(table="tool_calls", order="desc", since=parse_time("24h"), limit=BACKLOG_ROWS)
        page = await asyncio.to_thread(ledger.query, q)
        for row in reversed(page.rows):
            self.stats.add(row)
        if len(page.rows) >= BACKLOG_ROWS:
            self.stats.capped = True
        newest = await asyncio.to_thread(ledger.query, LedgerQuery(table="tool_calls", order="desc", limit=1))
        self._cursor = int(newest.rows[0]["seq"]) if newest.rows else 0

    async def refresh(self) -> None:
        """Read rows after the last one seen; publish them, the approvals and the stats when they changed."""
        async with self._lock:
            await self._prime()
            ledger = self.console.ledger
            if ledger is not None:
                q = LedgerQuery(table="tool_calls", order="asc", cursor=f"asc:{self._cursor}", limit=500)
                page = await asyncio.to_thread(ledger.query, q)
                if page.rows:
                    self._cursor = int(page.rows[-1]["seq"])
                    presented = await asyncio.to_thread(self.present_rows, page.rows)
                    for row, shown in zip(page.rows, presented, strict=True):
                        self.stats.add(row)
                        self.publish("call", shown)
            self._publish_approvals()
            self._publish_stats()

    def record(self, ctx: RequestContext) -> None:
        """A finished tools/call of a gateway without a ledger."""
        row = self.memory.add(row_from_context(ctx))
        self.stats.add(row, ctx.started_wall)
        if self._subscribers:
            self.publish("call", self.present(preview_row(row), self.console.rule_badges()))

    def snapshot(self) -> dict[str, Any]:
        return self.stats.snapshot(time.time(), len(self.console.book.pending()))

    async def stats_now(self) -> dict[str, Any]:
        await self.refresh_quietly()
        return self.snapshot()

    async def refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except Exception as exc:  # the ledger is busy or gone: show what we have
            log.warning("dashboard refresh failed: %s", exc)

    def _publish_approvals(self, force: bool = False) -> None:
        pending = self.console.book.pending()
        seen = tuple(f"{r.get('id')}:{r.get('status')}" for r in pending)
        if force or seen != self._approvals_seen:
            self._approvals_seen = seen
            self.publish("approvals", {"pending": len(pending)})

    def _publish_stats(self) -> None:
        snap = self.snapshot()
        key = (snap["calls"], snap["blocked"], snap["redacted"], snap["asks_pending"], snap["last_seq"])
        if key != self._stats_seen:
            self._stats_seen = key
            self.publish("stats", snap)

    def approval_changed(self, kind: str, record: dict[str, Any]) -> None:
        """Listener of the gateway's approvals service: tell browsers at once."""
        self._publish_approvals(force=True)

    # ------------------------------------------------------------------ subscribers

    def publish(self, kind: str, data: Any) -> None:
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait((kind, data))

    def subscribe(self) -> asyncio.Queue[tuple[str, Any] | None]:
        """A queue of (kind, data) events for one browser; None in it means the feed closed."""
        queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue(QUEUE_SIZE)
        self._subscribers.add(queue)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.ensure_future(self._poll())
        return queue

    def unsubscribe(self, queue: asyncio.Queue[tuple[str, Any] | None]) -> None:
        self._subscribers.discard(queue)

    async def _poll(self) -> None:
        while self._subscribers:
            await self.refresh_quietly()
            await asyncio.sleep(self.interval_s)

    async def close(self) -> None:
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._poller
            self._poller = None


__all__ = ["BACKLOG_ROWS", "Feed", "MemoryRows", "preview_row", "row_from_context"]
