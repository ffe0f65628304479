"""When the ledger cannot write, enforce mode fails closed, audit mode passes, and both recover.

Strategy: an in-process gateway in front of server-everything, with the
ledger made to fail for real:
- disk full: the SQLite file on a 1 MiB tmpfs (needs root to mount, which CI
  has), and the `ledger.maxSizeMb` cap (SQLite's max_page_count), which fails
  the same way anywhere;
- database down: a PostgreSQL server of the test's own, stopped and started.
Calls routed to an upstream must then get -32001 with a reason naming the
ledger and rule id `mcpwall.ledger`; once the database is back they succeed
again, and every call - refused ones included - ends up with its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpwall.ledger import Ledger, open_ledger
from mcpwall.protocol import Message
from mcpwall.proxy import Built
from tests.ledger.gateway import Client, ledger_gateway, policy_text
from tests.ledger.postgres import PostgresServer

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

BIG = "x" * 4000


def ledger_of(built: Built) -> Ledger:
    ledger = built.gateway.ledger
    assert isinstance(ledger, Ledger)
    return ledger


async def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def is_ledger_refusal(answer: Message) -> bool:
    err = answer.get("error")
    return isinstance(err, dict) and err.get("code") == -32001 and "ledger unavailable" in err.get("message", "") \
        and err.get("data", {}).get("rule_ids") == ["mcpwall.ledger"]


async def fill_until_refused(client: Client, limit: int = 3000) -> tuple[int, Message]:
    for n in range(1, limit + 1):
        answer = await client.call("echo", {"message": f"{n} {BIG}"})
        if "error" in answer:
            return n, answer
    raise AssertionError(f"the ledger never filled up in {limit} calls")


async def check_recovery(built: Built, client: Client, calls: int) -> int:
    ledger = ledger_of(built)
    await wait_for(lambda: ledger.healthy)
    answer = await client.call("echo", {"message": "after recovery"})
    assert answer.get("result"), answer
    return calls + 1


def rows_and_chain(home: Path, url: str | None) -> tuple[int, bool]:
    with open_ledger(home, url, create=False) as ledger:
        return ledger.count("tool_calls"), ledger.verify().ok


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                             check=False, capture_output=True, text=True)
    if mounted.returncode != 0:  # root without CAP_SYS_ADMIN (some containers): say so, loudly
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); the maxSizeMb test covers disk-full")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs as root); the "
                    "maxSizeMb test below covers disk-full everywhere")
async def test_a_full_disk_fails_closed_with_a_ledger_reason_and_recovers_when_space_returns(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "1m") as small:
        url = f"sqlite:///{small / 'ledger.db'}"
        built = ledger_gateway(tmp_path / "home", policy_text(), url)
        await built.gateway.start()
        try:
            client = Client(built)
            await client.initialize()
            calls, answer = await fill_until_refused(client)
            assert is_ledger_refusal(answer), answer
            assert "full" in answer["error"]["message"] or "I/O" in answer["error"]["message"]
            assert not ledger_of(built).healthy
            for _ in range(3):
                assert is_ledger_refusal(await client.call("echo", {"message": "still full"}))
                calls += 1
            await asyncio.to_thread(subprocess.run, ["mount", "-o", "remount,size=64m", str(small)], check=True,
                                    capture_output=True)
            calls = await check_recovery(built, client, calls)
        finally:
            await built.gateway.stop()
        count, chain_ok = rows_and_chain(tmp_path / "home", url)
        assert count == calls
        assert chain_ok


@pytest.mark.parametrize("durability", ["batched", "strict"])
async def test_the_ledger_size_cap_fails_closed_like_a_full_disk(tmp_path: Path, durability: str) -> None:
    built = ledger_gateway(tmp_path, policy_text(maxSizeMb=0.5, durability=durability))
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        calls, answer = await fill_until_refused(client)
        assert is_ledger_refusal(answer), answer
        assert "database or disk is full" in answer["error"]["message"]
        if durability == "strict":
            # The call that could not be recorded ran upstream, but its answer is withheld.
            assert "withheld" in str(answer["error"]["data"]["reasons"])
        # Space comes back (the operator raises the cap): the writer reconnects and catches up.
        ledger_of(built).backend.max_size_mb = 64  # type: ignore[attr-defined]
        calls = await check_recovery(built, client, calls)
    finally:
        await built.gateway.stop()
    count, chain_ok = rows_and_chain(tmp_path, None)
    assert count == calls
    assert chain_ok


async def test_audit_mode_lets_calls_through_a_full_ledger_and_records_them_later(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text(mode="audit", maxSizeMb=0.5))
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        for n in range(400):
            assert "result" in await client.call("echo", {"message": f"{n} {BIG}"})
        await wait_for(lambda: not ledger_of(built).healthy)
        answer = await client.call("echo", {"message": "passes anyway"})
        assert answer.get("result"), answer
        ledger_of(built).backend.max_size_mb = 64  # type: ignore[attr-defined]
        await wait_for(lambda: ledger_of(built).healthy and ledger_of(built).writer.pending == 0)
    finally:
        await built.gateway.stop()
    assert rows_and_chain(tmp_path, None) == (401, True)


@pytest.fixture
def own_pg() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
    except Exception as exc:
        pytest.fail(f"PostgreSQL could not be started: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.destroy()


async def test_a_stopped_database_fails_closed_and_the_gateway_recovers_when_it_returns(
        tmp_path: Path, own_pg: PostgresServer) -> None:
    url = own_pg.create_database("ledger")
    built = ledger_gateway(tmp_path, policy_text(), url)
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        calls = 0
        for n in range(20):
            assert "result" in await client.call("echo", {"message": f"before {n}"})
            calls += 1
        own_pg.stop()
        await wait_for(lambda: not ledger_of(built).healthy)
        for _ in range(5):
            answer = await client.call("echo", {"message": "while down"})
            calls += 1
            assert is_ledger_refusal(answer), answer
        assert "PostgreSQL" in answer["error"]["message"]
        listing = await client.request("tools/list")  # the session itself keeps working
        assert listing.get("result", {}).get("tools")
        own_pg.start()
        calls = await check_recovery(built, client, calls)
        stage = built.gateway.pipeline.find("audit")
        assert stage is not None
        assert stage.status()["refused"] == 5
    finally:
        await built.gateway.stop()
    assert rows_and_chain(tmp_path, url) == (calls, True)
