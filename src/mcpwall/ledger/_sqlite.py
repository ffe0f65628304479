"""The SQLite backend: one file in WAL mode, shared by every process of one home.

Several processes may write the same file (each `mcpwall wrap` a desktop
client starts is its own gateway): `BEGIN IMMEDIATE` takes SQLite's single
write lock, so the chain head read at the start of a batch cannot move before
the batch commits. `busy_timeout` makes a second writer wait instead of fail.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mcpwall.ledger._backend import Params
from mcpwall.ledger._errors import LedgerConfigError, LedgerError, LedgerUnavailable

_TYPES = {"{SEQ}": "INTEGER PRIMARY KEY", "{BIGINT}": "INTEGER", "{REAL}": "REAL", "{BLOB}": "BLOB"}
#: SQLite error texts that mean "cannot write now" rather than "this statement is wrong".
_UNAVAILABLE = ("disk is full", "database is locked", "unable to open", "disk i/o error", "readonly",
                "read-only", "database or disk is full", "no such file", "busy", "out of memory")
PAGE_SIZE = 4096
#: SQLite's default SQLITE_MAX_VARIABLE_NUMBER (3.32+) is 32766; stay below it.
_MAX_VARIABLES = 30_000
#: rows per INSERT: larger statements save little time and their cached plans cost memory
_MAX_ROWS = 64
_INSERT_RE = re.compile(r"^(INSERT\s+INTO\s+\w+\s*\([^)]*\))\s*VALUES\s*(\([^)]*\))(.*)$", re.IGNORECASE | re.DOTALL)


def _split_insert(sql: str) -> tuple[str, str | None, str]:
    """(head, one row's VALUES group, tail) of a single-row INSERT, else (sql, None, "")."""
    m = _INSERT_RE.match(sql.strip())
    if m is None:
        return sql, None, ""
    return m.group(1), m.group(2), m.group(3)


class SqliteConnection:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Insert many rows with few statements.

        Python's sqlite3 releases the GIL around every `sqlite3_step`, and under a
        busy event loop each re-acquisition waits up to the interpreter's switch
        interval (5 ms): row-by-row `executemany` then wrote about 300 rows/s
        inside a loaded gateway against 6,400 standalone. One multi-row INSERT
        per chunk steps once per chunk.
        """
        batch = [tuple(r) for r in rows]
        try:
            head, values, tail = _split_insert(sql)
            if not batch or values is None:
                self._conn.executemany(sql, batch)
                return
            width = len(batch[0])
            per = max(1, min(_MAX_ROWS, _MAX_VARIABLES // width))
            start = 0
            while start < len(batch):
                # Chunks of a power of two rows: sqlite3 caches a prepared statement per
                # distinct SQL text (128 of them), and one text per batch length kept up
                # to 128 statements of up to 15,000 parameters alive: 100+ MiB of RSS.
                size = 1 << (min(per, len(batch) - start).bit_length() - 1)
                chunk = batch[start:start + size]
                start += size
                statement = f"{head} VALUES {', '.join([values] * size)}{tail}"
                self._conn.execute(statement, [v for row in chunk for v in row])
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    def begin_write(self) -> None:
        self.execute("BEGIN IMMEDIATE")

    def begin(self) -> None:
        self.execute("BEGIN")

    def begin_exclusive(self) -> None:
        self.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()


class SqliteBackend:
    name = "sqlite"

    def __init__(self, path: Path, *, max_size_mb: float | None = None) -> None:
        self.path = path
        self.max_size_mb = max_size_mb

    def connect(self, *, writer: bool = False) -> SqliteConnection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            if created:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)
            conn.execute("PRAGMA busy_timeout = 10000")
            conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a commit survives power loss, not only a killed process. The writer may
            # relax this for batched durability (see `relax`).
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA case_sensitive_like = ON")
            if self.max_size_mb is not None:
                pages = max(16, int(self.max_size_mb * 1024 * 1024 / PAGE_SIZE))
                conn.execute(f"PRAGMA max_page_count = {pages}")
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise LedgerConfigError(f"{self.path} is not a SQLite database") from exc
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        except (sqlite3.Error, OSError) as exc:
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        return SqliteConnection(conn)

    def exists(self) -> bool:
        return self.path.exists()

    def ddl(self, statement: str) -> str:
        for placeholder, sql_type in _TYPES.items():
            statement = statement.replace(placeholder, sql_type)
        return statement

    def describe(self) -> str:
        return f"sqlite:///{self.path}" if self.path.is_absolute() else str(self.path)


def _translate(exc: sqlite3.Error) -> LedgerError:
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and any(s in text.lower() for s in _UNAVAILABLE):
        return LedgerUnavailable(f"SQLite: {text}")
    return LedgerError(f"SQLite: {exc.__class__.__name__}: {text}")


__all__ = ["PAGE_SIZE", "SqliteBackend", "SqliteConnection"]
