"""The SQLite backend: one file in WAL mode, shared by every process of one home.

Several processes may write the same file (each `mcpwall wrap` a desktop
client starts is its own gateway): `BEGIN IMMEDIATE` takes SQLite's single
write lock, so the chain head read at the start of a batch cannot move before
the batch commits. `busy_timeout` makes a second writer wait instead of fail.
"""

from __future__ import annotations

import contextlib
import os
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


class SqliteConnection:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        try:
            self._conn.executemany(sql, rows)
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
