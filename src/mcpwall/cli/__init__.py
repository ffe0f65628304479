"""The `mcpwall` command: the only place that prints or exits.

Sub-commands live in their own modules and are imported only when used, so
that `mcpwall wrap ...` (launched by desktop clients for every server) starts
fast. Exit codes: 0 ok, 1 finding or failure, 2 usage or bad input.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click

from mcpwall import __version__
from mcpwall.errors import MCPWallError

#: name -> "module:attribute". A module that does not exist yet is not listed.
COMMANDS: dict[str, str] = {
    # seatbelt's commands
    "init": "mcpwall.cli._init:init",
    "proxy": "mcpwall.cli._proxy:proxy",
    "report": "mcpwall.cli._report:report",
    "check": "mcpwall.cli._report:check",
    "diff": "mcpwall.cli._diff:diff",
    "dashboard": "mcpwall.cli._dashboard:dashboard",
    "import-observatory": "mcpwall.cli._observatory:import_observatory",
    "baseline": "mcpwall.cli._baseline:baseline",
    "verify-audit": "mcpwall.cli._ledger:verify_audit",
    "record": "mcpwall.cli._proxy:record",
    "benchmark": "mcpwall.cli._benchmark:benchmark",
    "simulate": "mcpwall.cli._simulate:simulate",
    "test-policy": "mcpwall.cli._test_policy:test_policy",
    "fuzz": "mcpwall.cli._fuzz:fuzz",
    "rbac-init": "mcpwall.cli._rbac:rbac_init",
    # ours
    "wrap": "mcpwall.cli._proxy:wrap",
    "logs": "mcpwall.cli._ledger:logs",
    "timeline": "mcpwall.cli._ledger:timeline",
    "approve": "mcpwall.cli._approvals:approve",
    "deny": "mcpwall.cli._approvals:deny",
    "pin": "mcpwall.cli._pin:pin",
    "inspect": "mcpwall.cli._inspect:inspect",
    "relay": "mcpwall.cli._relay:relay",
    "builtin": "mcpwall.cli._builtin:builtin",
    "mcp": "mcpwall.cli._admin_mcp:mcp",
    "uninstall": "mcpwall.cli._init:uninstall",
}


def _available(name: str) -> bool:
    module = COMMANDS[name].split(":", 1)[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


class WallClickError(click.ClickException):
    """An MCPWallError on its way out: one line on stderr, the error's exit code."""

    def __init__(self, error: MCPWallError) -> None:
        super().__init__(str(error))
        self.exit_code = error.exit_code  # type: ignore[misc]

    def show(self, file: Any = None) -> None:
        click.echo(f"mcpwall: {self.format_message()}", err=True)


class _LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MCPWallError as exc:
            raise WallClickError(exc) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if _available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(cmd_name):
            return None
        module, attr = target.split(":", 1)
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpwall")
def cli() -> None:
    """mcpwall: a firewall for the Model Context Protocol.

    Finds the MCP servers this machine uses, scores their risk, and stands
    between agents and servers with a policy-driven gateway and a
    tamper-evident ledger.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point: click maps usage errors to 2 and WallClickError to the error's code."""
    cli.main(args=argv, prog_name="mcpwall")


__all__ = ["COMMANDS", "WallClickError", "cli", "main"]
