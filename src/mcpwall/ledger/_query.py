"""Reading the ledger: filters, a seq cursor and decoded rows.

One query API serves `mcpwall logs`, `mcpwall timeline`, the dashboard and
approvals. Paging uses the sequence number, not an offset, so a cursor stays
valid and never repeats or skips a row while new rows arrive: `asc:N` means
"rows after seq N, oldest first", `desc:N` "rows before seq N, newest first".
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from mcpwall.ledger._backend import Connection
from mcpwall.ledger._errors import LedgerConfigError
from mcpwall.ledger._schema import JSON_COLUMNS, ROW_COLUMNS

_TABLES = ("tool_calls", "protocol_events")
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_COLS = ", ".join(ROW_COLUMNS)
MAX_LIMIT = 100_000


def parse_time(text: str, now: datetime | None = None) -> str:
    """An ISO timestamp (naive = local time) or a duration ago (`30s`, `10m`, `2h`, `7d`, `1w`) -> ledger ts."""
    value = text.strip()
    when: datetime
    m = _RELATIVE.match(value)
    if m:
        when = (now or datetime.now(UTC)) - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    else:
        try:
            when = datetime.fromisoformat(value)
        except ValueError as exc:
            raise LedgerConfigError(f"not a time: {text!r} (use ISO 8601, e.g. 2026-05-20T10:00, or 10m, 2h, 7d)") \
                from exc
        if when.tzinfo is None:
            when = when.astimezone()
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_cursor(cursor: str) -> tuple[str, int]:
    order, _, seq = cursor.partition(":")
    if order not in ("asc", "desc") or not seq.isdigit():
        raise LedgerConfigError(f"not a ledger cursor: {cursor!r} (expected asc:N or desc:N)")
    return order, int(seq)


@dataclass(frozen=True)
class LedgerQuery:
    """Which rows to read. Text filters take shell globs (`*`, `?`); `session` also takes an id prefix."""

    since: str | None = None
    until: str | None = None
    server: str | None = None
    tool: str | None = None
    decision: tuple[str, ...] = ()
    session: str | None = None
    client: str | None = None
    method: str | None = None
    #: "tool_calls", "protocol_events" or "all" (both, merged by seq)
    table: str = "tool_calls"
    order: str = "desc"
    cursor: str | None = None
    limit: int = 50

    def normalised(self) -> LedgerQuery:
        if self.table not in (*_TABLES, "all"):
            raise LedgerConfigError(f"unknown ledger table {self.table!r}")
        order = self.order
        if self.cursor:
            order, _ = parse_cursor(self.cursor)
        if order not in ("asc", "desc"):
            raise LedgerConfigError(f"order must be asc or desc, not {order!r}")
        server, tool = self.server, self.tool
        if tool and not server and "__" in tool.strip("_"):
            server, _, tool = tool.partition("__")
        elif tool and not server and "/" in tool:
            server, _, tool = tool.partition("/")
        return replace(self, order=order, server=server, tool=tool, limit=max(1, min(int(self.limit), MAX_LIMIT)))


@dataclass
class Page:
    """Rows in the query's order and the cursor of the next page (None: no older rows)."""

    rows: list[dict[str, Any]]
    next_cursor: str | None
    order: str = "desc"
    extra: dict[str, Any] = field(default_factory=dict)


def _glob(column: str, pattern: str, where: list[str], params: list[Any]) -> None:
    if "*" not in pattern and "?" not in pattern:
        where.append(f"{column} = ?")
        params.append(pattern)
        return
    like = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("*", "%").replace("?", "_")
    where.append(f"{column} LIKE ? ESCAPE '\\'")
    params.append(like)


def _where(q: LedgerQuery, after: int | None, before: int | None) -> tuple[str, list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if q.since:
        where.append("ts >= ?")
        params.append(q.since)
    if q.until:
        where.append("ts <= ?")
        params.append(q.until)
    if q.server:
        _glob("server_name", q.server, where, params)
    if q.tool:
        _glob("tool_name", q.tool, where, params)
    if q.client:
        _glob("client", q.client, where, params)
    if q.method:
        _glob("method", q.method, where, params)
    if q.decision:
        where.append(f"decision IN ({', '.join('?' for _ in q.decision)})")
        params.extend(q.decision)
    if q.session:
        if len(q.session) >= 32:
            where.append("session_id = ?")
            params.append(q.session)
        else:
            _glob("session_id", q.session.replace("*", "") + "*", where, params)
    if after is not None:
        where.append("seq > ?")
        params.append(after)
    if before is not None:
        where.append("seq < ?")
        params.append(before)
    return (" WHERE " + " AND ".join(where)) if where else "", params


def decode_row(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(columns, row, strict=True))
    for name in JSON_COLUMNS:
        value = out.get(name)
        if isinstance(value, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                out[name] = orjson.loads(value)
    rid = out.get("request_id")
    if isinstance(rid, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            out["request_id"] = orjson.loads(rid)
    return out


def run_query(conn: Connection, query: LedgerQuery) -> Page:
    q = query.normalised()
    after = before = None
    if q.cursor:
        _, seq = parse_cursor(q.cursor)
        if q.order == "asc":
            after = seq
        else:
            before = seq
    tables = _TABLES if q.table == "all" else (q.table,)
    parts: list[str] = []
    params: list[Any] = []
    for table in tables:
        where, p = _where(q, after, before)
        parts.append(f"SELECT {_COLS}, '{table}' AS kind FROM {table}{where}")
        params.extend(p)
    direction = "ASC" if q.order == "asc" else "DESC"
    sql = " UNION ALL ".join(parts) + f" ORDER BY seq {direction} LIMIT ?"
    params.append(q.limit)
    columns = (*ROW_COLUMNS, "table")
    rows = [decode_row(columns, r) for r in conn.execute(sql, params)]
    if q.order == "asc":
        last = rows[-1]["seq"] if rows else (after or 0)
        next_cursor: str | None = f"asc:{last}"
    else:
        next_cursor = f"desc:{rows[-1]['seq']}" if len(rows) == q.limit else None
    return Page(rows, next_cursor, q.order)


__all__ = ["MAX_LIMIT", "LedgerQuery", "Page", "decode_row", "parse_cursor", "parse_time", "run_query"]
