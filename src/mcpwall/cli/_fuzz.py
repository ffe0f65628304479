"""`mcpwall fuzz`: look for attack payloads the policy lets through (exit 1 when any)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
import click
from rich.console import Console
from rich.table import Table

from mcpwall.cli._common import home_option, json_option, policy_path_for, print_json
from mcpwall.errors import ConfigError, MCPWallError
from mcpwall.policy import ServerSpec, load_engine
from mcpwall.security.fuzz import COMMON_TOOLS, CORPUS, ToolResult, fuzz_tool, fuzz_tools


async def _list_tools(name: str, spec: ServerSpec, errlog: TextIO) -> list[dict[str, Any]]:
    """The server's tools/list, through the official MCP client (the server's stderr goes to `errlog`)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    target: Any
    if spec.command:
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env={**os.environ, **spec.env},
                                       cwd=spec.cwd)
        target = stdio_client(params, errlog=errlog)
    elif spec.url and spec.transport in (None, "streamable-http", "http"):
        target = spec.url
    else:
        raise ConfigError(f"server {name!r}: fuzz reaches stdio and streamable HTTP servers only")
    with anyio.fail_after(60):
        async with Client(target) as client:
            tools = (await client.list_tools()).tools
    return [t.model_dump(by_alias=True, exclude_none=True) for t in tools]


def _servers(policy_servers: dict[str, ServerSpec], files: tuple[Path, ...]) -> dict[str, ServerSpec]:
    from mcpwall.proxy import load_servers_file

    servers = dict(policy_servers)
    for path in files:
        servers.update(load_servers_file(path))
    return servers


@click.command()
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy file (default: <home>/policy.yaml, else the built-in default).")
@click.option("--server", "-s", "only", multiple=True, help="Fuzz only this configured server (repeatable).")
@click.option("--servers", "servers_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="An mcpServers JSON file with more servers.")
@click.option("--offline", is_flag=True, help="Do not start servers: fuzz seatbelt's 21 common tool names.")
@click.option("--iterations", "-n", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="Schema-valid base argument sets per tool.")
@click.option("--now", "now_text", default=None, help="Start the week of instants at this ISO 8601 time.")
@json_option
@home_option
def fuzz(policy_file: Path | None, only: tuple[str, ...], servers_files: tuple[Path, ...], offline: bool,
         iterations: int, now_text: str | None, as_json: bool, home: Path | None) -> None:
    """Run the attack corpus (traversal, rm -rf, exfiltration URLs, /etc/shadow, loopback and metadata
    addresses, NUL bytes, SQL injection, JNDI, shell substitution) through the policy, for every tool of
    every configured server (or 21 common tool names offline), at every distinct hour of the policy's time
    windows. Every payload that is not denied is a bypass; exit 1 when there is any.
    """
    from mcpwall.cli._simulate import parse_now

    engine = load_engine(policy_path_for(home, policy_file))
    policy = engine.compiled
    now: datetime = parse_now(now_text)
    servers = {} if offline else _servers(dict(policy.source.servers), servers_files)
    if only:
        missing = [s for s in only if s not in servers]
        if missing:
            raise ConfigError(f"unknown server(s): {', '.join(missing)}; configured: {', '.join(servers) or 'none'}")
        servers = {k: v for k, v in servers.items() if k in only}
    results: list[ToolResult] = []
    if servers:
        for name, spec in servers.items():
            try:
                # the server's stderr is noise here (and sys.stderr may not be a real file)
                with open(os.devnull, "w") as devnull:
                    tools = anyio.run(_list_tools, name, spec, devnull)
            except MCPWallError:
                raise
            except Exception as exc:
                raise MCPWallError(f"server {name!r}: could not list its tools: {exc}") from exc
            results.extend(fuzz_tools(policy, tools, server=name, iterations=iterations, now=now))
    else:
        results = [fuzz_tool(policy, name, iterations=iterations, now=now) for name in COMMON_TOOLS]
    tested = sum(r.tested for r in results)
    blocked = sum(r.blocked for r in results)
    bypasses = [b for r in results for b in r.bypasses]
    if as_json:
        print_json({"summary": {"tools": len(results), "payloads": len(CORPUS), "tested": tested,
                                "blocked": blocked, "bypasses": len(bypasses),
                                "mode": "servers" if servers else "offline"},
                    "results": [r.as_dict() for r in results]})
    else:
        _print(results, tested, blocked, bypasses)
    if bypasses:
        raise click.exceptions.Exit(1)


def _print(results: list[ToolResult], tested: int, blocked: int, bypasses: list[Any]) -> None:
    console = Console()
    table = Table(title="mcpwall fuzz")
    for col in ("server", "tool", "tested", "blocked", "allowed", "bypasses"):
        table.add_column(col, justify="right" if col in ("tested", "blocked", "allowed", "bypasses") else "left")
    for r in results:
        table.add_row(r.server or "-", r.tool, str(r.tested), str(r.blocked), str(r.allowed),
                      f"[bold red]{len(r.bypasses)}[/]" if r.bypasses else "0")
    console.print(table)
    if not bypasses:
        console.print(f"[bold green]Tested {tested} calls, {blocked} blocked, 0 bypasses.[/]")
        return
    console.print(f"[bold red]{len(bypasses)} bypass(es):[/]")
    for b in bypasses[:200]:
        console.print(f"  [{b.server + '/' if b.server else ''}{b.tool}] {b.category}: {b.key}={b.payload!r} -> "
                      f"{b.action} at {b.at} (rules: {', '.join(b.rule_ids) or 'none'})", markup=False,
                      highlight=False)


__all__ = ["fuzz"]
