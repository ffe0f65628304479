"""A gateway killed outright takes its stdio servers with it (transports/stdio.py, `die_with_parent`).

Strategy: a real gateway process in front of server-everything (which keeps running at the end of its
input: its timers hold it) and of a server that ignores SIGTERM and the end of its input; the
gateway is killed with SIGKILL alone (no shutdown of its own can run), and each server process it had
started must be gone within seconds. Before the fix each ran on, reparented to init, with the user's
privileges and no gateway in front of it (one such orphan was found after a run of this suite).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.proxy.harness import EVERYTHING, GatewayProcess, script_server

STUBBORN = script_server("stubborn")  # ignores SIGTERM and the end of its input


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # a zombie has ended (its parent has not read it yet)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_gateway_killed_outright_takes_its_servers_with_it(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "home", {"everything": EVERYTHING, "stubborn": STUBBORN})
    gw.start()
    servers: list[int] = []
    try:
        assert gw.proc is not None
        deadline = time.monotonic() + 30
        while len(servers) < 2 and time.monotonic() < deadline:
            servers = _children(gw.proc.pid)
            time.sleep(0.1)
        assert len(servers) == 2, servers
        os.kill(gw.proc.pid, signal.SIGKILL)  # the gateway alone: nothing of it runs after this
        gw.proc.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in servers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in servers if _alive(p)] == []
    finally:
        for pid in servers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        gw.stop()
