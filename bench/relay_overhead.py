"""Overhead of the framed relay and of the isolated aggregator, measured with `local__echo`.

`echo` of the built-in tools server does no I/O, so what is measured is the path. In one run,
the same `tools/call` is made five ways, sequentially (one call in flight) and with --concurrency
calls in flight:

- direct: JSON lines to `mcpwall builtin` over its stdio (the baseline, no gateway);
- gateway: an in-process gateway session (`handle_request`), no transport in front of it;
- frames: raw frames over the gateway's Unix socket (the listener, no relay process);
- relay: JSON lines into a real `mcpwall relay` process, frames to the gateway;
- relay+isolated: the same, with the upstreams in the separate aggregator process.

It prints p50/p99 latency in milliseconds, calls/s, and each path's p50 minus the direct p50.

    python bench/relay_overhead.py [--calls 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcpwall.isolation import register as register_isolation  # noqa: E402
from mcpwall.proxy import GatewaySettings, build  # noqa: E402
from mcpwall.relay import END, FrameDecoder, MessageAssembler, encode, meta_line  # noqa: E402
from mcpwall.relay import register as register_relay  # noqa: E402

MCPWALL = str(Path(sys.executable).parent / "mcpwall")
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules: []
stages:
  ratelimit: {requestsPerMinute: 0}
ledger: {enabled: false}
"""
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
Call = Callable[[int], Awaitable[None]]


class Lines:
    """JSON-RPC over a child's stdin/stdout, answers matched by id (several in flight)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = orjson.loads(line)
            future = self.waiting.pop(msg.get("id"), None)
            if future is not None:
                future.set_result(msg)

    async def request(self, rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        future = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + b"\n")
        return await future

    async def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "method": method}) + b"\n")

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        self.reader.cancel()


async def spawn_lines(*argv: str) -> Lines:
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL, limit=8 * 1024 * 1024)
    lines = Lines(proc)
    await lines.request(0, "initialize", INIT)
    await lines.notify("notifications/initialized")
    return lines


class Frames:
    """Raw frames on the gateway's socket, answers matched by stream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.waiting: dict[int, asyncio.Future[bytes]] = {}
        self.task = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        decoder, assembler = FrameDecoder(), MessageAssembler()
        while data := await reader.read(65536):
            for raw in decoder.feed(data):
                frame = assembler.push(raw)
                if frame is not None and frame.flags & END:
                    future = self.waiting.pop(frame.stream, None)
                    if future is not None:
                        future.set_result(frame.payload)

    async def request(self, rid: int, method: str, params: dict[str, Any]) -> bytes:
        future = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        self.writer.write(encode(rid, orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})))
        return await future


def stats(latencies: list[float], elapsed: float) -> dict[str, float]:
    ms = sorted(x * 1000 for x in latencies)
    return {"p50_ms": round(statistics.median(ms), 3), "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 3),
            "calls_per_s": round(len(ms) / elapsed, 1)}


async def measure(call: Call, calls: int, concurrency: int) -> dict[str, float]:
    for i in range(min(50, calls)):  # warm up
        await call(10_000_000 + i)
    ids = itertools.count(1)
    latencies: list[float] = []

    async def worker(n: int) -> None:
        for _ in range(n):
            rid = next(ids)
            t0 = time.perf_counter()
            await call(rid)
            latencies.append(time.perf_counter() - t0)

    started = time.perf_counter()
    per = calls // concurrency
    await asyncio.gather(*(worker(per) for _ in range(concurrency)))
    return stats(latencies, time.perf_counter() - started)


async def gateway_paths(isolate: bool, calls: int, concurrency: int) -> dict[str, Any]:
    """The paths through a gateway (isolated or not): in-process session, raw frames, the relay process."""
    qualified = {"name": "local__echo", "arguments": {"text": "ping"}}
    results: dict[str, Any] = {}
    home = Path(tempfile.mkdtemp(prefix="mw-bench-"))
    (home / "policy.yaml").write_text(POLICY)
    (home / "servers.json").write_text(json.dumps({"mcpServers": {"local": {"command": MCPWALL,
                                                                              "args": ["builtin"]}}}))
    sock = home / "gw.sock"
    settings = GatewaySettings(home=home, policy_path=home / "policy.yaml", servers_files=[home / "servers.json"],
                               insecure_no_auth=True)
    settings.extras = {"frame_listen": [f"unix:{sock}"], "isolate": isolate}
    built = build(settings)
    await built.gateway.start()
    suffix = "+isolated" if isolate else ""
    try:
        session = built.gateway.open_session("stdio", None)
        await built.gateway.handle_request(session, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                     "params": INIT})
        session.initialized = True

        async def gateway_call(rid: int) -> None:
            await built.gateway.handle_request(session, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                                         "params": qualified})

        results["gateway" + suffix] = [await measure(gateway_call, calls, 1),
                                       await measure(gateway_call, calls, concurrency)]
        reader, writer = await asyncio.open_unix_connection(str(sock))
        writer.write(meta_line("bench"))
        frames = Frames(reader, writer)
        await frames.request(1_000_000_000, "initialize", INIT)
        writer.write(encode(0, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))

        async def frame_call(rid: int) -> None:
            await frames.request(rid, "tools/call", qualified)

        results["frames" + suffix] = [await measure(frame_call, calls, 1),
                                      await measure(frame_call, calls, concurrency)]
        writer.close()
        relay = await spawn_lines(MCPWALL, "relay", "--connect", f"unix:{sock}", "--process-name", "bench")

        async def relay_call(rid: int) -> None:
            await relay.request(rid, "tools/call", qualified)

        results["relay" + suffix] = [await measure(relay_call, calls, 1),
                                     await measure(relay_call, calls, concurrency)]
        await relay.close()
    finally:
        await built.gateway.stop()
        shutil.rmtree(home, ignore_errors=True)
    return results


async def run(calls: int, concurrency: int) -> dict[str, Any]:
    args = {"name": "echo", "arguments": {"text": "ping"}}
    results: dict[str, Any] = {}

    direct = await spawn_lines(MCPWALL, "builtin")

    async def direct_call(rid: int) -> None:
        await direct.request(rid, "tools/call", args)

    results["direct"] = [await measure(direct_call, calls, 1), await measure(direct_call, calls, concurrency)]
    await direct.close()

    for isolate in (False, True):
        results.update(await gateway_paths(isolate, calls, concurrency))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures to this file.")
    opts = parser.parse_args()
    register_relay()
    register_isolation()
    results = asyncio.run(run(opts.calls, opts.concurrency))
    base = results["direct"][0]["p50_ms"]
    print(f"local__echo, {opts.calls} calls; sequential | {opts.concurrency} in flight")
    print(f"{'path':<22}{'p50 ms':>9}{'p99 ms':>9}{'calls/s':>10}{'+p50 ms':>9}   |{'p50 ms':>9}{'p99 ms':>9}"
          f"{'calls/s':>10}")
    for path, (seq, conc) in results.items():
        print(f"{path:<22}{seq['p50_ms']:>9.3f}{seq['p99_ms']:>9.3f}{seq['calls_per_s']:>10.0f}"
              f"{seq['p50_ms'] - base:>9.3f}   |{conc['p50_ms']:>9.3f}{conc['p99_ms']:>9.3f}{conc['calls_per_s']:>10.0f}")
    if opts.json:
        opts.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
