"""`mcpwall policy reload`: load a policy change the running gateway held back for a person.

A policy file that changed while a tools/call the gateway had allowed was in
flight (or had just ended) may have been written by that call: the gateway
keeps its current policy, logs the change loudly and shows it in `/health`
(`policy.held_reload`). This command asks the gateway, through its admin API
and with its own token (`$MCPWALL_TOKEN`, `--token-file`, else
`<home>/run/gateway.token`: a file the gateway refuses to any tool), to load the
policy files as they are now. It prints the new revision, or the load error
(the old policy then stays in force). Exit 0 loaded, 1 refused or failed or
unreachable, 2 usage or no token.
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpwall.cli._common import home_option, json_option, print_json


@click.group()
def policy() -> None:
    """The running gateway's policy.

    \b
    mcpwall policy reload [--home DIR] [--url URL]   load a change the gateway held back
    """


@policy.command()
@click.option("--url", default=None, help="The gateway's base URL (default: the one it recorded for this home, "
                                          "else http://127.0.0.1:9420).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File holding the gateway's token (default: $MCPWALL_TOKEN, else <home>/run/gateway.token).")
@json_option
@home_option
def reload(url: str | None, token_file: Path | None, as_json: bool, home: Path | None) -> None:
    """Load the policy files now, releasing a reload the gateway held back."""
    from mcpwall.cli import _approvals

    found = _approvals.gateway_url(home, url) or _approvals.DEFAULT_URL
    answer = _approvals.call_gateway(found, _approvals.gateway_token(home, token_file), "POST",
                                     "/api/admin/policy/reload")
    if as_json:
        print_json(answer)
    loaded = bool(answer.get("loaded")) if isinstance(answer, dict) else False
    if not as_json:
        released = answer.get("released") if isinstance(answer, dict) else None
        if loaded:
            click.echo(f"policy reloaded: revision {answer.get('previous_revision')} -> {answer.get('revision')}"
                       + (f" (released the reload held since {', '.join(released.get('files') or [])} changed)"
                          if isinstance(released, dict) else ""))
        else:
            click.echo(f"policy reload failed: {answer.get('error') if isinstance(answer, dict) else answer}; "
                       f"revision {answer.get('revision') if isinstance(answer, dict) else '?'} stays in force",
                       err=True)
    if not loaded:
        raise SystemExit(1)


__all__ = ["policy"]
