"""`mcpwall benchmark`: a concurrency-batched `tools/call` load against a running gateway.

    mcpwall benchmark --server everything --tool echo --args '{"message": "hi"}' \
        [--requests 1000] [--concurrency 10] [--warmup 50] [--url http://127.0.0.1:9420] [--json]

seatbelt's command, against mcpwall's `POST /{server}` route: `--warmup` calls
first (not measured), then `--requests` calls in batches of `--concurrency` at
once. Prints calls/s and p50/p95/p99 latency, how the answers split (allowed,
blocked by policy, rate limited, failed), and reconciles that with the
gateway's own count of processed and blocked calls from `GET /health`: a
difference means other traffic or calls the gateway never saw. The token comes
from `$MCPWALL_TOKEN`, `--token-file`, else `<home>/run/gateway.token` (never
the command line). Exit 0 when every call was answered and the counts agree,
1 otherwise, 2 for bad input (no such server, bad JSON). A tool the server
does not list is still called (the list hides what the policy denies), with
a note on stderr.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import click
import orjson

from mcpwall.cli._approvals import DEFAULT_URL, call_gateway, gateway_token, refuse_token
from mcpwall.cli._common import home_option, json_option, print_json
from mcpwall.errors import ConfigError, MCPWallError
from mcpwall.protocol import ErrorCode


@click.command()
@click.option("--url", default=DEFAULT_URL, show_default=True, help="The gateway's base URL.")
@click.option("--server", "server", default=None, help="Server to call (default: the first the gateway has).")
@click.option("--tool", default="echo", show_default=True, help="Tool to call.")
@click.option("--args", "args_json", default="{}", show_default=True, help="The tool's arguments, as JSON.")
@click.option("--requests", "requests", type=click.IntRange(1, 10_000_000), default=1000, show_default=True,
              help="Measured calls.")
@click.option("--concurrency", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Calls in flight at once (one batch).")
@click.option("--warmup", type=click.IntRange(0, 1_000_000), default=50, show_default=True,
              help="Calls made first and not measured.")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File holding the gateway's token.")
@click.option("--token", expose_value=False, callback=refuse_token, hidden=True)
@home_option
@json_option
def benchmark(url: str, server: str | None, tool: str, args_json: str, requests: int, concurrency: int,
              warmup: int, token_file: Path | None, home: Path | None, as_json: bool) -> None:
    """Load a running gateway with tools/call and report latency, throughput and the gateway's own counts."""
    try:
        arguments = orjson.loads(args_json)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from None
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    token = gateway_token(home, token_file)
    servers = [str(s["name"]) for s in call_gateway(url, token, "GET", "/servers").get("servers") or []]
    if server is None:
        if not servers:
            raise ConfigError("the gateway has no servers to call")
        server = servers[0]
    elif server not in servers:
        raise ConfigError(f"the gateway has no server {server!r} (it has: {', '.join(servers) or 'none'})")
    tools = call_gateway(url, token, "POST", f"/{server}", {"jsonrpc": "2.0", "id": "benchmark-list",
                                                          "method": "tools/list"})
    names = [t.get("name") for t in (tools.get("result") or {}).get("tools", [])]
    if tool not in names:
        # Not necessarily a mistake: the list hides what the policy denies, and measuring
        # blocked calls is part of the point.
        click.echo(f"mcpwall: note: {server!r} does not list {tool!r} (hidden by the policy, or no such tool)",
                   err=True)
    before = _counts(call_gateway(url, token, "GET", "/health"))
    report = asyncio.run(_run(url, token, server, tool, arguments, requests, concurrency, warmup))
    after = _counts(call_gateway(url, token, "GET", "/health"))
    sent = requests + warmup
    seen = {k: after[k] - before[k] for k in after}
    blocked = report["answers"]["blocked"] + report["warmup_answers"]["blocked"]
    report["gateway"] = {**seen, "agrees": seen["processed"] == sent and seen["blocked"] == blocked}
    report.update(server=server, tool=tool, url=url)
    if as_json:
        print_json(report)
    else:
        _print(report, sent)
    if report["answers"]["unanswered"] or report["warmup_answers"]["unanswered"] or not report["gateway"]["agrees"]:
        raise MCPWallError("not every call was answered, or the gateway's counts differ (see above)")


def _counts(health: dict[str, Any]) -> dict[str, int]:
    calls = health.get("calls")
    if not isinstance(calls, dict):
        raise MCPWallError("the gateway's /health has no call counts (an older mcpwall?)")
    return {k: int(calls.get(k, 0)) for k in ("processed", "blocked", "failed")}


async def _run(url: str, token: str, server: str, tool: str, arguments: dict[str, Any], requests: int,
               concurrency: int, warmup: int) -> dict[str, Any]:
    import httpx

    answers = {"allowed": 0, "blocked": 0, "rate_limited": 0, "failed": 0, "unanswered": 0}
    warm = {"blocked": 0, "unanswered": 0}
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "X-Mcpwall-Client": "mcpwall-benchmark"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url.rstrip("/"), headers=headers, limits=limits, timeout=60.0,
                                 trust_env=False) as client:

        async def one(i: int, measured: bool) -> None:
            body = orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}})
            started = time.perf_counter()
            try:
                answer = (await client.post(f"/{server}", content=body)).json()
            except (httpx.HTTPError, ValueError):
                (answers if measured else warm)["unanswered"] += 1
                return
            code = answer.get("error", {}).get("code") if isinstance(answer.get("error"), dict) else None
            key = ("allowed" if code is None else "blocked" if code == ErrorCode.BLOCKED
                   else "rate_limited" if code == ErrorCode.RATE_LIMITED else "failed")
            if not measured:
                if key == "blocked":
                    warm["blocked"] += 1
                return
            latencies.append(time.perf_counter() - started)
            answers[key] += 1

        for start in range(0, warmup, concurrency):
            await asyncio.gather(*(one(-1 - i, False) for i in range(start, min(warmup, start + concurrency))))
        began = time.perf_counter()
        for start in range(0, requests, concurrency):
            await asyncio.gather(*(one(i, True) for i in range(start, min(requests, start + concurrency))))
        elapsed = time.perf_counter() - began
    latencies.sort()

    def pct(q: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1000, 3) if latencies else None

    return {"requests": requests, "concurrency": concurrency, "warmup": warmup, "seconds": round(elapsed, 3),
            "calls_per_s": round(requests / elapsed, 1) if elapsed else None,
            "latency_ms": {"p50": pct(0.50), "p95": pct(0.95), "p99": pct(0.99)}, "answers": answers,
            "warmup_answers": warm}


def _print(report: dict[str, Any], sent: int) -> None:
    lat, ans, gw = report["latency_ms"], report["answers"], report["gateway"]
    click.echo(f"{report['requests']:,} calls of {report['server']}/{report['tool']} at {report['url']}, "
               f"{report['concurrency']} at a time, after {report['warmup']:,} warm-up calls")
    click.echo(f"  {report['calls_per_s']:,} calls/s over {report['seconds']} s; "
               f"latency p50 {lat['p50']} ms, p95 {lat['p95']} ms, p99 {lat['p99']} ms")
    click.echo(f"  answers: {ans['allowed']:,} allowed, {ans['blocked']:,} blocked by policy, "
               f"{ans['rate_limited']:,} rate limited, {ans['failed']:,} failed, {ans['unanswered']:,} unanswered")
    verdict = "agree" if gw["agrees"] else "DIFFER (other traffic, or calls the gateway did not see)"
    click.echo(f"  the gateway counted {gw['processed']:,} processed ({sent:,} sent), {gw['blocked']:,} blocked: "
               f"{verdict}")
