"""The writer thread: rows leave the event loop and are committed in batches.

`submit` only appends to a deque (thread-safe, no lock on the hot path). The
thread wakes every `flush_interval` (50 ms), or at once when `batch_rows`
(500) are waiting or a strict caller waits, serialises the rows, takes the
chain's write lock, assigns seqs and MACs, inserts everything of the batch in
one transaction and commits; then it advances the checkpoint and settles
strict waiters. Rows that could not be written go back to the front of the
queue, in order, and are retried with backoff; meanwhile `healthy` is False,
which is what makes enforce mode fail closed. A row the database refuses
for what it contains (not for being unreachable) is written again without
its bodies and arguments, so one bad row can never block the ledger.

Where the backend inserts without the GIL (SQLite through `_bulk.c`), the
thread builds the next batch while a C thread of `_bulk.c` commits this one
(`start_chain`/`finish_chain`): the two take the two halves of a row's cost
(building it under the GIL; SQLite, the MACs and the disk without it) at once.
The C thread never needs the GIL, so it neither waits for this thread to hand
it over (up to the 5 ms switch interval, twice a batch, with a Python thread)
nor slows it down. Batches still commit one at a time, in order; on a failure
the batch built ahead goes back to the queue behind the one that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpwall.ledger._anchor import head_label, write_anchor
from mcpwall.ledger._backend import Backend, Connection
from mcpwall.ledger._chain import event_mac_json, rule_mac, write_checkpoint
from mcpwall.ledger._errors import LedgerError, LedgerUnavailable
from mcpwall.ledger._event import (
    BodyNames,
    BuildOptions,
    BuiltRow,
    Event,
    build_row,
)
from mcpwall.ledger._schema import CHAINED, now_iso
from mcpwall.ledger._sqlite import BulkConnection

log = logging.getLogger("mcpwall.ledger")

_COLS = ", ".join(("seq", *CHAINED, "prev_mac", "mac"))
_MARKS = ", ".join("?" for _ in range(len(CHAINED) + 3))
_INSERT = {t: f"INSERT INTO {t} ({_COLS}) VALUES ({_MARKS})" for t in ("tool_calls", "protocol_events")}
_INSERT_RULE = ("INSERT INTO security_rule_events (call_seq, idx, decision_id, ts, rule_id, action, layer, "
                "compliance, owasp, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_HEAD = "SELECT seq, mac FROM ledger_head WHERE id = 1"
_UPDATE_HEAD = "UPDATE ledger_head SET seq = ?, mac = ? WHERE id = 1"
_TABLES = tuple((t, _INSERT[t]) for t in ("tool_calls", "protocol_events"))
_TABLE_INDEX = {t: i for i, (t, _) in enumerate(_TABLES)}
_INSERT_BODY = ("INSERT INTO event_body_blobs (id, size, stored, truncated, content, created) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
#: what `_bulk.c`'s write_chain/start_chain take after the key and the batches
_CHAIN_SQL = ("BEGIN IMMEDIATE", _HEAD, _TABLES, _INSERT_RULE, _INSERT_BODY, _UPDATE_HEAD)

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]
#: Rows taken into C at a time by the overlapped writer (see _prepare_batch)
_CHUNK = 256
#: While the writer is busy, the head anchor and the checkpoint move at most this often (seconds); see
#: Writer._advance_checkpoint
ANCHOR_INTERVAL = 0.1
#: How many recently stored bodies a writer remembers, to refer to them instead of storing them again.
_RECENT_BODIES = 2048


@dataclass(frozen=True)
class WriterOptions:
    durability: str = "batched"  # "batched" | "strict"
    flush_interval: float = 0.05
    batch_rows: int = 500
    max_pending: int = 200_000
    max_tx_rows: int = 2000
    probe_interval: float = 1.0


@dataclass(slots=True)
class _Item:
    event: Event
    waiter: Waiter | None = None


@dataclass(slots=True)
class _Inflight:
    """A batch `_bulk.c` is committing on its own thread (which holds its prepared values), and what
    the writer needs of it afterwards."""

    batch: list[_Item]
    names: BodyNames


def _created(names: BodyNames) -> str:
    """The `created` of a batch's body rows: the time in their ids (see BodyNames), so the ids cover it."""
    created: str | None = getattr(names, "created", None)
    return created if created is not None else now_iso()


def _settle(futures: list[asyncio.Future[None]], exc: BaseException | None) -> None:
    for fut in futures:
        if not fut.done():
            if exc is None:
                fut.set_result(None)
            else:
                fut.set_exception(exc)


class Writer:
    """Owns the writer connection and thread of one open ledger."""

    def __init__(self, backend: Backend, key: bytes, ledger_id: str, checkpoint: Path | None,
                 options: WriterOptions, build: BuildOptions, replica: str,
                 prepare: Callable[[Connection], None] | None = None, *, anchor: Path | None = None) -> None:
        self.backend = backend
        self.options = options
        self._key = key
        self._ledger_id = ledger_id
        self._checkpoint = checkpoint
        self._anchor = anchor
        #: why this writer found the ledger rolled back under it (sticky: the ledger stays unhealthy)
        self.rolled_back: str | None = None
        #: the seq the anchor was last moved to, and when
        self._anchored = 0
        #: the seq the checkpoint was last moved to, and when either file was last written
        self._checkpointed = 0
        self._files_at = 0.0
        #: serialises the checkpoint and anchor writes of the writer thread and of `flush`'s catch-up
        self._files = threading.Lock()
        self._build = build
        self._replica = replica
        self._prepare = prepare
        self._queue: deque[_Item] = deque()
        self._wake = threading.Event()
        #: guards the submitted and done counts; taken as a plain lock where no one waits (`submit`, every
        #: row: a Condition's own `with` is two interpreted calls more)
        self._counts = threading.Lock()
        self._cond = threading.Condition(self._counts)
        self._submitted = 0
        self._done = 0
        self._conn: Connection | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stop_deadline = 0.0
        self._last_activity = time.monotonic()
        self._backoff = 0.1
        self._last_complaint = 0.0
        self.healthy = True
        self.last_error: str | None = None
        self.unhealthy_since: float | None = None
        self.written = 0
        self.dropped = 0
        self.degraded = 0
        self.batches = 0
        self.head_seq = 0
        self.head_mac = ""
        #: SHA-256 -> id of bodies this writer committed lately, least recently used first
        self._stored: OrderedDict[str, str] = OrderedDict()

    # ------------------------------------------------------------------ caller side

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def behind(self) -> bool:
        """More rows waiting than the writer commits in a few batches: callers should slow down.

        Without this, a producer faster than the database (or a writer thread starved of the
        GIL by a busy event loop) grows the queue, and the gateway's memory with it, up to
        `max_pending`. Waiting callers are the backpressure; see AuditStage.on_complete.
        """
        return len(self._queue) > self.options.batch_rows * 4 and self.healthy

    @property
    def caught_up(self) -> bool:
        return len(self._queue) <= self.options.batch_rows or not self.healthy

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mcpwall-ledger-writer", daemon=True)
        self._thread.start()

    def submit(self, event: Event, waiter: Waiter | None = None) -> bool:
        """Queue one event; False if the queue is full (the event is dropped and counted)."""
        if len(self._queue) >= self.options.max_pending:
            self.dropped += 1
            self._complain(f"ledger queue full ({self.options.max_pending} rows): a row was dropped")
            return False
        with self._counts:
            self._submitted += 1
        self._queue.append(_Item(event, waiter))
        if waiter is not None or len(self._queue) >= self.options.batch_rows:
            self._wake.set()
        return True

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far is committed (or dropped). False on timeout."""
        with self._cond:
            target = self._submitted
        self._wake.set()
        if not self.running:
            return self._done >= target
        with self._cond:
            done = self._cond.wait_for(lambda: self._done >= target, timeout)
        if done:
            self._advance_checkpoint(force=True)  # what is flushed is in the checkpoint too, whatever the writer's pace
        return done

    def stop(self, timeout: float = 10.0) -> None:
        """Flush (for at most `timeout` seconds), then end the thread and close the connection."""
        self._stop_deadline = time.monotonic() + timeout
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout + 2.0)
            self._thread = None
        if self._queue:
            log.error("ledger stopped with %d rows not written (%s)", len(self._queue), self.last_error)
        self._close()

    def write_now(self) -> None:
        """Commit what is queued on the calling thread (no writer thread: CLI and tests)."""
        self._drain()

    # ------------------------------------------------------------------ thread

    def _run(self) -> None:
        while True:
            timeout = self.options.flush_interval if self.healthy else self._backoff
            self._wake.wait(timeout)
            self._wake.clear()
            try:
                if self._queue:
                    self._drain()
                elif self._stopping:
                    break
                else:
                    self._advance_checkpoint(force=True)  # idle: the checkpoint and the anchor catch up with the last commit
                    self._probe()
            except Exception:  # never let the thread die: rows would pile up unseen
                log.exception("ledger writer failed")
            if self._stopping and (not self._queue or time.monotonic() > self._stop_deadline):
                break
        self._advance_checkpoint(force=True)
        self._close()

    def _take(self) -> list[_Item]:
        batch: list[_Item] = []
        with contextlib.suppress(IndexError):
            while len(batch) < self.options.max_tx_rows:
                batch.append(self._queue.popleft())
        return batch

    def _drain(self) -> None:
        if self.backend.inserts_without_gil:
            self._drain_overlapped()
            return
        while self._queue:
            if not self._write_batch(self._take()):
                return

    def _write_batch(self, batch: list[_Item]) -> bool:
        """Build and commit one batch on this thread; False if the database is unavailable (the batch is queued again)."""
        try:
            self._commit(batch)
        except Exception as exc:
            return self._failed(batch, exc)
        self._recovered()
        return True

    def _failed(self, batch: list[_Item], exc: BaseException) -> bool:
        """After `batch` failed to commit: queue it again if the database is unavailable (False),
        else write its rows one by one, degrading those refused for what they hold."""
        if isinstance(exc, LedgerUnavailable):
            self._queue.extendleft(reversed(batch))
            self._unavailable(str(exc), batch)
            return False
        try:
            self._one_by_one(batch, exc)
        except LedgerUnavailable as exc2:
            self._unavailable(str(exc2), batch)
            return False
        self._recovered()
        return True

    def _drain_overlapped(self) -> None:
        """`_drain`, building each batch while `_bulk.c` commits the one before it on a C thread."""
        inflight: _Inflight | None = None
        with contextlib.suppress(Exception):  # connected, the first batch goes this way too (else the serial way says why)
            self._connection()
        try:
            while self._queue or inflight is not None:
                batch = self._take()
                names = BodyNames(self._stored, time.time_ns() // 1000)
                conn = self._conn
                prepared: list[Any] | None = None
                if isinstance(conn, BulkConnection):
                    with contextlib.suppress(Exception):  # a row that cannot be built: the batch goes the serial way
                        prepared = self._prepare_batch(conn, batch, names)
                committed: _Inflight | None = None
                if inflight is not None:
                    before, inflight = inflight, None
                    try:
                        seq, mac = self._finish_chain()
                    except Exception as exc:
                        # `batch` was taken after `before`: it goes back first, so `before` stays ahead of it.
                        self._queue.extendleft(reversed(batch))
                        if not self._failed(before.batch, exc):
                            return
                        continue
                    committed = before
                # The next batch starts before the bookkeeping of the one just committed: the C thread
                # never needs the GIL, so it writes while this thread does the rest.
                error: Exception | None = None
                if batch and prepared is not None and isinstance(self._conn, BulkConnection):
                    try:
                        self._conn.start_chain(self._key, prepared, *_CHAIN_SQL)
                        inflight = _Inflight(batch, names)
                    except Exception as exc:  # refused before the database: the serial way sorts it out
                        error = exc
                if committed is not None:
                    self._written(committed, seq, mac)
                written = inflight is not None or not batch or (
                    self._failed(batch, error) if error is not None else self._write_batch(batch))
                if not written:
                    return
        finally:
            if inflight is not None:  # only on an unexpected error above: never leave the batch unsettled
                try:
                    self._written(inflight, *self._finish_chain())
                except Exception as exc:
                    self._failed(inflight.batch, exc)

    def _finish_chain(self) -> tuple[int, str]:
        """Wait for the batch `start_chain` began; on failure roll back (and drop an unavailable connection)."""
        conn = self._conn
        assert isinstance(conn, BulkConnection)
        return self._or_roll_back(conn, conn.finish_chain)

    def _or_roll_back(self, conn: Connection, write: Callable[[], tuple[int, str]]) -> tuple[int, str]:
        """`write()`'s (seq, mac); if it fails, roll back, and drop a connection found unavailable."""
        try:
            return write()
        except LedgerUnavailable:
            conn.rollback()
            self._close()
            raise
        except BaseException:
            conn.rollback()
            raise

    def _written(self, done: _Inflight, seq: int, mac: str) -> None:
        """After an overlapped batch committed (while the next one is being written)."""
        self._remember(done.names.batch)
        self._committed(done.batch, seq, mac)
        self._advance_checkpoint()
        self._recovered()
        self._finish(done.batch, None)

    def _one_by_one(self, batch: list[_Item], first: BaseException) -> None:
        log.error("ledger batch refused (%s); writing its %d rows one by one", first, len(batch))
        for i, item in enumerate(batch):
            try:
                self._commit([item])
                continue
            except LedgerUnavailable:
                self._queue.extendleft(reversed(batch[i:]))
                raise
            except Exception as exc:
                error = f"{exc.__class__.__name__}: {exc}"
            log.error("ledger row refused (%s): recording it without bodies or arguments", error)
            degraded = dataclasses.replace(item.event, params=None, response=None, dlp=None, rules=None,
                                           notes={"ledger_error": error[:500]}, reasons=(), rule_ids=())
            try:
                self._commit([_Item(degraded, item.waiter)])
                self.degraded += 1
            except LedgerUnavailable:
                self._queue.extendleft(reversed(batch[i:]))
                raise
            except Exception:
                log.exception("ledger row dropped: even its degraded form was refused")
                self.dropped += 1
                self._finish([item], LedgerError(f"row refused: {error}"))

    def _connection(self) -> Connection:
        if self._conn is None:
            conn = self.backend.connect(writer=True)
            if self._prepare is not None:
                self._prepare(conn)
            self._conn = conn
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _commit(self, batch: list[_Item]) -> None:
        names = BodyNames(self._stored, time.time_ns() // 1000)
        self._write_built(batch, [build_row(item.event, self._build, self._replica, names) for item in batch],
                          _created(names))
        self._remember(names.batch)

    def _remember(self, bodies: dict[str, str]) -> None:
        stored = self._stored  # an OrderedDict: a dict's first key is O(n) to find after many deletes
        if len(bodies) >= _RECENT_BODIES:  # the batch alone fills the memory (1,000 rows or more): its last ones
            stored.clear()
            stored.update(list(bodies.items())[-_RECENT_BODIES:])
            return
        for digest, body_id in bodies.items():
            stored[digest] = body_id
            stored.move_to_end(digest)
        while len(stored) > _RECENT_BODIES:
            stored.popitem(last=False)

    def _write_built(self, batch: list[_Item], built: list[BuiltRow], created: str) -> None:
        """Take the chain's lock, assign seqs and MACs, insert and commit one batch, on this thread."""
        conn = self._connection()

        def write() -> tuple[int, str]:
            if isinstance(conn, BulkConnection):
                prepared = [conn.prepare_chain(built, _TABLE_INDEX, created, orjson.dumps)]
                return conn.write_chain(self._key, prepared, *_CHAIN_SQL)
            return self._write_python(conn, built, created)

        seq, mac = self._or_roll_back(conn, write)
        self._committed(batch, seq, mac)
        self._advance_checkpoint()
        self._finish(batch, None)

    def _committed(self, batch: list[_Item], seq: int, mac: str) -> None:
        if seq - len(batch) < self.head_seq and self.rolled_back is None:
            # Another writer only ever moves the head forward: a batch that starts before this writer's
            # last commit was chained onto an older copy of the ledger, put back while we ran.
            self._rolled_back(f"the ledger was ROLLED BACK while the gateway ran: this writer committed row "
                              f"{head_label(self.head_seq, self.head_mac)}, then found the head at row "
                              f"{seq - len(batch)} (restored from an older copy)")
        self.head_seq = seq
        self.head_mac = mac
        self.written += len(batch)
        self.batches += 1
        self._last_activity = time.monotonic()

    def _advance_checkpoint(self, *, force: bool = False) -> None:
        """Move the checkpoint and the head anchor to the last commit: after each commit, but on the
        writer thread while busy at most every ANCHOR_INTERVAL (each is a locked read, write and rename
        of a small file: per 50-row commit it cost the writer more than the rows did); the writer
        catches up as soon as it is idle, when it stops and when `flush` returns. Inline writes (no
        thread) move both on each commit."""
        if not force and threading.current_thread() is self._thread \
                and time.monotonic() - self._files_at < ANCHOR_INTERVAL:
            return
        with self._files:
            self._write_checkpoint()
            self._advance_anchor()
            self._files_at = time.monotonic()

    def _write_checkpoint(self) -> None:
        if self._checkpoint is None or not self.head_seq or self._checkpointed == self.head_seq:
            return
        seq, mac = self.head_seq, self.head_mac
        try:
            write_checkpoint(self._checkpoint, self._key, self._ledger_id, seq, mac)
        except OSError as exc:
            self._complain(f"cannot write the ledger checkpoint {self._checkpoint}: {exc}")
            return
        self._checkpointed = seq

    def _advance_anchor(self) -> None:
        if self._anchor is None or not self.head_seq or self.rolled_back is not None \
                or self._anchored == self.head_seq:
            return
        seq, mac = self.head_seq, self.head_mac
        try:
            write_anchor(self._anchor, self._key, self._ledger_id, seq, mac)
        except OSError as exc:
            self._complain(f"cannot write the ledger's head anchor {self._anchor}: {exc}")
            return
        self._anchored = seq

    def _rolled_back(self, reason: str) -> None:
        """Fail closed for good: enforce mode refuses routed calls until a person looks (see Ledger.check_anchor)."""
        log.critical("%s; calls are refused in enforce mode from now on. Run `mcpwall verify-audit`.", reason)
        self.rolled_back = reason
        self.healthy = False
        self.last_error = reason
        self.unhealthy_since = time.monotonic()
        # ...and the chain itself says so, in the row after the batch that found it.
        with self._cond:
            self._submitted += 1
        self._queue.append(_Item(Event(method="mcpwall/ledger-rolled-back", decision="error", outcome="rolled_back",
                                       ts=time.time(), notes={"rolled_back": reason})))

    def _write_python(self, conn: Connection, built: list[BuiltRow], created: str) -> tuple[int, str]:
        conn.begin_write()
        head = conn.execute(_HEAD)
        seq, prev = int(head[0][0]), str(head[0][1])
        rows: dict[str, list[tuple[Any, ...]]] = {"tool_calls": [], "protocol_events": []}
        rules: list[tuple[Any, ...]] = []
        bodies: dict[str, tuple[Any, ...]] = {}
        for row in built:
            seq += 1
            mac = event_mac_json(self._key, row.table, seq, prev, row.values_json)
            rows[row.table].append((seq, *row.values, prev, mac))
            for idx, rule_id, action, layer, compliance, owasp in row.rules:
                values = (seq, idx, row.decision_id, row.ts, rule_id, action, layer, compliance, owasp)
                rules.append((*values, rule_mac(self._key, mac, values)))
            for body in row.bodies:
                bodies.setdefault(body[0], (*body, created))
            prev = mac
        # Bodies in id order: the batch's ids share a prefix greater than every earlier one,
        # so they are appended to the end of the index (see BodyNames).
        if bodies:
            conn.executemany(_INSERT_BODY, [bodies[k] for k in sorted(bodies)])
        for table, table_rows in rows.items():
            if table_rows:
                conn.executemany(_INSERT[table], table_rows)
        if rules:
            conn.executemany(_INSERT_RULE, rules)
        conn.execute(_UPDATE_HEAD, (seq, prev))
        conn.commit()
        return seq, prev

    def _prepare_batch(self, conn: BulkConnection, batch: list[_Item], names: BodyNames) -> list[Any]:
        """Build a batch's rows and take each few hundred of them into C while they are still in the
        CPU's cache, on this thread (which holds the GIL anyway): the C thread that commits them then
        never needs it, and the rows themselves can go at once (the prepared chunks hold their values)."""
        created = _created(names)
        return [conn.prepare_chain([build_row(item.event, self._build, self._replica, names)
                                    for item in batch[start:start + _CHUNK]], _TABLE_INDEX, created, orjson.dumps)
                for start in range(0, len(batch), _CHUNK)]

    def _finish(self, batch: list[_Item], exc: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for item in batch:
            if item.waiter is not None:
                by_loop.setdefault(item.waiter[0], []).append(item.waiter[1])
        for loop, futures in by_loop.items():
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, futures, exc)
        if exc is None or not isinstance(exc, LedgerUnavailable):
            with self._cond:
                self._done += len(batch)
                self._cond.notify_all()

    def _unavailable(self, reason: str, batch: list[_Item]) -> None:
        now = time.monotonic()
        if self.healthy:
            self.unhealthy_since = now
            self._backoff = 0.1
            log.error("LEDGER UNAVAILABLE (%s): %s. Rows are kept in memory and retried; in enforce mode "
                      "calls are refused until it is back.", self.backend.describe(), reason)
            self._last_complaint = now
        else:
            self._backoff = min(2.0, self._backoff * 2)
            self._complain(f"ledger still unavailable ({reason}); {len(self._queue)} rows waiting")
        self.healthy = False
        self.last_error = reason if self.rolled_back is None else self.rolled_back
        # Strict callers must not wait for a database that is down: tell them now (the rows stay queued).
        waiters = [item for item in batch if item.waiter is not None]
        if waiters:
            self._finish(waiters, LedgerUnavailable(reason))
            for item in waiters:
                item.waiter = None

    def _recovered(self) -> None:
        if self.rolled_back is not None:
            return
        if not self.healthy:
            down = time.monotonic() - (self.unhealthy_since or time.monotonic())
            log.warning("ledger available again after %.1f s (%s)", down, self.backend.describe())
        self.healthy = True
        self.last_error = None
        self.unhealthy_since = None
        self._backoff = 0.1

    def _probe(self) -> None:
        """When idle: check the database still answers, so a failure is known before the next call."""
        if self.healthy and time.monotonic() - self._last_activity < self.options.probe_interval:
            return
        try:
            self._connection().execute("SELECT seq FROM ledger_head WHERE id = 1")
        except LedgerUnavailable as exc:
            self._close()
            self._unavailable(str(exc), [])
            return
        except LedgerError as exc:
            self._close()
            self._unavailable(str(exc), [])
            return
        self._last_activity = time.monotonic()
        self._recovered()

    def _complain(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_complaint >= 10.0:
            self._last_complaint = now
            log.error("%s", message)


__all__ = ["Waiter", "Writer", "WriterOptions"]
