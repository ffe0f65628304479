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
from mcpwall.errors import InternalError, MCPWallError

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
    "status": "mcpwall.cli._status:status",
    "login": "mcpwall.cli._login:login",
    "policy": "mcpwall.cli._policy:policy",
}


#: name -> the command's summary (its docstring's first sentence, as `get_short_help_str` reads it),
#: so that `--help` lists the commands without importing them; a test keeps it equal to the docstrings.
SUMMARIES: dict[str, str] = {
    "approve": "Approve a held call (ID from the gateway's log, a webhook, the dashboard or --list).",
    "baseline": "Replay the ledger (or FILE, a JSON or JSONL audit log) through the behavioural baseline.",
    "benchmark": "Load a running gateway with tools/call and report latency, throughput and the gateway's own counts.",
    "builtin": "Serve the built-in tools over stdin/stdout.",
    "check": "Scan client configs and exit 1 on any critical risk (a CI gate; writes nothing).",
    "dashboard": "Serve the dashboard (stats, live calls, approvals, simulate, servers) from the ledger.",
    "deny": "Deny a held call.",
    "diff": "Show what changed between two policy files, or two JSON risk reports.",
    "fuzz": "Run the attack corpus (traversal, rm -rf, exfiltration URLs, /etc/shadow, loopback and metadata "
            "addresses, NUL bytes, SQL injection, JNDI, shell substitution) through the policy, for every tool of "
            "every configured server (or 21 common tool names offline), at every distinct hour of the policy's "
            "time windows.",
    "import-observatory": "Convert mcp-observatory scan findings into suggested policy rules.",
    "init": "Scan, write policy.yaml, and route every client's MCP servers through mcpwall.",
    "inspect": "Scan tool definitions for poisoning and tool results for instructions aimed at the agent.",
    "login": "Obtain (and store, encrypted) an OAuth token for a remote upstream that requires one.",
    "logs": "Query the ledger: one line per tools/call, newest first.",
    "mcp": "Serve the gateway's controls as MCP tools over stdin/stdout.",
    "pin": "Tool-definition pins: list them, accept a change, or forget a server.",
    "policy": "The running gateway's policy.",
    "proxy": "Run the gateway: every server behind one policy-enforcing MCP endpoint.",
    "rbac-init": "Write the RBAC model and policy (roles admin/viewer, groupings agent_admin/agent_viewer).",
    "record": "Run the gateway and capture every session to <home>/sessions/<id>.mcpcap.json.",
    "relay": "Relay this process's stdin/stdout MCP session to a gateway over framed records.",
    "report": "Write a risk report of every MCP server found: Markdown, JSON or SARIF 2.1.0.",
    "simulate": "Decide one call against a policy without running anything.",
    "status": "Show the running gateway: policy, refused or held reloads, upstreams, ledger.",
    "test-policy": "Run policy unit tests: `tests: [{name, tool, args, expect, matchReason}]`.",
    "timeline": "Per-session chronological view of the ledger.",
    "uninstall": "Restore every client config that `mcpwall init` rewrote, byte for byte.",
    "verify-audit": "Check the ledger's HMAC chain, or a signed JSONL audit file (mcp-seatbelt's format).",
    "wrap": "Guard one stdio server in place: mcpwall wrap --name fs -- npx -y @modelcontextprotocol/server-filesystem "
            "/tmp",
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
        except InternalError:
            raise  # its own code answers it: one that gets here is a bug, and shows as one (mcpwall.errors)
        except MCPWallError as exc:
            raise WallClickError(exc) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if _available(name))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing imports every command for its docstring (0.6 s for `--help`, issue 29);
        # this one shortens SUMMARIES the way click does and imports only a command missing there.
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            summary = SUMMARIES.get(name)
            if summary is None:
                command = self.get_command(ctx, name)
                summary = command.get_short_help_str(limit) if command is not None else ""
            else:
                summary = click.Command(name, help=summary).get_short_help_str(limit)
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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


__all__ = ["COMMANDS", "SUMMARIES", "WallClickError", "cli", "main"]
