"""Rolling the ledger back with its checkpoint is caught by the head anchor (issue 22, item 11).

Strategy: the attack as an agent with file access to the home would run it,
through a real in-process gateway (the real pipeline and ledger stage) in front
of @modelcontextprotocol/server-everything: calls are made; `ledger.db`, its
`-wal`/`-shm` and `run/ledger.checkpoint` are copied aside; more calls are
made and the head the gateway publishes is noted; the gateway stops and the
copies are put back. On the old code `mcpwall verify-audit` said OK (its
checkpoint agreed with the restored database). Now it fails naming the
rollback, because of the anchor kept outside the home, and `--expect-head`
with the published head fails too; a gateway started on the restored ledger
refuses to start. A second test restores the copy in place while the gateway
runs (SQLite's backup API, as `sqlite3 .restore` does): the writer finds the
head moved back, records it in the chain, and enforce mode refuses calls.
Unit tests call the anchor functions directly.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpwall.cli import cli
from mcpwall.ledger import (
    Ledger,
    LedgerConfigError,
    LedgerOptions,
    LedgerRolledBack,
    anchor_path,
    open_ledger,
)
from mcpwall.ledger._anchor import read_anchor, write_anchor
from tests.harness import free_port
from tests.ledger.conftest import make_event
from tests.ledger.gateway import Client, ledger_gateway, policy_text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

FILES = ("ledger.db", "ledger.db-wal", "ledger.db-shm", "run/ledger.checkpoint")


def verify(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["verify-audit", "--home", str(home), *args])


def copy_aside(home: Path, aside: Path) -> None:
    aside.mkdir()
    for name in FILES:
        if (home / name).exists():
            shutil.copy2(home / name, aside / name.replace("/", "_"))


def put_back(home: Path, aside: Path) -> None:
    for name in FILES:
        (home / name).unlink(missing_ok=True)
        saved = aside / name.replace("/", "_")
        if saved.exists():
            shutil.copy2(saved, home / name)


async def calls(client: Client, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        answer = await client.call("echo", {"message": f"call {i}"})
        assert "result" in answer, answer


def ledger_of(built: object) -> Ledger:
    ledger = built.gateway.state  # type: ignore[attr-defined]
    assert isinstance(ledger, Ledger)
    return ledger


async def test_a_ledger_restored_with_its_checkpoint_fails_verify_audit_and_the_gateway_refuses_it(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    built = ledger_gateway(home, policy_text())
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        await calls(client, 5)
        ledger = ledger_of(built)
        assert ledger.flush()
        early = ledger.published_head()
        copy_aside(home, tmp_path / "aside")
        await calls(client, 5, start=5)  # what the agent wants to erase
        assert ledger.flush()
        late = ledger.published_head()
        ledger_id = ledger.ledger_id
    finally:
        await built.gateway.stop()
    assert late["seq"] > early["seq"]
    assert verify(home).exit_code == 0

    put_back(home, tmp_path / "aside")

    # Without the anchor this is what the old code saw: a valid chain that agrees with its checkpoint.
    assert verify(home, "--no-anchor").exit_code == 0, verify(home, "--no-anchor").output
    result = verify(home)
    assert result.exit_code == 1, result.output
    assert "ROLLED BACK" in result.output
    assert str(anchor_path(ledger_id)) in result.output
    assert f"row {late['head']}" in result.output
    report = json.loads(verify(home, "--json").stdout)
    assert report["ok"] is False
    assert report["anchor_seq"] == late["seq"]
    assert report["first_bad_seq"] == early["seq"] + 1

    # The head the gateway published (dashboard, /metrics, webhooks), checked without the anchor file.
    expected = verify(home, "--no-anchor", "--expect-head", late["head"])
    assert expected.exit_code == 1, expected.output
    assert "ROLLED BACK" in expected.output
    assert f"expected head is row {late['seq']}" in expected.output
    assert verify(home, "--no-anchor", "--expect-head", early["head"]).exit_code == 0
    wrong_mac = f"{early['seq']}:{'0' * 16}"
    assert verify(home, "--no-anchor", "--expect-head", wrong_mac).exit_code == 1
    assert verify(home, "--expect-head", "12:xyz").exit_code == 2

    # A gateway started on the restored ledger refuses to write to it: in-process, and `mcpwall proxy`.
    with pytest.raises(LedgerRolledBack, match="ROLLED BACK"):
        ledger_gateway(home, policy_text())
    proxy = await asyncio.to_thread(
        subprocess.run, [str(Path(sys.executable).parent / "mcpwall"), "proxy", "--home", str(home),
                         "--insecure-no-auth", "--port", str(free_port())],
        capture_output=True, text=True, timeout=60, check=False)
    assert proxy.returncode == 2, proxy.stderr
    assert "ROLLED BACK" in proxy.stderr
    assert "Traceback" not in proxy.stderr


async def test_a_ledger_restored_in_place_under_a_running_gateway_is_recorded_and_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    built = ledger_gateway(home, policy_text())
    await built.gateway.start()
    try:
        client = Client(built)
        await client.initialize()
        await calls(client, 4)
        ledger = ledger_of(built)
        assert ledger.flush()
        copy = tmp_path / "copy.db"
        with sqlite3.connect(home / "ledger.db") as live, sqlite3.connect(copy) as saved:
            live.backup(saved)
        await calls(client, 4, start=4)
        assert ledger.flush()
        with sqlite3.connect(copy) as saved, sqlite3.connect(home / "ledger.db") as live:
            saved.backup(live)  # `sqlite3 ledger.db ".restore copy.db"`
        answer = await client.call("echo", {"message": "after the restore"})
        assert "result" in answer  # this batch is the one that finds the head moved back...
        assert ledger.flush()
        refused = await client.call("echo", {"message": "and now"})
        assert refused["error"]["code"] == -32001, refused  # ...and from then on enforce mode fails closed
        assert "ROLLED BACK" in refused["error"]["message"]
        assert "ROLLED BACK" in str(ledger.published_head().get("rolled_back"))
    finally:
        await built.gateway.stop()
    with open_ledger(home, create=False) as reopened:
        rows = reopened.query(method="mcpwall/ledger-rolled-back", table="all").rows
        assert rows, "the rollback is recorded in the chain"
        assert "ROLLED BACK" in rows[0]["notes"]["rolled_back"]
    assert verify(home).exit_code == 1


def test_the_anchor_only_moves_forward_and_an_edited_anchor_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "anchors" / "abc.head"
    key = b"k"
    assert write_anchor(path, key, "abc", 5, "a" * 64) is None
    assert write_anchor(path, key, "abc", 3, "b" * 64) is not None  # never moves back
    found = read_anchor(path, key, "abc")
    assert found is not None
    assert (found.seq, found.mac, found.authentic) == (5, "a" * 64, True)
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    data = json.loads(path.read_text())
    data["seq"] = 1
    path.write_text(json.dumps(data))
    edited = read_anchor(path, key, "abc")
    assert edited is not None
    assert not edited.authentic
    data["mac"] = "é" * 64  # any text: never an exception
    path.write_text(json.dumps(data))
    assert read_anchor(path, key, "abc") == read_anchor(path, key, "abc")


def test_the_anchor_lives_outside_the_home_and_can_be_moved_or_switched_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPWALL_ANCHOR_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert anchor_path("ab12") == tmp_path / "state" / "mcpwall" / "anchors" / "ab12.head"
    assert anchor_path("ab12", "/srv/anchors") == Path("/srv/anchors/ab12.head")
    assert anchor_path("ab12", "off") is None
    monkeypatch.setenv("MCPWALL_ANCHOR_DIR", "off")
    assert anchor_path("ab12") is None
    with pytest.raises(LedgerConfigError, match="cannot name"):
        anchor_path("../etc/passwd", "/srv")


def test_a_relative_anchor_in_the_policy_is_refused() -> None:
    with pytest.raises(LedgerConfigError, match=r"ledger\.anchor"):
        LedgerOptions.from_section({"anchor": "anchors"})
    assert LedgerOptions.from_section({"anchor": "/var/lib/mcpwall-anchors"}).anchor == "/var/lib/mcpwall-anchors"
    assert LedgerOptions.from_section({"anchor": False}).anchor == "off"


def test_a_database_rolled_back_to_an_older_state_is_caught_on_both_backends(
        filled: Callable[..., Ledger], tmp_path: Path) -> None:
    # The database-side analogue of restoring a backup (PostgreSQL's too): the tail removed, ledger_head
    # and the checkpoint put back as they were. Only the anchor, outside the home, still knows better.
    ledger = filled(10)
    early = ledger.published_head()
    saved = tmp_path / "checkpoint"
    shutil.copy2(ledger.checkpoint_file, saved)
    for i in range(11, 16):
        ledger.submit(make_event(i))
    assert ledger.flush()
    late = ledger.published_head()
    conn = ledger.backend.connect()
    try:
        for statement in ("DELETE FROM tool_calls WHERE seq > ?", "DELETE FROM protocol_events WHERE seq > ?",
                          "DELETE FROM security_rule_events WHERE call_seq > ?"):
            conn.execute(statement, (early["seq"],))
        conn.execute("DELETE FROM event_body_blobs WHERE id NOT IN (SELECT request_body_id FROM tool_calls WHERE "
                     "request_body_id IS NOT NULL UNION SELECT response_body_id FROM tool_calls WHERE response_body_id "
                     "IS NOT NULL UNION SELECT response_body_id FROM protocol_events WHERE response_body_id IS NOT "
                     "NULL UNION SELECT request_body_id FROM protocol_events WHERE request_body_id IS NOT NULL)")
        row = conn.execute("SELECT mac FROM tool_calls WHERE seq = ? UNION ALL SELECT mac FROM protocol_events "
                           "WHERE seq = ?", (early["seq"], early["seq"]))
        conn.execute("UPDATE ledger_head SET seq = ?, mac = ? WHERE id = 1", (early["seq"], row[0][0]))
    finally:
        conn.close()
    shutil.copy2(saved, ledger.checkpoint_file)
    assert ledger.verify(use_anchor=False).ok
    report = ledger.verify()
    assert not report.ok
    assert "ROLLED BACK" in str(report.problem)
    assert report.first_bad_seq == early["seq"] + 1
    seq, mac = late["head"].split(":")
    behind = ledger.verify(use_anchor=False, expect_head=(int(seq), mac))
    assert not behind.ok
    assert "ROLLED BACK" in str(behind.problem)
    url = ledger.backend.url if ledger.backend.name == "postgresql" else None  # type: ignore[attr-defined]
    with pytest.raises(LedgerRolledBack):
        open_ledger(ledger.home, url)


def test_verify_audit_reads_the_anchor_directory_the_policy_names(tmp_path: Path) -> None:
    home, anchors = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    (home / "policy.yaml").write_text(f"version: '1'\nledger:\n  anchor: {anchors}\n")
    with open_ledger(home, options=LedgerOptions(anchor=str(anchors))) as ledger:
        for i in range(1, 4):
            ledger.submit(make_event(i))
        assert ledger.flush()
        path = ledger.anchor_file
    assert path is not None
    assert path.parent == anchors
    assert path.exists()
    ok = verify(home)
    assert ok.exit_code == 0, ok.output
    assert "anchor at row 3" in ok.output
