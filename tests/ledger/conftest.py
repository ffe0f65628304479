"""Fixtures of the ledger tests: both backends, a real PostgreSQL server, ledgers with rows.

Every test that takes `backend` runs twice, against SQLite and against a real
PostgreSQL 15 started once per session (tests/ledger/postgres.py). If that
server cannot start, those tests fail with the reason: nothing is skipped.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpwall.ledger import Event, Ledger, LedgerOptions, open_ledger
from tests.ledger.postgres import PostgresServer

_db_names = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer().start()
    except Exception as exc:  # a clear failure, never a skip
        pytest.fail(f"PostgreSQL could not be started for the ledger tests: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.destroy()


@dataclass
class Backend:
    """One backend under test: `url(home)` gives the ledger URL for a fresh, empty ledger."""

    name: str
    server: PostgresServer | None = None

    def url(self, home: Path) -> str | None:
        if self.server is None:
            return None  # the default: <home>/ledger.db
        return self.server.create_database(f"ledger_{int(time.time())}_{next(_db_names)}")

    def open(self, home: Path, url: str | None = None, **options: Any) -> Ledger:
        return open_ledger(home, url if url is not None else self.url(home), options=LedgerOptions(**options))


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite")
    return Backend("postgresql", request.getfixturevalue("pg_server"))


def make_event(i: int, **fields: Any) -> Event:
    """A varied tools/call event: every fifth denied with a rule, every seventh an upstream error."""
    base: dict[str, Any] = {
        "method": "tools/call", "decision": "allow", "outcome": "ok", "ts": time.time(),
        "session_id": f"session-{i % 3}", "client": "claude-code", "agent_id": f"agent-{i % 2}",
        "server_name": "everything", "tool_name": "echo" if i % 2 else "get-sum", "request_id": i,
        "params": {"name": "echo", "arguments": {"message": f"call {i}", "n": i}},
        "response": {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"Echo: call {i}"}]}},
        "duration_ms": 1.25 + i, "bytes_in": 80 + i,
    }
    if i % 5 == 0:
        base.update(decision="deny", outcome="deny", rule_ids=("no-etc", "soc2-rule"),
                    reasons=("[no-etc] No system paths",), response={"jsonrpc": "2.0", "id": i, "error": {
                        "code": -32001, "message": "Blocked by mcpwall: [no-etc]"}})
    elif i % 7 == 0:
        base.update(decision="error", outcome="error", error_message="boom")
    base.update(fields)
    return Event(**base)


@pytest.fixture
def filled(backend: Backend, tmp_path: Path) -> Iterator[Callable[..., Ledger]]:
    """A ledger of the backend under test holding `n` rows (tools/call, with every tenth a protocol event)."""
    opened: list[Ledger] = []

    def fill(n: int = 30, **options: Any) -> Ledger:
        ledger = backend.open(tmp_path / f"home{len(opened)}", **options)
        opened.append(ledger)
        for i in range(1, n + 1):
            if i % 10 == 0:
                ledger.submit(make_event(i, method="tools/list", tool_name=None, params={}))
            else:
                ledger.submit(make_event(i))
        assert ledger.flush()
        return ledger

    yield fill
    for ledger in opened:
        ledger.close()
