"""`mcpwall status`: the running gateway at a glance, for a person or a script.

    mcpwall status [--home H] [--url URL] [--token-file F] [--json]

Finds the gateway serving the home where it recorded its address (`run/gateway.json`, or
`--url`), asks its `/health` with the gateway's token and prints: the policy in force (file,
revision, mode), the last reload it refused and a reload it holds for a person (`mcpwall
policy reload`), each upstream with its state and circuit, and the ledger's head and health.
It also says how the hot path runs (compiled, or as Python because the build is stale, absent or
disabled by MCPWALL_PURE), warning when a stale or missing build slows the gateway.
Exit 0 when all is well; 1 when no gateway answers, an upstream is not ready, the ledger
cannot be written, or a reload was refused or is held (each a thing a person should look at);
2 for bad input or no token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mcpwall.cli._approvals import call_gateway, gateway_token, gateway_url, refuse_token
from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import MCPWallError


def findings(health: dict[str, Any]) -> list[str]:
    """What in a /health answer a person should look at, one line each (empty: all is well)."""
    out = []
    policy = health.get("policy") or {}
    if policy.get("held_reload"):
        held = policy["held_reload"]
        what = held.get("file") or held.get("path") if isinstance(held, dict) else held
        out.append(f"a policy change is held until a person runs `mcpwall policy reload`: {what}")
    if policy.get("last_error"):
        out.append(f"the last policy reload was refused (the previous policy stays): {policy['last_error']}")
    for name, s in sorted((health.get("servers") or {}).items()):
        if s.get("state") != "ready":
            out.append(f"upstream {name} is {s.get('state')}: {s.get('last_error') or 'no error recorded'}")
        elif s.get("circuit") not in (None, "closed"):
            out.append(f"upstream {name}: circuit {s.get('circuit')}")
    audit = (health.get("stages") or {}).get("audit") or {}
    if audit and audit.get("healthy") is False:
        out.append(f"the ledger cannot be written: {audit.get('last_error') or 'unknown error'}")
    if audit.get("rolled_back"):
        out.append(f"the ledger is behind its anchor (rolled back?): {audit['rolled_back']}")
    return out


#: What `status` says of a hot path that is not compiled (`mcpwall._native.hot_path`).
SLOW = {"stale": "the hot path runs as Python: its compiled build is stale (a source changed after it was "
                 "built); run `make native` and restart the gateway",
        "absent": "the hot path runs as Python: there is no compiled build (`make native` makes one)"}


def warnings(health: dict[str, Any]) -> list[str]:
    """What is not wrong but costs the user something (printed; the exit code stays 0)."""
    state = (health.get("hot_path") or {}).get("state")
    return [SLOW[state]] if state in SLOW else []


def _print(url: str, health: dict[str, Any], problems: list[str]) -> None:
    policy = health.get("policy") or {}
    click.echo(f"gateway   {url}  {health.get('status')}  (mcpwall {health.get('version')}, "
               f"up {health.get('uptime_s')} s, {health.get('sessions', 0)} sessions)")
    click.echo(f"policy    {policy.get('path')}  revision {policy.get('revision')}  mode {policy.get('mode')}  "
               f"{policy.get('rules')} rules, {policy.get('reloads', 0)} reloads")
    for name, s in sorted((health.get("servers") or {}).items()):
        era = f"{s.get('era')} {s.get('protocol_version')}  " if s.get("era") else ""
        auth = (s.get("authorization") or {}).get("state", "none")
        click.echo(f"upstream  {name}: {s.get('state')}  circuit {s.get('circuit')}  {s.get('tools')} tools  "
                   f"{era}({s.get('transport')})" + (f"  authorization: {auth}" if auth != "none" else ""))
    audit = (health.get("stages") or {}).get("audit") or {}
    if audit:
        click.echo(f"ledger    {audit.get('backend')} {audit.get('url') or ''}  head {audit.get('head') or '-'}  "
                   f"{'healthy' if audit.get('healthy', True) else 'NOT WRITABLE'}")
    hot = health.get("hot_path") or {}
    if hot:
        click.echo(f"hot path  {hot.get('state')}" + (f" ({hot.get('modules')} modules)" if hot.get("modules") else ""))
    for line in [*problems, *warnings(health)]:
        click.echo(f"! {line}", err=True)


def _authorization(home: Path, health: dict[str, Any]) -> None:
    """Each upstream's OAuth authorization state (none / authorized until T / login required), from the
    home's token store index (no secret is read)."""
    from mcpwall.oauth import TokenStore, server_authorization

    held = TokenStore(home).index()
    for name, s in (health.get("servers") or {}).items():
        if isinstance(s, dict):
            s["authorization"] = server_authorization(held.get(name), s.get("last_error"))


@click.command("status")
@click.option("--url", default=None, help="The gateway's base URL (default: where the gateway serving --home "
                                          "listens, from <home>/run/gateway.json).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File holding the gateway token (default: $MCPWALL_TOKEN, then <home>/run/gateway.token).")
@click.option("--token", "token_argv", default=None, expose_value=False, callback=refuse_token, hidden=True)
@home_option
@json_option
def status(url: str | None, token_file: Path | None, home: Path | None, as_json: bool) -> None:
    """Show the running gateway: policy, refused or held reloads, upstreams, ledger."""
    found = gateway_url(home, url)
    if found is None:
        raise MCPWallError(f"no gateway with an HTTP API is running for {resolve_home(home)} (none recorded in "
                           f"run/gateway.json); start `mcpwall proxy`, or pass --url")
    health = call_gateway(found, gateway_token(home, token_file), "GET", "/health")
    _authorization(resolve_home(home), health)
    problems = findings(health)
    if as_json:
        print_json({"url": found, **health, "findings": problems, "warnings": warnings(health)})
    else:
        _print(found, health, problems)
    if problems:
        raise SystemExit(1)


__all__ = ["findings", "status", "warnings"]
