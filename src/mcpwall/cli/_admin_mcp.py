"""`mcpwall mcp`: the admin MCP server over stdio."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from mcpwall.cli._common import home_option, resolve_home
from mcpwall.errors import ConfigError


def _refuse_token(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.BadParameter("a token on the command line is refused: argv is readable by every user. "
                                 "Use MCPWALL_GATEWAY_TOKEN or --token-file.", param_hint="--token")


def _read_token(token_file: Path | None, home: Path) -> str | None:
    from mcpwall.admin import TOKEN_ENV

    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read --token-file {token_file}: {exc.strerror}") from exc
        if not token:
            raise ConfigError(f"--token-file {token_file} is empty")
        return token
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return env
    local = home / "run" / "gateway.token"  # the local gateway's own token file, when readable
    if local.is_file():
        return _read_token(local, home)
    return None


@click.command()
@click.option("--gateway-url", default="http://127.0.0.1:9420", show_default=True,
              help="The running gateway (mcpwall proxy).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File holding the gateway's bearer token (else MCPWALL_GATEWAY_TOKEN, else "
                   "<home>/run/gateway.token).")
@click.option("--token", "token_argv", default=None, expose_value=False, callback=_refuse_token, hidden=True)
@click.option("--timeout-ms", default=30000, show_default=True, type=click.IntRange(100, 600000),
              help="Bound on each HTTP call to the gateway.")
@click.option("--log-level", default="WARNING", show_default=True)
@home_option
def mcp(gateway_url: str, token_file: Path | None, timeout_ms: int, log_level: str, home: Path | None) -> None:
    """Serve the gateway's controls as MCP tools over stdin/stdout.

    Tools: mcpwall_status, mcpwall_servers, mcpwall_timeline, mcpwall_simulate,
    mcpwall_policy_get, mcpwall_rule_add, mcpwall_rule_remove,
    mcpwall_approvals_list, mcpwall_approve, mcpwall_deny, mcpwall_verify_audit,
    mcpwall_pins. stdout carries only the protocol; diagnostics go to stderr.
    Never give this server to an agent the gateway is guarding.
    """
    import anyio

    from mcpwall.admin import GatewayClient, create_server

    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    token = _read_token(token_file, resolve_home(home))
    if token is None:
        click.echo("mcpwall mcp: no token (MCPWALL_GATEWAY_TOKEN or --token-file); only a gateway run with "
                   "--insecure-no-auth will answer", err=True)
    client = GatewayClient(gateway_url, token, timeout_s=timeout_ms / 1000)

    async def main() -> None:
        try:
            await create_server(client).run_stdio_async()
        finally:
            await client.aclose()

    anyio.run(main)


__all__ = ["mcp"]
