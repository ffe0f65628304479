"""The ledger as a store: schema and migrations, the StateStore, keys, URLs, many writers, odd rows.

Strategy: real databases on both backends. Several writers (threads, then
separate processes, as several `mcpwall wrap` processes or gateway replicas
would) append to one ledger at once; the result must be one valid chain.
"""

from __future__ import annotations

import importlib
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

import mcpwall.ledger
from mcpwall.ledger import (
    KEY_ENV,
    LATEST,
    Event,
    LedgerConfigError,
    LedgerOptions,
    LedgerRolledBack,
    open_ledger,
    parse_url,
)
from tests.ledger.conftest import Backend, make_event

ROOT = Path(__file__).resolve().parents[2]


def test_the_public_surface_is_all_of_mcpwall_ledger() -> None:
    module = importlib.import_module("mcpwall.ledger")
    assert len(set(module.__all__)) == len(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)
    public = {n for n, v in vars(module).items() if not n.startswith("_") and
              getattr(v, "__module__", "mcpwall.ledger").startswith("mcpwall.ledger") and
              not isinstance(v, type(importlib))}
    assert public <= set(module.__all__) | {"annotations"}


def test_state_store_contract(backend: Backend, tmp_path: Path) -> None:
    with backend.open(tmp_path) as ledger:
        assert ledger.get_state("pins", "fs/read") is None
        ledger.put_state("pins", "fs/read", {"hash": "a", "n": [1, 2]})
        ledger.put_state("pins", "fs/write", {"hash": "b"})
        ledger.put_state("honeytokens", "fs/read", {"other": True})
        value = ledger.get_state("pins", "fs/read")
        assert value == {"hash": "a", "n": [1, 2]}
        assert value is not None
        value["hash"] = "mutated by the caller"
        assert ledger.get_state("pins", "fs/read") == {"hash": "a", "n": [1, 2]}
        ledger.put_state("pins", "fs/read", {"hash": "c"})
        assert ledger.all_state("pins") == {"fs/read": {"hash": "c"}, "fs/write": {"hash": "b"}}
        ledger.delete_state("pins", "fs/write")
        ledger.delete_state("pins", "never-there")
        assert ledger.all_state("pins") == {"fs/read": {"hash": "c"}}
        with pytest.raises(TypeError):
            ledger.put_state("pins", "x", ["not", "a", "dict"])  # type: ignore[arg-type]
        url = None if backend.name == "sqlite" else ledger.backend.url  # type: ignore[attr-defined]
    with open_ledger(tmp_path, url) as again:  # durable: another open sees it
        assert again.get_state("pins", "fs/read") == {"hash": "c"}
        assert again.get_state("honeytokens", "fs/read") == {"other": True}


def test_a_write_by_another_process_is_seen_within_the_cache_ttl(backend: Backend, tmp_path: Path) -> None:
    with backend.open(tmp_path) as gateway_side:
        url = None if backend.name == "sqlite" else gateway_side.backend.url  # type: ignore[attr-defined]
        assert gateway_side.get_state("pins", "k") is None
        with open_ledger(tmp_path, url) as cli_side:
            cli_side.put_state("pins", "k", {"accepted": True})
        time.sleep(0.6)
        assert gateway_side.get_state("pins", "k") == {"accepted": True}


def test_the_schema_is_created_once_and_a_newer_one_is_refused(backend: Backend, tmp_path: Path) -> None:
    with backend.open(tmp_path) as ledger:
        url = None if backend.name == "sqlite" else ledger.backend.url  # type: ignore[attr-defined]
        first_id = ledger.ledger_id
        assert ledger.schema_version() == LATEST
    with open_ledger(tmp_path, url) as again:
        assert again.ledger_id == first_id
        conn = again.backend.connect()
        conn.execute("INSERT INTO schema_version (version, applied) VALUES (?, ?)", (LATEST + 1, "future"))
        conn.close()
    with pytest.raises(LedgerConfigError, match="newer"):
        open_ledger(tmp_path, url)


def test_many_writers_at_once_make_one_valid_chain(backend: Backend, tmp_path: Path) -> None:
    first = backend.open(tmp_path)
    url = None if backend.name == "sqlite" else first.backend.url  # type: ignore[attr-defined]
    ledgers = [first, *(open_ledger(tmp_path, url) for _ in range(3))]
    for ledger in ledgers:
        ledger.start()

    def write(k: int) -> None:
        for i in range(250):
            ledgers[k].submit(make_event(i, agent_id=f"writer-{k}"))
            if i % 50 == 0:
                time.sleep(0.01)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(len(ledgers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ledger in ledgers:
        ledger.close()
    with open_ledger(tmp_path, url) as check:
        assert check.count("tool_calls") == 1000
        report = check.verify()
        assert report.ok, report.problem
        assert report.rows == 1000


def test_separate_processes_share_one_chain(backend: Backend, tmp_path: Path) -> None:
    url = backend.url(tmp_path)
    open_ledger(tmp_path, url).close()  # create schema and key once
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from mcpwall.ledger import open_ledger\n"
        "from tests.ledger.conftest import make_event\n"
        "led = open_ledger(Path(sys.argv[1]), sys.argv[2] or None)\n"
        "led.start()\n"
        "for i in range(300):\n"
        "    led.submit(make_event(i, process_name=sys.argv[3]))\n"
        "led.close()\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), url or "", f"p{k}"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for k in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    with open_ledger(tmp_path, url) as check:
        assert check.count("tool_calls") == 900
        report = check.verify()
        assert report.ok, report.problem


def test_the_key_is_generated_private_or_taken_from_the_environment(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with open_ledger(tmp_path) as ledger:
        ledger.record(make_event(1))
    key = tmp_path / "run" / "ledger.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_text().strip()) == 64
    monkeypatch.setenv(KEY_ENV, "another key")
    with pytest.raises(LedgerRolledBack, match="altered"):  # a writer refuses: its head anchor does not verify
        open_ledger(tmp_path)
    with open_ledger(tmp_path, create=False) as ledger:  # the verifier names the first row the key breaks
        report = ledger.verify(use_checkpoint=False)
        assert not report.ok
        assert report.first_bad_seq == 1
    monkeypatch.delenv(KEY_ENV)
    key.unlink()
    with pytest.raises(LedgerConfigError, match="no ledger key"):
        open_ledger(tmp_path, create=False).verify()


def test_a_new_ledger_verifies_between_its_first_commit_and_its_first_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer advances the checkpoint just after each commit; a verify in between (the admin API's,
    a CLI's) found rows and no checkpoint for this ledger and reported it broken. A new ledger is
    checkpointed at row 0 when it is created."""
    import mcpwall.ledger._writer as writer

    monkeypatch.setattr(writer, "write_checkpoint", lambda *args, **kwargs: None)  # it has not got there yet
    with open_ledger(tmp_path) as ledger:
        for i in range(3):
            ledger.record(make_event(i + 1))
    with open_ledger(tmp_path) as ledger:
        report = ledger.verify()
        assert report.ok, report.problem
        assert (report.rows, report.checkpoint_seq) == (3, 0)
    # a checkpoint that is gone is still reported: nothing writes row 0 over a ledger with rows
    ledger.checkpoint_file.unlink()
    with open_ledger(tmp_path) as reopened:
        assert "no checkpoint" in (reopened.verify().problem or "")


def test_urls_name_sqlite_files_or_postgresql(tmp_path: Path) -> None:
    assert parse_url(tmp_path, None).path == tmp_path / "ledger.db"
    assert parse_url(tmp_path, "sqlite:///var/lib/mcpwall/l.db").path == Path("/var/lib/mcpwall/l.db")
    assert parse_url(tmp_path, "/srv/l.db").path == Path("/srv/l.db")
    assert parse_url(tmp_path, "postgresql://u@db:5432/mcpwall").kind == "postgresql"
    assert parse_url(tmp_path, "postgres://u@db/m").kind == "postgresql"
    for bad in ("mysql://x/y", "sqlite://relative", "sqlite::memory:", "sqlite:"):
        with pytest.raises(LedgerConfigError):
            parse_url(tmp_path, bad)
    with pytest.raises(LedgerConfigError, match="no ledger"):
        open_ledger(tmp_path / "none", create=False)


def test_options_from_policy_yaml_are_checked() -> None:
    options = LedgerOptions.from_section({"url": "x", "durability": "strict", "bodies": False, "maxSizeMb": 2})
    assert (options.durability, options.bodies, options.max_size_mb) == ("strict", False, 2.0)
    for bad in ({"durability": "eventually"}, {"batchRows": 0}, {"bodies": "yes"}, {"nope": 1}):
        with pytest.raises(LedgerConfigError):
            LedgerOptions.from_section(bad)


def test_rows_with_unstorable_text_are_cleaned_not_dropped(backend: Backend, tmp_path: Path) -> None:
    class Weird:
        def __str__(self) -> str:
            return "weird\x00object"

    with backend.open(tmp_path) as ledger:
        ledger.record(make_event(1, tool_name="read\x00file", client="bad\ud800client", error_message="nul\x00",
                                 params={"name": "x", "arguments": {"path": "/etc/passwd\x00.txt", "o": Weird()}},
                                 notes={"obj": Weird(), 3: {4, 5}}))
        (row,) = ledger.query().rows
        assert row["tool_name"] == "read\\u0000file"
        assert row["client"] == "bad?client"
        assert "passwd" in row["request_preview"]
        assert row["notes"]["obj"] == "weird\x00object"
        assert ledger.verify().ok


def test_a_full_queue_drops_and_counts_instead_of_growing_without_bound(tmp_path: Path) -> None:
    with open_ledger(tmp_path, options=LedgerOptions(max_pending=5)) as ledger:
        accepted = [ledger.submit(make_event(i)) for i in range(8)]
        assert accepted == [True] * 5 + [False] * 3
        assert ledger.status()["dropped"] == 3
        assert ledger.flush()
        assert ledger.count() == 5


def test_events_need_no_gateway(tmp_path: Path) -> None:
    with open_ledger(tmp_path) as ledger:
        ledger.record(Event(method="tools/call", decision="allow", outcome="ok", ts=time.time()))
        assert ledger.count() == 1
        assert mcpwall.ledger.GENESIS == "0" * 64


def test_a_body_seen_again_is_stored_once_and_ids_grow_from_batch_to_batch(backend: Backend, tmp_path: Path) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}}
    with backend.open(tmp_path) as ledger:
        for i in range(3):  # three batches: each flush commits what was submitted
            ledger.submit(make_event(i, method="tools/list", tool_name=None, params={}, response=answer))
            ledger.submit(make_event(100 + i))
            assert ledger.flush()
        rows = sorted(ledger.query(table="all", limit=10).rows, key=lambda r: r["seq"])
        lists = [r for r in rows if r["method"] == "tools/list"]
        assert len(lists) == 3
        assert len({r["response_body_id"] for r in lists}) == 1  # one stored answer
        calls = [r["request_body_id"] for r in rows if r["method"] == "tools/call"]
        assert calls == sorted(calls)  # later batches' ids sort after earlier ones: appended to the index
        # the list's request and answer once; each call's own request and answer
        assert ledger.count("event_body_blobs") == 2 + 3 * 2
        assert ledger.body(lists[2]["response_body_id"]) == orjson.dumps(answer)
        assert ledger.verify().ok


def test_after_a_large_batch_the_writer_remembers_its_latest_bodies_not_its_first(tmp_path: Path) -> None:
    """A writer refers to the bodies it stored lately (2,048) instead of storing them again; a batch
    with more bodies than that leaves exactly its last ones remembered."""
    with open_ledger(tmp_path) as ledger:
        for i in range(2000):  # one transaction, 4,000 bodies (each call's request and answer)
            ledger.submit(make_event(i, ts=1_764_500_000.0))
        ledger.writer.write_now()
        assert ledger.count("event_body_blobs") == 4000
        ledger.submit(make_event(1999, ts=1_764_500_000.0))  # remembered: both bodies referred to
        ledger.submit(make_event(0, ts=1_764_500_000.0))  # forgotten: stored again, under a new id
        ledger.writer.write_now()
        assert ledger.count("event_body_blobs") == 4002
        rows = sorted(ledger.query(table="all", limit=5000).rows, key=lambda r: r["seq"])
        first, last, again_last, again_first = rows[0], rows[1999], rows[2000], rows[2001]
        assert (again_last["request_body_id"], again_last["response_body_id"]) == (
            last["request_body_id"], last["response_body_id"])
        assert again_first["request_body_id"] != first["request_body_id"]
        assert ledger.verify().ok
