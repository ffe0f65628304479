"""Forensic capture: every message of each session lands in a seatbelt-format .mcpcap.json file.

Strategy: an in-process gateway built with `extras["record"]` (what `mcpwall
record` sets) in front of server-everything: the file appears while the
session runs (periodic flush) and is complete after stop. Then the real
`mcpwall record` process is interrupted with SIGINT mid-session, and its
capture must still hold every call it answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpwall.stages.capture import build as build_capture
from tests.harness import free_port
from tests.ledger.gateway import Client, ledger_gateway, policy_text, setup_home
from tests.proxy.harness import MCPWALL

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert data["eventCount"] == len(data["events"])
    assert data["startedAt"] <= data["endedAt"]
    return data


async def test_a_recorded_session_is_written_in_seatbelts_format(tmp_path: Path) -> None:
    built = ledger_gateway(tmp_path, policy_text(), record=True)
    gw = built.gateway
    await gw.start()
    try:
        client = Client(built)
        await client.initialize()
        await client.call("echo", {"message": "captured"})
        await client.call("get-env", {})  # denied: the denial is captured too
        path = tmp_path / "sessions" / f"{client.session.id}.mcpcap.json"
        deadline = time.monotonic() + 10
        while not path.exists():  # flushed while the session is still open
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "sessions").stat().st_mode) == 0o700
        await client.call("echo", {"message": "after the first flush"})
    finally:
        await gw.stop()
    data = load(path)
    assert data["sessionId"] == client.session.id
    assert data["client"] == "ledger-tests"
    assert data["agent"] == "agent-7"
    directions = [(e["direction"], e["kind"], e["payload"].get("method")) for e in data["events"]]
    assert directions[:2] == [("request", "request", "initialize"), ("response", "response", None)]
    assert len(directions) == 8
    payloads = [e["payload"] for e in data["events"]]
    assert payloads[2]["params"]["arguments"] == {"message": "captured"}
    assert payloads[3]["result"]["content"][0]["text"] == "Echo: captured"
    assert payloads[5]["error"]["code"] == -32001
    assert "after the first flush" in json.dumps(payloads[6])
    assert all(isinstance(e["timestamp"], int) for e in data["events"])


def test_capture_is_off_unless_recording(tmp_path: Path) -> None:
    class Settings:
        def __init__(self, **extras: object) -> None:
            self.home = tmp_path
            self.extras = extras

    assert build_capture({}, Settings()) is None
    assert build_capture({}, None) is None
    assert build_capture({}, Settings(record=True)) is not None


def test_mcpwall_record_flushes_its_captures_on_sigint(tmp_path: Path) -> None:
    home = tmp_path / "home"
    servers = setup_home(home, policy_text())
    port = free_port()
    log = (tmp_path / "record.log").open("wb")
    proc = subprocess.Popen([MCPWALL, "record", "--home", str(home), "--servers", str(servers), "--port", str(port),
                             "--insecure-no-auth"], stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "record.log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=1).json().get("status") == "ok":
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for n in range(5):
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": f"recorded {n}"}}}
            assert "result" in httpx.post(f"{url}/everything", json=body, timeout=30).json()
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
    captures = list((home / "sessions").glob("*.mcpcap.json"))
    assert captures, (tmp_path / "record.log").read_text()[-2000:]
    texts = " ".join(json.dumps(load(p)["events"]) for p in captures)
    assert all(f"recorded {n}" in texts for n in range(5))
