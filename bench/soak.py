"""The shipped gateway's RSS over a long run of calls: issue 28's "RSS flat over 100,000 calls".

Starts `mcpwall proxy` as `bench/proxy_overhead.py --stages all` does (the shipped default policy plus
a rule that allows server-everything's `echo`, every default stage, the SQLite ledger), opens a legacy
session on `/mcp` and makes `--calls` echo calls (each with its own id and message) from `--clients`
blocking socket clients, one keep-alive connection each. Every `--every` calls it prints the gateway's
RSS (from /proc/PID/statm; the upstream node process is not counted), its CPU per call since the last
line, the ledger's size on disk, its writer's rows per commit and the most rows it had waiting
(`GET /health`, polled every 0.2 s), and at the end the least-squares slope of RSS over calls after
the first line (the first `--every` calls warm the caches, the allocator's arenas and SQLite's page
cache), in KiB per 10,000 calls, and the same over the last half of the lines. It stops by itself.

`--tracemalloc N` is the debug option for when RSS grows: the gateway runs under tracemalloc (N frames
a trace; it runs about twice as slowly then), and at each line it is asked (SIGUSR1) to write a
snapshot and a count of live objects by type; at the end the last snapshot is compared with the first
and the allocation sites and types that grew most are printed.

`--tree PATH` runs another checkout's gateway (its sources and native build, `tools/build_native.py` run
in it, through PYTHONPATH) with its own default policy. A build is used only while it matches every
source it was made from (mcpwall._native): the line `native build:` says whether it did.

Usage: python bench/soak.py [--calls 100000] [--every 10000] [--clients 1] [--tree PATH] [--tracemalloc 0] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import proxy_overhead as po  # noqa: E402

#: Runs the gateway's command line with tracemalloc on and a SIGUSR1 handler that writes a snapshot
#: and a count of live objects by type next to the path in argv[1] (numbered in order).
TRACED = """\
import collections, gc, json, signal, sys, tracemalloc
frames, out = int(sys.argv[1]), sys.argv[2]
tracemalloc.start(frames)
taken = [0]
def dump(signum, frame):
    taken[0] += 1
    tracemalloc.take_snapshot().dump(f"{out}.{taken[0]}.snap")
    counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
    with open(f"{out}.{taken[0]}.types", "w") as f:
        json.dump(dict(counts.most_common(200)), f)
    with open(f"{out}.{taken[0]}.done", "w") as f:
        f.write("ok")
signal.signal(signal.SIGUSR1, dump)
sys.argv = ["mcpwall", *sys.argv[3:]]
from mcpwall.cli import main
sys.exit(main())
"""


@contextmanager
def gateway(home: Path, port: int, frames: int, dumps: Path) -> Iterator[tuple[int, str]]:
    """The shipped gateway on `port` in front of server-everything: (its PID, its token)."""
    servers = home / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"everything": {"command": po.EVERYTHING[0],
                                                                 "args": po.EVERYTHING[1:]}}}))
    args = ["proxy", "--home", str(home), "--servers", str(servers), "--port", str(port), "--log-level", "WARNING"]
    argv = ([sys.executable, "-c", TRACED, str(frames), str(dumps), *args] if frames
            else [po.MCPWALL, *args])
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    token = po.wait_for_gateway(home, port, 120.0)
    if not token:
        proc.kill()
        proc.wait()
        raise RuntimeError("the gateway did not start")
    try:
        yield proc.pid, token
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Watch:
    """Polls the gateway's `GET /health` (the operator's view) for the ledger writer's queue and batches."""

    def __init__(self, port: int, token: str) -> None:
        import httpx

        self._client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})
        self._stop = threading.Event()
        self.max_pending = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def ledger(self) -> dict[str, Any]:
        status: dict[str, Any] = self._client.get("/health", timeout=10).json()["stages"]["audit"]
        return status

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with contextlib.suppress(Exception):  # a slow answer: the next poll
                self.max_pending = max(self.max_pending, int(self.ledger()["pending"]))

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()

    def take_max(self) -> int:
        found, self.max_pending = self.max_pending, 0
        return found


def ledger_mib(home: Path) -> float:
    """The ledger's files on disk (the database, its WAL and shared memory)."""
    return sum(p.stat().st_size for p in home.rglob("ledger*") if p.is_file()) / 2**20


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of RSS (MiB) over calls, in KiB per 10,000 calls."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den * 1024 * 10_000 if den else 0.0


def take_dump(pid: int, dumps: Path, number: int) -> None:
    os.kill(pid, signal.SIGUSR1)
    done = Path(f"{dumps}.{number}.done")
    deadline = time.monotonic() + 300
    while not done.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway wrote no snapshot")
        time.sleep(0.2)


def compare_dumps(dumps: Path, first: int, last: int, top: int) -> None:
    import tracemalloc

    old = tracemalloc.Snapshot.load(f"{dumps}.{first}.snap")
    new = tracemalloc.Snapshot.load(f"{dumps}.{last}.snap")
    noise = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    stats = new.filter_traces(noise).compare_to(old.filter_traces(noise), "traceback")
    print(f"tracemalloc, snapshot {last} against {first}: the {top} allocation sites that grew most")
    for stat in sorted(stats, key=lambda s: s.size_diff, reverse=True)[:top]:
        print(f"  {stat.size_diff / 1024:+9.1f} KiB  {stat.count_diff:+7d} blocks  (now {stat.size / 1024:.1f} KiB)")
        for line in stat.traceback.format()[-8:]:
            print(f"      {line}")
    a = json.loads(Path(f"{dumps}.{first}.types").read_text())
    b = json.loads(Path(f"{dumps}.{last}.types").read_text())
    grew = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b)), reverse=True)[:top]
    print("live objects by type that grew most: " + ", ".join(f"{k} {d:+,}" for d, k in grew if d > 0))


def native(tree: Path) -> str:
    """Whether `tree`'s gateway runs its native build (it runs pure Python when a source changed since)."""
    code = "import mcpwall._native as n; print('in use' if n.enabled() else 'NOT in use (pure Python)')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(tree / "src")}).stdout.strip()


def run(opts: Any) -> dict[str, Any]:
    tree = opts.tree.resolve()
    os.environ["PYTHONPATH"] = str(tree / "src")  # the gateway's sources (ahead of the editable install)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
        home = Path(tmp) / "home"
        home.mkdir()
        default = tree / "src" / "mcpwall" / "policy" / "templates" / "default.yaml"
        (home / "policy.yaml").write_text(po.POLICY.format(default=default))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dumps = Path(tmp) / "dump"
        with contextlib.ExitStack() as stack:
            pid, token = stack.enter_context(gateway(home, port, opts.tracemalloc, dumps))
            sid = po.mcp_session(port, token)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid}
            body = json.dumps(po.call(0, "everything__echo")).replace('"id": 0', '"id": "%s"')
            rows: list[dict[str, Any]] = []
            rss0 = po.rss_mib(pid)
            print(f"  {'calls':>8} {'seconds':>8} {'calls/s':>8} {'gw cpu ms/call':>15} {'rss MiB':>8} {'ledger MiB':>11}"
                  f" {'rows/commit':>12} {'most waiting':>13}")
            print(f"  {0:>8,} {0:>8.1f} {'':>8} {'':>15} {rss0:>8.1f} {ledger_mib(home):>11.1f}", flush=True)
            watch = stack.enter_context(Watch(port, token))
            start = time.monotonic()
            done, cpu = 0, po.cpu_seconds(pid)
            status = watch.ledger()
            while done < opts.calls:
                step = min(opts.every, opts.calls - done)
                t0 = time.monotonic()
                calls(port, body, headers, done, step, opts.clients)
                done += step
                now, cpu1 = time.monotonic(), po.cpu_seconds(pid)
                before, status = status, watch.ledger()
                commits = int(status["batches"]) - int(before["batches"])
                row = {"calls": done, "seconds": round(now - start, 1), "calls_per_s": round(step / (now - t0)),
                       "gateway_cpu_ms": round((cpu1 - cpu) / step * 1000, 3), "rss_mib": round(po.rss_mib(pid), 1),
                       "ledger_mib": round(ledger_mib(home), 1),
                       "rows_per_commit": round((int(status["written"]) - int(before["written"])) / max(1, commits), 1),
                       "most_waiting": watch.take_max()}
                cpu = cpu1
                rows.append(row)
                print(f"  {row['calls']:>8,} {row['seconds']:>8.1f} {row['calls_per_s']:>8,} "
                      f"{row['gateway_cpu_ms']:>15.3f} {row['rss_mib']:>8.1f} {row['ledger_mib']:>11.1f} "
                      f"{row['rows_per_commit']:>12.1f} {row['most_waiting']:>13,}", flush=True)
                if opts.tracemalloc:
                    take_dump(pid, dumps, len(rows))
                    cpu = po.cpu_seconds(pid)  # the snapshot's own CPU is not a call's
            after_warmup = [(r["calls"], r["rss_mib"]) for r in rows]
            result = {"calls": done, "clients": opts.clients, "rss_start_mib": round(rss0, 1), "rows": rows,
                      "slope_kib_per_10k": round(slope(after_warmup), 1),
                      "slope_last_half_kib_per_10k": round(slope(after_warmup[len(after_warmup) // 2:]), 1),
                      "growth_after_first_mib": round(rows[-1]["rss_mib"] - rows[0]["rss_mib"], 1)}
            if opts.tracemalloc and len(rows) > 1:
                compare_dumps(dumps, 1, len(rows), opts.top)
    return result


def calls(port: int, body: str, headers: dict[str, str], first: int, count: int, clients: int) -> None:
    """`count` calls numbered from `first`, spread over `clients` connections; raises if any failed."""
    errors: list[BaseException] = []

    def client(k: int) -> None:
        try:
            with po.socket_calls(port, "/mcp", body, headers) as one:
                for i in range(first + k, first + count, clients):
                    one(i)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000, help="calls between RSS lines")
    parser.add_argument("--clients", type=int, default=1, help="concurrent keep-alive connections")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                        help="debug: run the gateway under tracemalloc and show what grew")
    parser.add_argument("--top", type=int, default=12, help="with --tracemalloc: sites and types to show")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose gateway runs (default: this one)")
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}")
    print(f"soak: {opts.calls:,} echo calls on /mcp as shipped (--stages all, SQLite ledger), {opts.clients} client(s)"
          + (f", tracemalloc {opts.tracemalloc} frames" if opts.tracemalloc else ""))
    print(f"tree: {opts.tree.resolve()}, native build: {native(opts.tree.resolve())}")
    result = run(opts)
    print(f"RSS {result['rss_start_mib']} MiB at start, {result['rows'][0]['rss_mib']} after {opts.every:,} calls, "
          f"{result['rows'][-1]['rss_mib']} after {result['calls']:,}: slope {result['slope_kib_per_10k']:+.1f} KiB "
          f"per 10,000 calls ({result['slope_last_half_kib_per_10k']:+.1f} over the last half), "
          f"{result['growth_after_first_mib']:+.1f} MiB after the first line; "
          f"load {os.getloadavg()[0]:.2f}")
    if opts.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
