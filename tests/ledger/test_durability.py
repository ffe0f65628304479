"""Durability: rows of delivered answers survive a killed gateway; the database is never corrupt.

Strategy: a real `mcpwall proxy` subprocess in front of server-everything,
loaded by 16 concurrent clients on the plain JSON-RPC route, each call
carrying a unique marker. Mid-load the gateway's process group is killed:
- `strict` durability + SIGKILL: every call whose answer reached a client
  must have its row (the answer leaves only after the commit);
- `batched` (the default) + SIGTERM: the graceful shutdown flushes the
  writer, so again no delivered call lacks its row.
Afterwards SQLite's `PRAGMA integrity_check` is "ok" and the HMAC chain
verifies (with its checkpoint) on both backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from mcpwall.ledger import LedgerQuery, open_ledger
from tests.ledger.conftest import Backend
from tests.ledger.gateway import policy_text
from tests.proxy.harness import EVERYTHING, GatewayProcess

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WORKERS = 16
LOAD_SECONDS = 2.0


async def _load(gw: GatewayProcess, kill: signal.Signals) -> tuple[list[str], int]:
    """Call until the gateway dies; returns the markers whose answers arrived, and how many were sent."""
    delivered: list[str] = []
    sent = 0
    stop = asyncio.Event()
    assert gw.proc is not None
    pid = gw.proc.pid

    async def worker(w: int, http: httpx.AsyncClient) -> None:
        nonlocal sent
        k = 0
        while not stop.is_set():
            marker = f"w{w}-{k}"
            k += 1
            body = {"jsonrpc": "2.0", "id": k, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": marker}}}
            sent += 1
            try:
                r = await http.post(f"{gw.url}/everything", json=body, headers=gw.headers)
            except httpx.HTTPError:
                return
            if r.status_code == 200 and "result" in r.json():
                delivered.append(marker)

    async def killer() -> None:
        await asyncio.sleep(LOAD_SECONDS)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, kill) if kill == signal.SIGKILL else os.kill(pid, kill)
        await asyncio.sleep(8 if kill == signal.SIGTERM else 0.5)
        stop.set()

    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as http:
        await asyncio.gather(killer(), *(worker(w, http) for w in range(WORKERS)))
    return delivered, sent


def _recorded_markers(home: Path, url: str | None) -> set[str]:
    import json

    with open_ledger(home, url, create=False) as ledger:
        rows = ledger.iter_rows(LedgerQuery(order="asc", limit=5000, tool="echo"))
        return {json.loads(r["request_preview"])["message"] for r in rows}


@pytest.mark.parametrize(("durability", "kill"), [("strict", signal.SIGKILL), ("batched", signal.SIGTERM)])
async def test_no_delivered_call_loses_its_row_when_the_gateway_is_killed(
        backend: Backend, tmp_path: Path, durability: str, kill: signal.Signals) -> None:
    home = tmp_path / "home"
    url = backend.url(tmp_path)
    gw = GatewayProcess(home, {"everything": EVERYTHING}, policy_text(durability=durability),
                        extra=["--ledger", url] if url else [])
    gw.start()
    try:
        delivered, sent = await _load(gw, kill)
        assert gw.proc is not None
        code = gw.proc.wait(20)
    finally:
        if gw.proc is not None and gw.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(gw.proc.pid, signal.SIGKILL)
        gw.stop()
    with contextlib.suppress(ProcessLookupError):  # the upstream of a SIGTERMed gateway exits with it
        os.killpg(gw.proc.pid, signal.SIGKILL)
    # uvicorn re-raises a SIGTERM it handled once its graceful shutdown is done: -15 is a clean exit.
    assert code in ((-signal.SIGKILL,) if kill == signal.SIGKILL else (0, -signal.SIGTERM)), gw.log.read_text()[-2000:]
    assert len(delivered) > 50, f"the load was too light to mean anything ({len(delivered)} of {sent})"

    recorded = _recorded_markers(home, url)
    lost = [m for m in delivered if m not in recorded]
    assert not lost, f"{len(lost)} delivered calls have no ledger row, e.g. {lost[:5]}"

    if url is None:
        with sqlite3.connect(home / "ledger.db") as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with open_ledger(home, url, create=False) as ledger:
        report = ledger.verify()
        assert report.ok, report.problem
        assert report.rows >= len(delivered)
