"""`mcpwall builtin`: the built-in tools (fetch_http, grep_http, http_headers, echo) as a stdio MCP server."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from mcpwall.cli._common import home_option, policy_path_for


@click.command()
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy whose allowlist.hosts the HTTP tools obey (default: <home>/policy.yaml; without "
                   "one, every public host is allowed).")
@click.option("--log-level", default="WARNING", show_default=True)
@home_option
def builtin(policy_file: Path | None, log_level: str, home: Path | None) -> None:
    """Serve the built-in tools over stdin/stdout.

    Configure the gateway with a server named `local` running this command to
    offer local__fetch_http, local__grep_http, local__http_headers and
    local__echo. Pass --policy explicitly: the gateway gives its servers only
    an allow-listed environment, without MCPWALL_HOME.
    """
    import anyio

    from mcpwall.builtin import serve

    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING),
                        format="%(levelname)s %(name)s: %(message)s")
    path = policy_path_for(home, policy_file)
    anyio.run(serve, path)


__all__ = ["builtin"]
