"""`mcpwall relay`: the stdio MCP server an agent in a sandbox launches to reach the gateway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from mcpwall.cli._common import home_option, resolve_home


@click.command()
@click.option("--connect", "address", default=None, metavar="ADDR",
              help="The gateway's framed listener: unix:PATH, tcp:HOST:PORT or vsock:CID:PORT "
                   "(default: unix:<home>/run/relay.sock).")
@click.option("--process-name", default=None,
              help="Process name recorded in the ledger (default: the name of the process that launched the relay).")
@click.option("--connect-timeout", default=10.0, show_default=True, type=float, help="Seconds to wait for the gateway.")
@click.option("--log-level", default="WARNING", show_default=True)
@home_option
def relay(address: str | None, process_name: str | None, connect_timeout: float, log_level: str,
          home: Path | None) -> None:
    """Relay this process's stdin/stdout MCP session to a gateway over framed records.

    The agent launches `mcpwall relay --connect unix:/run/mcpwall/agent.sock` as
    its MCP server; stdout carries only the protocol, diagnostics go to stderr.
    The relay holds no token: reaching the socket is the credential.
    """
    from mcpwall.proxy import configure_logging, run
    from mcpwall.relay import Relay, parent_process_name, parse_address

    configure_logging(log_level)
    target = parse_address(address or f"unix:{resolve_home(home) / 'run' / 'relay.sock'}")
    name = process_name if process_name is not None else parent_process_name()
    code = 0

    async def main() -> None:
        nonlocal code
        code = await Relay(target, name, connect_timeout=connect_timeout).run()

    try:
        run(main())
    except KeyboardInterrupt:
        code = 130
    except asyncio.CancelledError:
        code = 1
    if code:
        raise click.exceptions.Exit(code)


__all__ = ["relay"]
