"""Checking the chain: the first broken link, by row number (seq).

The walk runs in one read snapshot. Rows of both event tables are read in seq
order, in chunks, and for each: every column must hold the storage class its
schema says (a TEXT where a BLOB belongs, text that is not UTF-8, a NULL...
is a broken row, never an exception), the seq must follow the previous one
(else a row was deleted or a seq duplicated), `prev_mac` must be the previous
row's MAC and the MAC must recompute (else the row was edited, inserted or
moved); its rule rows must match its `rule_ids` and carry valid MACs; the
bodies it references must exist and agree with their ids (hashes, size,
`created`). Then: no row of any table may lie outside the chain (a negative
seq, a rule row or body nobody references), `ledger_head` must be the last
row, and the tail is compared with the checkpoint kept outside the database,
with the head anchor kept outside the home (`_anchor.py`), and with a head
the caller expects (`--expect-head`), which catches truncation and rollback.

Whatever is stored, `verify_chain` returns a report naming the row; an
unexpected exception while checking a row becomes that row's problem.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpwall.ledger._anchor import Anchor, head_label, read_anchor
from mcpwall.ledger._backend import Connection
from mcpwall.ledger._chain import event_mac, read_checkpoint, rule_mac, same_mac
from mcpwall.ledger._errors import LedgerError
from mcpwall.ledger._event import body_created, parse_body_id
from mcpwall.ledger._schema import CHAINED, EVENT_COLUMNS, GENESIS, RULE_COLUMNS

CHUNK = 2000
_COLS = ", ".join(("seq", *CHAINED, "prev_mac", "mac"))
_SQL = (f"SELECT * FROM (SELECT {_COLS}, 'tool_calls' FROM tool_calls WHERE seq > ? ORDER BY seq LIMIT ?) AS t "
        f"UNION ALL SELECT * FROM (SELECT {_COLS}, 'protocol_events' FROM protocol_events WHERE seq > ? ORDER BY seq "
        "LIMIT ?) AS p ORDER BY 1 LIMIT ?")
_RULES = f"SELECT {', '.join(RULE_COLUMNS)} FROM security_rule_events WHERE call_seq > ? AND call_seq <= ? " \
         "ORDER BY call_seq, idx"
_RULES_REST = f"SELECT {', '.join(RULE_COLUMNS)} FROM security_rule_events WHERE call_seq > ? ORDER BY call_seq, idx"
_RULE_IDS = CHAINED.index("rule_ids") + 1
_BODY_COLS = (CHAINED.index("request_body_id") + 1, CHAINED.index("response_body_id") + 1)
_REFERENCED = " UNION ".join(f"SELECT {c} FROM {t} WHERE {c} IS NOT NULL" for t in ("tool_calls", "protocol_events")
                             for c in ("request_body_id", "response_body_id"))
_UNREFERENCED = f"SELECT id FROM event_body_blobs WHERE id IS NULL OR id NOT IN ({_REFERENCED}) LIMIT 1"

#: storage classes, as Python reads them
_TEXT, _INT, _REAL, _BLOB = "TEXT", "INTEGER", "REAL", "BLOB"


def _kind_of(sql_type: str) -> str:
    return _INT if "BIGINT" in sql_type or "INTEGER" in sql_type else _REAL if "REAL" in sql_type else \
        _BLOB if "BLOB" in sql_type else _TEXT


#: (column, storage class, NULL allowed) of an event row as _SQL reads it
_EVENT_SPEC = (("seq", _INT, False), *((n, _kind_of(t), "NOT NULL" not in t) for n, t in EVENT_COLUMNS),
               ("prev_mac", _TEXT, False), ("mac", _TEXT, False))
_RULE_SPEC = (("call_seq", _INT, False), ("idx", _INT, False), ("decision_id", _TEXT, False), ("ts", _TEXT, False),
              ("rule_id", _TEXT, False), ("action", _TEXT, True), ("layer", _TEXT, True),
              ("compliance", _TEXT, False), ("owasp", _TEXT, False), ("mac", _TEXT, False))
_BODY_SPEC = (("id", _TEXT, False), ("size", _INT, False), ("stored", _INT, False), ("truncated", _INT, False),
              ("content", _BLOB, False), ("created", _TEXT, False))


def storage_class(value: Any) -> str:
    """The SQLite storage class of a value as read back (`BadText`: text that is not UTF-8)."""
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return _INT
    if isinstance(value, float):
        return _REAL
    if isinstance(value, str):
        return _TEXT
    if isinstance(value, bytes | bytearray | memoryview):
        return _BLOB if type(value) in (bytes, bytearray, memoryview) else "TEXT that is not UTF-8"
    return type(value).__name__


def _bad_value(spec: tuple[tuple[str, str, bool], ...], row: tuple[Any, ...]) -> str | None:
    """Which column of `row` holds a value its schema does not allow, if any."""
    for (name, kind, nullable), value in zip(spec, row, strict=False):
        if value is None:
            if nullable:
                continue
            return f"{name} is NULL"
        found = storage_class(value)
        if found == kind or (kind == _REAL and found == _INT):
            if found == _REAL and not math.isfinite(value):
                return f"{name} holds {value}, which the MAC's JSON cannot tell from NULL"
            continue
        return f"{name} holds {'an' if found[0] in 'AEIOU' else 'a'} {found} where {'an' if kind[0] in 'AEIOU' else 'a'} " \
               f"{kind} belongs"
    return None


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
    #: the head anchor's seq, when one was checked, and its file
    anchor_seq: int | None = None
    anchor: str | None = None
    #: `SEQ:MAC-PREFIX` of the last row verified (what the gateway publishes)
    head: str | None = None
    warnings: list[str] = field(default_factory=list)

    def fail(self, seq: int | None, problem: str, table: str | None = None) -> VerifyReport:
        if self.ok:
            self.ok, self.first_bad_seq, self.problem, self.table = False, seq, problem, table
        return self

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "rows": self.rows, "last_seq": self.last_seq, "first_bad_seq": self.first_bad_seq,
                "table": self.table, "problem": self.problem, "checkpoint_seq": self.checkpoint_seq,
                "anchor_seq": self.anchor_seq, "anchor": self.anchor, "head": self.head, "warnings": self.warnings}


@contextlib.contextmanager
def _snapshot(conn: Connection) -> Iterator[None]:
    lenient = getattr(conn, "lenient_text", None)
    with lenient() if lenient is not None else contextlib.nullcontext():
        conn.begin_snapshot()
        try:
            yield
        finally:
            conn.rollback()


def verify_chain(conn: Connection, key: bytes, ledger_id: str, checkpoint: Path | None,
                 *, check_bodies: bool = True, anchor: Path | None = None,
                 expect_head: tuple[int, str] | None = None) -> VerifyReport:
    """Walk the whole chain; `anchor` is the head anchor file to compare with (skipped if absent),
    `expect_head` a (seq, MAC prefix) the ledger must contain (a head the gateway published)."""
    walk = _Walk(key, ledger_id, checkpoint, check_bodies, anchor, expect_head)
    try:
        with _snapshot(conn):
            walk.run(conn)
    except LedgerError as exc:
        where = f"row {walk.current}: " if walk.current is not None else ""
        walk.report.fail(walk.current, f"{where}the ledger cannot be read ({exc})", walk.table)
    except Exception as exc:  # a value no check foresaw: still a named row, never a traceback
        where = f"row {walk.current}" if walk.current is not None else "the ledger"
        walk.report.fail(walk.current, f"{where} holds a value that cannot be checked "
                                       f"({exc.__class__.__name__}: {str(exc)[:200]})", walk.table)
    return walk.report


class _Walk:
    """One verification; `current` is the row being checked (named if checking it fails unexpectedly)."""

    def __init__(self, key: bytes, ledger_id: str, checkpoint: Path | None, check_bodies: bool,
                 anchor: Path | None, expect_head: tuple[int, str] | None) -> None:
        self.key, self.ledger_id, self.checkpoint = key, ledger_id, checkpoint
        self.check_bodies, self.anchor_file, self.expect = check_bodies, anchor, expect_head
        self.report = VerifyReport()
        self.current: int | None = None
        self.table: str | None = None
        self.rule_rows = 0
        self.last_mac = GENESIS
        self.bad_rule: str | None = None
        #: seq -> MAC of the rows the checkpoint, the anchor and the expected head name
        self.marks: dict[int, str | None] = {}

    def run(self, conn: Connection) -> None:
        report = self.report
        cp = read_checkpoint(self.checkpoint, self.key, self.ledger_id) if self.checkpoint is not None else None
        if cp is not None:
            report.checkpoint_seq = cp.seq
            if not cp.authentic:
                report.fail(None, f"the checkpoint in {self.checkpoint} was altered (its MAC does not verify)")
                return
            self.marks[cp.seq] = None
        anchor = read_anchor(self.anchor_file, self.key, self.ledger_id) if self.anchor_file is not None else None
        if anchor is not None:
            report.anchor, report.anchor_seq = str(self.anchor_file), anchor.seq
            self.marks[anchor.seq] = None
        if self.expect is not None:
            self.marks[self.expect[0]] = None
        heads = conn.execute("SELECT id, seq, mac FROM ledger_head")
        if len(heads) != 1 or heads[0][0] != 1 or _bad_value((("seq", _INT, False), ("mac", _TEXT, False)),
                                                            heads[0][1:]):
            report.fail(None, f"ledger_head is not one row (id 1, an INTEGER seq, a TEXT mac): found "
                              f"{[tuple(storage_class(v) for v in h) for h in heads][:3]}")
            return
        head_seq, head_mac = int(heads[0][1]), str(heads[0][2])
        orphan = self._events(conn)
        if not report.ok:
            return
        last = report.last_seq
        report.head = head_label(last, self.last_mac)
        if head_seq > last:
            report.fail(last + 1, f"rows {last + 1}..{head_seq} missing: ledger_head records row {head_seq} "
                                  f"but the rows end at {last} (tail truncated)")
            return
        if head_seq < last or head_mac != self.last_mac:
            report.fail(last, f"ledger_head records row {head_seq} ({head_mac[:16]}) but the chain ends at row "
                              f"{report.head} (ledger_head rewritten)")
            return
        self._tail(cp, anchor)
        if report.ok and orphan is not None:
            report.fail(orphan, f"security_rule_events rows for row {orphan}, which does not exist",
                        "security_rule_events")
        if report.ok:
            self._strays(conn)

    def _events(self, conn: Connection) -> int | None:
        """Walk the event rows (the report says whether one broke); the first seq with rule rows
        but no event row, if any (reported after the tail checks, which explain a truncation better)."""
        report = self.report
        expected, prev = 1, GENESIS
        self.last_mac = GENESIS
        orphan: int | None = None
        low: int = 0
        while True:
            # Chunks by the seqs actually there (a seq of 2**63 in ledger_head must not mean 2**63 chunks)
            rows = conn.execute(_SQL, (low, CHUNK, low, CHUNK, CHUNK))
            full = len(rows) == CHUNK
            high = rows[-1][0] if full and type(rows[-1][0]) is int else None
            rules: dict[int, list[tuple[Any, ...]]] = {}
            for r in conn.execute(_RULES if high is not None else _RULES_REST,
                                  (low, high) if high is not None else (low,)):
                self.rule_rows += 1
                if type(r[0]) is not int:  # attached to no row: the row it was taken from says so first
                    self.bad_rule = self.bad_rule or (f"security_rule_events row (call_seq {r[0]!r}, idx {r[1]!r}): "
                                                      f"{_bad_value(_RULE_SPEC, r)}")
                    continue
                rules.setdefault(r[0], []).append(r)
            bodies = _bodies(conn, rows) if self.check_bodies else {}
            for row in rows:
                seq, table = row[0], str(row[-1])
                self.current, self.table = seq if type(seq) is int else None, table
                problem = _bad_value(_EVENT_SPEC, row)
                if problem is not None:
                    report.fail(self.current, f"row {seq}: {problem}", table)
                    return None
                values, prev_mac, mac = row[1:1 + len(CHAINED)], row[-3], row[-2]
                if seq > expected:
                    missing = f"row {expected}" if seq == expected + 1 else f"rows {expected}..{seq - 1}"
                    report.fail(expected, f"{missing} missing: the chain jumps from row {expected - 1} to "
                                          f"row {seq} (deleted rows)")
                    return None
                if seq < expected:
                    report.fail(seq, f"row {seq} appears twice (an inserted or copied row)", table)
                    return None
                if prev_mac != prev:
                    report.fail(seq, f"row {seq} does not follow row {seq - 1}: its prev_mac is not that "
                                     "row's MAC (inserted, reordered or replaced rows)", table)
                    return None
                if not same_mac(mac, event_mac(self.key, table, seq, prev_mac, list(values))):
                    report.fail(seq, f"row {seq} was altered: its MAC does not match its contents "
                                     "(edited, inserted or moved between tables)", table)
                    return None
                problem = _check_rules(self.key, row, rules.pop(seq, []))
                if problem is None and self.check_bodies:
                    problem = _check_bodies(row, bodies)
                if problem is not None:
                    report.fail(seq, f"row {seq}: {problem}", table)
                    return None
                if seq in self.marks:
                    self.marks[seq] = mac
                prev = self.last_mac = mac
                expected = seq + 1
                report.rows += 1
                report.last_seq = seq
            if rules and orphan is None:
                orphan = min(rules)
            if high is None:
                break
            low = high
        self.current = self.table = None
        if self.bad_rule is not None:
            report.fail(None, self.bad_rule, "security_rule_events")
        return orphan

    def _strays(self, conn: Connection) -> bool:
        """Rows the walk never reached: outside 1..last, or (bodies) referenced by no row."""
        report, last = self.report, self.report.last_seq
        count = sum(int(conn.execute(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in ("tool_calls", "protocol_events"))
        if count != report.rows:
            for table in ("tool_calls", "protocol_events"):
                found = conn.execute(f"SELECT seq FROM {table} WHERE seq IS NULL OR NOT (seq >= 1 AND seq <= ?) "
                                     "LIMIT 1", (last,))
                if found:
                    report.fail(None, f"row {found[0][0]!r} of {table} lies outside the chain (rows 1..{last}): an "
                                      "inserted row", table)
                    return False
            report.fail(None, f"the event tables hold {count} rows but the chain has {report.rows}")
            return False
        rules = int(conn.execute("SELECT COUNT(*) FROM security_rule_events")[0][0])
        if rules != self.rule_rows:
            found = conn.execute("SELECT call_seq, idx FROM security_rule_events WHERE call_seq IS NULL OR "
                                 "NOT (call_seq >= 1 AND call_seq <= ?) LIMIT 1", (last,))
            where = f" (call_seq {found[0][0]!r}, idx {found[0][1]!r})" if found else ""
            report.fail(None, f"security_rule_events row{where} belongs to no row of the chain: an inserted row",
                        "security_rule_events")
            return False
        if self.check_bodies:
            found = conn.execute(_UNREFERENCED)
            if found:
                report.fail(None, f"event_body_blobs row {found[0][0]!r} is referenced by no row: an inserted "
                                  "or orphaned body", "event_body_blobs")
                return False
        return True

    def _tail(self, cp: Any, anchor: Anchor | None) -> None:
        report, last, checkpoint = self.report, self.report.last_seq, self.checkpoint
        if cp is not None:
            if cp.seq > last:
                report.fail(last + 1, f"rows {last + 1}..{cp.seq} missing: the checkpoint records row {cp.seq} "
                                      f"but the ledger ends at row {last} (tail truncated)")
                return
            if cp.seq and self.marks.get(cp.seq) != cp.mac:
                report.fail(cp.seq, f"row {cp.seq} differs from the checkpoint (rewritten tail)")
                return
        elif checkpoint is not None and last > 0:
            report.fail(None, f"no checkpoint for this ledger in {checkpoint}: truncation of the tail "
                              "cannot be ruled out (use --no-checkpoint to check the chain alone)")
            return
        elif checkpoint is None:
            report.warnings.append("no checkpoint used: a truncated tail would not be detected")
        if anchor is not None and not anchor.authentic:
            report.fail(None, f"the head anchor {self.anchor_file} was altered (its MAC does not verify)")
            return
        if anchor is not None and anchor.seq:
            if anchor.seq > last:
                report.fail(last + 1, f"ROLLED BACK: the head anchor {self.anchor_file} records row {anchor.label} "
                                      f"but the ledger ends at row {last} (restored from an older copy, or its "
                                      "tail deleted)")
                return
            if self.marks.get(anchor.seq) != anchor.mac:
                report.fail(anchor.seq, f"ROLLED BACK: row {anchor.seq} differs from the head anchor "
                                        f"{self.anchor_file} ({anchor.label}): the ledger was restored from an "
                                        "older copy and written again, or replaced")
                return
        if self.expect is not None:
            seq, prefix = self.expect
            if seq > last:
                report.fail(last + 1, f"ROLLED BACK: the expected head is row {seq} ({prefix}) but the ledger "
                                      f"ends at row {last}")
                return
            mac = self.marks.get(seq) if seq else GENESIS
            if mac is None or not mac.startswith(prefix):
                report.fail(seq, f"ROLLED BACK: row {seq} is not the expected head {seq}:{prefix} (its MAC "
                                 f"begins {str(mac)[:16]}): the ledger was restored and written again, or replaced")


def _check_rules(key: bytes, row: tuple[Any, ...], rule_rows: list[tuple[Any, ...]]) -> str | None:
    try:
        rule_ids = orjson.loads(row[_RULE_IDS])
    except orjson.JSONDecodeError:
        return "rule_ids is not JSON"
    for r in rule_rows:
        problem = _bad_value(_RULE_SPEC, r)
        if problem is not None:
            return f"its security_rule_events row {r[1]!r}: {problem}"
    found = [r[4] for r in rule_rows]
    if found != rule_ids:
        return f"its security_rule_events rows ({found}) do not match its rule_ids ({rule_ids})"
    mac = str(row[-2])
    for r in rule_rows:
        if not same_mac(str(r[-1]), rule_mac(key, mac, list(r[:-1]))):
            return f"its security_rule_events row for {r[4]!r} was altered"
    return None


def _bodies(conn: Connection, rows: list[tuple[Any, ...]]) -> dict[str, tuple[Any, ...]]:
    ids = sorted({r[c] for r in rows for c in _BODY_COLS if isinstance(r[c], str) and r[c]})
    out: dict[str, tuple[Any, ...]] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        marks = ", ".join("?" for _ in part)
        for found in conn.execute(f"SELECT id, size, stored, truncated, content, created FROM event_body_blobs "
                                  f"WHERE id IN ({marks})", part):
            out[str(found[0])] = found
    return out


def _check_bodies(row: tuple[Any, ...], bodies: dict[str, tuple[Any, ...]]) -> str | None:
    for col in _BODY_COLS:
        body_id = row[col]
        if not body_id:
            continue
        found = bodies.get(body_id)
        if found is None:
            return f"its body {body_id} is missing from event_body_blobs"
        problem = _body_problem(body_id, found)
        if problem is not None:
            return f"its body {body_id} was altered{f' ({problem})' if problem else ''}"
    return None


def _body_problem(body_id: str, found: tuple[Any, ...]) -> str | None:
    problem = _bad_value(_BODY_SPEC, found)
    if problem is not None:
        return problem
    parsed = parse_body_id(body_id)
    if parsed is None:
        return "not an id the writer makes"
    _, size, stored, truncated, content, created = found
    content = bytes(content)
    if truncated not in (0, 1):
        return f"truncated is {truncated}"
    if truncated:
        ok = (stored == len(content) < size and (parsed.stored is not None or parsed.version == 0) and
              (parsed.stored is None or hashlib.sha256(content).hexdigest() == parsed.stored) and
              (parsed.version < 2 or parsed.size == size))
    else:
        ok = (size == stored == len(content) and parsed.stored is None and
              hashlib.sha256(content).hexdigest() == parsed.whole)
    if not ok:
        return ""  # its content, size or stored length does not match its id
    if parsed.version == 2 and parsed.time_us is not None and created != body_created(parsed.time_us):
        return f"created {created[:40]!r} is not the time in its id"
    return None


__all__ = ["VerifyReport", "storage_class", "verify_chain"]
