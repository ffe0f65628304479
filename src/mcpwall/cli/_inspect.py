"""`mcpwall inspect`: the poisoning scan, offline or against live servers.

    mcpwall inspect tools.json             a saved tools/list result ({"tools": [...]}) or
                                           tools/call result ({"content": [...]}); "-" reads stdin
    mcpwall inspect --server fs            connect to a configured server and scan its live tools
    mcpwall inspect --all                  every configured server, checked against each other

Servers come from <home>/policy.yaml `servers:` (or `--policy`) and `--servers
FILE` (mcpServers JSON). The official MCP client connects to them. One line
(or JSON object) per finding: tool, kind, severity, evidence. Exit 0 clean,
1 on a finding or a server that cannot be scanned, 2 on bad input. Useful in a
server author's CI: `mcpwall inspect saved-tools.json`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcpwall.cli._common import home_option, json_option, policy_path_for, print_json
from mcpwall.errors import ConfigError, MCPWallError
from mcpwall.security.poisoning import Finding, scan_payload, scan_prompt, scan_tools

if TYPE_CHECKING:  # a saved file is scanned without the policy engine or anyio (start-up, issue 29)
    from mcpwall.policy import ServerSpec


def _load_file(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: nested too deeply to read as JSON (a definition nested this deep "
                          "is not one a client could show)") from exc


def configured_servers(home: Path | None, policy: Path | None, servers_files: tuple[Path, ...]) -> dict[str, ServerSpec]:
    """Servers from policy.yaml and mcpServers files, in that order (later files win)."""
    from mcpwall.policy import load_policy
    from mcpwall.proxy import load_servers_file

    servers: dict[str, ServerSpec] = {}
    path = policy_path_for(home, policy)
    if path is not None:
        servers.update(load_policy(path).servers)
    for f in servers_files:
        servers.update(load_servers_file(f))
    return servers


async def _fetch(name: str, spec: ServerSpec, timeout: float) -> dict[str, list[dict[str, Any]]]:
    """tools/list, prompts/list, resources/list and resources/templates/list (every page) of one
    live server, through the official client."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            with anyio.fail_after(timeout):
                if spec.url:
                    if spec.transport == "sse":
                        from mcp.client.sse import sse_client
                        transport: Any = sse_client(spec.url, headers=dict(spec.headers) or None)
                    elif spec.headers:
                        import httpx2
                        from mcp.client.streamable_http import streamable_http_client
                        transport = streamable_http_client(spec.url, http_client=httpx2.AsyncClient(
                            headers=dict(spec.headers)))
                    else:
                        transport = spec.url
                else:
                    assert spec.command is not None
                    params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env) or None,
                                                   cwd=spec.cwd)
                    transport = stdio_client(params, errlog=errlog)
                async with Client(transport, mode="legacy") as client:
                    return await _lists(client)
        except TimeoutError as exc:
            raise MCPWallError(f"server {name!r}: no answer within {timeout:g}s") from exc
        except Exception as exc:
            if isinstance(exc, MCPWallError):
                raise
            errlog.seek(0)
            tail = errlog.read()[-500:].strip()
            raise MCPWallError(f"server {name!r}: cannot list its tools: {exc.__class__.__name__}: {exc}"
                               + (f"\n{tail}" if tail else "")) from exc


#: (list method, request type, result key, server capability) of what a server shows the model
_LISTS = (("tools/list", "ListToolsRequest", "tools", "tools"),
          ("prompts/list", "ListPromptsRequest", "prompts", "prompts"),
          ("resources/list", "ListResourcesRequest", "resources", "resources"),
          ("resources/templates/list", "ListResourceTemplatesRequest", "resourceTemplates", "resources"))


async def _lists(client: Any) -> dict[str, list[dict[str, Any]]]:
    """Every page of each list the server offers, as the server sent it: the raw JSON, not the
    SDK's models, which drop the fields they do not know (a top-level `x-*` key, an annotation's
    extra key) that a client passing definitions on whole would still show the model."""
    from mcp import types
    from pydantic import TypeAdapter

    raw = TypeAdapter(dict[str, Any])
    out: dict[str, list[dict[str, Any]]] = {}
    for _method, request, key, capability in _LISTS:
        out[key] = []
        if key != "tools" and getattr(client.server_capabilities, capability, None) is None:
            continue
        cursor: str | None = None
        for _ in range(100):
            page = await client.session.send_request(
                getattr(types, request)(params=types.PaginatedRequestParams(cursor=cursor)), raw)
            out[key] += [item for item in page.get(key) or [] if isinstance(item, dict)]
            cursor = page.get("nextCursor") if isinstance(page.get("nextCursor"), str) else None
            if not cursor:
                break
    return out


def scan_servers(servers: Mapping[str, ServerSpec], timeout: float) -> tuple[list[Finding], dict[str, str], int]:
    """(findings, errors by server, tools scanned) for live servers, each checked against the others."""
    import anyio

    listed: dict[str, dict[str, list[dict[str, Any]]]] = {}
    errors: dict[str, str] = {}

    async def fetch_all() -> None:
        async def one(name: str, spec: ServerSpec) -> None:
            try:
                listed[name] = await _fetch(name, spec, timeout)
            except MCPWallError as exc:
                errors[name] = str(exc)

        async with anyio.create_task_group() as tg:
            for name, spec in servers.items():
                tg.start_soon(one, name, spec)

    anyio.run(fetch_all)
    names = {s: [str(t.get("name")) for t in got["tools"]] for s, got in listed.items()}
    findings: list[Finding] = []
    for server in servers:
        if server not in listed:
            continue
        # the other servers' definitions too: a description copied from another server is a finding
        findings += scan_tools(listed[server]["tools"], server=server, others=names,
                               definitions={s: got["tools"] for s, got in listed.items()})
        for key in ("prompts", "resources", "resourceTemplates"):
            for item in listed[server].get(key, []):
                findings += scan_prompt(item, server=server)
    return findings, errors, sum(len(v) for v in names.values())


def _print(findings: list[Finding]) -> None:
    for f in findings:
        where = f"{f.server}/" if f.server else ""
        click.echo(f"{where}{f.tool or '(result)'}  {f.kind}  {f.severity}  [{f.where}]  {f.evidence}")


@click.command("inspect")
@click.argument("file", required=False)
@click.option("--server", "server_names", multiple=True, help="A configured server to scan live. Repeatable.")
@click.option("--all", "scan_all", is_flag=True, help="Scan every configured server.")
@click.option("--servers", "servers_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="An mcpServers JSON file to take servers from. Repeatable.")
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy file whose servers: to use (default: <home>/policy.yaml).")
@click.option("--timeout", default=60.0, show_default=True, type=float, help="Seconds to wait for each server.")
@json_option
@home_option
def inspect(file: str | None, server_names: tuple[str, ...], scan_all: bool, servers_files: tuple[Path, ...],
            policy_file: Path | None, timeout: float, as_json: bool, home: Path | None) -> None:
    """Scan tool definitions for poisoning and tool results for instructions aimed at the agent."""
    if sum(bool(x) for x in (file, server_names, scan_all)) != 1:
        raise click.UsageError("give one of FILE, --server S or --all")
    errors: dict[str, str] = {}
    if file is not None:
        try:
            payload = _load_file(file)
            findings = scan_payload(payload)
        except ValueError as exc:
            raise ConfigError(f"{file}: {exc}") from exc
        from mcpwall.cli._scanned import payload_counts

        scanned: dict[str, Any] = {"file": file, **payload_counts(payload)}
    else:
        servers = configured_servers(home, policy_file, servers_files)
        if scan_all:
            chosen = dict(servers)
            if not chosen:
                raise ConfigError("no servers configured (policy.yaml servers: or --servers FILE)")
        else:
            missing = [s for s in server_names if s not in servers]
            if missing:
                raise ConfigError(f"unknown server(s) {', '.join(missing)}; configured: "
                                  f"{', '.join(servers) or 'none'}")
            chosen = {s: servers[s] for s in server_names}
        findings, errors, count = scan_servers(chosen, timeout)
        scanned = {"servers": sorted(chosen), "tools": count}
    if as_json:
        print_json({"scanned": scanned, "findings": [f.as_dict() for f in findings], "errors": errors})
    else:
        _print(findings)
        for _name, message in errors.items():
            click.echo(f"mcpwall: {message}", err=True)
        if not findings and not errors:
            from mcpwall.cli._scanned import scanned_text

            click.echo(f"no findings in {scanned_text(scanned)}")
    if findings or errors:
        raise click.exceptions.Exit(1)


__all__ = ["configured_servers", "inspect", "scan_servers"]
