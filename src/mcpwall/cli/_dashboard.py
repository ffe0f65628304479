"""`mcpwall dashboard`: the dashboard on its own, over a home directory's ledger and policy.

    mcpwall dashboard [--home H] [--port 9421] [--host 127.0.0.1] [--ledger URL] [--policy FILE]

The gateway serves the same pages at `/ui/`; this command is for looking at
a ledger without a gateway in the same process (another machine's ledger, a
PostgreSQL ledger of several replicas, a gateway run by `wrap`). Answers to
asks are written to the ledger's approval book, where the gateway holding
the call picks them up. Log in with the gateway's token (`$MCPWALL_TOKEN`,
`--token-file`, else `<home>/run/gateway.token`).
"""

from __future__ import annotations

from pathlib import Path

import click

from mcpwall.cli._approvals import refuse_token
from mcpwall.cli._common import home_option, policy_path_for, resolve_home


@click.command("dashboard")
@home_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=9421, show_default=True, type=click.IntRange(0, 65535))
@click.option("--ledger", "ledger_url", default=None,
              help="Ledger: a path, sqlite:///PATH or postgresql://... (default: ledger.url of <home>/policy.yaml, "
                   "else <home>/ledger.db).")
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy for the simulate form and rule badges (default: <home>/policy.yaml).")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File holding the token to log in with (mode 0600).")
@click.option("--token", "token_argv", default=None, expose_value=False, callback=refuse_token, hidden=True)
@click.option("--allow-host", "allowed_hosts", multiple=True, help="Extra Host header value to accept.")
def dashboard(home: Path | None, host: str, port: int, ledger_url: str | None, policy_file: Path | None,
              token_file: Path | None, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the dashboard (stats, live calls, approvals, simulate, servers) from the ledger."""
    import uvicorn

    from mcpwall.cli._ledger import open_for_cli
    from mcpwall.dashboard import HomeConsole, create_app
    from mcpwall.proxy import PolicyStore, load_token, prepare_home, run
    from mcpwall.stages.auth import AuthStage

    resolved = resolve_home(home)
    prepare_home(resolved)
    token, source = load_token(resolved, token_file)
    ledger = open_for_cli(resolved, ledger_url, create=True)
    path = policy_path_for(resolved, policy_file)
    policy = PolicyStore(path) if path is not None else None
    auth = AuthStage({token: ""}, allowed_hosts=[host, *allowed_hosts])
    app = create_app(HomeConsole(ledger, policy), auth)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"mcpwall dashboard: http://{shown}:{port}/ui/  (ledger {ledger.url}; log in with the token "
               f"from {source})", err=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2)
    try:
        run(uvicorn.Server(config).serve())  # the gateway's loop runner: a port in use exits 1
    finally:
        ledger.close()


__all__ = ["dashboard"]
