"""Instructions the gateway process executes per call, counted by callgrind: a figure load cannot move.

On this shared 2-core machine the CPU time per call of `bench/proxy_overhead.py` drifts by 10-30%
between runs of the same head; the instruction count does not (two runs of one head agree within
0.2%). So two heads are compared here by what they execute, not by how long it took:

- the gateway is started as `mcpwall proxy` under `valgrind --tool=callgrind --instr-atstart=no`
  in front of server-everything over stdio (the upstream is not counted), with
  `bench/proxy_overhead.py`'s policy of the tree: `--stages core` (the defence stages and ledger
  off) or `all` (as shipped);
- after 300 warm-up calls, counting is switched on (`callgrind_control -i on`), N calls of
  server-everything's `echo` are made, and counting is switched off;
- routes: `mcp` (a legacy session on `/mcp`), `modern` (a 2026-07-28 call on `/mcp`: the envelope in
  `_meta`, no session), `post` (seatbelt's `POST /everything`); sequentially from one keep-alive
  connection, or with `--concurrent`, by wrk with 8 connections for `--seconds`;
- `--upstream sdk` puts `bench/sdk_echo.py` (the SDK's dual-era server) behind the gateway twice,
  opened in each era: `mcp` then calls the legacy-era one and `modern` the 2026-07-28 one (each era
  end to end), `mcp-bridged` and `modern-bridged` the other era's (the gateway bridging).
  server-everything speaks only the legacy era, so by default `modern` is a bridged call.
- `floor` and `floor-modern`: bench/bare_relay.py (uvicorn and orjson relaying to the same
  server, no checks) sent route `mcp`'s and route `modern`'s very requests (their headers, a
  session id or the MCP headers, and their bodies): what any relay pays for each era's bytes. A
  2026-07-28 request is larger (its `_meta` envelope, two more headers), so the gateway's own cost
  of an era is its route's figure less its floor.

Instructions are not time (a cache miss costs more than an add), but the core path is interpreter
work, where they track CPU time closely. `--stages all` counts the ledger's writer threads too, whose
batches follow wall time, so their share varies by a few percent between runs: repeat them, and read
the event loop's own figure (the main thread, printed next to the total), which does not vary.
Under callgrind the gateway runs ~25x slower, so the ledger's 50 ms flush window holds ~3 sequential
calls instead of ~70: each commit's fixed cost (its WAL frames, SQLite checksums every 8 KiB page it
writes) is spread over far fewer rows than in real time, and the SHA-256 of the HMAC chain runs
without the CPU's SHA extensions; the writer threads' figure overstates their real share.

Usage: python bench/instructions.py [--tree PATH ...] [--stages core|all] [--routes mcp,modern,post,floor,floor-modern]
       [--calls 500] [--concurrent --seconds 10] [--keep DIR] [--legacy-version-header]
--keep DIR copies each run's callgrind.out files (one per thread) into DIR, named by tree, route and stages,
to compare costs per function with `callgrind_annotate --inclusive=yes`.
Each --tree is a checkout with its native build (tools/build_native.py run in it); the default is
this one. Needs valgrind (apt-get install valgrind) and, for --concurrent, wrk.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import proxy_overhead as po  # noqa: E402

PYTHON = sys.executable
MCPWALL = str(Path(sys.executable).parent / "mcpwall")


# With `--upstream sdk`, the echo tool each route calls: a route's own era end to end, or bridged.
SDK_TOOLS = {"mcp": "legacy__echo", "modern": "modern__echo",
             "mcp-bridged": "modern__echo", "modern-bridged": "legacy__echo"}


def _request(route: str, port: int, token: str, upstream: str,
             version_header: bool = False, floor: bool = False) -> tuple[str, dict[str, str], str]:
    """The path, headers and body (with a %s for the id) of one call on `route`."""
    base = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}
    if route.startswith("floor"):  # the bare relay: the same bytes to `/`, its one server's tool by its own name
        _, headers, body = _request("modern" if route == "floor-modern" else "mcp", port, token, upstream,
                                    version_header, floor=True)
        return "/", {k: v.replace("everything__echo", "echo") for k, v in headers.items()}, body.replace(
            "everything__echo", "echo")
    tool = SDK_TOOLS[route] if upstream == "sdk" else "everything__echo"
    if route.startswith("modern"):
        body = po.modern_call(0, tool)
        return "/mcp", {**base, **po.MODERN_HEADERS, "Mcp-Name": tool}, json.dumps(body).replace(
            '"id": 0', '"id": "%s"')
    if route == "post":
        return "/everything", base, json.dumps(po.call(0, "echo")).replace('"id": 0', '"id": "%s"')
    sid = "0" * 32 if floor else po.mcp_session(port, token)  # (a session id as long as the gateway's)
    if version_header:  # as the SDKs' legacy clients send every call after `initialize` (2025-06-18 on)
        base["MCP-Protocol-Version"] = po.INIT["params"]["protocolVersion"]
    return "/mcp", {**base, "Mcp-Session-Id": sid}, json.dumps(po.call(0, tool)).replace('"id": 0', '"id": "%s"')


def _sequential(port: int, path: str, headers: dict[str, str], body: str, pid: int, calls: int) -> int:
    with po.socket_calls(port, path, body, headers) as one:
        for i in range(300):
            one(-i - 1)
        _count(pid, True)
        for i in range(calls):
            one(i)
        _count(pid, False)
    return calls


def _concurrent(port: int, path: str, headers: dict[str, str], body: str, pid: int, seconds: float,
                work: Path) -> int:
    script = work / "call.lua"
    script.write_text(po.WRK_LUA + "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in headers.items()))
    env, url = {**os.environ, "BODY": body}, f"http://127.0.0.1:{port}{path}"
    subprocess.run(["wrk", "-t1", "-c8", "-d3s", "-s", str(script), url], env=env, capture_output=True, check=True)
    _count(pid, True)
    out = subprocess.run(["wrk", "-t2", "-c8", f"-d{max(1, int(seconds))}s", "-s", str(script), url], env=env,
                         capture_output=True, text=True, check=True).stdout
    _count(pid, False)
    if re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        raise RuntimeError(f"calls failed:\n{out}")
    return int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]


def _count(pid: int, on: bool) -> None:
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True, capture_output=True)


def _totals(out: Path) -> dict[str, int]:
    """The instructions of each part a callgrind run wrote, by its suffix (one per thread, `-01` the
    main thread: the event loop; the others are the ledger's writer threads)."""
    totals: dict[str, int] = {}
    for part in sorted(out.parent.glob(out.name + "*")):
        for line in part.read_text(errors="replace").splitlines():
            if line.startswith("totals:"):  # (its `summary:` line is written while counting is off: 0)
                totals[part.name[len(out.name):]] = totals.get(part.name[len(out.name):], 0) + int(line.split()[1])
    return totals


def measure(tree: Path, stages: str, route: str, opts: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        default = tree / "src" / "mcpwall" / "policy" / "templates" / "default.yaml"
        text = po.POLICY.format(default=default)
        if stages == "core":
            text = text.replace("stages:\n  ratelimit: {requestsPerMinute: 0}\n", po.CORE)
        (home / "policy.yaml").write_text(text)
        servers = home / "servers.json"
        servers.write_text(json.dumps({"mcpServers": po.sdk_servers() if opts.upstream == "sdk" else {
            "everything": {"command": po.EVERYTHING[0], "args": po.EVERYTHING[1:]}}}))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out = Path(tmp) / "callgrind.out"
        env = {"MCPWALL_ANCHOR_DIR": str(Path(tmp) / "anchors"),  # not the user's ~/.local/state
               **os.environ, "PYTHONPATH": str(tree / "src")}
        floor = route.startswith("floor")
        command = ([PYTHON, str(ROOT / "bench" / "bare_relay.py"), str(port), *po.EVERYTHING] if floor else
                   [PYTHON, MCPWALL, "proxy", "--home", str(home), "--servers", str(servers),
                    "--port", str(port), "--log-level", "WARNING"])
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
                                 f"--callgrind-out-file={out}", *command],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            import httpx

            token = ""
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    if floor:  # the bare relay has no /health: it is up once it relays a call
                        if httpx.post(f"http://127.0.0.1:{port}/", json=po.call(0, "echo"), timeout=5).is_success:
                            break
                        continue
                    token = (home / "run" / "gateway.token").read_text().strip()
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()["status"] == "ok":
                        break
                except (OSError, httpx.HTTPError, ValueError, KeyError):
                    pass
                time.sleep(0.25)
            path, headers, body = _request(route, port, token, opts.upstream, opts.legacy_version_header)
            calls = (_concurrent(port, path, headers, body, proc.pid, opts.seconds, Path(tmp)) if opts.concurrent
                     else _sequential(port, path, headers, body, proc.pid, opts.calls))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if opts.keep:
            # the function-level counts, for `callgrind_annotate --inclusive=yes` (one file per thread)
            opts.keep.mkdir(parents=True, exist_ok=True)
            name = f"{tree.name}-{route}-{opts.upstream}-{stages}-{'concurrent' if opts.concurrent else 'sequential'}"
            for part in out.parent.glob(out.name + "*"):
                shutil.copy(part, opts.keep / (name + part.name[len(out.name):] + ".callgrind"))
        totals = _totals(out)
        main_thread = next((n for part, n in totals.items() if part.endswith("-01")), 0)
        return {"tree": str(tree), "stages": stages, "route": route, "calls": calls,
                "instructions_per_call": sum(totals.values()) / calls,
                "main_thread_per_call": main_thread / calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout to measure (repeatable)")
    parser.add_argument("--stages", choices=["core", "all"], default="core")
    parser.add_argument("--routes", default="mcp,modern,post",
                        help="mcp, modern, post, floor, floor-modern; with --upstream sdk also mcp-bridged, "
                             "modern-bridged")
    parser.add_argument("--upstream", choices=["everything", "sdk"], default="everything",
                        help="sdk: bench/sdk_echo.py opened twice, in the 2025-11-25 era (legacy__echo) and the "
                             "2026-07-28 era (modern__echo), so each route's era runs end to end")
    parser.add_argument("--legacy-version-header", action="store_true",
                        help="the legacy routes send MCP-Protocol-Version on each call, as the SDKs' clients do "
                             "(the 2025-06-18 and later transports require it); by default they send the session only")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--concurrent", action="store_true", help="8 connections by wrk instead of one client")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="copy each run's callgrind.out files into this directory")
    opts = parser.parse_args()
    for tool in ("valgrind", "callgrind_control", *(("wrk",) if opts.concurrent else ())):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is needed: apt-get install {'wrk' if tool == 'wrk' else 'valgrind'}")
    trees = opts.tree or [ROOT]
    if opts.upstream == "sdk" and "floor" in opts.routes:
        sys.exit("the floor routes relay to server-everything: leave --upstream at its default")
    for tree in trees:
        state = po.hot_path_state(str(tree.resolve() / "src"))
        if state != "compiled":
            print(f"WARNING: {tree}: hot path {state}: its figures measure the Python fallback "
                  "(run tools/build_native.py in it)", file=sys.stderr)
    rows = []
    for route in opts.routes.split(","):
        for tree in trees:
            row = measure(tree.resolve(), opts.stages, route, opts)
            rows.append(row)
            if not opts.json:
                print(f"{route:<12} {opts.stages:<5} {'8 clients' if opts.concurrent else 'sequential':<10} "
                      f"{row['instructions_per_call']:>10,.0f} instructions/call, "
                      f"{row['main_thread_per_call']:>10,.0f} on the event loop  ({row['calls']} calls)  {tree}",
                      flush=True)
    if opts.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
