"""Added cost of each defence stage, in microseconds per call, through the real pipeline.

A gateway is built in-process (no upstream process: the dispatch answers at once with a
realistic ~1 KB tools/call result, so what is measured is the pipeline), and the same call mix
runs with the defence stages all off (the baseline: auth, rate limit, protocol, circuit,
policy, list filter, response rules), with each stage on alone, and with all of them on. The
mix: reads of workspace files, a fetch, a write, a search query; one result in ten carries a
secret (DLP then redacts and the session's exfiltration check has something to look for).

Usage: python bench/stage_costs.py [--calls N] [--json]
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


def prepare(enabled: set[str], home: Path) -> Path:
    """Write the policy (and a 5,000-indicator feed for threat intel) into a fresh home."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "threatfox.csv").write_text("".join(
        f'"2026-07-04 21:46:30", "{i}", "198.51.{i // 256}.{i % 256}:443", "ip:port", "botnet_cc", "w", "None", '
        f'"W", "", "75", "False", "None", "None", "0", "r"\n' for i in range(5000)))
    path = home / "policy.yaml"
    path.write_text(policy(enabled))
    return path


async def open_gateway(enabled: set[str], home: Path) -> Any:
    path = prepare(enabled, home)
    gateway = build(GatewaySettings(home=home, policy_path=path, insecure_no_auth=True)).gateway
    await gateway.start()
    return gateway


async def answer(ctx: RequestContext) -> dict[str, Any]:
    text = SECRET_TEXT if ctx.id % 10 == 0 else TEXT
    return {"jsonrpc": "2.0", "id": ctx.id, "result": {"content": [{"type": "text", "text": text}]}}


async def run_calls(gateway: Any, session: Session, first: int, count: int, times: list[float] | None) -> None:
    for i in range(first, first + count):
        tool, args = CALLS[i % len(CALLS)]
        params = {"name": tool, "arguments": args}
        msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        t0 = time.perf_counter()
        ctx = RequestContext(gateway, session, msg, "tools/call", i, params, server="srv", target=tool)
        await gateway.pipeline.run(ctx, answer)
        await gateway.pipeline.complete(ctx)
        if times is not None:
            times.append((time.perf_counter() - t0) * 1e6)


async def measure_all(configs: list[tuple[str, set[str]]], calls: int, root: Path) -> list[list[float]]:
    """Interleave the configurations in rounds, so load from elsewhere on the machine hits all alike."""
    gateways = [await open_gateway(enabled, root / str(i)) for i, (_, enabled) in enumerate(configs)]
    sessions = [Session(kind="stdio", client_name="bench", initialized=True) for _ in configs]
    times: list[list[float]] = [[] for _ in configs]
    try:
        for g, s in zip(gateways, sessions, strict=True):
            await run_calls(g, s, 0, 200, None)  # warm-up: caches, plans, first compilations
        rounds = 20
        for r in range(rounds):
            for k, (g, s) in enumerate(zip(gateways, sessions, strict=True)):
                await run_calls(g, s, 200 + r * (calls // rounds), calls // rounds, times[k])
    finally:
        for g in gateways:
            await g.stop()
    return times


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    configs: list[tuple[str, set[str]]] = [("baseline (defence stages off)", set())]
    configs += [(f"+ {s}", {s}) for s in STAGES]
    configs.append(("all defence stages", set(STAGES)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
        all_times = asyncio.run(measure_all(configs, args.calls, Path(tmp)))
    for (name, _), times in zip(configs, all_times, strict=True):
        rows.append({"config": name, "p50_us": round(pct(times, 50), 1), "p90_us": round(pct(times, 90), 1),
                     "mean_us": round(statistics.fmean(times), 1)})
    base = rows[0]["p50_us"]
    for r in rows:
        r["added_p50_us"] = round(r["p50_us"] - base, 1)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.calls} calls per configuration, pipeline in-process, ~1 KB results (1 in 10 with a secret)")
    print(f"{'configuration':34} {'p50 us':>9} {'p90 us':>9} {'added p50':>10}")
    for r in rows:
        print(f"{r['config']:34} {r['p50_us']:9.1f} {r['p90_us']:9.1f} {r['added_p50_us']:10.1f}")


if __name__ == "__main__":
    main()
