"""Checking the chain: the first broken link, by row number (seq).

Rows of both event tables are read in seq order, in chunks, and for each:
the seq must follow the previous one (else a row was deleted or a seq
duplicated), `prev_mac` must be the previous row's MAC and the MAC must
recompute (else the row was edited, inserted or moved); its rule rows must
match its `rule_ids` and carry valid MACs; the bodies it references must
exist and hash to their ids. Then the tail is compared with the checkpoint
kept outside the database and with `ledger_head`, which catches truncation.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpwall.ledger._backend import Connection
from mcpwall.ledger._chain import event_mac, read_checkpoint, rule_mac
from mcpwall.ledger._event import body_digest
from mcpwall.ledger._schema import CHAINED, GENESIS, RULE_COLUMNS

CHUNK = 2000
_COLS = ", ".join(("seq", *CHAINED, "prev_mac", "mac"))
_SQL = (f"SELECT {_COLS}, 'tool_calls' FROM tool_calls WHERE seq > ? AND seq <= ? UNION ALL "
        f"SELECT {_COLS}, 'protocol_events' FROM protocol_events WHERE seq > ? AND seq <= ? ORDER BY seq")
_RULES = f"SELECT {', '.join(RULE_COLUMNS)} FROM security_rule_events WHERE call_seq > ? AND call_seq <= ? " \
         "ORDER BY call_seq, idx"
_RULE_IDS = CHAINED.index("rule_ids") + 1
_BODY_COLS = (CHAINED.index("request_body_id") + 1, CHAINED.index("response_body_id") + 1)


@dataclass
class VerifyReport:
    """The outcome of `verify`: ok, or the first broken row and why."""

    ok: bool = True
    rows: int = 0
    last_seq: int = 0
    first_bad_seq: int | None = None
    table: str | None = None
    problem: str | None = None
    checkpoint_seq: int | None = None
    warnings: list[str] = field(default_factory=list)

    def fail(self, seq: int | None, problem: str, table: str | None = None) -> VerifyReport:
        if self.ok:
            self.ok, self.first_bad_seq, self.problem, self.table = False, seq, problem, table
        return self

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "rows": self.rows, "last_seq": self.last_seq, "first_bad_seq": self.first_bad_seq,
                "table": self.table, "problem": self.problem, "checkpoint_seq": self.checkpoint_seq,
                "warnings": self.warnings}


def _max_seq(conn: Connection) -> int:
    rows = conn.execute("SELECT MAX(seq) FROM (SELECT MAX(seq) AS seq FROM tool_calls UNION ALL "
                        "SELECT MAX(seq) AS seq FROM protocol_events) AS m")
    return int(rows[0][0] or 0) if rows else 0


def verify_chain(conn: Connection, key: bytes, ledger_id: str, checkpoint: Path | None,
                 *, check_bodies: bool = True) -> VerifyReport:
    report = VerifyReport()
    cp = read_checkpoint(checkpoint, key, ledger_id) if checkpoint is not None else None
    head_rows = conn.execute("SELECT seq, mac FROM ledger_head WHERE id = 1")
    head_seq = int(head_rows[0][0]) if head_rows else 0
    if cp is not None:
        report.checkpoint_seq = cp.seq
        if not cp.authentic:
            return report.fail(None, f"the checkpoint in {checkpoint} was altered (its MAC does not verify)")
    end = max(_max_seq(conn), head_seq)
    expected, prev = 1, GENESIS
    checkpoint_mac_seen: str | None = None
    orphan: int | None = None
    low = 0
    while low < end:
        high = low + CHUNK
        rows = conn.execute(_SQL, (low, high, low, high))
        rules: dict[int, list[tuple[Any, ...]]] = {}
        for r in conn.execute(_RULES, (low, high)):
            rules.setdefault(int(r[0]), []).append(r)
        bodies = _bodies(conn, rows) if check_bodies else {}
        for row in rows:
            seq, table = int(row[0]), str(row[-1])
            values, prev_mac, mac = row[1:1 + len(CHAINED)], row[-3], row[-2]
            if seq > expected:
                missing = f"row {expected}" if seq == expected + 1 else f"rows {expected}..{seq - 1}"
                return report.fail(expected, f"{missing} missing: the chain jumps from row {expected - 1} to "
                                             f"row {seq} (deleted rows)")
            if seq < expected:
                return report.fail(seq, f"row {seq} appears twice (an inserted or copied row)", table)
            if prev_mac != prev:
                return report.fail(seq, f"row {seq} does not follow row {seq - 1}: its prev_mac is not that "
                                        "row's MAC (inserted, reordered or replaced rows)", table)
            if not hmac.compare_digest(str(mac), event_mac(key, table, seq, str(prev_mac), list(values))):
                return report.fail(seq, f"row {seq} was altered: its MAC does not match its contents "
                                        "(edited, inserted or moved between tables)", table)
            problem = _check_rules(key, row, rules.pop(seq, []))
            if problem is None and check_bodies:
                problem = _check_bodies(row, bodies)
            if problem is not None:
                return report.fail(seq, f"row {seq}: {problem}", table)
            if cp is not None and seq == cp.seq:
                checkpoint_mac_seen = str(mac)
            prev = str(mac)
            expected = seq + 1
            report.rows += 1
            report.last_seq = seq
        if rules and orphan is None:
            orphan = min(rules)
        low = high
    last = report.last_seq
    if head_seq > last:
        return report.fail(last + 1, f"rows {last + 1}..{head_seq} missing: ledger_head records row {head_seq} "
                                     f"but the rows end at {last} (tail truncated)")
    if cp is not None:
        if cp.seq > last:
            return report.fail(last + 1, f"rows {last + 1}..{cp.seq} missing: the checkpoint records row {cp.seq} "
                                         f"but the ledger ends at row {last} (tail truncated)")
        if cp.seq and checkpoint_mac_seen != cp.mac:
            return report.fail(cp.seq, f"row {cp.seq} differs from the checkpoint (rewritten tail)")
    elif checkpoint is not None and last > 0:
        return report.fail(None, f"no checkpoint for this ledger in {checkpoint}: truncation of the tail "
                                 "cannot be ruled out (use --no-checkpoint to check the chain alone)")
    elif checkpoint is None:
        report.warnings.append("no checkpoint used: a truncated tail would not be detected")
    if orphan is not None:
        return report.fail(orphan, f"security_rule_events rows for row {orphan}, which does not exist")
    return report


def _check_rules(key: bytes, row: tuple[Any, ...], rule_rows: list[tuple[Any, ...]]) -> str | None:
    try:
        rule_ids = orjson.loads(row[_RULE_IDS])
    except orjson.JSONDecodeError:
        return "rule_ids is not JSON"
    found = [r[4] for r in rule_rows]
    if found != rule_ids:
        return f"its security_rule_events rows ({found}) do not match its rule_ids ({rule_ids})"
    mac = str(row[-2])
    for r in rule_rows:
        if not hmac.compare_digest(str(r[-1]), rule_mac(key, mac, list(r[:-1]))):
            return f"its security_rule_events row for {r[4]!r} was altered"
    return None


def _bodies(conn: Connection, rows: list[tuple[Any, ...]]) -> dict[str, tuple[int, int, int, bytes]]:
    ids = sorted({str(r[c]) for r in rows for c in _BODY_COLS if r[c]})
    out: dict[str, tuple[int, int, int, bytes]] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        marks = ", ".join("?" for _ in part)
        for body_id, size, stored, truncated, content in conn.execute(
                f"SELECT id, size, stored, truncated, content FROM event_body_blobs WHERE id IN ({marks})", part):
            out[str(body_id)] = (int(size), int(stored), int(truncated), bytes(content))
    return out


def _check_bodies(row: tuple[Any, ...], bodies: dict[str, tuple[int, int, int, bytes]]) -> str | None:
    for col in _BODY_COLS:
        body_id = row[col]
        if not body_id:
            continue
        found = bodies.get(str(body_id))
        if found is None:
            return f"its body {body_id} is missing from event_body_blobs"
        size, stored, truncated, content = found
        whole, stored_digest = body_digest(str(body_id))
        prefixed = "-" in str(body_id)  # written with the time prefix: the id says whether it was cut
        if truncated:
            ok = (stored == len(content) < size and (stored_digest is not None or not prefixed) and
                  (stored_digest is None or hashlib.sha256(content).hexdigest() == stored_digest))
        else:
            ok = (size == stored == len(content) and stored_digest is None and
                  hashlib.sha256(content).hexdigest() == whole)
        if not ok:
            return f"its body {body_id} was altered"
    return None


__all__ = ["VerifyReport", "verify_chain"]
