"""Isolation: upstream connections in a separate aggregator process that holds no secret of the gateway.

Strategy: a real gateway built with `extras["isolate"]` (what `mcpwall proxy --isolate` sets),
token authentication on, its SQLite ledger open, and real upstreams (the built-in tools and the
npm `everything` server). Calls go through the framed listener. The aggregator is then
inspected from /proc: its open descriptors, environment, command line and directory must show
no ledger, no token, no policy file and no home directory; the upstream servers must be its
children, not the gateway's. Killing it fails the calls in flight and the gateway recovers.
The msgpack wire codec gets unit tests of its bounds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
from pathlib import Path

import pytest

from mcpwall.isolation import MAX_FRAME, WireError, pack, read_frame, unpack
from tests.relay.helpers import EVERYTHING, FrameClient, builtin, framed_gateway, text_of

SECRET_ENV = "MCPWALL_TOKEN"


def test_a_frame_round_trips_and_an_oversized_or_undecodable_one_is_refused() -> None:
    obj = {"op": "send", "cid": 3, "msg": {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": [1.5, None]}}}
    data = pack(obj)
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert unpack(data[4:]) == obj
    with pytest.raises(WireError):
        unpack(b"\xc1")
    with pytest.raises(WireError, match="op"):
        unpack(pack({"cid": 1})[4:])


@pytest.mark.anyio
async def test_the_reader_refuses_a_length_over_the_bound_without_reading_it() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(struct.pack(">I", MAX_FRAME + 1))
    reader.feed_eof()
    with pytest.raises(WireError, match="exceeds"):
        await read_frame(reader)


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@pytest.mark.anyio
@pytest.mark.integration
async def test_the_aggregator_holds_no_ledger_no_token_and_no_policy_and_owns_the_servers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, "token-that-must-stay-in-the-gateway-0123456789")
    async with framed_gateway(tmp_path, {"local": builtin(), "ev": EVERYTHING}, isolate=True) as gw:
        c = await FrameClient.open(gw.socket, "isolated-agent")
        await c.initialize()
        assert text_of(await c.call("local__echo", {"text": "via the aggregator"})) == "via the aggregator"
        assert "42" in text_of(await c.call("ev__get-sum", {"a": 40, "b": 2}))
        await c.close()
        assert gw.gateway.servers["ev"].status()["transport"].startswith("isolated")
        pid = gw.gateway.service("isolation").aggregator.pid
        assert pid is not None
        proc = Path(f"/proc/{pid}")
        open_files = [os.readlink(fd) for fd in (proc / "fd").iterdir() if fd.exists()]
        home = str(gw.home)
        assert not [f for f in open_files if home in f or f.endswith((".db", ".db-wal", "policy.yaml", ".token"))]
        environ = (proc / "environ").read_bytes()
        assert b"token-that-must-stay" not in environ
        assert b"MCPWALL_" not in environ
        assert home.encode() not in (proc / "cmdline").read_bytes()
        assert os.readlink(proc / "cwd") == "/"
        # The servers run under the aggregator, not under the gateway.
        server_pids = {s.transport.pid for s in gw.gateway.servers.values()
                       if getattr(s.transport, "pid", None)}
        assert not server_pids  # the gateway's transports are the isolated ones: they start no process
        descendants = _descendants(pid)
        assert len(descendants) >= 2
        assert not (_children(os.getpid()) & descendants)
        again = await FrameClient.open(gw.socket, "again")
        await again.initialize()
        assert text_of(await again.call("local__echo", {"text": "still"})) == "still"
        await again.close()


@pytest.mark.anyio
@pytest.mark.integration
async def test_when_the_aggregator_dies_calls_fail_fast_and_the_gateway_recovers(tmp_path: Path) -> None:
    async with framed_gateway(tmp_path, {"local": builtin()}, isolate=True) as gw:
        c = await FrameClient.open(gw.socket, "survivor")
        await c.initialize()
        assert text_of(await c.call("local__echo", {"text": "one"})) == "one"
        os.kill(gw.gateway.service("isolation").aggregator.pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        for _ in range(200):
            answer = await c.call("local__echo", {"text": "two"}, timeout=60)
            if "result" in answer:
                break
            assert answer["error"]["code"] == -32000  # failed fast, not hung
            await asyncio.sleep(0.1)
        assert text_of(answer) == "two"
        assert gw.gateway.service("isolation").aggregator.starts == 2
        await c.close()
