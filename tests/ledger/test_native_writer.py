"""The ledger's C paths (`_rows.c`, `_bulk.c`) write exactly what the Python paths write.

- `build_row` in C returns the Python function's row for every event it takes, and
  leaves the others to it (None);
- a batch written by `_bulk.c` (MACs computed in C, without the GIL) verifies with
  the Python verifier, field for field the same rows as the Python writer's;
- the overlapped writer keeps order and loses nothing when a commit fails;
- the batch insert really runs without the GIL, and WAL checkpoints run on a
  thread of their own without letting the WAL grow without bound.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwall.ledger import (
    Event,
    LedgerError,
    LedgerOptions,
    LedgerUnavailable,
    RuleInfo,
    _event,
    _sqlite,
    _writer,
    open_ledger,
)
from mcpwall.ledger._event import BodyNames, BuildOptions, build_row_python

native_rows = pytest.mark.skipif(_event._NATIVE is None, reason="_rows.c is not built (or MCPWALL_PURE=1)")
native_bulk = pytest.mark.skipif(_sqlite._BULK is None, reason="_bulk.c is not built (or MCPWALL_PURE=1)")


def usual(i: int, **fields: Any) -> Event:
    """An event as the gateway records a call (the benchmark's shape)."""
    deny = i % 5 == 0
    base = Event(
        method="tools/call", decision="deny" if deny else "allow", outcome="deny" if deny else "ok", ts=1_764_500_000.25 + i,
        session_id="9f2c" * 8, client="claude-code", client_version="1.0.42", agent_id="agent-7", process_name="claude",
        peer="127.0.0.1", server_name="fs", tool_name="read_file", request_id=i, mode="enforce",
        enforced_action="deny" if deny else "allow", policy_revision="6b7e32cf4729",
        rule_ids=("block-sensitive-paths",) if deny else (), reasons=("[block-sensitive-paths] no",) if deny else (),
        params={"name": "read_file", "arguments": {"path": f"/workspace/src/module_{i}.py", "encoding": "utf-8"}},
        response={"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"line {i}\n" * 20}]}},
        duration_ms=1.7, upstream_ms=1.2, bytes_in=180, bytes_out=0, decision_id=f"d{i:031d}")
    return dataclasses.replace(base, **fields)


def _fields(row: _event.BuiltRow) -> str:
    """Everything of a row, as text (NaN is not equal to itself, its repr is)."""
    return repr((row.table, row.values, row.decision_id, row.ts, row.values_json, row.bodies, row.rules))


DEFAULT = BuildOptions()


def _both(event: Event, options: BuildOptions = DEFAULT) -> tuple[Any, Any]:
    assert _event._NATIVE is not None
    native = _event._NATIVE(event, options.bodies, options.max_body_bytes, options.preview_chars, "host:1",
                            BodyNames({}, 1234))
    python = build_row_python(event, options, "host:1", BodyNames({}, 1234))
    return native, python


VARIANTS: list[dict[str, Any]] = [
    {}, {"response": None}, {"params": None}, {"method": "resources/read", "params": {"uri": "file:///x"}},
    {"method": "prompts/get", "params": {"name": "p", "arguments": {"a": "1"}}},
    {"response": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "denied " * 200}}},
    {"response": {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": 5}}},
    {"response": {"result": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}},
    {"response": {"result": {"content": [{"type": "image", "data": "xx"}], "isError": True}}},
    {"response": {"result": {"content": [{"type": "text", "text": "x"}], "isError": True}}},
    {"response": {"result": {"tools": []}}}, {"response": {"error": "text"}}, {"response": {"result": "é\x00"}},
    {"request_id": "abc"}, {"request_id": None}, {"request_id": [1]}, {"request_id": True}, {"request_id": 2**80},
    {"notes": {"dlp": 1, "chain": {"a": 1}, "decision_id": "x"}}, {"notes": {"dlp": 1}}, {"notes": {1: "int key"}},
    {"client": "é"}, {"client": "nul\x00"}, {"session_id": None}, {"peer": 5},
    {"rule_ids": ("a.b", "c"), "rules": {"c": RuleInfo("deny", "policy", ("SOC2",), ("LLM01",))}},
    {"rule_ids": ("r",), "enforced_action": None, "decision": "ask"}, {"rule_ids": ("é",)},
    {"rule_ids": ["a"], "reasons": ["x", "y"]}, {"redacted_keys": ("token",)}, {"dlp": [{"path": "a", "kind": "k"}]},
    {"withhold_arguments": True}, {"duration_ms": 3, "upstream_ms": None, "bytes_in": None, "bytes_out": 7},
    {"duration_ms": 1e300, "upstream_ms": float("nan")}, {"bytes_in": True}, {"ts": 1.5}, {"ts": 0.999999},
    {"ts": 1_764_500_000}, {"decision_id": None},
    {"params": {"name": "x", "arguments": {"b": 1, "a": [1, 2]}, "_meta": {}}},
    {"params": {"name": "x", "arguments": {"p": "x" * 3000}}}, {"params": {"name": "x", "arguments": {"k\"ey": "v\\"}}},
    {"params": {"name": "we\"ird\\name", "arguments": {}}}, {"params": {"name": 5, "arguments": {}}},
    {"params": {"name": "x", "arguments": [1, 2]}}, {"params": {"name": "x", "arguments": {3: "int key"}}},
    {"params": {"name": "x", "arguments": {"s": {1, 2}}}}, {"error_message": "upstream \u2603 died"},
]


@native_rows
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
@pytest.mark.parametrize("options", [BuildOptions(), BuildOptions(max_body_bytes=100, preview_chars=10),
                                     BuildOptions(bodies=False)], ids=["default", "small", "no-bodies"])
def test_the_c_row_is_the_python_row(variant: int, options: BuildOptions) -> None:
    event = usual(7, **VARIANTS[variant])
    native, python = _both(event, options)
    if native is not None:
        if event.decision_id is None:  # each made its own random id: the rest must agree
            assert len(native.decision_id) == 32
            assert native.decision_id != python.decision_id
            assert _fields(native) == _fields(python).replace(python.decision_id, native.decision_id)
        else:
            assert _fields(native) == _fields(python)


@native_rows
def test_the_usual_events_are_built_in_c() -> None:
    """The C path must not quietly hand everything back to Python (that would only be slower)."""
    for i in range(50):
        native, python = _both(usual(i))
        assert native is not None, i
        assert _fields(native) == _fields(python)
    fresh = _event._NATIVE(usual(1, decision_id=None), True, 1 << 20, 512, "h", BodyNames({}, 1))  # type: ignore[misc]
    assert fresh is not None
    assert len(fresh.decision_id) == 32
    assert int(fresh.decision_id, 16) >= 0


@native_rows
def test_the_c_builder_reads_what_python_reads_from_a_subclass_or_a_changed_class(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """_rows.c reads Event's slots by offset: only for Event itself, and only while the class is as it
    was configured; a subclass's property, or a class changed since, is read as Python reads it."""

    stored = Event.__dict__["tool_name"]  # the slot's member descriptor

    class Renamed(Event):
        __slots__ = ()

        @property
        def tool_name(self) -> str:
            return "renamed_" + str(stored.__get__(self))

        @tool_name.setter
        def tool_name(self, value: str) -> None:
            stored.__set__(self, value)

    event = usual(3)
    sub = Renamed(**{f.name: getattr(event, f.name) for f in dataclasses.fields(Event)})
    native, python = _both(sub)
    assert native is not None
    assert _fields(native) == _fields(python)
    assert "renamed_read_file" in _fields(native)
    monkeypatch.setattr(Event, "extra_marker", 1, raising=False)  # the class changes: its version tag too
    native, python = _both(usual(4))
    assert native is not None
    assert _fields(native) == _fields(python)


texts = st.one_of(st.none(), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
                  st.text(max_size=30), st.sampled_from(["", "a", "/etc/passwd", "é", "\x00", "\ud800"]))
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=20),
                                     st.floats(allow_nan=False)),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                      max_size=3), max_leaves=8)


@native_rows
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session=texts, client=texts, tool=texts, error=texts, rid=st.one_of(st.none(), st.integers(), st.text(max_size=8)),
       args=st.dictionaries(st.text(max_size=8), json_values, max_size=4), result=json_values,
       duration=st.one_of(st.none(), st.floats(allow_nan=False), st.integers(0, 10**6)),
       rule_ids=st.lists(st.text(max_size=6), max_size=3), notes=st.dictionaries(st.text(max_size=5), json_values,
                                                                               max_size=2),
       ts=st.floats(min_value=0, max_value=4e9))
def test_any_event_gets_the_python_row_or_is_left_to_python(session: Any, client: Any, tool: Any, error: Any, rid: Any,
                                                             args: Any, result: Any, duration: Any, rule_ids: Any,
                                                             notes: Any, ts: float) -> None:
    event = usual(3, session_id=session, client=client, tool_name=tool, error_message=error, request_id=rid,
                  params={"name": "t", "arguments": args}, response={"jsonrpc": "2.0", "id": 3, "result": result},
                  duration_ms=duration, rule_ids=tuple(rule_ids), notes=notes, ts=ts)
    try:
        native, python = _both(event, BuildOptions(max_body_bytes=256, preview_chars=40))
    except Exception:  # the Python function raises (and the writer degrades the row): C must not build it
        assert _event._NATIVE(event, True, 256, 40, "host:1", BodyNames({}, 1)) is None  # type: ignore[misc]
        return
    if native is not None:
        assert _fields(native) == _fields(python)


def _rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()


def _python_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite, "_BULK", None)
    monkeypatch.setattr(_event, "_NATIVE", None)


@native_bulk
@native_rows
@pytest.mark.parametrize("durability", ["batched", "strict"])
def test_a_batch_written_in_c_verifies_and_holds_the_python_writers_rows(tmp_path: Path, durability: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPWALL_LEDGER_KEY", "a shared key for both ledgers")
    events = [usual(i) for i in range(1200)] + [usual(1200 + i, **v) for i, v in enumerate(VARIANTS)]
    events = [dataclasses.replace(e, decision_id=e.decision_id or f"fixed-{i}") for i, e in enumerate(events)]
    with open_ledger(tmp_path / "c", options=LedgerOptions(durability=durability)) as ledger:
        assert ledger.writer.backend.inserts_without_gil
        for e in events:
            ledger.submit(e)
        ledger.flush(60)
        report = ledger.verify()
        assert report.ok, report.as_dict()
        assert ledger.count() + ledger.count("protocol_events") == len(events)
    with monkeypatch.context() as m:
        _python_writer(m)
        with open_ledger(tmp_path / "py", options=LedgerOptions(durability=durability)) as ledger:
            assert not ledger.writer.backend.inserts_without_gil
            for e in events:
                ledger.submit(e)
            ledger.flush(60)
            assert ledger.verify().ok
    # Same rows but for the body ids (they carry the batch's time) and so the MACs.
    for table in ("tool_calls", "protocol_events"):
        c_rows, py_rows = _rows(tmp_path / "c" / "ledger.db", table), _rows(tmp_path / "py" / "ledger.db", table)
        assert len(c_rows) == len(py_rows)
        assert [r[:33] + r[35:36] for r in c_rows] == [r[:33] + r[35:36] for r in py_rows]
    strip = lambda rows: [r[:9] for r in rows]  # noqa: E731  (call_seq .. owasp; not the MAC)
    assert strip(_rows(tmp_path / "c" / "ledger.db", "security_rule_events")) == strip(
        _rows(tmp_path / "py" / "ledger.db", "security_rule_events"))
    c_bodies = sorted(r[1:5] for r in _rows(tmp_path / "c" / "ledger.db", "event_body_blobs"))
    assert c_bodies == sorted(r[1:5] for r in _rows(tmp_path / "py" / "ledger.db", "event_body_blobs"))


@native_bulk
def test_a_tampered_row_written_in_c_is_caught_by_the_python_verifier(tmp_path: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        for i in range(300):
            ledger.submit(usual(i))
        ledger.flush(30)
        with sqlite3.connect(tmp_path / "ledger.db") as conn:
            conn.execute("UPDATE tool_calls SET tool_name = 'write_file' WHERE seq = 123")
        report = ledger.verify()
        assert not report.ok
        assert report.first_bad_seq == 123


@native_bulk
def test_a_failed_commit_keeps_order_while_the_next_batch_was_built(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The overlapped writer builds batch N+1 while N commits; N failing sends both back, N first."""
    real_start, real_finish = _sqlite.BulkConnection.start_chain, _sqlite.BulkConnection.finish_chain
    calls = {"n": 0, "failing": False}

    def flaky_start(self: Any, *args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # this batch never reaches the database
            calls["failing"] = True
            return
        real_start(self, *args)

    def flaky_finish(self: Any) -> tuple[int, str]:
        if calls["failing"]:
            calls["failing"] = False
            time.sleep(0.05)  # the writer has built the batch after this one
            raise LedgerUnavailable("SQLite: disk I/O error (simulated)")
        return real_finish(self)

    monkeypatch.setattr(_sqlite.BulkConnection, "start_chain", flaky_start)
    monkeypatch.setattr(_sqlite.BulkConnection, "finish_chain", flaky_finish)
    monkeypatch.setattr(_writer, "_CHUNK", 64)
    with open_ledger(tmp_path, options=LedgerOptions(batch_rows=100)) as ledger:
        ledger.writer.options = dataclasses.replace(ledger.writer.options, max_tx_rows=300)
        for i in range(1500):
            ledger.submit(usual(i, decision_id=None))
        ledger.writer.write_now()  # first pass stops at the failure, rows kept in order
        assert not ledger.healthy
        assert ledger.writer.pending > 0
        ledger.writer.write_now()
        assert ledger.healthy
        assert ledger.writer.pending == 0
        with sqlite3.connect(tmp_path / "ledger.db") as conn:
            ids = [int(r[0]) for r in conn.execute("SELECT request_id FROM tool_calls ORDER BY seq")]
        assert ids == list(range(1500))
        assert ledger.verify().ok
    assert calls["n"] >= 6


@native_bulk
def test_the_batch_insert_runs_without_the_gil(tmp_path: Path) -> None:
    """While SQLite inserts a batch, Python threads (the gateway's event loop) keep running."""
    ticks = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks[0] += 1

    with open_ledger(tmp_path) as ledger:
        writer = ledger.writer
        built = [_event.build_row(usual(i, decision_id=None), writer._build, "h", BodyNames({}, 1)) for i in range(5000)]
        conn = writer._connection()
        assert isinstance(conn, _sqlite.BulkConnection)
        prepared = [conn.prepare_chain(built, _writer._TABLE_INDEX, BodyNames({}, 1).created, orjson.dumps)]
        thread = threading.Thread(target=count, daemon=True)
        thread.start()
        time.sleep(0.05)
        before = ticks[0]
        conn.write_chain(writer._key, prepared, "BEGIN IMMEDIATE", _writer._HEAD, _writer._TABLES,
                         _writer._INSERT_RULE, _writer._INSERT_BODY, _writer._UPDATE_HEAD)
        during = ticks[0] - before
        stop.set()
        thread.join()
        assert ledger.count() == 5000
    # Holding the GIL for the whole insert, the counting thread could not have run in between.
    assert during > 1000


@native_bulk
def test_wal_checkpoints_run_in_the_background_and_the_wal_stays_bounded(tmp_path: Path) -> None:
    with open_ledger(tmp_path, options=LedgerOptions(durability="batched")) as ledger:
        ledger.start()
        largest = 0
        for i in range(40_000):
            ledger.submit(usual(i, decision_id=None))
            if i % 2000 == 0:
                wal = tmp_path / "ledger.db-wal"
                largest = max(largest, wal.stat().st_size if wal.exists() else 0)
        assert ledger.flush(300)
        conn = ledger.writer._conn
        assert isinstance(conn, _sqlite.BulkConnection)
        assert (conn.background_checkpoints or 0) > 0
        wal = tmp_path / "ledger.db-wal"
        largest = max(largest, wal.stat().st_size)
        assert ledger.verify().ok
    # batched mode: the thread copies from 40 MiB on and the writer finishes its last pass (usually by
    # 60 MiB); the writer checkpoints everything itself at 80 MiB, so never more than that and a batch.
    assert largest < 90 * 1024 * 1024


@native_bulk
def test_the_checkpoint_thread_copies_the_wal_and_the_writer_lets_it_start_over(tmp_path: Path) -> None:
    """The thread's checkpoints copy pages (a connection that has not read the WAL would report success
    and copy nothing), and once it is idle the writer copies the rest so that the WAL starts over."""
    with open_ledger(tmp_path) as ledger:
        writer = ledger.writer
        conn = writer._connection()
        assert isinstance(conn, _sqlite.BulkConnection)
        frames = 64  # 512 KiB of 8 KiB pages
        conn._raw.checkpoint_in_background(frames, 1_000_000)  # the writer never checkpoints by itself
        db, wal = tmp_path / "ledger.db", tmp_path / "ledger.db-wal"
        start = db.stat().st_size
        largest = 0
        for b in range(40):
            built = [_event.build_row(usual(i, decision_id=None), writer._build, "h", BodyNames({}, b))
                     for i in range(b * 100, b * 100 + 100)]
            prepared = [conn.prepare_chain(built, _writer._TABLE_INDEX, BodyNames({}, b).created,
                                           orjson.dumps)]
            conn.write_chain(writer._key, prepared, "BEGIN IMMEDIATE", _writer._HEAD, _writer._TABLES,
                             _writer._INSERT_RULE, _writer._INSERT_BODY, _writer._UPDATE_HEAD)
            largest = max(largest, wal.stat().st_size)
            time.sleep(0.05)  # a gateway's pace: the thread is idle again before the next commit
        assert (conn.background_checkpoints or 0) > 0
        assert db.stat().st_size > start + 4 * 1024 * 1024  # the pages are in the database file
        # 40 commits of ~0.2 MiB: without the WAL starting over it would hold them all (~8 MiB)
        assert largest < 3 * 1024 * 1024
        assert ledger.count() == 4000
        assert ledger.verify(use_checkpoint=False).ok


@native_bulk
def test_a_batch_written_on_its_own_thread_holds_the_connection_until_finished(tmp_path: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        writer = ledger.writer
        conn = writer._connection()
        assert isinstance(conn, _sqlite.BulkConnection)
        raw = conn._raw
        args = (_writer._HEAD, _writer._TABLES, _writer._INSERT_RULE, _writer._INSERT_BODY, _writer._UPDATE_HEAD)

        def prepared(start: int) -> list[Any]:
            built = [_event.build_row(usual(i, decision_id=None), writer._build, "h", BodyNames({}, start))
                     for i in range(start, start + 2000)]
            return [conn.prepare_chain(built, _writer._TABLE_INDEX, BodyNames({}, start).created,
                                       orjson.dumps)]

        with pytest.raises(RuntimeError, match="no ledger batch"):
            conn.finish_chain()
        conn.start_chain(writer._key, prepared(0), "BEGIN IMMEDIATE", *args)
        assert raw.writing
        with pytest.raises(RuntimeError, match="in use"):
            raw.execute("SELECT 1")
        with pytest.raises(RuntimeError, match="in use"):
            conn.start_chain(writer._key, prepared(2000), "BEGIN IMMEDIATE", *args)
        seq, mac = conn.finish_chain()
        assert not raw.writing
        assert (seq, len(mac)) == (2000, 64)
        assert raw.execute("SELECT seq, mac FROM ledger_head") == [(2000, mac)]
        # An error of the batch's is raised by finish_chain, and nothing of it stays.
        conn.start_chain(writer._key, prepared(2000), "BEGIN IMMEDIATE", _writer._HEAD, _writer._TABLES,
                         _writer._INSERT_RULE, "INSERT INTO nope VALUES (?, ?, ?, ?, ?, ?)", _writer._UPDATE_HEAD)
        with pytest.raises(LedgerError, match="no such table"):
            conn.finish_chain()
        conn.rollback()
        assert ledger.count() == 2000
        # Closing waits for a batch still being written.
        conn.start_chain(writer._key, prepared(4000), "BEGIN IMMEDIATE", *args)
        writer._close()
        assert ledger.count() == 4000
        assert ledger.verify(use_checkpoint=False).ok


@native_bulk
def test_the_bulk_connection_refuses_bad_values_before_touching_the_database(tmp_path: Path) -> None:
    bulk = _sqlite._BULK
    assert bulk is not None
    conn = bulk.Connection(str(tmp_path / "x.db"))
    conn.execute("CREATE TABLE t (a, b)")
    for rows, error in [([(2**70, 1)], OverflowError), ([(1,)], ValueError), ([("\ud800", 1)], UnicodeEncodeError),
                        ([(object(), 1)], TypeError), ([1], TypeError)]:
        with pytest.raises(error):
            conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
    with pytest.raises(ValueError, match="one statement"):
        conn.execute("SELECT 1; SELECT 2")
    with pytest.raises(bulk.Error, match="no such table") as caught:
        conn.execute("INSERT INTO nope VALUES (1)")
    assert caught.value.code & 0xFF == 1
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "é"), (2.5, b"\x00\xff"), (None, "")])
    assert conn.execute("SELECT a, b FROM t ORDER BY rowid") == [(1, "é"), (2.5, b"\x00\xff"), (None, "")]
    conn.close()
    with pytest.raises(bulk.Error, match="closed"):
        conn.execute("SELECT 1")


@native_bulk
def test_a_full_disk_through_the_bulk_connection_is_unavailable_not_a_bad_row(tmp_path: Path) -> None:
    backend = _sqlite.SqliteBackend(tmp_path / "ledger.db", max_size_mb=0.1)
    conn = backend.connect(writer=True)
    assert isinstance(conn, _sqlite.BulkConnection)
    conn.execute("CREATE TABLE t (a)")
    conn.begin_write()
    with pytest.raises(LedgerUnavailable, match="full"):
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 1000)
    conn.rollback()
    conn.close()


@native_bulk
def test_the_bulk_module_is_the_same_sqlite_library_as_sqlite3() -> None:
    """Two SQLite copies in one process would not see each other's file locks: the check holds."""
    bulk = _sqlite._BULK
    assert bulk is not None  # native_bulk: the module is built
    assert _sqlite.bulk_module() is bulk
    assert bulk.sourceid() == sqlite3.connect(":memory:").execute("SELECT sqlite_source_id()").fetchone()[0]
