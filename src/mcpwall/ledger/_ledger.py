"""The ledger: an open database, its writer, the state store and the query API.

`open_ledger(home, url)` creates or migrates the schema and returns a
`Ledger`. The gateway's ledger stage starts its writer thread and submits
events; synchronous code (the CLI, another engineer's `pin` command) uses
the same object for queries and for the StateStore, whose writes are
committed before they return. Reads and state writes go through one
"main" connection guarded by a lock; the writer has its own.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, TypeVar

import orjson

from mcpwall.ledger._anchor import LedgerRolledBack, anchor_path, head_label, read_anchor
from mcpwall.ledger._backend import Backend, Connection, open_backend, parse_url
from mcpwall.ledger._chain import checkpoint_path, load_key, other_ledgers, write_checkpoint
from mcpwall.ledger._errors import LedgerConfigError, LedgerError, LedgerUnavailable
from mcpwall.ledger._event import BuildOptions, Event
from mcpwall.ledger._options import LedgerOptions
from mcpwall.ledger._query import LedgerQuery, Page, decode_row, run_query
from mcpwall.ledger._schema import ROW_COLUMNS, RULE_COLUMNS, migrate, now_iso, schema_version
from mcpwall.ledger._seatbelt import entry_from_row, write_jsonl
from mcpwall.ledger._sqlite import SqliteConnection
from mcpwall.ledger._verify import VerifyReport, verify_chain
from mcpwall.ledger._writer import Waiter, Writer, WriterOptions

T = TypeVar("T")

#: seconds a state read may be reused (see the StateStore section of Ledger)
STATE_TTL = 0.5

def _relax(conn: Connection) -> None:
    """Batched durability on SQLite: a commit survives a killed process (WAL), not always a power cut.

    The WAL is copied back into the database from 40 MiB instead of SQLite's 4: fewer,
    larger checkpoints write the ledger ~18% faster (bench/ledger_write.py, prebuilt rows:
    107 -> 88 us a row); with the C writer they run on a thread of their own.
    """
    conn.execute("PRAGMA synchronous = NORMAL")
    if isinstance(conn, SqliteConnection):
        conn.autocheckpoint(40 * 1024 * 1024)


def replica_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Ledger:
    """An open ledger. Thread-safe; see the module docstring for who uses what."""

    def __init__(self, home: Path, backend: Backend, ledger_id: str, options: LedgerOptions,
                 conn: Connection, *, create_key: bool = True) -> None:
        self.home = home
        self.backend = backend
        self.ledger_id = ledger_id
        self.options = options
        self._create_key = create_key
        self._key: bytes | None = None
        self._conn: Connection | None = conn
        self._lock = threading.RLock()
        self._writer: Writer | None = None
        self._state_cache: dict[tuple[str, str], tuple[float, str | None]] = {}
        self._anchor_checked = False
        self.closed = False

    # ------------------------------------------------------------------ basics

    @property
    def url(self) -> str:
        return self.backend.describe()

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = load_key(self.home, create=self._create_key)
        return self._key

    @property
    def checkpoint_file(self) -> Path:
        return checkpoint_path(self.home)

    @property
    def anchor_file(self) -> Path | None:
        """This ledger's head anchor, outside the home (see `_anchor.py`); None when anchors are off."""
        return anchor_path(self.ledger_id, self.options.anchor)

    def head(self) -> tuple[int, str]:
        """The chain's head as committed: (seq, MAC)."""
        rows = self._with_conn(lambda c: c.execute("SELECT seq, mac FROM ledger_head WHERE id = 1"))
        return (int(rows[0][0]), str(rows[0][1])) if rows else (0, "")

    def published_head(self, *, query: bool = True) -> dict[str, Any]:
        """The head as the gateway publishes it (dashboard, /metrics, webhooks): what an operator keeps
        elsewhere and later gives `verify-audit --expect-head`. From the writer's memory once it has
        committed; before that from the database, unless `query` is False (then seq 0)."""
        w = self._writer
        if w is not None and w.head_seq:
            seq, mac = w.head_seq, w.head_mac
        else:
            seq, mac = self.head() if query else (0, "")
        out = {"ledger_id": self.ledger_id, "seq": seq, "mac": mac[:16], "head": head_label(seq, mac)}
        if w is not None and w.rolled_back:
            out["rolled_back"] = w.rolled_back
        return out

    def check_anchor(self) -> None:
        """Refuse a ledger that is behind its head anchor, or forked from it (restored from a copy).

        A writer calls this before its first write; `verify-audit` reports the same as a broken row.
        """
        path = self.anchor_file
        if path is None or self._anchor_checked:
            return
        anchor = read_anchor(path, self.key, self.ledger_id)
        if anchor is None or (anchor.authentic and anchor.seq == 0):
            return
        if not anchor.authentic:
            raise LedgerRolledBack(f"the head anchor {path} of ledger {self.ledger_id} was altered (its MAC does not "
                                   f"verify); run `mcpwall verify-audit` and remove the file once understood")
        seq, mac = self.head()
        found = None
        if anchor.seq <= seq:
            rows = self._with_conn(lambda c: c.execute(
                "SELECT mac FROM tool_calls WHERE seq = ? UNION ALL SELECT mac FROM protocol_events WHERE seq = ?",
                (anchor.seq, anchor.seq)))
            found = str(rows[0][0]) if len(rows) == 1 else None
        if found != anchor.mac:
            state = (f"its head is row {head_label(seq, mac)}, behind the anchor's row {anchor.label}" if anchor.seq > seq
                     else f"its row {anchor.seq} is not the anchor's {anchor.label}")
            raise LedgerRolledBack(
                f"the ledger {self.url} was ROLLED BACK: {state} ({path}). It was restored from an older copy; "
                "refusing to write to it. Run `mcpwall verify-audit`; to accept the restored ledger on purpose, "
                "remove the anchor file")
        self._anchor_checked = True

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _with_conn(self, fn: Callable[[Connection], T]) -> T:
        """Run `fn` on the main connection, reconnecting once if the database went away.

        After `close()` each call gets a connection of its own, closed right after: stages
        stopped after the ledger may still read or save their state.
        """
        with self._lock:
            if self.closed:
                conn = self.backend.connect()
                try:
                    return fn(conn)
                finally:
                    conn.close()
            for attempt in (1, 2):
                if self._conn is None:
                    self._conn = self.backend.connect()
                try:
                    return fn(self._conn)
                except LedgerUnavailable:
                    self._conn.close()
                    self._conn = None
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")

    # ------------------------------------------------------------------ writing events

    @property
    def writer(self) -> Writer:
        if self._writer is None:
            o = self.options
            prepare: Callable[[Connection], None] | None = None
            if self.backend.name == "sqlite" and o.durability == "batched":
                prepare = _relax
            self._writer = Writer(
                self.backend, self.key, self.ledger_id, self.checkpoint_file,
                WriterOptions(durability=o.durability, flush_interval=o.flush_interval_ms / 1000,
                              batch_rows=o.batch_rows, max_pending=o.max_pending),
                BuildOptions(bodies=o.bodies, max_body_bytes=o.max_body_bytes, preview_chars=o.preview_chars),
                replica_name(), prepare, anchor=self.anchor_file)
        return self._writer

    def start(self) -> None:
        """Start the writer thread (the gateway does this; without it `flush` writes inline)."""
        self.check_anchor()
        self.writer.start()

    def submit(self, event: Event, waiter: Waiter | None = None) -> bool:
        """Queue one event for the writer; thread-safe and cheap. False: dropped (queue full)."""
        return self.writer.submit(event, waiter)

    def record(self, event: Event) -> None:
        """Queue and commit one event now (synchronous callers)."""
        self.submit(event)
        self.flush()

    def flush(self, timeout: float = 10.0) -> bool:
        """Commit everything submitted so far; False if it could not be done within `timeout`."""
        writer = self.writer
        if not writer.running:
            self.check_anchor()
            writer.write_now()
            return writer.pending == 0
        return writer.flush(timeout)

    @property
    def healthy(self) -> bool:
        return self._writer is None or self._writer.healthy

    def status(self) -> dict[str, Any]:
        w = self._writer
        out: dict[str, Any] = {"backend": self.backend.name, "url": self.url, "durability": self.options.durability,
                               "bodies": self.options.bodies}
        if w is not None:
            out.update(healthy=w.healthy, last_error=w.last_error, pending=w.pending, written=w.written,
                       batches=w.batches, dropped=w.dropped, degraded=w.degraded, head_seq=w.head_seq,
                       head=head_label(w.head_seq, w.head_mac), rolled_back=w.rolled_back)
        out["ledger_id"] = self.ledger_id
        return out

    def close(self, timeout: float = 10.0) -> None:
        """Flush and stop the writer, close the connections. Idempotent."""
        if self.closed:
            return
        if self._writer is not None:
            if self._writer.running:
                self._writer.stop(timeout)
            else:
                if self._writer.pending:
                    with contextlib.suppress(LedgerError):
                        self._writer.write_now()
                self._writer.stop(0)
        with self._lock:
            self.closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------------ StateStore
    #
    # Stages read state on the hot path (pins on every call), so reads are cached for
    # STATE_TTL seconds: writes by this process are seen at once (write-through), writes by
    # another process (the `pin` command, another replica) within STATE_TTL. While the
    # database is unreachable a read is answered from the cache however old, so a stage's
    # lookup does not fail before the ledger stage can refuse the call with its own reason;
    # writes always go to the database and fail when it is down.

    def _cached(self, slot: tuple[str, str], load: Callable[[], str | None]) -> str | None:
        now = time.monotonic()
        hit = self._state_cache.get(slot)
        if hit is not None and now - hit[0] < STATE_TTL:
            return hit[1]
        try:
            text = load()
        except LedgerUnavailable:
            if hit is None:
                raise
            return hit[1]
        if len(self._state_cache) > 10_000:
            self._state_cache.clear()
        self._state_cache[slot] = (now, text)
        return text

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        def load() -> str | None:
            rows = self._with_conn(lambda c: c.execute("SELECT value FROM state WHERE namespace = ? AND key = ?",
                                                       (namespace, key)))
            return str(rows[0][0]) if rows else None

        text = self._cached((namespace, key), load)
        value = orjson.loads(text) if text is not None else None
        return value if isinstance(value, dict) else None

    def all_state(self, namespace: str) -> dict[str, dict[str, Any]]:
        def load() -> str:
            rows = self._with_conn(lambda c: c.execute(
                "SELECT key, value FROM state WHERE namespace = ? ORDER BY key", (namespace,)))
            return "{" + ",".join(f"{orjson.dumps(str(k)).decode()}:{v}" for k, v in rows) + "}"

        text = self._cached(("\x00all", namespace), load)
        return dict(orjson.loads(text or "{}"))

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        if not isinstance(value, dict):
            raise TypeError("state values are JSON objects (dict)")
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        self._with_conn(lambda c: c.execute(
            "INSERT INTO state (namespace, key, value, updated) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
            (namespace, key, text, now_iso())))
        self._state_cache[(namespace, key)] = (time.monotonic(), text)
        self._state_cache.pop(("\x00all", namespace), None)

    def delete_state(self, namespace: str, key: str) -> None:
        self._with_conn(lambda c: c.execute("DELETE FROM state WHERE namespace = ? AND key = ?", (namespace, key)))
        self._state_cache[(namespace, key)] = (time.monotonic(), None)
        self._state_cache.pop(("\x00all", namespace), None)

    # ------------------------------------------------------------------ queries

    def query(self, query: LedgerQuery | None = None, **filters: Any) -> Page:
        """Rows matching `query` (or the same fields as keywords), one page, with the next cursor."""
        q = query or LedgerQuery(**filters)
        return self._with_conn(lambda c: run_query(c, q))

    def iter_rows(self, query: LedgerQuery) -> Iterator[dict[str, Any]]:
        """Every matching row in the query's order, page by page."""
        q = query
        while True:
            page = self.query(q)
            yield from page.rows
            if not page.rows or page.next_cursor is None or len(page.rows) < q.normalised().limit:
                return
            q = replace(q, cursor=page.next_cursor)

    def get(self, seq: int) -> dict[str, Any] | None:
        """One event row (either table) by seq."""
        cols = ", ".join(ROW_COLUMNS)
        for table in ("tool_calls", "protocol_events"):
            sql = f"SELECT {cols} FROM {table} WHERE seq = ?"
            rows = self._with_conn(lambda c: c.execute(sql, (seq,)))  # noqa: B023 - called at once
            if rows:
                return {**decode_row(ROW_COLUMNS, rows[0]), "table": table}
        return None

    def body(self, body_id: str) -> bytes | None:
        rows = self._with_conn(lambda c: c.execute("SELECT content FROM event_body_blobs WHERE id = ?", (body_id,)))
        return bytes(rows[0][0]) if rows else None

    def rule_events(self, seq: int) -> list[dict[str, Any]]:
        rows = self._with_conn(lambda c: c.execute(
            f"SELECT {', '.join(RULE_COLUMNS)} FROM security_rule_events WHERE call_seq = ? ORDER BY idx", (seq,)))
        out = [dict(zip(RULE_COLUMNS, r, strict=True)) for r in rows]
        for r in out:
            r["compliance"], r["owasp"] = orjson.loads(r["compliance"]), orjson.loads(r["owasp"])
        return out

    def count(self, table: str = "tool_calls") -> int:
        if table not in ("tool_calls", "protocol_events", "security_rule_events", "event_body_blobs", "state"):
            raise LedgerConfigError(f"unknown ledger table {table!r}")
        return int(self._with_conn(lambda c: c.execute(f"SELECT COUNT(*) FROM {table}"))[0][0])

    def schema_version(self) -> int:
        return self._with_conn(schema_version)

    def arguments(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The (redacted) arguments of a row: from its stored body, else its preview if complete, else {}."""
        body_id = row.get("request_body_id")
        if body_id:
            raw = self.body(str(body_id))
            if raw is not None:
                with contextlib.suppress(orjson.JSONDecodeError):
                    body = orjson.loads(raw)
                    params = body.get("params") if isinstance(body, dict) else None
                    if isinstance(params, dict):
                        args = params.get("arguments") if row.get("method") in ("tools/call", "prompts/get") \
                            else params
                        return args if isinstance(args, dict) else {}
        preview = row.get("request_preview")
        if isinstance(preview, str) and not preview.endswith("…"):
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(preview)
                if isinstance(value, dict) and "withheld" not in value:
                    return value
        return {}

    # ------------------------------------------------------------------ integrity and export

    def verify(self, *, use_checkpoint: bool = True, check_bodies: bool = True, use_anchor: bool = True,
               anchor: Path | None = None, expect_head: tuple[int, str] | None = None) -> VerifyReport:
        """Check the whole chain; see `_verify.py`. The head anchor (`anchor`, else this ledger's
        `anchor_file`) is checked when it exists; `expect_head` is a (seq, MAC prefix) the gateway published."""
        cp = self.checkpoint_file if use_checkpoint else None
        head_anchor = (anchor or self.anchor_file) if use_anchor else None
        report = self._with_conn(lambda c: verify_chain(c, self.key, self.ledger_id, cp, check_bodies=check_bodies,
                                                        anchor=head_anchor, expect_head=expect_head))
        if head_anchor is not None and report.anchor is None and report.ok:
            report.warnings.append(f"no head anchor at {head_anchor}: a ledger restored together with its "
                                   "checkpoint would not be detected (give --expect-head)")
        if cp is not None:
            others = other_ledgers(cp, self.ledger_id)
            if others:
                report.warnings.append(f"{cp} also records other ledger(s) ({', '.join(o[:8] for o in others)}): a "
                                       "ledger that was replaced or deleted, or another --ledger used from this home")
        return report

    def export_jsonl(self, out: IO[str], secret: bytes | None = None, query: LedgerQuery | None = None) -> int:
        """Write matching tool_calls rows, oldest first, as seatbelt-compatible signed JSONL."""
        base = query or LedgerQuery()
        q = replace(base, table="tool_calls", order="asc", limit=1000,
                    cursor=base.cursor if base.cursor and base.cursor.startswith("asc:") else None)
        entries = (entry_from_row(row, self.arguments(row)) for row in self.iter_rows(q))
        return write_jsonl(out, secret if secret is not None else self.key, entries)


def open_ledger(home: Path, url: str | None = None, *, options: LedgerOptions | None = None,
                create: bool = True) -> Ledger:
    """Open (creating and migrating) the ledger of `home`: `<home>/ledger.db`, or `url`.

    With `create=False` a missing SQLite file is an error instead of a new ledger
    (read-only commands use this), and the chain key is never generated. With `create=True`
    (a writer) a ledger behind its head anchor is refused (`LedgerRolledBack`, see `_anchor.py`).
    """
    home = Path(home).expanduser()
    options = options or LedgerOptions()
    backend = open_backend(parse_url(home, url), max_size_mb=options.max_size_mb)
    if not create and not backend.exists():
        raise LedgerConfigError(f"no ledger at {backend.describe()} (the gateway creates it on first start)")
    conn = backend.connect()
    try:
        ledger_id = migrate(conn, backend)
    except BaseException:
        conn.close()
        raise
    ledger = Ledger(home, backend, ledger_id, options, conn, create_key=create)
    if create:
        _ = ledger.key  # generate the key now, not on the writer thread
        head = conn.execute("SELECT seq FROM ledger_head WHERE id = 1")
        if not head or not head[0][0]:
            # An empty ledger is checkpointed at row 0 before its first commit: the writer advances the
            # checkpoint just after each commit, and a verify between the first commit and that write
            # found rows and no checkpoint for them ("truncation cannot be ruled out"). Never moves it back.
            write_checkpoint(ledger.checkpoint_file, ledger.key, ledger_id, 0, "")
        try:
            ledger.check_anchor()  # a writer refuses a rolled-back ledger before the gateway even starts
        except BaseException:
            ledger.close()
            raise
    return ledger


__all__ = ["Ledger", "open_ledger", "replica_name"]
