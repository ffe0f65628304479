"""The SQLite backend: one file in WAL mode, shared by every process of one home.

Several processes may write the same file (each `mcpwall wrap` a desktop
client starts is its own gateway): `BEGIN IMMEDIATE` takes SQLite's single
write lock, so the chain head read at the start of a batch cannot move before
the batch commits. `busy_timeout` makes a second writer wait instead of fail.

The writer's connection is `_bulk.c`'s when it was built (tools/build_native.py):
the same SQLite, but a batch's rows are bound and inserted without the GIL, so
the writer thread builds the next batch meanwhile (see `Writer`). Everything
else (readers, the CLI, migrations) uses Python's sqlite3.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from mcpwall.ledger._backend import Params
from mcpwall.ledger._errors import LedgerConfigError, LedgerError, LedgerUnavailable

_TYPES = {"{SEQ}": "INTEGER PRIMARY KEY", "{BIGINT}": "INTEGER", "{REAL}": "REAL", "{BLOB}": "BLOB"}
#: SQLite error texts that mean "cannot write now" rather than "this statement is wrong".
_UNAVAILABLE = ("disk is full", "database is locked", "unable to open", "disk i/o error", "readonly",
                "read-only", "database or disk is full", "no such file", "busy", "out of memory")
#: Their primary result codes: BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN.
_UNAVAILABLE_CODES = frozenset({5, 6, 7, 8, 10, 13, 14})
_NOTADB = 26
#: Page size of a new ledger file (one made before keeps its own; WAL mode fixes it at creation).
#: 8 KiB rather than SQLite's 4: a row, its two bodies and their index entries touch fewer pages,
#: and the writer wrote 13% more rows a second, 24% more at 50 rows a commit (bench/ledger_write.py).
PAGE_SIZE = 8192
#: The WAL size from which it is copied back into the database: SQLite's default (1,000 4 KiB pages).
AUTOCHECKPOINT_BYTES = 4 * 1024 * 1024
#: SQLite's default SQLITE_MAX_VARIABLE_NUMBER (3.32+) is 32766; stay below it.
_MAX_VARIABLES = 30_000
#: rows per INSERT: larger statements save little time and their cached plans cost memory
_MAX_ROWS = 64
_INSERT_RE = re.compile(r"^(INSERT\s+INTO\s+\w+\s*\([^)]*\))\s*VALUES\s*(\([^)]*\))(.*)$", re.IGNORECASE | re.DOTALL)


class BadText(bytes):
    """A TEXT value that is not valid UTF-8, read through `lenient_text`."""


def _lenient(raw: bytes) -> str | BadText:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(raw)


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


    def page_size(self) -> int:
        return int(self.execute("PRAGMA page_size")[0][0])

    def autocheckpoint(self, wal_bytes: int) -> None:
        """Copy the WAL back into the database once it holds `wal_bytes` (SQLite's default: 4 MiB)."""
        self.execute(f"PRAGMA wal_autocheckpoint = {max(1, wal_bytes // self.page_size())}")

    def begin_write(self) -> None:
        self.execute("BEGIN IMMEDIATE")

    def begin(self) -> None:
        self.execute("BEGIN")

    def begin_snapshot(self) -> None:
        """A read transaction: every SELECT until rollback sees one state of the file (WAL)."""
        self.execute("BEGIN")

    @contextlib.contextmanager
    def lenient_text(self) -> Iterator[None]:
        """Reads in which a TEXT value that is not UTF-8 comes back as `BadText` instead of failing the
        whole statement (SQLite stores whatever bytes it is given; the verifier names such a row)."""
        old = self._conn.text_factory
        self._conn.text_factory = _lenient
        try:
            yield
        finally:
            self._conn.text_factory = old

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


def bulk_module() -> ModuleType | None:
    """`mcpwall.ledger._bulk` when it was built, is in use (see mcpwall._native) and links the very
    SQLite library sqlite3 uses: two copies of SQLite in one process would each keep their own
    POSIX locks on the file, and closing a descriptor in one drops the other's locks."""
    try:
        module = importlib.import_module("mcpwall.ledger._bulk")
        import _sqlite3

        ours = ctypes.cast(ctypes.CDLL(module.__file__).sqlite3_libversion, ctypes.c_void_p).value
        theirs = ctypes.cast(ctypes.CDLL(_sqlite3.__file__).sqlite3_libversion, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return None
    return module if ours is not None and ours == theirs else None


_BULK = bulk_module()


class BulkConnection(SqliteConnection):
    """The writer's connection through `_bulk.c`: `executemany` binds and steps every row without the GIL."""

    def __init__(self, conn: Any, module: ModuleType) -> None:  # not super().__init__: that takes a sqlite3 one
        self._raw = conn
        self._module = module
        self._errors: type[Exception] = module.Error

    def execute(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        try:
            rows: list[tuple[Any, ...]] = self._raw.execute(sql, tuple(params))
        except self._errors as exc:
            raise _translate_code(exc) from exc
        return rows

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        try:
            self._raw.executemany(sql, rows if isinstance(rows, list) else list(rows))
        except self._errors as exc:
            raise _translate_code(exc) from exc

    def autocheckpoint(self, wal_bytes: int) -> None:
        """As SQLite's, but the checkpoints run on a thread of their own (see _bulk.c); the writer
        finishes their last short pass, and checkpoints everything itself if that thread falls
        twice as far behind."""
        frames = max(1, wal_bytes // self.page_size())
        self._raw.checkpoint_in_background(frames, frames * 2)

    def prepare_chain(self, built: Sequence[Any], table_index: dict[str, int], created: str,
                      dumps: Callable[[Any], bytes]) -> Any:
        """A batch's BuiltRows taken into C for `write_chain`. Does not touch the database: any thread
        may call it while another writes (the writer thread builds and prepares the next batch)."""
        return self._module.prepare_chain(built, table_index, created, dumps)

    def write_chain(self, key: bytes, batch: Any, begin: str, head: str, tables: Sequence[tuple[str, str]],
                    rule_insert: str, body_insert: str, update_head: str) -> tuple[int, str]:
        """One prepared batch of the ledger, MACs and commit included, without the GIL (see _bulk.c)."""
        try:
            seq, mac = self._raw.write_chain(key, batch, begin, head, tables, rule_insert, body_insert, update_head)
        except self._errors as exc:
            raise _translate_code(exc) from exc
        return int(seq), str(mac)

    def start_chain(self, key: bytes, batch: Any, begin: str, head: str, tables: Sequence[tuple[str, str]],
                    rule_insert: str, body_insert: str, update_head: str) -> None:
        """`write_chain` on a C thread of its own, which never needs the GIL; `finish_chain` waits for it.
        Until then the connection refuses every other call."""
        try:
            self._raw.start_chain(key, batch, begin, head, tables, rule_insert, body_insert, update_head)
        except self._errors as exc:
            raise _translate_code(exc) from exc

    def finish_chain(self) -> tuple[int, str]:
        """Wait (without the GIL) for the batch `start_chain` began: its (seq, mac), or its error."""
        try:
            seq, mac = self._raw.finish_chain()
        except self._errors as exc:
            raise _translate_code(exc) from exc
        return int(seq), str(mac)

    @property
    def background_checkpoints(self) -> int | None:
        """WAL checkpoints its background thread ran (None: that thread is not running)."""
        runs: int | None = self._raw.background_checkpoints
        return runs

    def rollback(self) -> None:
        with contextlib.suppress(self._errors):
            if self._raw.in_transaction:
                self._raw.execute("ROLLBACK")

    def close(self) -> None:
        with contextlib.suppress(self._errors, RuntimeError):
            self._raw.close()


class SqliteBackend:
    name = "sqlite"

    def __init__(self, path: Path, *, max_size_mb: float | None = None) -> None:
        self.path = path
        self.max_size_mb = max_size_mb
        self.inserts_without_gil = _BULK is not None

    def _configure(self, execute: Callable[[str], list[tuple[Any, ...]]]) -> None:
        for pragma in (f"PRAGMA page_size = {PAGE_SIZE}",  # before WAL mode: only a new file takes it
                       "PRAGMA busy_timeout = 10000", "PRAGMA journal_mode = WAL",
                       # FULL: a commit survives power loss, not only a killed process. The writer may
                       # relax this for batched durability (see `_ledger._relax`).
                       "PRAGMA synchronous = FULL", "PRAGMA case_sensitive_like = ON"):
            execute(pragma)
        if self.max_size_mb is not None:
            page_size = int(execute("PRAGMA page_size")[0][0])
            execute(f"PRAGMA max_page_count = {max(16, int(self.max_size_mb * 1024 * 1024 / page_size))}")

    def connect(self, *, writer: bool = False) -> SqliteConnection:
        if writer and _BULK is not None:
            return self._connect_bulk(_BULK)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            if created:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)
            self._configure(lambda sql: conn.execute(sql).fetchall())
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise LedgerConfigError(f"{self.path} is not a SQLite database") from exc
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        except (sqlite3.Error, OSError) as exc:
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        return SqliteConnection(conn)

    def _connect_bulk(self, bulk: ModuleType) -> BulkConnection:
        raw = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            raw = bulk.Connection(str(self.path), 10_000)
            if created:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)
            self._configure(raw.execute)
            frames = max(1, AUTOCHECKPOINT_BYTES // int(raw.execute("PRAGMA page_size")[0][0]))
            raw.checkpoint_in_background(frames, frames * 2)
        except bulk.Error as exc:
            if raw is not None:
                raw.close()
            if getattr(exc, "code", 0) & 0xFF == _NOTADB:
                raise LedgerConfigError(f"{self.path} is not a SQLite database") from exc
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        except OSError as exc:
            raise LedgerUnavailable(f"cannot open the SQLite ledger {self.path}: {exc}") from exc
        return BulkConnection(raw, bulk)

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


def _translate_code(exc: Exception) -> LedgerError:
    """`_translate` for `_bulk.c`'s errors, which carry SQLite's result code instead of a class."""
    text = str(exc)
    code = getattr(exc, "code", None)
    if isinstance(code, int) and (code & 0xFF in _UNAVAILABLE_CODES or any(s in text.lower() for s in _UNAVAILABLE)):
        return LedgerUnavailable(f"SQLite: {text}")
    kind = f"error {code & 0xFF}" if isinstance(code, int) else exc.__class__.__name__
    return LedgerError(f"SQLite: {kind}: {text}")


__all__ = ["AUTOCHECKPOINT_BYTES", "PAGE_SIZE", "BadText", "BulkConnection", "SqliteBackend", "SqliteConnection", "bulk_module"]
