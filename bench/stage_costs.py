"""Added cost of each defence stage, in microseconds per call, through the real pipeline.

A gateway is built in-process (no upstream process: the dispatch answers at once with a
realistic ~1 KB tools/call result, so what is measured is the pipeline), and the same call mix
runs with the defence stages all off (the baseline: auth, rate limit, protocol, circuit,
policy, list filter, response rules), with each stage on alone, and with all of them on. The
mix: reads of workspace files, a fetch, a write, a search query; one result in ten carries a
secret (DLP then redacts and the session's exfiltration check has something to look for).

`--shipped` measures the shipped configuration instead (`bench/proxy_overhead.py --stages all`: the
default policy plus a rule that allows server-everything's `echo`, every default stage, the SQLite
ledger) on echo calls answered with echo's result: the core (defence stages and ledger off), the core
plus each part alone (dlp, chain, schema, pins, poisoning, judge, the ledger), and everything. Beside
the wall time it prints the CPU of the event loop's thread per call (`main us`); the ledger's writer
threads are not in it (`bench/shipped_costs.py` counts every thread, leaving one part out at a time).

Usage: python bench/stage_costs.py [--calls N] [--shipped] [--json]
Prints p50 / p90 per configuration and the difference to the baseline at p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from proxy_overhead import POLICY as SHIPPED  # noqa: E402

from mcpwall.pipeline import Session  # noqa: E402
from mcpwall.proxy import GatewaySettings, build  # noqa: E402
from mcpwall.stages import RequestContext  # noqa: E402

BASE = """\
version: "1"
mode: enforce
defaultAction: allow
stages:
  ratelimit: {requestsPerMinute: 0}
"""
OFF = {"dlp": "dlp: false\n", "chain": "  chain: false\n", "schema": "  schema: false\n",
       "judge": "  judge: false\n"}
ON = {"honeytokens": "honeytokens: {enabled: true}\n",
      "threatintel": "  threatintel: {feed: [threatfox.csv]}\n"}
STAGES = ("dlp", "chain", "schema", "judge", "threatintel", "honeytokens")

TEXT = ("def handler(event, context):\n    # process the incoming order and write it to the table\n"
        "    order = json.loads(event['body'])\n    table.put_item(Item=order)\n    return {'ok': True}\n") * 4
SECRET_TEXT = TEXT + "AWS_ACCESS_KEY_ID=AKIAQX4PZ7T2LMNB3KQR\n"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "/workspace/src/handler.py"}),
    ("read_file", {"path": "/workspace/README.md"}),
    ("fetch", {"url": "https://docs.python.org/3/library/json.html"}),
    ("write_file", {"path": "/workspace/out/report.md", "content": "# Report\n\nAll green.\n"}),
    ("search", {"query": "order handler dynamodb", "limit": 10}),
]


def policy(enabled: set[str]) -> str:
    text = BASE
    stage_lines = "".join(OFF[s] for s in ("chain", "schema", "judge") if s not in enabled)
    stage_lines += ON["threatintel"] if "threatintel" in enabled else ""
    text += stage_lines
    if "dlp" not in enabled:
        text += OFF["dlp"]
    if "honeytokens" in enabled:
        text += ON["honeytokens"]
    return text


#: `--shipped`: the parts of the shipped configuration, each added alone to its core
SHIPPED_PARTS = ("dlp", "chain", "schema", "pins", "poisoning", "judge", "ledger")
ECHO = {"content": [{"type": "text", "text": "Echo: hello world"}]}


def shipped_policy(enabled: set[str]) -> str:
    """The shipped policy with the parts not in `enabled` switched off."""
    top = ("" if "dlp" in enabled else "dlp: false\n") + ("" if "ledger" in enabled else "ledger: {enabled: false}\n")
    stages = "".join(f"  {s}: false\n" for s in SHIPPED_PARTS[1:-1] if s not in enabled)
    text = SHIPPED.format(default=ROOT / "src" / "mcpwall" / "policy" / "templates" / "default.yaml")
    return text.replace("stages:\n", top + "stages:\n", 1) + stages


def prepare(enabled: set[str], home: Path, shipped: bool = False) -> Path:
    """Write the policy (and a 5,000-indicator feed for threat intel) into a fresh home."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "threatfox.csv").write_text("".join(
        f'"2026-07-04 21:46:30", "{i}", "198.51.{i // 256}.{i % 256}:443", "ip:port", "botnet_cc", "w", "None", '
        f'"W", "", "75", "False", "None", "None", "0", "r"\n' for i in range(5000)))
    path = home / "policy.yaml"
    path.write_text(shipped_policy(enabled) if shipped else policy(enabled))
    return path


async def open_gateway(enabled: set[str], home: Path, shipped: bool = False) -> Any:
    path = prepare(enabled, home, shipped)
    gateway = build(GatewaySettings(home=home, policy_path=path, insecure_no_auth=True)).gateway
    await gateway.start()
    return gateway


async def answer(ctx: RequestContext) -> dict[str, Any]:
    text = SECRET_TEXT if ctx.id % 10 == 0 else TEXT
    return {"jsonrpc": "2.0", "id": ctx.id, "result": {"content": [{"type": "text", "text": text}]}}


async def echo(ctx: RequestContext) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ctx.id, "result": ECHO}


async def run_calls(gateway: Any, session: Session, first: int, count: int, times: list[float] | None,
                    cpu: list[float] | None = None, shipped: bool = False) -> None:
    main0 = time.thread_time()
    for i in range(first, first + count):
        if shipped:
            tool, args, server = "echo", {"message": f"hello {i}"}, "everything"
        else:
            tool, args = CALLS[i % len(CALLS)]
            server = "srv"
        params = {"name": tool, "arguments": args}
        msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        t0 = time.perf_counter()
        ctx = RequestContext(gateway, session, msg, "tools/call", i, params, server=server, target=tool)
        await gateway.pipeline.run(ctx, echo if shipped else answer)
        await gateway.pipeline.complete(ctx)
        if times is not None:
            times.append((time.perf_counter() - t0) * 1e6)
    if cpu is not None:
        cpu.append((time.thread_time() - main0) / count * 1e6)


async def measure_all(configs: list[tuple[str, set[str]]], calls: int, root: Path,
                      shipped: bool = False) -> tuple[list[list[float]], list[list[float]]]:
    """Interleave the configurations in rounds, so load from elsewhere on the machine hits all alike;
    (the calls' times, each round's main-thread CPU per call) per configuration."""
    gateways = [await open_gateway(enabled, root / str(i), shipped) for i, (_, enabled) in enumerate(configs)]
    sessions = [Session(kind="stdio", client_name="bench", initialized=True) for _ in configs]
    times: list[list[float]] = [[] for _ in configs]
    cpu: list[list[float]] = [[] for _ in configs]
    try:
        for g, s in zip(gateways, sessions, strict=True):
            await run_calls(g, s, 0, 200, None, shipped=shipped)  # warm-up: caches, plans, first compilations
        rounds = 20
        for r in range(rounds):
            for k, (g, s) in enumerate(zip(gateways, sessions, strict=True)):
                await run_calls(g, s, 200 + r * (calls // rounds), calls // rounds, times[k], cpu[k], shipped)
    finally:
        for g in gateways:
            await g.stop()
    return times, cpu


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--shipped", action="store_true", help="the shipped configuration's parts (see above)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    parts = SHIPPED_PARTS if args.shipped else STAGES
    configs: list[tuple[str, set[str]]] = [("core (defence stages and ledger off)" if args.shipped
                                            else "baseline (defence stages off)", set())]
    configs += [(f"+ {s}", {s}) for s in parts]
    configs.append(("shipped (all of them)" if args.shipped else "all defence stages", set(parts)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
        all_times, all_cpu = asyncio.run(measure_all(configs, args.calls, Path(tmp), args.shipped))
    for (name, _), times, cpu in zip(configs, all_times, all_cpu, strict=True):
        rows.append({"config": name, "p50_us": round(pct(times, 50), 1), "p90_us": round(pct(times, 90), 1),
                     "mean_us": round(statistics.fmean(times), 1), "main_us": round(statistics.median(cpu), 1)})
    base, base_cpu = rows[0]["p50_us"], rows[0]["main_us"]
    for r in rows:
        r["added_p50_us"] = round(r["p50_us"] - base, 1)
        r["added_main_us"] = round(r["main_us"] - base_cpu, 1)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.calls} calls per configuration, pipeline in-process, "
          + ("the shipped configuration's echo calls" if args.shipped else "~1 KB results (1 in 10 with a secret)"))
    print(f"{'configuration':38} {'p50 us':>9} {'p90 us':>9} {'added p50':>10} {'main us':>8} {'added main':>11}")
    for r in rows:
        print(f"{r['config']:38} {r['p50_us']:9.1f} {r['p90_us']:9.1f} {r['added_p50_us']:10.1f} {r['main_us']:8.1f}"
              f" {r['added_main_us']:11.1f}")


if __name__ == "__main__":
    main()
