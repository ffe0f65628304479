"""`mcpwall approve` / `mcpwall deny`: answer an `ask` through the running gateway's HTTP API.

    mcpwall approve --list                        what waits for a person
    mcpwall approve 3f9a1c0b2d4e [--similar 15]   release that one call (and grant similar calls for 15 min)
    mcpwall deny 3f9a1c0b2d4e [--reason TEXT]     refuse it

The gateway's token comes from `$MCPWALL_TOKEN`, `--token-file`, else
`<home>/run/gateway.token` (never from the command line: argv is readable by
every user). The gateway is found where it recorded its address
(`<home>/run/gateway.json`, see `mcpwall._endpoint`), or named with `--url`. A
gateway without an HTTP API (`wrap`, `proxy --stdio`) records none: then, or
with `--via-ledger`, the answer goes into the home's ledger, which the holding
gateway polls. Exit 0 when the
answer was taken, 1 when the gateway refused it (unknown id, already
answered, expired) or cannot be reached, 2 for bad input or no token.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click
import orjson

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import ConfigError, MCPWallError

DEFAULT_URL = "http://127.0.0.1:9420"


def gateway_token(home: Path | None, token_file: Path | None) -> str:
    from mcpwall.proxy import TOKEN_ENV, read_secret, token_path

    env = os.environ.get(TOKEN_ENV)
    if env and env.strip():
        return env.strip()
    if token_file is not None:
        return read_secret(token_file)
    path = token_path(resolve_home(home))
    if not path.exists():
        raise ConfigError(f"no gateway token: set ${TOKEN_ENV}, pass --token-file, or start the gateway once "
                          f"(it writes {path})")
    return read_secret(path)


def call_gateway(url: str, token: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One authenticated call to the gateway's API; MCPWallError (exit 1) when it fails or refuses."""
    import httpx

    try:
        response = httpx.request(method, url.rstrip("/") + path, content=orjson.dumps(body) if body is not None
                                 else None, timeout=30.0, trust_env=False,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                          "X-Mcpwall-Via": "cli"})
    except httpx.HTTPError as exc:
        raise MCPWallError(f"cannot reach the gateway at {url}: {exc.__class__.__name__}: {exc}"
                           .replace(token, "[REDACTED]")) from None
    try:
        value = response.json()
    except ValueError:
        value = {"error": response.text[:300]}
    if response.status_code >= 400:
        message = value.get("error") if isinstance(value, dict) else value
        raise MCPWallError(f"the gateway refused: HTTP {response.status_code}: {message}")
    return value


def refuse_token(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.BadParameter("a token on the command line is refused: argv is readable by every user. "
                                 "Use MCPWALL_TOKEN or --token-file.", param_hint="--token")


class _LedgerBook:
    """`--via-ledger`: answer in the home's ledger (the approval book the gateway polls), without HTTP.

    For gateways that serve no HTTP API: `mcpwall wrap` and `proxy --stdio`, launched by desktop
    clients. Whoever can write the ledger can answer; it holds no more than the token file does.
    """

    def __init__(self, home: Path | None, ledger_url: str | None) -> None:
        from mcpwall.approvals import ApprovalBook
        from mcpwall.cli._ledger import open_for_cli

        self.ledger = open_for_cli(home, ledger_url)
        self.book = ApprovalBook(self.ledger)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        from mcpwall.approvals import ApprovalError

        parts = [p for p in path.split("/") if p]
        body = body or {}
        try:
            if parts == ["api", "approvals"]:
                return self.book.pending()
            if parts[-1] == "approve":
                return self.book.approve(parts[2], via="cli", similar_minutes=body.get("similar_minutes"),
                                         expected_hash=body.get("call_hash"))
            return self.book.deny(parts[2], via="cli", reason=body.get("reason"))
        except ApprovalError as exc:
            raise MCPWallError(f"the ledger's approval book refused: {exc}") from None
        finally:
            self.ledger.close()


def gateway_url(home: Path | None, url: str | None) -> str | None:
    """`--url`, else where the gateway serving this home said it listens (`run/gateway.json`), else None."""
    from mcpwall import _endpoint

    return url or _endpoint.find(resolve_home(home))


def _answer(home: Path | None, token_file: Path | None, url: str | None, via_ledger: bool, ledger_url: str | None,
            method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    found = None if via_ledger else gateway_url(home, url)
    if found is not None:
        return call_gateway(found, gateway_token(home, token_file), method, path, body)
    if via_ledger or ledger_url is not None or _has_local_ledger(home):
        # No gateway with an HTTP API serves this home (`wrap`, `proxy --stdio`, or none at all):
        # the answer goes into the ledger's approval book, which a holding gateway polls.
        return _LedgerBook(home, ledger_url).call(method, path, body)
    # Nothing recorded and no ledger: the default address, so that a missing token or a stopped gateway is
    # reported as such.
    return call_gateway(DEFAULT_URL, gateway_token(home, token_file), method, path, body)


def _has_local_ledger(home: Path | None) -> bool:
    return (resolve_home(home) / "ledger.db").exists()


def _connection(func: Any) -> Any:
    func = click.option("--via-ledger", is_flag=True,
                        help="Answer in the home's ledger instead of over HTTP (for `wrap` and `--stdio` "
                             "gateways, which serve no HTTP API).")(func)
    func = click.option("--ledger", "ledger_url", default=None, help="With --via-ledger: the ledger URL.")(func)
    func = click.option("--token", "token_argv", default=None, expose_value=False, callback=refuse_token,
                        hidden=True)(func)
    func = click.option("--url", default=None,
                        help="The gateway's base URL (default: where the gateway serving --home listens, from "
                             "<home>/run/gateway.json; without one, the home's ledger).")(func)
    func = click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="File holding the gateway token (default: $MCPWALL_TOKEN, then "
                             "<home>/run/gateway.token).")(func)
    return home_option(json_option(func))


def _age(ts: Any) -> str:
    seconds = time.time() - float(ts or 0)
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.0f}m"


def _print_pending(rows: list[dict[str, Any]]) -> None:
    if not rows:
        click.echo("nothing waits for approval")
        return
    for r in rows:
        left = float(r.get("expires") or 0) - time.time()
        args = orjson.dumps(r.get("arguments"), default=str).decode()
        click.echo(f"{r.get('id')}  {r.get('server')}/{r.get('tool')}  waiting {_age(r.get('created'))}, "
                   f"{max(0.0, left):.0f}s left  rules: {', '.join(r.get('rule_ids') or []) or '-'}")
        click.echo(f"    agent={r.get('agent') or '-'} client={r.get('client') or '-'} "
                   f"hash={str(r.get('call_hash'))[:16]}  args: {args[:300]}")


@click.command("approve")
@click.argument("approval_id", required=False)
@click.option("--list", "list_", is_flag=True, help="List the asks that wait for a person.")
@click.option("--similar", "similar", type=click.IntRange(1, 24 * 60), default=None, metavar="MINUTES",
              help="Also allow calls like this one (same server, tool, agent, argument names) for MINUTES.")
@click.option("--hash", "call_hash", default=None, help="Refuse unless the held call has this hash (from --list).")
@_connection
def approve(approval_id: str | None, list_: bool, similar: int | None, call_hash: str | None, url: str | None,
            token_file: Path | None, home: Path | None, as_json: bool, via_ledger: bool,
            ledger_url: str | None) -> None:
    """Approve a held call (ID from the gateway's log, a webhook, the dashboard or --list)."""
    if list_:
        rows = _answer(home, token_file, url, via_ledger, ledger_url, "GET", "/api/approvals")
        if as_json:
            print_json(rows)
        else:
            _print_pending(rows)
        return
    if not approval_id:
        raise click.UsageError("give an approval ID, or --list")
    body: dict[str, Any] = {}
    if similar:
        body["similar_minutes"] = similar
    if call_hash:
        body["call_hash"] = call_hash
    record = _answer(home, token_file, url, via_ledger, ledger_url, "POST",
                     f"/api/approvals/{quote(approval_id, safe='')}/approve", body)
    if as_json:
        print_json(record)
        return
    line = f"approved {record.get('id')}: {record.get('server')}/{record.get('tool')} may run once"
    if record.get("grant_id"):
        line += f"; grant {record['grant_id']} allows similar calls for {record.get('similar_minutes')} min"
    click.echo(line)


@click.command("deny")
@click.argument("approval_id")
@click.option("--reason", default=None, help="Why (recorded in the ledger and returned to the agent).")
@_connection
def deny(approval_id: str, reason: str | None, url: str | None, token_file: Path | None, home: Path | None,
         as_json: bool, via_ledger: bool, ledger_url: str | None) -> None:
    """Deny a held call."""
    record = _answer(home, token_file, url, via_ledger, ledger_url, "POST",
                     f"/api/approvals/{quote(approval_id, safe='')}/deny", {"reason": reason} if reason else {})
    if as_json:
        print_json(record)
        return
    click.echo(f"denied {record.get('id')}: {record.get('server')}/{record.get('tool')}"
               + (f" ({record.get('reason')})" if record.get("reason") else ""))


__all__ = ["DEFAULT_URL", "approve", "call_gateway", "deny", "gateway_token", "gateway_url", "refuse_token"]
