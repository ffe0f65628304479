"""The rows a gateway without a ledger keeps for its dashboard (`MemoryRows`).

The dashboard reads them on a worker thread (`asyncio.to_thread`) while the
event loop keeps adding a row per finished call: a read must never fail
because a call finished meanwhile.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from mcpwall.dashboard import MemoryRows
from mcpwall.ledger import LedgerQuery


def _row(i: int) -> dict[str, object]:
    return {"ts": f"2026-11-30T10:00:{i % 60:02d}.000000Z", "server_name": "fs", "tool_name": "read_file",
            "method": "tools/call", "decision": "deny" if i % 3 == 0 else "allow", "outcome": "ok",
            "rule_ids": [], "reasons": [], "duration_ms": 1.0, "client": "", "agent_id": "", "session_id": "s",
            "error_message": None, "redacted_keys": [], "dlp": {}, "_arguments_json": '{"path":"/tmp/x"}'}


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Let the interpreter switch threads every few bytecodes, as a busy gateway does now and then."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_a_query_on_another_thread_survives_calls_finishing_meanwhile(fast_switching: None) -> None:
    memory = MemoryRows(size=2000)
    for i in range(2000):
        memory.add(_row(i))
    failures: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                page = memory.query(LedgerQuery(decision=("deny",), limit=100))
                assert all(r["decision"] == "deny" for r in page.rows)
                assert [r["seq"] for r in page.rows] == sorted((r["seq"] for r in page.rows), reverse=True)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(2000, 40_000):
            memory.add(_row(i))
            if failures:
                break
    finally:
        done.set()
        reader.join()
    assert failures == []
    newest = memory.query(LedgerQuery(limit=1)).rows[0]
    assert newest["seq"] == 40_000
    assert newest["request_preview"] == '{"path":"/tmp/x"}'
