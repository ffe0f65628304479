"""The verifier never crashes: any stored value gives a named broken row and exit 1 (issue 22, item 12).

Strategy: one real ledger (the writer, the C row builder and writer when built)
is written once per module; each case copies its home, stores one value with
raw SQL in one column of one row of one ledger table - every storage class
SQLite's dynamic typing allows (TEXT, INTEGER, negative, REAL, infinity, NULL,
BLOB, text that is not UTF-8, huge values) - and runs the real
`mcpwall verify-audit` through click's CliRunner, plain and `--json`: exit 1,
the row named, never a traceback. A value SQLite refuses to store (NOT NULL,
the INTEGER PRIMARY KEY) or one equal to what was there is no tampering and is
skipped; the test checks that few are. Then the shapes of rows: missing,
duplicated, outside the chain (negative seq), referenced by nothing - on
SQLite and on a real PostgreSQL. On the old code a BLOB body column made
verify-audit die with a traceback, `created` and a truncated body's `size`
could be changed unseen, and rows with a negative seq were never read.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpwall.cli import cli
from mcpwall.ledger import CHAINED, Ledger, open_ledger
from tests.ledger.conftest import make_event

#: SQL literals of every storage class, and the odd values of each
VALUES: dict[str, str] = {
    "text": "'x'",
    "empty text": "''",
    "integer": "7",
    "negative": "-1",
    "huge integer": "9223372036854775807",
    "real": "1.5",
    "infinity": "9e999",
    "null": "NULL",
    "blob": "x'00ff'",
    "not utf-8": "CAST(x'ff' AS TEXT)",
    "huge text": "printf('%.*c', 1000000, 'y')",
}

EVENT_COLS = ("seq", *CHAINED, "prev_mac", "mac")
RULE_COLS = ("call_seq", "idx", "decision_id", "ts", "rule_id", "action", "layer", "compliance", "owasp", "mac")
BODY_COLS = ("id", "size", "stored", "truncated", "content", "created")


@dataclass(frozen=True)
class Target:
    """One row of one table: how to find it, and what verify-audit must name."""

    table: str
    where: str
    columns: tuple[str, ...]
    names: str  # text the report must contain


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Target]]:
    """A home whose ledger has 12 rows: tools/call rows, rule rows (every fifth), bodies, protocol events."""
    home = tmp_path_factory.mktemp("template")
    ledger = open_ledger(home)
    for i in range(1, 13):
        ledger.submit(make_event(i, method="tools/list", tool_name=None, params={}) if i % 10 == 0 else make_event(i))
    assert ledger.flush()
    body = ledger.get(3)
    assert body is not None
    body_id = str(body["response_body_id"])
    assert ledger.verify().ok
    ledger.close()
    targets = {
        "tool_calls": Target("tool_calls", "seq = 5", EVENT_COLS, "row 5"),
        "protocol_events": Target("protocol_events", "seq = 10", EVENT_COLS, "row 10"),
        "security_rule_events": Target("security_rule_events", "call_seq = 5 AND idx = 1", RULE_COLS, "row 5"),
        "event_body_blobs": Target("event_body_blobs", f"id = '{body_id}'", BODY_COLS, body_id),
        "ledger_head": Target("ledger_head", "id = 1", ("id", "seq", "mac"), "ledger_head"),
    }
    return home, targets


def copy_home(template: Path, into: Path) -> Path:
    shutil.copytree(template, into)
    return into


def verify(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["verify-audit", "--home", str(home), *args])


def store(home: Path, target: Target, column: str, literal: str) -> bool:
    """Store the value; False if SQLite refuses it or it is what was there (nothing was tampered with)."""
    conn = sqlite3.connect(home / "ledger.db")
    conn.text_factory = bytes
    try:
        before = conn.execute(f"SELECT typeof({column}), {column} FROM {target.table} WHERE {target.where}").fetchall()
        assert len(before) == 1, (target, before)
        try:
            with conn:
                conn.execute(f"UPDATE {target.table} SET {column} = {literal} WHERE {target.where}")
        except sqlite3.IntegrityError:  # NOT NULL, or the seq/rowid column takes integers only
            return False
        where = target.where if column not in target.where else "rowid = rowid"
        after = conn.execute(f"SELECT typeof({column}), {column} FROM {target.table} WHERE {where}").fetchall()
        return bool(after) and after[0] != before[0] if len(after) == 1 else True
    finally:
        conn.close()


CASES = [(table, column, kind) for table, columns in
         (("tool_calls", EVENT_COLS), ("protocol_events", EVENT_COLS), ("security_rule_events", RULE_COLS),
          ("event_body_blobs", BODY_COLS), ("ledger_head", ("id", "seq", "mac")))
         for column in columns for kind in VALUES]
_skipped: list[tuple[str, str, str]] = []


@pytest.mark.parametrize(("table", "column", "kind"), CASES, ids=[f"{t}.{c}={k}" for t, c, k in CASES])
def test_any_value_stored_in_any_column_is_a_named_broken_row_and_exit_1(
        template: tuple[Path, dict[str, Target]], tmp_path: Path, table: str, column: str, kind: str) -> None:
    source, targets = template
    target = targets[table]
    home = copy_home(source, tmp_path / "home")
    if not store(home, target, column, VALUES[kind]):
        _skipped.append((table, column, kind))
        return  # SQLite would not store it, or nothing changed: no tampering to find
    plain = verify(home)
    assert plain.exception is None or isinstance(plain.exception, SystemExit), plain.exc_info
    assert plain.exit_code == 1, plain.output
    assert "Traceback" not in plain.output
    assert plain.output.startswith("BROKEN")
    # A row whose seq was changed is named by its new seq (a copy of row 7, say) or by the gap it left.
    names = (target.names, f"row {VALUES[kind]} ") if column == "seq" else (target.names,)
    assert any(n in plain.output for n in names), plain.output
    as_json = verify(home, "--json")
    assert as_json.exit_code == 1, as_json.output
    report = json.loads(as_json.stdout)
    assert report["ok"] is False
    assert any(n in report["problem"] for n in names), report


def test_only_values_sqlite_refuses_or_that_change_nothing_were_skipped() -> None:
    # Runs after the matrix (same module, file order): the skips are the NOT NULL columns' NULL, the
    # integer-only seq, and values equal to what was there; never more than a fifth of the matrix.
    assert len(_skipped) < len(CASES) / 5, _skipped
    for table, column, kind in _skipped:
        # NULL where NOT NULL; the INTEGER PRIMARY KEYs; an empty client_version/peer/process_name already ''
        assert kind in ("null", "empty text") or column in ("seq", "id"), (table, column, kind)


# ---------------------------------------------------------------------- rows, not values, on both backends


def broken(ledger: Ledger) -> tuple[int | None, str]:
    report = ledger.verify()
    assert not report.ok, report
    return report.first_bad_seq, str(report.problem)


def sql(ledger: Ledger, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn = ledger.backend.connect()
    try:
        for statement, params in statements:
            conn.execute(statement, params)
    finally:
        conn.close()


def copy_row(ledger: Ledger, table: str, seq: int, into: str, new_seq: int) -> None:
    cols = ", ".join(EVENT_COLS[1:])
    sql(ledger, (f"INSERT INTO {into} (seq, {cols}) SELECT ?, {cols} FROM {table} WHERE seq = ?", (new_seq, seq)))


@pytest.fixture
def ledger(filled: Callable[..., Ledger]) -> Ledger:
    return filled(12)


@pytest.mark.parametrize("new_seq", [-1, 0, -9223372036854775807])
def test_a_row_copied_outside_the_chain_with_a_seq_below_1_is_reported(ledger: Ledger, new_seq: int) -> None:
    copy_row(ledger, "tool_calls", 5, "tool_calls", new_seq)
    _, problem = broken(ledger)
    assert f"row {new_seq} of tool_calls lies outside the chain" in problem


def test_a_seq_duplicated_in_the_other_table_is_reported(ledger: Ledger) -> None:
    copy_row(ledger, "tool_calls", 5, "protocol_events", 5)
    assert broken(ledger) == (5, "row 5 appears twice (an inserted or copied row)")


def test_a_rule_row_attached_to_no_row_of_the_chain_is_reported(ledger: Ledger) -> None:
    sql(ledger, ("INSERT INTO security_rule_events (call_seq, idx, decision_id, ts, rule_id, action, layer, compliance, "
                 "owasp, mac) SELECT -3, idx, decision_id, ts, rule_id, action, layer, compliance, owasp, mac "
                 "FROM security_rule_events WHERE call_seq = 5 AND idx = 0", ()))
    _, problem = broken(ledger)
    assert "call_seq -3" in problem
    assert "belongs to no row" in problem


def test_a_body_referenced_by_no_row_is_reported(ledger: Ledger) -> None:
    sql(ledger, ("INSERT INTO event_body_blobs (id, size, stored, truncated, content, created) VALUES "
                 "(?, 1, 1, 0, ?, ?)", ("planted", b"x", "2026-12-01T00:00:00.000000Z")))
    _, problem = broken(ledger)
    assert "event_body_blobs row 'planted' is referenced by no row" in problem


@pytest.mark.parametrize("table", ["tool_calls", "security_rule_events", "event_body_blobs"])
def test_a_missing_row_of_any_table_is_reported(ledger: Ledger, table: str) -> None:
    body = ledger.get(3)
    assert body is not None
    where = {"tool_calls": ("seq = ?", 4), "security_rule_events": ("call_seq = ? AND idx = 0", 5),
             "event_body_blobs": ("id = ?", body["response_body_id"])}[table]
    sql(ledger, (f"DELETE FROM {table} WHERE {where[0]}", (where[1],)))
    seq, _ = broken(ledger)
    assert seq == {"tool_calls": 4, "security_rule_events": 5, "event_body_blobs": 3}[table]


def test_an_edited_created_time_of_a_body_is_reported_at_the_row_that_references_it(ledger: Ledger) -> None:
    body = ledger.get(3)
    assert body is not None
    sql(ledger, ("UPDATE event_body_blobs SET created = ? WHERE id = ?", ("2020-01-01T00:00:00.000000Z",
                                                                           body["response_body_id"])))
    seq, problem = broken(ledger)
    assert seq == 3
    assert "is not the time in its id" in problem


def test_an_edited_size_of_a_truncated_body_is_reported(filled: Callable[..., Ledger]) -> None:
    ledger = filled(3, max_body_bytes=40)
    row = ledger.get(1)
    assert row is not None
    sql(ledger, ("UPDATE event_body_blobs SET size = size + 1000 WHERE id = ?", (row["response_body_id"],)))
    assert broken(ledger) == (1, f"row 1: its body {row['response_body_id']} was altered")


def test_a_second_ledger_head_row_is_reported(ledger: Ledger) -> None:
    sql(ledger, ("INSERT INTO ledger_head (id, seq, mac) VALUES (2, 99, ?)", ("0" * 64,)))
    assert "ledger_head is not one row" in broken(ledger)[1]


def test_a_ledger_head_behind_the_chain_is_reported(ledger: Ledger) -> None:
    row = ledger.get(11)
    assert row is not None
    sql(ledger, ("UPDATE ledger_head SET seq = 11, mac = ? WHERE id = 1", (row["mac"],)))
    seq, problem = broken(ledger)
    assert seq == 12
    assert "ledger_head rewritten" in problem


# ---------------------------------------------------------------------- the signed JSONL file, likewise


@pytest.mark.parametrize("line", [
    '{"_seq": 1, "_hmac": "\u00e9\u00e9"}',  # non-ASCII MAC: hmac.compare_digest raised TypeError
    "[" * 100_000 + "]" * 100_000,  # nested too deep: RecursionError
    '{"_seq": 1, "_hmac": "00", "x": ' + "1" * 5000 + "}",  # a number too long for int()
    '{"_seq": 1, "_hmac": "00", "x": 1e999}',
    '{"_seq": "1", "_hmac": "00"}',
    "null",
], ids=["non-ascii-mac", "deep", "long-number", "infinity", "text-seq", "null"])
def test_any_line_of_a_signed_jsonl_file_is_a_named_broken_line_and_exit_1(
        tmp_path: Path, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPWALL_LEDGER_KEY", "k")
    path = tmp_path / "audit.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["verify-audit", str(path), "--home", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.output.startswith("BROKEN at line 1:"), result.output
