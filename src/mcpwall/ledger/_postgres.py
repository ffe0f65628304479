"""The PostgreSQL backend: the ledger of several gateway replicas.

Replicas share one chain: a batch takes a row lock on `ledger_head`
(`SELECT ... FOR UPDATE`), so the head it extends cannot move before it
commits; migrations take a transaction-scoped advisory lock. Columns holding
JSON are TEXT, not JSONB, because the MAC covers the exact text written.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

from mcpwall.ledger._backend import Params
from mcpwall.ledger._errors import LedgerConfigError, LedgerError, LedgerUnavailable

_TYPES = {"{SEQ}": "BIGINT PRIMARY KEY", "{BIGINT}": "BIGINT", "{REAL}": "DOUBLE PRECISION", "{BLOB}": "BYTEA"}
_MIGRATION_LOCK = 0x6D637077  # "mcpw"
_PLACEHOLDER = re.compile(r"\?")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise LedgerConfigError("a postgresql:// ledger needs the psycopg package: "
                                "pip install 'psycopg[binary]'") from exc
    return psycopg


class PostgresConnection:
    def __init__(self, conn: Any, psycopg: Any) -> None:
        self._conn = conn
        self._pg = psycopg
        self._sql: dict[str, str] = {}

    def _q(self, sql: str) -> str:
        out = self._sql.get(sql)
        if out is None:
            out = self._sql[sql] = _PLACEHOLDER.sub("%s", sql)
        return out

    def execute(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        try:
            cur = self._conn.execute(self._q(sql), params or None)
            return list(cur.fetchall()) if cur.description is not None else []
        except self._pg.Error as exc:
            raise self._translate(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        try:
            with self._conn.cursor() as cur:
                cur.executemany(self._q(sql), list(rows))
        except self._pg.Error as exc:
            raise self._translate(exc) from exc


    def begin_write(self) -> None:
        self.execute("BEGIN")
        self.execute("SELECT seq FROM ledger_head WHERE id = 1 FOR UPDATE")

    def begin(self) -> None:
        self.execute("BEGIN")

    def begin_snapshot(self) -> None:
        """A read transaction whose statements all see one snapshot (the verifier's walk)."""
        self.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def begin_exclusive(self) -> None:
        self.execute("BEGIN")
        self.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")

    def commit(self) -> None:
        self.execute("COMMIT")

    def rollback(self) -> None:
        try:
            if not self._conn.closed and not self._conn.broken:
                self._conn.execute("ROLLBACK")
        except self._pg.Error:
            pass

    def close(self) -> None:
        with contextlib.suppress(self._pg.Error):
            self._conn.close()

    def _translate(self, exc: Exception) -> LedgerError:
        pg = self._pg
        if isinstance(exc, pg.OperationalError | pg.InterfaceError) or self._conn.closed or self._conn.broken:
            return LedgerUnavailable(f"PostgreSQL: {str(exc).strip()}")
        return LedgerError(f"PostgreSQL: {exc.__class__.__name__}: {str(exc).strip()}")


class PostgresBackend:
    name = "postgresql"
    inserts_without_gil = False

    def __init__(self, url: str) -> None:
        self.url = url
        self._pg = _psycopg()

    def connect(self, *, writer: bool = False) -> PostgresConnection:
        pg = self._pg
        try:
            conn = pg.connect(self.url, autocommit=True, connect_timeout=5,
                              application_name="mcpwall-ledger-writer" if writer else "mcpwall-ledger")
        except pg.Error as exc:
            raise LedgerUnavailable(f"cannot connect to the PostgreSQL ledger {self.describe()}: "
                                    f"{str(exc).strip()}") from exc
        return PostgresConnection(conn, pg)

    def exists(self) -> bool:
        return True

    def ddl(self, statement: str) -> str:
        for placeholder, sql_type in _TYPES.items():
            statement = statement.replace(placeholder, sql_type)
        return statement

    def describe(self) -> str:
        return re.sub(r"//([^:/@]+):[^@/]*@", r"//\1:***@", self.url)


__all__ = ["PostgresBackend", "PostgresConnection"]
