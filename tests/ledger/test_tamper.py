"""Tamper evidence: every kind of change to the ledger is reported at the row it breaks.

Strategy: fill a real ledger (SQLite and PostgreSQL) with 30 rows through the
writer, then change the database behind its back with plain SQL, as an
attacker with write access to the file or server would, and check that
`verify` (and `mcpwall verify-audit`) names the first broken row. The truncation
cases also rewrite `ledger_head`, as a careful attacker would, so only the
checkpoint outside the database can catch them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.ledger import CHAINED, Ledger

N = 30  # rows 10, 20 and 30 are protocol events, the rest tools/call
COLS = ("seq", *CHAINED, "prev_mac", "mac")


def raw(ledger: Ledger) -> Any:
    return ledger.backend.connect()


def rows_of(ledger: Ledger, table: str) -> list[tuple[Any, ...]]:
    conn = raw(ledger)
    try:
        return conn.execute(f"SELECT {', '.join(COLS)} FROM {table} ORDER BY seq")
    finally:
        conn.close()


def sql(ledger: Ledger, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn = raw(ledger)
    try:
        conn.begin()
        for statement, params in statements:
            conn.execute(statement, params)
        conn.commit()
    finally:
        conn.close()


def insert_row(ledger: Ledger, table: str, row: tuple[Any, ...]) -> None:
    marks = ", ".join("?" for _ in COLS)
    sql(ledger, (f"INSERT INTO {table} ({', '.join(COLS)}) VALUES ({marks})", row))


def broken_at(ledger: Ledger) -> tuple[int | None, str]:
    report = ledger.verify()
    assert not report.ok, "tampering went unnoticed"
    return report.first_bad_seq, str(report.problem)


@pytest.fixture
def ledger(filled: Callable[..., Ledger]) -> Ledger:
    led = filled(N)
    assert led.verify().ok
    return led


def test_an_untouched_ledger_verifies_and_keeps_verifying_after_more_rows(ledger: Ledger) -> None:
    from tests.ledger.conftest import make_event

    report = ledger.verify()
    assert (report.ok, report.rows, report.last_seq, report.checkpoint_seq) == (True, N, N, N)
    ledger.submit(make_event(99))
    assert ledger.flush()
    assert ledger.verify().rows == N + 1


def test_editing_one_field_is_reported_at_that_row(ledger: Ledger) -> None:
    sql(ledger, ("UPDATE tool_calls SET decision = ? WHERE seq = ?", ("allow", 5)))
    seq, problem = broken_at(ledger)
    assert seq == 5
    assert "altered" in problem


def test_editing_a_protocol_event_is_reported_too(ledger: Ledger) -> None:
    sql(ledger, ("UPDATE protocol_events SET client = ? WHERE seq = ?", ("someone-else", 20)))
    assert broken_at(ledger)[0] == 20


def test_deleting_a_row_is_reported_at_the_missing_row(ledger: Ledger) -> None:
    sql(ledger, ("DELETE FROM tool_calls WHERE seq = ?", (12,)))
    seq, problem = broken_at(ledger)
    assert seq == 12
    assert "missing" in problem


def test_inserting_a_forged_row_in_the_middle_is_reported_where_it_was_inserted(ledger: Ledger) -> None:
    rows = rows_of(ledger, "tool_calls")
    by_seq = {r[0]: r for r in rows}
    # Make room after row 7 (highest first, so seqs never collide), then insert a copy of row 7 as row 8.
    later = sorted((r for r in rows if r[0] >= 8), key=lambda r: -r[0])
    sql(ledger, *[("UPDATE tool_calls SET seq = ? WHERE seq = ?", (r[0] + 100, r[0])) for r in later])
    sql(ledger, *[("UPDATE tool_calls SET seq = ? WHERE seq = ?", (r[0] + 1, r[0] + 100)) for r in later])
    forged = list(by_seq[7])
    forged[0] = 8
    forged[COLS.index("decision")] = "allow"
    insert_row(ledger, "tool_calls", tuple(forged))
    seq, problem = broken_at(ledger)
    assert seq == 8
    assert "does not follow" in problem or "altered" in problem


def test_appending_a_forged_row_after_the_last_one_is_reported(ledger: Ledger) -> None:
    last = rows_of(ledger, "tool_calls")[-1]
    forged = list(last)
    forged[0], forged[COLS.index("prev_mac")] = N + 1, rows_of(ledger, "protocol_events")[-1][-1]
    forged[-1] = "0" * 64
    insert_row(ledger, "tool_calls", tuple(forged))
    assert broken_at(ledger)[0] == N + 1


def test_a_row_duplicated_into_the_other_table_is_reported(ledger: Ledger) -> None:
    row = next(r for r in rows_of(ledger, "tool_calls") if r[0] == 9)
    insert_row(ledger, "protocol_events", row)
    seq, problem = broken_at(ledger)
    assert seq == 9
    assert "twice" in problem or "altered" in problem  # which copy comes first is the database's choice


def test_moving_a_row_to_the_other_table_is_reported(ledger: Ledger) -> None:
    row = next(r for r in rows_of(ledger, "tool_calls") if r[0] == 11)
    sql(ledger, ("DELETE FROM tool_calls WHERE seq = ?", (11,)))
    insert_row(ledger, "protocol_events", row)
    assert broken_at(ledger)[0] == 11


def test_swapping_two_rows_is_reported_at_the_first_of_them(ledger: Ledger) -> None:
    sql(ledger, ("UPDATE tool_calls SET seq = ? WHERE seq = ?", (-1, 14)),
        ("UPDATE tool_calls SET seq = ? WHERE seq = ?", (14, 15)),
        ("UPDATE tool_calls SET seq = ? WHERE seq = ?", (15, -1)))
    seq, problem = broken_at(ledger)
    assert seq == 14
    assert "does not follow" in problem


def test_truncating_the_tail_and_rewriting_the_head_is_caught_by_the_checkpoint(ledger: Ledger) -> None:
    row25 = next(r for r in rows_of(ledger, "tool_calls") if r[0] == 25)
    sql(ledger, ("DELETE FROM tool_calls WHERE seq > ?", (25,)), ("DELETE FROM protocol_events WHERE seq > ?", (25,)),
        ("DELETE FROM security_rule_events WHERE call_seq > ?", (25,)),
        ("UPDATE ledger_head SET seq = ?, mac = ? WHERE id = 1", (25, row25[-1])))
    seq, problem = broken_at(ledger)
    assert seq == 26
    assert "truncated" in problem
    assert "checkpoint" in problem


def test_truncating_the_tail_without_touching_the_head_is_caught_by_the_head(ledger: Ledger) -> None:
    sql(ledger, ("DELETE FROM tool_calls WHERE seq > ?", (27,)), ("DELETE FROM protocol_events WHERE seq > ?", (27,)))
    seq, problem = broken_at(ledger)
    assert seq == 28
    assert "truncated" in problem


def test_an_edited_checkpoint_file_is_reported(ledger: Ledger) -> None:
    path = ledger.checkpoint_file
    data = json.loads(path.read_text())
    data["ledgers"][ledger.ledger_id]["seq"] = 3
    path.write_text(json.dumps(data))
    assert "checkpoint" in broken_at(ledger)[1]


def test_a_deleted_checkpoint_file_is_reported_unless_the_chain_alone_is_asked_for(ledger: Ledger) -> None:
    ledger.checkpoint_file.unlink()
    assert "no checkpoint" in broken_at(ledger)[1]
    assert ledger.verify(use_checkpoint=False).ok


def test_editing_a_rule_event_is_reported_at_its_call(ledger: Ledger) -> None:
    sql(ledger, ("UPDATE security_rule_events SET action = ? WHERE call_seq = ? AND idx = 0", ("allow", 15)))
    seq, problem = broken_at(ledger)
    assert seq == 15
    assert "security_rule_events" in problem


def test_deleting_a_rule_event_is_reported_at_its_call(ledger: Ledger) -> None:
    sql(ledger, ("DELETE FROM security_rule_events WHERE call_seq = ? AND idx = 1", (5,)))
    assert broken_at(ledger)[0] == 5


def test_editing_a_stored_body_is_reported_at_the_row_that_references_it(ledger: Ledger) -> None:
    body_id = next(r for r in rows_of(ledger, "tool_calls") if r[0] == 3)[COLS.index("request_body_id")]
    sql(ledger, ("UPDATE event_body_blobs SET content = ? WHERE id = ?", (b'{"forged": true}', body_id)))
    seq, problem = broken_at(ledger)
    assert seq == 3
    assert "body" in problem


@pytest.mark.parametrize(("tamper", "row"), [("edit", 6), ("delete", 13), ("truncate", 24)])
def test_verify_audit_names_the_row_and_exits_1(ledger: Ledger, tamper: str, row: int) -> None:
    runner = CliRunner()
    args = ["verify-audit", "--home", str(ledger.home)]
    if ledger.backend.name == "postgresql":
        args += ["--ledger", ledger.backend.url]  # type: ignore[attr-defined]
    ok = runner.invoke(cli, args)
    assert ok.exit_code == 0, ok.output
    assert f"OK: {N} rows verified" in ok.output
    if tamper == "edit":
        sql(ledger, ("UPDATE tool_calls SET tool_name = ? WHERE seq = ?", ("rm-rf", row)))
    elif tamper == "delete":
        sql(ledger, ("DELETE FROM tool_calls WHERE seq = ?", (row,)))
    else:
        sql(ledger, ("DELETE FROM tool_calls WHERE seq >= ?", (row,)), ("DELETE FROM protocol_events WHERE seq >= ?", (row,)))
    result = runner.invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert f"BROKEN at row {row}:" in result.output
    as_json = runner.invoke(cli, [*args, "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)["first_bad_seq"] == row


def test_a_ledger_replaced_by_a_fresh_one_is_named_in_a_warning(ledger: Ledger, backend: Any) -> None:
    fresh = backend.open(ledger.home)  # a new, empty ledger at the same home (SQLite: the file deleted first)
    if backend.name == "sqlite":
        fresh.close()
        for suffix in ("", "-wal", "-shm"):
            (ledger.home / f"ledger.db{suffix}").unlink(missing_ok=True)
        fresh = backend.open(ledger.home)
    try:
        report = fresh.verify()
        assert report.ok
        assert any(ledger.ledger_id[:8] in w for w in report.warnings)
    finally:
        fresh.close()


def test_a_ledger_whose_body_ids_are_bare_hashes_still_verifies_and_still_catches_an_edit(
        filled: Callable[..., Ledger], monkeypatch: pytest.MonkeyPatch) -> None:
    # Ledgers written before body ids had a time prefix name each body by its SHA-256 alone.
    from mcpwall.ledger import _event

    monkeypatch.setattr(_event.BodyNames, "__init__", _bare_names)
    ledger = filled(5)
    body_id = rows_of(ledger, "tool_calls")[0][COLS.index("response_body_id")]
    assert re.fullmatch("[0-9a-f]{64}", body_id)
    assert ledger.verify().ok
    sql(ledger, ("UPDATE event_body_blobs SET content = ? WHERE id = ?", (b'{"forged": true}', body_id)))
    seq, problem = broken_at(ledger)
    assert (seq, problem) == (1, f"row 1: its body {body_id} was altered")


def _bare_names(self: Any, stored: Any, now_us: int) -> None:
    self.stored, self.prefix, self.batch = stored, "", {}


def test_a_body_id_pointing_at_another_stored_body_is_reported(ledger: Ledger) -> None:
    # Swapping contents between two body rows keeps every hash in the table valid for *some* id.
    first, second = (r[COLS.index("request_body_id")] for r in rows_of(ledger, "tool_calls")[:2])
    conn = raw(ledger)
    try:
        (a,), (b,) = (conn.execute("SELECT content FROM event_body_blobs WHERE id = ?", (i,))[0] for i in (first, second))
    finally:
        conn.close()
    sql(ledger, ("UPDATE event_body_blobs SET content = ? WHERE id = ?", (b, first)),
        ("UPDATE event_body_blobs SET content = ? WHERE id = ?", (a, second)))
    assert broken_at(ledger)[0] == 1


def test_editing_the_stored_part_of_a_truncated_body_is_reported(filled: Callable[..., Ledger]) -> None:
    ledger = filled(3, max_body_bytes=40)  # every body here is longer: all stored truncated
    row = rows_of(ledger, "tool_calls")[0]
    body_id = row[COLS.index("response_body_id")]
    assert ledger.verify().ok
    conn = raw(ledger)
    try:
        ((truncated, content),) = conn.execute("SELECT truncated, content FROM event_body_blobs WHERE id = ?",
                                               (body_id,))
    finally:
        conn.close()
    assert truncated == 1
    assert len(content) == 40
    sql(ledger, ("UPDATE event_body_blobs SET content = ? WHERE id = ?", (bytes(content).upper(), body_id)))
    assert broken_at(ledger) == (1, f"row 1: its body {body_id} was altered")


@pytest.mark.parametrize("edit", ["size = size + 1", "truncated = 1", "stored = stored - 1"])
def test_editing_what_a_body_row_says_about_its_content_is_reported(ledger: Ledger, edit: str) -> None:
    # e.g. marking a whole body as cut off, so that its content would no longer be checked
    body_id = next(r for r in rows_of(ledger, "tool_calls") if r[0] == 2)[COLS.index("response_body_id")]
    sql(ledger, (f"UPDATE event_body_blobs SET {edit} WHERE id = ?", (body_id,)))
    assert broken_at(ledger) == (2, f"row 2: its body {body_id} was altered")
