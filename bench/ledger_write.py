"""Ledger write throughput and the latency the ledger adds to a call.

Prints, for SQLite and PostgreSQL (a throwaway local server with fsync on,
started from tests/ledger/postgres.py) and for both durability modes:

- rows/s: events submitted as fast as one thread can (batched), or by 64
  concurrent callers each waiting for its commit (strict, group commit),
  until everything is committed; every row with its request and response
  bodies, a rule row for one in five, and the HMAC chain;
- the latency the ledger adds to a call: p50/p99 of a request through the
  gateway's real pipeline (a locally answered `ping`, so nothing else varies)
  with the ledger stage on, minus the same with `ledger: {enabled: false}`;
  and the time spent in the stage's `on_complete` itself.

Goals (issue 5): >= 20,000 rows/s batched on SQLite; < 0.2 ms added at p50 batched.

    python bench/ledger_write.py [--rows 50000] [--calls 20000] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcpwall.ledger import Event, LedgerOptions, open_ledger  # noqa: E402


def event(i: int) -> Event:
    deny = i % 5 == 0
    return Event(
        method="tools/call", decision="deny" if deny else "allow", outcome="deny" if deny else "ok", ts=time.time(),
        session_id="9f2c" * 8, client="claude-code", client_version="1.0.42", agent_id="agent-7",
        process_name="claude", peer="127.0.0.1", server_name="fs", tool_name="read_file", request_id=i,
        mode="enforce", enforced_action="deny" if deny else "allow", policy_revision="6b7e32cf4729",
        rule_ids=("block-sensitive-paths",) if deny else (), reasons=("[block-sensitive-paths] no",) if deny else (),
        params={"name": "read_file", "arguments": {"path": f"/workspace/src/module_{i}.py", "encoding": "utf-8"}},
        response={"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"line {i}\n" * 20}]}},
        duration_ms=1.7, upstream_ms=1.2, bytes_in=180, bytes_out=0)


def batched_rows_per_s(home: Path, url: str | None, rows: int, bodies: bool = True, per_commit: int = 0) -> float:
    """Rows/s of the batched writer; `per_commit` > 0 waits for each group of that many rows to be
    committed before submitting more (a gateway's steady state: ~50 rows per 50 ms flush at 1,000
    calls/s), else everything is queued at once and the writer commits up to 2,000 rows at a time."""
    with open_ledger(home, url, options=LedgerOptions(durability="batched", bodies=bodies)) as ledger:
        ledger.start()
        events = [event(i) for i in range(rows)]
        # A gateway never holds tens of thousands of finished requests: keep the cyclic GC from
        # rescanning the benchmark's own pre-built events on every collection.
        gc.freeze()
        step = per_commit or rows
        t0 = time.perf_counter()
        for start in range(0, rows, step):
            for e in events[start:start + step]:
                ledger.submit(e)
            assert ledger.flush(600)
        elapsed = time.perf_counter() - t0
        assert ledger.count() == rows
    del events
    gc.unfreeze()
    return rows / elapsed


def strict_rows_per_s(home: Path, url: str | None, rows: int, callers: int = 64) -> tuple[float, float]:
    """Rows/s and the p50 wait for a commit, with `callers` concurrent strict callers."""
    waits: list[float] = []

    async def main() -> float:
        loop = asyncio.get_running_loop()
        with open_ledger(home, url, options=LedgerOptions(durability="strict")) as ledger:
            ledger.start()
            per = rows // callers

            async def caller(k: int) -> None:
                for i in range(per):
                    fut: asyncio.Future[None] = loop.create_future()
                    t = time.perf_counter()
                    ledger.submit(event(k * per + i), (loop, fut))
                    await fut
                    waits.append(time.perf_counter() - t)

            t0 = time.perf_counter()
            await asyncio.gather(*(caller(k) for k in range(callers)))
            elapsed = time.perf_counter() - t0
            return per * callers / elapsed

    rate = asyncio.run(main())
    return rate, statistics.median(waits) * 1000


def pipeline_latency(home: Path, url: str | None, calls: int, ledger_section: str) -> tuple[float, float]:
    """p50 and p99 (ms) of a ping through the real pipeline."""
    from mcpwall.proxy import GatewaySettings, build

    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.yaml").write_text(f'version: "1"\nmode: enforce\ndefaultAction: allow\nledger:\n{ledger_section}\n'
                                      "stages:\n  ratelimit: {requestsPerMinute: 0}\n")
    settings = GatewaySettings(home=home, insecure_no_auth=True)
    settings.extras = {"ledger_url": url}
    built = build(settings)
    gw = built.gateway

    async def main() -> list[float]:
        await gw.start()
        session = gw.open_session("stdio", None, agent="bench", process_name="bench")
        times: list[float] = []
        try:
            for i in range(calls + 500):
                msg = {"jsonrpc": "2.0", "id": i, "method": "ping", "params": {"i": i}}
                t = time.perf_counter()
                await gw.handle_request(session, msg)
                if i >= 500:
                    times.append(time.perf_counter() - t)
        finally:
            await gw.stop()
        return times

    times = sorted(asyncio.run(main()))
    return statistics.median(times) * 1000, times[int(len(times) * 0.99)] * 1000


def on_complete_us(home: Path, calls: int) -> float:
    """µs per call spent in the ledger stage's on_complete (batched): what the event loop pays."""
    from mcpwall.proxy import GatewaySettings, build
    from mcpwall.stages import RequestContext

    home.mkdir(parents=True, exist_ok=True)
    built = build(GatewaySettings(home=home, insecure_no_auth=True))
    gw = built.gateway
    stage = gw.pipeline.find("audit")
    assert stage is not None

    async def main() -> float:
        await gw.start()
        session = gw.open_session("stdio", None, agent="bench")
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "fs__read_file", "arguments": {"path": "/workspace/a.py"}}}
        ctxs = []
        for i in range(calls):
            ctx = RequestContext(gw, session, msg, "tools/call", i, msg["params"], server="fs", target="read_file")
            ctx.outcome = "ok"
            ctx.response = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "x" * 200}]}}
            ctxs.append(ctx)
        t0 = time.perf_counter()
        for ctx in ctxs:
            waiting = stage.on_complete(ctx)
            if waiting is not None:  # backpressure: the writer fell behind this tight loop
                await waiting
        elapsed = time.perf_counter() - t0
        await gw.stop()
        return elapsed / calls * 1e6

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--strict-rows", type=int, default=6_400)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"mcpwall ledger benchmark - Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f} at start")
    from mcpwall.ledger import _event, _sqlite

    print("SQLite writer: " + ("rows built in C (_rows.c)" if _event.native_build_row() else "rows built in Python")
          + ", " + ("batches inserted without the GIL (_bulk.c), checkpoints on their own thread"
                    if _sqlite.bulk_module() else "batches inserted through Python's sqlite3"))
    backends: list[tuple[str, Any]] = [("sqlite", None)]
    server = None
    if not args.no_postgres:
        try:
            from tests.ledger.postgres import PostgresServer

            server = PostgresServer(durable=True).start()
            backends.append(("postgresql", server))
        except Exception as exc:
            print(f"postgresql: not measured ({exc})")
    try:
        with tempfile.TemporaryDirectory(prefix="mcpwall-bench-") as tmp:
            os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
            base = Path(tmp)
            print(f"\n{'backend':<11} {'mode':<8} {'rows/s':>10}  notes")
            for name, srv in backends:
                def url(tag: str, srv: Any = srv) -> str | None:
                    return srv.create_database(f"bench_{tag}") if srv is not None else None

                rate = batched_rows_per_s(base / f"{name}-b", url("b"), args.rows)
                print(f"{name:<11} {'batched':<8} {rate:>10,.0f}  {args.rows:,} rows from one thread, bodies on")
                rate = batched_rows_per_s(base / f"{name}-n", url("n"), args.rows, bodies=False)
                print(f"{name:<11} {'batched':<8} {rate:>10,.0f}  the same with `bodies: false`")
                rate = batched_rows_per_s(base / f"{name}-c", url("c"), args.rows, per_commit=50)
                print(f"{name:<11} {'batched':<8} {rate:>10,.0f}  bodies on, 50 rows per commit (a gateway's "
                      "steady state)")
                rate, wait = strict_rows_per_s(base / f"{name}-s", url("s"), args.strict_rows)
                print(f"{name:<11} {'strict':<8} {rate:>10,.0f}  64 concurrent callers, p50 wait for commit "
                      f"{wait:.2f} ms")
            print(f"\nlatency of a request through the pipeline (ping, {args.calls:,} calls, after 500 warm-up)")
            print(f"{'ledger':<28} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10}")
            off50, off99 = pipeline_latency(base / "off", None, args.calls, "  enabled: false")
            print(f"{'off':<28} {off50:>8.3f} {off99:>8.3f}")
            for name, srv in backends:
                for mode in ("batched", "strict"):
                    u = srv.create_database(f"lat_{mode}") if srv is not None else None
                    p50, p99 = pipeline_latency(base / f"lat-{name}-{mode}", u, args.calls, f"  durability: {mode}")
                    label = f"{name} {mode}"
                    print(f"{label:<28} {p50:>8.3f} {p99:>8.3f} {p50 - off50:>+10.3f}")
            us = on_complete_us(base / "oc", args.calls)
            print(f"\nledger stage on_complete (batched), on the event loop: {us:.1f} µs per call"
                  " (waits included when the writer fell behind the loop)")
    finally:
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    main()
