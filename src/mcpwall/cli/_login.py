"""`mcpwall login SERVER`: obtain an OAuth grant for a remote upstream that requires one.

    mcpwall login SERVER [--home H] [--principal P] [--device] [--no-browser] [--scope S]
                         [--url URL] [--servers FILE] [--client-id ID] [--service --client-id ID]
                         [--logout] [--json]

SERVER is a server of the home's `policy.yaml` or of `--servers FILE` (an `mcpServers` file), or
any name with `--url`. The browser flow listens on a loopback redirect
(`http://127.0.0.1:RANDOM/callback`), opens the browser when there is one and prints the URL in any
case; `--device` uses the device authorization grant where the authorization server offers it.
`--principal P` stores the grant for P only (a person the gateway knows from its identity
provider); without it the grant is the owner's, used for the gateway's own requests and this
machine's clients. `--service` obtains a client-credentials grant shared by every principal; its
secret is read from `$MCPWALL_CLIENT_SECRET` or asked for, never taken from argv.

A running gateway reads the new grant from the store at its next request to that server (a
server that failed its handshake for want of one is retried on its restart schedule).
Exit 0 when the grant is stored, 1 when the login failed, 2 for bad input.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import ConfigError
from mcpwall.oauth import OWNER, SERVICE, TokenStore, authorization_state

SECRET_ENV = "MCPWALL_CLIENT_SECRET"


def server_url(home: Path, name: str, servers_files: tuple[Path, ...], url: str | None) -> str:
    """The URL of `name`: `--url`, else its entry in `--servers` files or the home's policy."""
    if url:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--url must be an http(s) URL, got {url!r}")
        return url
    from mcpwall.proxy._servers import load_servers_file

    servers: dict[str, Any] = {}
    policy = home / "policy.yaml"
    if policy.exists():
        from mcpwall.policy import load_engine

        servers.update(load_engine(policy).compiled.source.servers)
    for path in servers_files:
        servers.update(load_servers_file(path))
    spec = servers.get(name)
    if spec is None:
        known = ", ".join(sorted(servers)) or "none"
        raise ConfigError(f"no server {name!r} in {policy} or --servers (known: {known}); pass --url")
    if not spec.url:
        raise ConfigError(f"server {name!r} is a stdio server: only remote (URL) servers log in with OAuth")
    return str(spec.url)


@click.command("login")
@click.argument("server")
@click.option("--principal", default=OWNER, help="Store the grant for this principal only (default: the "
                                                 "owner's, for the gateway's own requests and this machine's "
                                                 "clients).")
@click.option("--device", is_flag=True, help="Use the device authorization grant (a code to enter on any "
                                             "device) instead of a browser redirect.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser: print the URL to visit.")
@click.option("--scope", default=None, help="Scopes to ask for (default: what the server's metadata or "
                                            "challenge names).")
@click.option("--url", default=None, help="The server's URL (default: from policy.yaml or --servers).")
@click.option("--servers", "servers_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="An mcpServers JSON file to find SERVER in (repeatable).")
@click.option("--client-metadata-url", default=None,
              help="An https URL of this gateway's Client ID Metadata Document, used as client_id where the "
                   "authorization server supports them (else dynamic registration).")
@click.option("--service", is_flag=True, help="A client-credentials grant shared by every principal "
                                              "(secret from $MCPWALL_CLIENT_SECRET or a prompt).")
@click.option("--client-id", default=None, help="A client registered beforehand at the authorization server "
                                               "(needed with --service; else instead of dynamic registration). "
                                               "Its secret, if any, from $MCPWALL_CLIENT_SECRET.")
@click.option("--issuer", default=None, help="With --service: the authorization server the client belongs to.")
@click.option("--logout", is_flag=True, help="Forget the grant instead of obtaining one.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 3600), default=300.0, show_default=True,
              help="Seconds to wait for the person to authorize.")
@home_option
@json_option
def login(server: str, principal: str, device: bool, no_browser: bool, scope: str | None, url: str | None,
          servers_files: tuple[Path, ...], client_metadata_url: str | None, service: bool, client_id: str | None,
          issuer: str | None, logout: bool, timeout_s: float, home: Path | None, as_json: bool) -> None:
    """Obtain (and store, encrypted) an OAuth token for a remote upstream that requires one."""
    home_dir = resolve_home(home)
    store = TokenStore(home_dir)
    who = SERVICE if service else principal
    if who == SERVICE and principal:
        raise click.UsageError("--service and --principal exclude each other: a service grant is shared")
    if logout:
        held = store.delete(server, who)
        message = f"forgot the {'service' if who == SERVICE else repr(who or 'owner')} grant for {server}" if held \
            else f"no grant held for {server}"
        print_json({"server": server, "principal": who, "removed": held}) if as_json else click.echo(message)
        return
    target = server_url(home_dir, server, servers_files, url)
    say = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    from mcpwall.oauth._client import LoginOptions, login_service
    from mcpwall.oauth._client import login as run_login

    if service:
        if not client_id:
            raise click.UsageError("--service needs --client-id (the secret comes from $MCPWALL_CLIENT_SECRET)")
        secret = os.environ.get(SECRET_ENV) or click.prompt("client secret", hide_input=True, err=True)
        grant = asyncio.run(login_service(server, target, store, client_id=client_id, client_secret=secret,
                                          issuer=issuer, scope=scope))
    else:
        options = LoginOptions(principal=principal, browser=not no_browser, device=device, scope=scope,
                               client_metadata_url=client_metadata_url, timeout_s=timeout_s, client_id=client_id,
                               client_secret=os.environ.get(SECRET_ENV) if client_id else None)
        try:
            grant = asyncio.run(run_login(server, target, store, options, say))
        except ValueError as exc:  # the SDK refuses a client metadata URL that is not https with a path
            raise ConfigError(str(exc)) from exc
    state = authorization_state(grant.summary())
    if as_json:
        print_json({"server": server, "principal": who, "state": state, "scope": grant.scope,
                    "issuer": grant.issuer, "store": store.description})
    else:
        whose = "service" if who == SERVICE else (f"principal {who!r}" if who else "owner")
        click.echo(f"{server}: {state} ({whose}, scope {grant.scope or '-'}); stored in {store.description}")


__all__ = ["login", "server_url"]
