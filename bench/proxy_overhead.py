"""Gateway overhead on the echo tool of @modelcontextprotocol/server-everything.

Measures, in one run, the same `tools/call echo` eight ways:

- direct stdio to the server (the baseline),
- through the gateway's aggregated streamable-HTTP endpoint `/mcp`, as a
  legacy-era client (a session from `initialize`) and as a 2026-07-28 one
  (no session: the protocol in each request's `_meta` and `Mcp-*` headers);
  server-everything speaks only the legacy era, so the 2026-07-28 call is
  bridged, and the same two calls go to bench/sdk_echo.py (the SDK's dual-era
  echo) opened in each era: each era's call end to end,
- through `mcpwall proxy --stdio`,
- through seatbelt's plain route `POST /{server}`,
- through bench/bare_relay.py, a uvicorn + orjson relay with no checks at all
  (the floor: what relaying alone costs on this machine),

each sequentially (one client) and with 8 concurrent clients, printing p50/p99
latency, calls/s, the gateway's own CPU time per call (from /proc/PID/stat),
the load generator's CPU per call, and the gateway's RSS. HTTP load comes
from wrk (Debian package `wrk`) with a small Lua script; stdio load from raw
pipes in this process. A final soak of --soak calls reports RSS growth.

Each HTTP route is also called sequentially by a blocking socket client in
this process (`run_socket`: one keep-alive connection, one request written,
the answer read by its Content-Length), and its p99 is printed beside wrk's.
They count differently: wrk corrects for coordinated omission (its
`stats_correct`: a call that took k times the mean interval between calls
also counts as k-1 calls that waited behind it), so each stall of ~10 ms,
which this machine shows about once a second to the bare relay as much as to
the gateway, weighs 20-50 calls in wrk's histogram and one in the client's.
wrk's p99 is what an open-loop client at the same rate would see; the
client's is what this closed loop saw.

So every latency this script measures itself (direct stdio, --stdio, the
socket client) is reported both ways: as the calls came, and as wrk counts
(`wrk_counted`: wrk's correction applied to the same samples, with wrk's
interval, the run's time over its calls per connection). The added p99 is
then taken like for like: a wrk route against the direct calls as wrk counts
them, a socket-client route against the direct calls as they came. Taking
wrk's corrected p99 against the direct calls' uncorrected one charges the
machine's stalls to the gateway.

What wrk's p99 then measures: a stall of S seconds at an interval of I adds
about S/I samples spread evenly over (I, S), so the share of samples above a
level L is about the sum of (S - L) over the stalls, divided by the run's
length, whatever I is. wrk's p99 is the level the stalls exceed for 1% of the
run's wall time: a figure of the machine's stalls more than of the path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = [str(ROOT / "node_modules" / ".bin" / "mcp-server-everything"), "stdio"]
MCPWALL = str(Path(sys.executable).parent / "mcpwall")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

POLICY = """\
# The shipped default policy, plus one rule that allows the benchmark's tool.
extends: [{default}]
rules:
  - id: allow-echo
    description: The benchmark tool
    tools: [echo]
    action: allow
stages:
  ratelimit: {{requestsPerMinute: 0}}
"""

#: `--stages core`: the gateway of issue 3 (auth, rate limit, protocol, circuit, policy,
#: list filter, response rules, metrics); the defence stages and the ledger off.
CORE = """\
dlp: false
ledger: {enabled: false}
stages:
  ratelimit: {requestsPerMinute: 0}
  chain: false
  schema: false
  pins: false
  poisoning: false
  judge: false
"""

SDK_ECHO = [sys.executable, str(ROOT / "bench" / "sdk_echo.py")]


def sdk_servers() -> dict[str, Any]:
    """bench/sdk_echo.py twice: opened in the 2025-11-25 era (`legacy`) and the 2026-07-28 era (`modern`)."""
    return {era: {"command": SDK_ECHO[0], "args": SDK_ECHO[1:], "era": era} for era in ("legacy", "modern")}


MODERN = "2026-07-28"
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "everything__echo"}


def modern_call(i: int, tool: str) -> dict[str, Any]:
    """`call` as a 2026-07-28 client sends it: the protocol, capabilities and client in `_meta`."""
    body = call(i, tool)
    body["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {},
                               "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}
    return body


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

WRK_LUA = """
local counter = 0
local tid = 0
local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  counter = 0
end
request = function()
  counter = counter + 1
  local body = string.format(os.getenv("BODY"), tid .. "-" .. counter)
  return wrk.format("POST", nil, nil, body)
end
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def percentile(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * q))]


def wrk_counted(latencies: list[float], elapsed: float, inflight: int) -> list[float]:
    """The samples as wrk's `stats_correct` counts them.

    wrk takes the expected interval as the run's time over its calls per connection, and a call that took
    n >= 2 intervals also counts as calls that took n - 1, n - 2, ... intervals, down to more than one interval.
    """
    interval = elapsed / (len(latencies) / inflight)
    out = list(latencies)
    for n in latencies:
        if n >= 2 * interval:
            m = n - interval
            while m > interval:
                out.append(m)
                m -= interval
    return out


class Pipe:
    """A line-delimited JSON-RPC peer over a child's stdin/stdout, driven synchronously."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.w = self.proc.stdin
        self.r = self.proc.stdout

    def send(self, msg: dict[str, Any]) -> None:
        self.w.write(json.dumps(msg).encode() + b"\n")
        self.w.flush()

    def recv(self) -> dict[str, Any]:
        while True:
            line = self.r.readline()
            if not line:
                raise RuntimeError("peer closed")
            msg = json.loads(line)
            if "id" in msg and "method" not in msg:
                return msg  # type: ignore[no-any-return]

    def handshake(self) -> None:
        self.send(INIT)
        self.recv()
        self.send(INITIALIZED)

    def close(self) -> None:
        self.w.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def call(rid: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": {"message": "hello"}}}


def run_pipe(pipe: Pipe, name: str, seconds: float, inflight: int, measured_pid: int | None) -> dict[str, Any]:
    """Closed-loop load over one pipe: `inflight` requests outstanding at all times."""
    for i in range(200):  # warm up
        pipe.send(call(-i - 1, name))
        pipe.recv()
    cpu0 = cpu_seconds(measured_pid) if measured_pid else 0.0
    me0 = resource.getrusage(resource.RUSAGE_SELF)
    sent: dict[int, float] = {}
    latencies: list[float] = []
    rid = 0
    clock = time.perf_counter
    start = clock()
    for _ in range(inflight):
        rid += 1
        sent[rid] = clock()
        pipe.send(call(rid, name))
    while True:
        msg = pipe.recv()
        now = clock()
        latencies.append(now - sent.pop(msg["id"]))
        if now - start >= seconds:
            break
        rid += 1
        sent[rid] = clock()
        pipe.send(call(rid, name))
    while sent:
        sent.pop(pipe.recv()["id"])
    elapsed = clock() - start
    me1 = resource.getrusage(resource.RUSAGE_SELF)
    n = len(latencies)
    out = {"calls": n, "calls_per_s": n / elapsed, "p50_ms": percentile(latencies, 0.5) * 1000,
           "p99_ms": percentile(latencies, 0.99) * 1000, "max_ms": max(latencies) * 1000,
           "p99_wrk_ms": percentile(wrk_counted(latencies, elapsed, inflight), 0.99) * 1000,
           "stalls": sum(1 for t in latencies if t > 0.005),
           "client_cpu_ms": ((me1.ru_utime + me1.ru_stime) - (me0.ru_utime + me0.ru_stime)) / n * 1000}
    if measured_pid:
        out["gateway_cpu_ms"] = (cpu_seconds(measured_pid) - cpu0) / n * 1000
        out["gateway_rss_mib"] = rss_mib(measured_pid)
    return out


def run_wrk(url: str, body: str, headers: dict[str, str], seconds: float, connections: int, pid: int,
            wrk_dir: Path) -> dict[str, Any]:
    script = wrk_dir / "call.lua"
    script.write_text(WRK_LUA + "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in headers.items()))
    env = {**os.environ, "BODY": body}
    threads = min(connections, 2)
    subprocess.run(["wrk", "-t1", "-c1", "-d1s", "-s", str(script), url], env=env, capture_output=True, check=True)
    cpu0 = cpu_seconds(pid)
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, int(seconds))}s", "--latency", "-s", str(script),
                           url], env=env, capture_output=True, text=True, check=True)
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = proc.stdout
    total = int(re.search(r"(\d+) requests in", text).group(1))  # type: ignore[union-attr]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    p99 = _wrk_ms(text, "99%")
    return {"calls": total, "calls_per_s": rps, "p50_ms": _wrk_ms(text, "50%"), "p99_ms": p99, "p99_wrk_ms": p99,
            "gateway_cpu_ms": (cpu_seconds(pid) - cpu0) / total * 1000, "gateway_rss_mib": rss_mib(pid),
            "client_cpu_ms": ((children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime))
            / total * 1000, "errors": int(non2xx.group(1)) if non2xx else 0}


@contextmanager
def socket_calls(port: int, path: str, body: str, headers: dict[str, str]) -> Iterator[Callable[[int], None]]:
    """`one(i)`: a call (the body with `i` for its %s) over one keep-alive connection from a blocking
    socket, answered by its Content-Length; raises unless the answer is a 200 with a result."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers.items()))
    with socket.create_connection(("127.0.0.1", port)) as sock, sock.makefile("rb") as answers:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def one(i: int) -> None:
            payload = (body % f"s-{i}").encode()
            sock.sendall(f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
            status, length = answers.readline(), 0
            while (line := answers.readline()) not in (b"\r\n", b""):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if answers.read(length).find(b'"result"') < 0 or b" 200 " not in status:
                raise RuntimeError(f"call {i} failed: {status!r}")

        yield one


def run_socket(port: int, path: str, body: str, headers: dict[str, str], seconds: float, pid: int) -> dict[str, Any]:
    """Sequential calls over one keep-alive connection from a blocking socket (see the module docstring)."""
    with socket_calls(port, path, body, headers) as one:
        for i in range(200):  # warm up
            one(-i - 1)
        latencies: list[float] = []
        cpu0 = cpu_seconds(pid)
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        clock = time.perf_counter
        start = now = clock()
        while now - start < seconds:
            t0 = clock()
            one(len(latencies))
            now = clock()
            latencies.append(now - t0)
        me1 = resource.getrusage(resource.RUSAGE_SELF)
    n = len(latencies)
    return {"calls": n, "calls_per_s": n / (now - start), "p50_ms": percentile(latencies, 0.5) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000, "gateway_cpu_ms": (cpu_seconds(pid) - cpu0) / n * 1000,
            "p99_wrk_ms": percentile(wrk_counted(latencies, now - start, 1), 0.99) * 1000,
            "gateway_rss_mib": rss_mib(pid), "max_ms": max(latencies) * 1000,
            "stalls": sum(1 for t in latencies if t > 0.005),
            "client_cpu_ms": ((me1.ru_utime + me1.ru_stime) - (me0.ru_utime + me0.ru_stime)) / n * 1000}


def _wrk_ms(text: str, label: str) -> float:
    m = re.search(rf"{re.escape(label)}\s+([\d.]+)(us|ms|s)", text)
    assert m, text
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def hot_path_state(pythonpath: str | None = None) -> str:
    """How the gateway this script starts runs its hot path (`mcpwall._native.hot_path`): `compiled`, or
    `stale`/`absent` when its native build does not match its sources (any edit to a package with compiled
    modules), and every figure then measures the Python fallback. `pythonpath`: the tree's `src`, as the
    gateway is started with it (default: this process's environment)."""
    env = {**os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    out = subprocess.run([sys.executable, "-c", "from mcpwall._native import hot_path; print(hot_path()['state'])"],
                         env=env, capture_output=True, text=True, check=False)
    return out.stdout.strip() or f"unknown ({out.stderr.strip()[-200:]})"


def wait_for_gateway(home: Path, port: int, seconds: float) -> str:
    """The token of the gateway starting in `home` once its /health says ok ("" if it did not in time)."""
    import httpx

    token = ""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            token = (home / "run" / "gateway.token").read_text().strip()
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["status"] == "ok":
                return token
        except (OSError, httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    return ""


@contextmanager
def gateway(home: Path, port: int) -> Iterator[tuple[int, str]]:
    servers = home / "servers.json"
    # server-everything (a legacy-only server: a 2026-07-28 call to it is bridged) and the SDK's dual-era
    # echo opened in each era (each era's call end to end)
    servers.write_text(json.dumps({"mcpServers": {"everything": {"command": EVERYTHING[0], "args": EVERYTHING[1:]},
                                                  **sdk_servers()}}))
    proc = subprocess.Popen([MCPWALL, "proxy", "--home", str(home), "--servers", str(servers), "--port", str(port),
                             "--log-level", "WARNING"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    token = wait_for_gateway(home, port, 30.0)
    try:
        yield proc.pid, token
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


@contextmanager
def bare_relay(port: int) -> Iterator[int]:
    """bench/bare_relay.py in front of the same server: the cost of relaying with no checks at all."""
    import httpx

    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "bare_relay.py"), str(port), *EVERYTHING],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(300):
            try:
                httpx.post(f"http://127.0.0.1:{port}/", json=call(0, "echo"), timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


def mcp_session(port: int, token: str) -> str:
    import httpx

    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    r = httpx.post(f"http://127.0.0.1:{port}/mcp", json=INIT, headers=headers)
    sid = r.headers["mcp-session-id"]
    httpx.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZED, headers={**headers, "Mcp-Session-Id": sid})
    return sid


def show(label: str, row: dict[str, Any]) -> None:
    gw = (f"  gw cpu {row['gateway_cpu_ms']:.3f} ms/call  rss {row['gateway_rss_mib']:.1f} MiB"
          if "gateway_cpu_ms" in row else "")
    print(f"  {label:<34} {row['calls_per_s']:>9,.0f} calls/s  p50 {row['p50_ms']:6.3f} ms  p99 {row['p99_ms']:6.3f} ms"
          f"  client cpu {row['client_cpu_ms']:.3f} ms/call{gw}" + (f"  errors {row['errors']}" if row.get("errors") else "")
          + (f"  max {row['max_ms']:.1f} ms, {row['stalls']} over 5 ms, p99 as wrk counts {row['p99_wrk_ms']:.3f} ms"
             if "stalls" in row else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--soak", type=int, default=100_000)
    parser.add_argument("--stages", choices=["all", "core"], default="all",
                        help="all: every stage and the ledger, as shipped; core: the defence stages and ledger off")
    opts = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed for the HTTP routes: apt-get install wrk")
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}")
    print(f"stages: {opts.stages}")
    state = hot_path_state()
    print(f"hot path: {state}" + ("" if state == "compiled" else
                                  "  WARNING: the Python fallback is measured (python tools/build_native.py)"))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
        home = Path(tmp) / "home"
        home.mkdir()
        default = ROOT / "src" / "mcpwall" / "policy" / "templates" / "default.yaml"
        text = POLICY.format(default=default)
        if opts.stages == "core":
            text = text.replace("stages:\n  ratelimit: {requestsPerMinute: 0}\n", CORE)
        (home / "policy.yaml").write_text(text)

        print("direct stdio (baseline)")
        pipe = Pipe(EVERYTHING)
        pipe.handshake()
        for label, inflight in (("sequential", 1), ("8 concurrent", 8)):
            results[f"direct {label}"] = row = run_pipe(pipe, "echo", opts.seconds, inflight, None)
            show(label, row)
        pipe.close()

        print("mcpwall proxy --stdio")
        (home / "servers.json").write_text(json.dumps({"mcpServers": {"everything": {
            "command": EVERYTHING[0], "args": EVERYTHING[1:]}}}))
        pipe = Pipe([MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers", str(home / "servers.json"),
                     "--log-level", "WARNING"])
        pipe.handshake()
        for label, inflight in (("sequential", 1), ("8 concurrent", 8)):
            results[f"stdio {label}"] = row = run_pipe(pipe, "everything__echo", opts.seconds, inflight,
                                                       pipe.proc.pid)
            show(label, row)
        pipe.close()

        port = 19420
        with gateway(home, port) as (pid, token):
            sid = mcp_session(port, token)
            auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            routes = {
                "/mcp": (f"http://127.0.0.1:{port}/mcp", json.dumps(call(0, "everything__echo")).replace('"id": 0', '"id": "%s"'),
                         {**auth, "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid}),
                # the 2026-07-28 era: no session, the protocol in each request's _meta and headers
                "/mcp 2026-07-28": (f"http://127.0.0.1:{port}/mcp",
                                    json.dumps(modern_call(0, "everything__echo")).replace('"id": 0', '"id": "%s"'),
                                    {**auth, "Accept": "application/json, text/event-stream", **MODERN_HEADERS}),
                "POST /{server}": (f"http://127.0.0.1:{port}/everything",
                                   json.dumps(call(0, "echo")).replace('"id": 0', '"id": "%s"'), auth),
                # each era end to end: the SDK's echo opened in that era (bench/sdk_echo.py)
                "/mcp, SDK server": (f"http://127.0.0.1:{port}/mcp",
                                     json.dumps(call(0, "legacy__echo")).replace('"id": 0', '"id": "%s"'),
                                     {**auth, "Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid}),
                "/mcp 2026-07-28, SDK server": (f"http://127.0.0.1:{port}/mcp",
                                                json.dumps(modern_call(0, "modern__echo")).replace('"id": 0', '"id": "%s"'),
                                                {**auth, "Accept": "application/json, text/event-stream",
                                                 **MODERN_HEADERS, "Mcp-Name": "modern__echo"}),
            }
            with tempfile.TemporaryDirectory() as wrk_dir:
                for route, (url, body, headers) in routes.items():
                    print(f"through {route}")
                    for label, conns in (("sequential", 1), ("8 concurrent", 8)):
                        results[f"{route} {label}"] = row = run_wrk(url, body, headers, opts.seconds, conns, pid,
                                                                    Path(wrk_dir))
                        show(label, row)
                    results[f"{route} socket"] = row = run_socket(port, url.split(str(port), 1)[1], body, headers,
                                                                  opts.seconds, pid)
                    show("sequential, socket client", row)
                if opts.soak:
                    print(f"soak: {opts.soak:,} calls through POST /{{server}}")
                    rss0 = rss_mib(pid)
                    url, body, headers = routes["POST /{server}"]
                    done = 0
                    while done < opts.soak:
                        done += run_wrk(url, body, headers, 5, 8, pid, Path(wrk_dir))["calls"]
                    rss1 = rss_mib(pid)
                    print(f"  RSS before {rss0:.1f} MiB, after {done:,} calls {rss1:.1f} MiB "
                          f"(growth {rss1 - rss0:+.1f} MiB)")
                    results["soak"] = {"calls": done, "rss_before_mib": rss0, "rss_after_mib": rss1}
        print("bare relay, no checks (bench/bare_relay.py: uvicorn + orjson; the floor for any Python relay)")
        with bare_relay(port + 1) as pid, tempfile.TemporaryDirectory() as wrk_dir:
            body = json.dumps(call(0, "echo")).replace('"id": 0', '"id": "%s"')
            for label, conns in (("sequential", 1), ("8 concurrent", 8)):
                results[f"bare relay {label}"] = row = run_wrk(f"http://127.0.0.1:{port + 1}/", body,
                                                               {"Content-Type": "application/json"}, opts.seconds,
                                                               conns, pid, Path(wrk_dir))
                show(label, row)
            results["bare relay socket"] = row = run_socket(port + 1, "/", body, {"Content-Type": "application/json"},
                                                            opts.seconds, pid)
            show("sequential, socket client", row)
    direct = results["direct sequential"]
    print("added latency vs direct stdio, sequential; p99 like for like (see the module docstring):")
    print(f"  {'':<28} {'p50':>9}   {'p99 as wrk counts':>17}   {'p99 as the calls came':>21}")
    for key, label in (("stdio sequential", "--stdio"), ("/mcp sequential", "/mcp, wrk"),
                       ("/mcp socket", "/mcp, socket client"), ("POST /{server} sequential", "POST /{server}, wrk"),
                       ("POST /{server} socket", "POST /{server}, socket client"),
                       ("bare relay sequential", "bare relay, wrk"), ("bare relay socket", "bare relay, socket client")):
        row = results[key]
        came = f"+{row['p99_ms'] - direct['p99_ms']:.3f} ms" if "stalls" in row else "(wrk corrects)"
        print(f"  {label:<28} +{row['p50_ms'] - direct['p50_ms']:.3f} ms   "
              f"{row['p99_wrk_ms'] - direct['p99_wrk_ms']:+14.3f} ms   {came:>21}")
    (ROOT / "bench" / "last_proxy_overhead.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
