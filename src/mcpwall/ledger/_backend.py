"""Where the ledger lives: one small connection protocol over SQLite and PostgreSQL.

The ledger speaks one SQL dialect, written with `?` placeholders and the
column types of `_schema.py`; a backend adapts the few places the two
databases differ (placeholders, DDL type names, the write lock) and
translates driver errors into `LedgerUnavailable` (cannot write now) or
`LedgerError` (this statement failed). Connections run in autocommit mode and transactions are
explicit (`begin_write` ... `commit`), so both backends behave the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcpwall.ledger._errors import LedgerConfigError

Params = Sequence[Any]


class Connection(Protocol):
    """One database connection, used by one thread at a time."""

    def execute(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Run one statement; returns its rows (empty for statements without rows)."""

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement for many parameter rows."""

    def begin_write(self) -> None:
        """Start a transaction that holds the ledger's write lock until commit or rollback."""

    def begin(self) -> None:
        """Start an ordinary transaction."""

    def begin_snapshot(self) -> None:
        """Start a read transaction whose statements all see one state of the ledger."""

    def begin_exclusive(self) -> None:
        """Start a transaction no other process can run alongside (schema migrations)."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """A kind of database and the address of one ledger in it."""

    #: "sqlite" or "postgresql"
    name: str
    #: Whether a writer connection's `executemany` runs without the GIL, so the ledger's
    #: writer can build the next batch while this one is inserted (see `Writer`).
    inserts_without_gil: bool

    def connect(self, *, writer: bool = False) -> Connection:
        """A new connection; raises LedgerUnavailable when the database cannot be reached."""

    def exists(self) -> bool:
        """Whether a ledger may already be there (False: a SQLite file that does not exist)."""

    def ddl(self, statement: str) -> str:
        """A schema statement with the type placeholders of `_schema.py` filled in."""

    def describe(self) -> str:
        """Where the ledger is, for messages (no password)."""


@dataclass(frozen=True)
class LedgerLocation:
    """A parsed ledger URL."""

    kind: str  # "sqlite" | "postgresql"
    path: Path | None = None
    url: str | None = None


def parse_url(home: Path, url: str | None) -> LedgerLocation:
    """`None` -> `<home>/ledger.db`; a path or `sqlite:///PATH`; `postgresql://...` (or `postgres://`)."""
    if url is None or not str(url).strip():
        return LedgerLocation("sqlite", path=home / "ledger.db")
    text = str(url).strip()
    if text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return LedgerLocation("postgresql", url=text.replace("postgresql+psycopg://", "postgresql://", 1))
    if text.startswith("sqlite:"):
        rest = text[len("sqlite:"):]
        if rest.startswith("///"):
            rest = rest[2:]  # sqlite:///abs/path -> /abs/path
        elif rest.startswith("//"):
            raise LedgerConfigError(f"ledger URL {text!r}: write sqlite:///ABSOLUTE/PATH (three slashes)")
        if not rest or rest == ":memory:":
            raise LedgerConfigError(f"ledger URL {text!r}: a file path is needed (an in-memory ledger "
                                    "cannot be shared by the writer and the readers)")
        return LedgerLocation("sqlite", path=Path(rest).expanduser())
    if "://" in text:
        raise LedgerConfigError(f"ledger URL {text!r}: unknown scheme (use a path, sqlite:///PATH or "
                                "postgresql://...)")
    return LedgerLocation("sqlite", path=Path(text).expanduser())


def open_backend(location: LedgerLocation, *, max_size_mb: float | None = None) -> Backend:
    """The backend for a parsed location; PostgreSQL needs the `psycopg` package."""
    if location.kind == "postgresql":
        from mcpwall.ledger._postgres import PostgresBackend

        assert location.url is not None
        return PostgresBackend(location.url)
    from mcpwall.ledger._sqlite import SqliteBackend

    assert location.path is not None
    return SqliteBackend(location.path, max_size_mb=max_size_mb)


__all__ = ["Backend", "Connection", "LedgerLocation", "Params", "open_backend", "parse_url"]
