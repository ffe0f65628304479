"""The per-session timeline (`/ui/timeline`): what one client did, in order, as `mcpwall timeline` shows it.

    GET /api/sessions?limit=                  recent sessions, newest first: who, when, counts per decision
    GET /api/timeline?session=ID&cursor=&limit=   that session's events (every request, not only tools/call),
                                                  oldest first, with the seconds since its first event

Sessions are found in the newest `SCAN_ROWS` events of the ledger (a gateway
without a ledger: its in-memory tool calls). A session id may be given by a
prefix of 8 or more characters, as the other pages show it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mcpwall.dashboard._stats import row_time
from mcpwall.ledger import LedgerQuery

if TYPE_CHECKING:
    from mcpwall.dashboard._feed import Feed

SCAN_ROWS = 2000
MAX_EVENTS = 500
_WHO = (("client", "client"), ("agent", "agent_id"), ("process", "process_name"), ("peer", "peer"))


def _group(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ledger rows (any order) folded per session: who it was, its first and last time, counts per decision."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        sid = str(row.get("session_id") or "")
        s = out.get(sid)
        if s is None:
            s = out[sid] = {"session_id": sid, "client": "", "agent": "", "process": "", "peer": "",
                            "first": row.get("ts"), "last": row.get("ts"), "events": 0, "counts": {}}
        for key, column in _WHO:
            s[key] = s[key] or row.get(column) or ""
        ts = str(row.get("ts"))
        s["first"], s["last"] = min(str(s["first"]), ts), max(str(s["last"]), ts)
        s["events"] += 1
        decision = str(row.get("decision"))
        s["counts"][decision] = s["counts"].get(decision, 0) + 1
    for s in out.values():
        s["first_time"], s["last_time"] = row_time(s["first"]), row_time(s["last"])
    return sorted(out.values(), key=lambda s: str(s["last"]), reverse=True)


async def sessions(feed: Feed, limit: int) -> dict[str, Any]:
    rows, _ = await feed.query(LedgerQuery(table="all", order="desc", limit=SCAN_ROWS), present=False)
    found = [s for s in _group(rows) if s["session_id"]]  # gateway events (a policy reload) have none
    return {"sessions": found[:limit], "scanned": len(rows)}


async def timeline(feed: Feed, session: str, cursor: str | None, limit: int) -> dict[str, Any]:
    if len(session.replace("*", "")) < 8:
        raise ValueError("give a session id (8 characters or more)")
    query = LedgerQuery(table="all", session=session.replace("*", ""), order="asc", cursor=cursor,
                        limit=min(limit, MAX_EVENTS))
    page, _ = await feed.query(query, present=False)
    if not page:
        return {"session": None, "events": [], "next_cursor": None}
    # one session (a prefix may name several: the first one's events)
    sid = page[0].get("session_id")
    raw = [r for r in page if r.get("session_id") == sid]
    [summary] = _group(raw)
    events = await asyncio.to_thread(feed.present_rows, raw)
    first = min(e["time"] for e in events)
    for event, row in zip(events, raw, strict=True):
        event["elapsed_s"] = round(event["time"] - first, 3)
        event["process"] = row.get("process_name")
        event["table"] = row.get("table", "tool_calls")
    events.sort(key=lambda e: (e["time"], e["seq"] or 0))
    full = len(page) >= query.limit
    return {"session": summary, "events": events, "next_cursor": f"asc:{page[-1]['seq']}" if full else None}


__all__ = ["SCAN_ROWS", "sessions", "timeline"]
