"""The native writer's batches (`_bulk.c`'s start_chain/finish_chain) and the thread that writes them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcpwall.ledger import _event, _sqlite, _writer, open_ledger
from mcpwall.ledger._event import BodyNames
from tests.ledger.test_native_writer import native_bulk, usual


def _tasks() -> set[str]:
    return {p.name for p in Path("/proc/self/task").iterdir()}


@native_bulk
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_the_batches_of_a_connection_are_written_by_one_thread_that_closing_ends(tmp_path: Path) -> None:
    # A thread per batch left glibc's malloc arenas of the dead threads holding memory: the gateway's RSS
    # stepped up by 7-28 MiB under 8 clients (bench/soak.py). One thread per connection writes them all.
    with open_ledger(tmp_path) as ledger:
        writer = ledger.writer
        conn = writer._connection()
        assert isinstance(conn, _sqlite.BulkConnection)
        args = ("BEGIN IMMEDIATE", _writer._HEAD, _writer._TABLES, _writer._INSERT_RULE, _writer._INSERT_BODY,
                _writer._UPDATE_HEAD)
        before = _tasks()
        seen: list[set[str]] = []
        for start in range(0, 500, 100):
            built = [_event.build_row(usual(i, decision_id=None), writer._build, "h", BodyNames({}, start))
                     for i in range(start, start + 100)]
            conn.start_chain(writer._key, [conn.prepare_chain(built, _writer._TABLE_INDEX,
                                                              BodyNames({}, start).created, orjson.dumps)], *args)
            assert conn.finish_chain()[0] == start + 100
            seen.append(_tasks() - before)
        assert len(seen[0]) == 1
        assert all(s == seen[0] for s in seen)  # the same thread, still there after each batch
        writer._close()
        assert not seen[0] & _tasks()  # ...and gone with the connection
        assert ledger.count() == 500
        assert ledger.verify(use_checkpoint=False).ok
