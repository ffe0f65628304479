"""What each defence stage and the ledger cost in the shipped configuration, leave-one-out.

The gateway of `bench/proxy_overhead.py --stages all` (the shipped default policy plus a rule that
allows server-everything's `echo`, every default stage, the SQLite ledger) is built in-process with
no upstream process (the dispatch answers at once with echo's result), so what is measured is the
pipeline and the ledger's writer. Each configuration runs in its own process (the ledger writer is
a thread: one configuration's flushes must not land in another's figures), rounds alternate the
configurations so that load from elsewhere on the machine hits all alike, and the median of the
rounds is printed:

- `process`: CPU of the whole process per call (every thread: the ledger's writer included);
- `main`: CPU of the event loop's thread per call;
- `share`: what leaving this one part out saves, of the shipped configuration's process CPU.

Usage: python bench/shipped_costs.py [--calls 4000] [--rounds 3] [--json]
(`bench/stage_costs.py` measures each stage added alone to a minimal policy instead.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

sys.path.insert(0, str(ROOT / "bench"))
#: the policy `proxy_overhead.py --stages all` runs, so both measure the same configuration
from proxy_overhead import POLICY  # noqa: E402

#: name -> (top-level lines, lines under `stages:`)
CONFIGS: dict[str, tuple[str, str]] = {
    "shipped": ("", ""),
    "- ledger": ("ledger: {enabled: false}\n", ""),
    "- dlp": ("dlp: false\n", ""),
    **{f"- {s}": ("", f"  {s}: false\n") for s in ("chain", "schema", "pins", "poisoning", "judge")},
    "core": ("dlp: false\nledger: {enabled: false}\n",
             "".join(f"  {s}: false\n" for s in ("chain", "schema", "pins", "poisoning", "judge"))),
}
ECHO = {"content": [{"type": "text", "text": "Echo: hello world"}]}


async def _measure(config: str, calls: int) -> dict[str, float]:
    from mcpwall.pipeline import Session
    from mcpwall.proxy import GatewaySettings, build
    from mcpwall.stages import RequestContext

    extra, stages = CONFIGS[config]
    default = ROOT / "src" / "mcpwall" / "policy" / "templates" / "default.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("MCPWALL_ANCHOR_DIR", str(Path(tmp) / "anchors"))  # not the user's ~/.local/state
        home = Path(tmp)
        shipped = POLICY.format(default=default)
        (home / "policy.yaml").write_text(shipped.replace("stages:\n", extra + "stages:\n", 1) + stages)
        gateway = build(GatewaySettings(home=home, policy_path=home / "policy.yaml", insecure_no_auth=True)).gateway
        await gateway.start()
        session = Session(kind="stdio", client_name="bench", initialized=True)

        async def answer(ctx: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": ctx.id, "result": ECHO}

        async def run(first: int, count: int) -> None:
            for i in range(first, first + count):
                params = {"name": "echo", "arguments": {"message": f"hello {i}"}}
                msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
                ctx = RequestContext(gateway, session, msg, "tools/call", i, params, server="everything", target="echo")
                await gateway.pipeline.run(ctx, answer)
                await gateway.pipeline.complete(ctx)

        try:
            await run(0, 500)  # warm-up: caches, plans, the writer's first batches
            process, main = time.process_time(), time.thread_time()
            await run(500, calls)
            return {"process_us": (time.process_time() - process) / calls * 1e6,
                    "main_us": (time.thread_time() - main) / calls * 1e6}
        finally:
            await gateway.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one configuration, in this process
    args = parser.parse_args()
    if args.one:
        logging.disable(logging.WARNING)
        print(json.dumps(asyncio.run(_measure(args.one, args.calls))))
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name in CONFIGS:
            out = subprocess.run([sys.executable, __file__, "--one", name, "--calls", str(args.calls)],
                                 capture_output=True, text=True, env=env, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = [{"config": name, **{k: round(statistics.median(r[k] for r in found), 1) for k in ("process_us", "main_us")}}
            for name, found in runs.items()]
    shipped = rows[0]["process_us"]
    for row in rows:
        row["share_pct"] = round(100 * (shipped - row["process_us"]) / shipped, 1) if row["config"] != "shipped" else 100.0
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.calls} echo calls per configuration, in-process pipeline, median of {args.rounds} rounds")
    print(f"{'configuration':14} {'process us':>11} {'main us':>9} {'share':>7}")
    for row in rows:
        share = "" if row["config"] in ("shipped", "core") else f"{row['share_pct']:6.1f}%"
        print(f"{row['config']:14} {row['process_us']:11.1f} {row['main_us']:9.1f} {share:>7}")


if __name__ == "__main__":
    main()
