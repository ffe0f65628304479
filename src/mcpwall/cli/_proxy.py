"""`mcpwall proxy`, `mcpwall wrap` and `mcpwall record`: run the gateway."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import click

from mcpwall.cli._common import home_option, resolve_home
from mcpwall.errors import ConfigError
from mcpwall.policy import ServerSpec
from mcpwall.shared import state_url


def _refuse_token(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.BadParameter("a token on the command line is refused: argv is readable by every user. "
                                 "Use MCPWALL_TOKEN or --token-file.", param_hint="--token")


def gateway_options(func: Any) -> Any:
    """Options shared by `proxy` and `record`."""
    options = [
        click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Policy file (default: <home>/policy.yaml, else the built-in default)."),
        click.option("--servers", "servers_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
                     help="An mcpServers JSON file (claude_desktop_config.json format). Repeatable."),
        click.option("--discover", is_flag=True, help="Also guard every server discovered on this machine."),
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)."),
        click.option("--port", default=9420, show_default=True, type=int),
        click.option("--stdio", "stdio", is_flag=True, help="Serve all servers, aggregated, over stdin/stdout."),
        click.option("--agent", default="", help="Agent identity of the --stdio session (RBAC, policy)."),
        click.option("--insecure-no-auth", is_flag=True,
                     help="Accept requests without a token. For loopback experiments only."),
        click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Read the bearer token from this file (mode 0600)."),
        click.option("--token", "token_argv", default=None, expose_value=False, callback=_refuse_token,
                     hidden=True),
        click.option("--allow-host", "allowed_hosts", multiple=True,
                     help="Extra Host header value to accept (DNS rebinding guard)."),
        click.option("--allow-origin", "allowed_origins", multiple=True, help="Extra browser Origin to accept."),
        click.option("--max-sessions-per-principal", "sessions_per_principal", default=64, show_default=True,
                     type=click.IntRange(min=1),
                     help="Streamable-HTTP sessions one token may hold; the least recently used goes first."),
        click.option("--frame-listen", "frame_listen", multiple=True,
                     help="Framed relay listener: unix:PATH or tcp:HOST:PORT."),
        click.option("--isolate", is_flag=True,
                     help="Run upstream connections in a separate aggregator process (no ledger, token or "
                          "policy file there)."),
        click.option("--ledger", "ledger_url", default=None,
                     help="Ledger database: a path or sqlite:///PATH or postgresql://... (default <home>/ledger.db)."),
        click.option("--state", "state_flag", default=None,
                     help="Redis URL for state shared by several replicas (rate limits, pins, approvals); "
                          "default $MCPWALL_STATE_URL, else none."),
        click.option("--log-level", default="INFO", show_default=True),
        home_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _settings(home: Path | None, policy_file: Path | None, servers_files: tuple[Path, ...], discover: bool,
              host: str, port: int, insecure_no_auth: bool, token_file: Path | None,
              allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...], ledger_url: str | None,
              frame_listen: tuple[str, ...], isolate: bool = False, sessions_per_principal: int = 64,
              **options: Any) -> Any:
    from mcpwall.admin import register as register_admin
    from mcpwall.dashboard import register as register_dashboard
    from mcpwall.isolation import register as register_isolation
    from mcpwall.oauth import register_resource_server, register_upstream_auth
    from mcpwall.proxy import GatewaySettings
    from mcpwall.relay import register as register_relay

    register_relay()      # --frame-listen
    register_isolation()  # --isolate
    register_admin()      # /api/admin/
    register_dashboard()  # /ui, /api/ (when stages.notify.dashboard)
    register_resource_server()  # policy.yaml auth: (OAuth 2.1 resource server)
    register_upstream_auth()  # remote upstreams' grants from `mcpwall login` (OAuth client)

    extra: dict[str, ServerSpec] = {}
    if discover:
        try:
            from mcpwall.discovery import discovered_server_specs
        except ImportError as exc:
            raise ConfigError("--discover needs the discovery module, which is not installed") from exc
        extra.update(discovered_server_specs())
    if insecure_no_auth and host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError("--insecure-no-auth is only allowed on a loopback address")
    settings = GatewaySettings(home=resolve_home(home), policy_path=policy_file, servers_files=list(servers_files),
                               extra_servers=extra, host=host, port=port, insecure_no_auth=insecure_no_auth,
                               token_file=token_file, allowed_hosts=list(allowed_hosts),
                               allowed_origins=list(allowed_origins), sessions_per_principal=sessions_per_principal)
    state_flag = options.pop("state_flag", None)
    settings.extras = {"ledger_url": ledger_url, "frame_listen": list(frame_listen), "isolate": isolate,
                       "state_url": state_url(state_flag), **options}
    return settings


def _run(settings: Any, stdio: bool, agent: str, log_level: str, record: bool = False) -> None:
    from mcpwall.proxy import build, configure_logging, run, serve_http, serve_stdio

    configure_logging(log_level)
    if record:
        settings.extras["record"] = True
    if not stdio:  # a taken port is one clear line, before any upstream server is started
        from mcpwall.cli._port import check_port

        check_port(settings.host, settings.port)
    built = build(settings)

    def ready(url: str) -> None:
        names = ", ".join(built.gateway.servers) or "(none)"
        click.echo(f"mcpwall gateway listening on {url}", err=True)
        click.echo(f"  aggregated MCP endpoint: {url}/mcp   per server: {url}/mcp/<server>   servers: {names}",
                   err=True)
        click.echo(f"  bearer token: {built.token_source}", err=True)
        click.echo(f"  dashboard: {url}/ui/   metrics: {url}/metrics", err=True)
        click.echo(f"  policy: {built.policy.status()['path']} (revision {built.policy.current.revision}, "
                   f"mode {built.policy.current.mode})", err=True)

    try:
        if stdio:
            run(serve_stdio(built, None, agent=agent))
        else:
            run(serve_http(built, ready))
    except KeyboardInterrupt:
        pass


@click.command()
@gateway_options
def proxy(home: Path | None, policy_file: Path | None, servers_files: tuple[Path, ...], discover: bool, host: str,
          port: int, stdio: bool, agent: str, insecure_no_auth: bool, token_file: Path | None,
          allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...], frame_listen: tuple[str, ...],
          isolate: bool, ledger_url: str | None, log_level: str, state_flag: str | None,
          sessions_per_principal: int) -> None:
    """Run the gateway: every server behind one policy-enforcing MCP endpoint.

    Serves /mcp (all servers, tools named server__tool), /mcp/{server},
    POST /{server} (plain JSON-RPC), /health, /servers, /{server}/explain and
    /metrics on 127.0.0.1:9420, or everything over stdio with --stdio.
    """
    settings = _settings(home, policy_file, servers_files, discover, host, port, insecure_no_auth, token_file,
                         allowed_hosts, allowed_origins, ledger_url, frame_listen, isolate, state_flag=state_flag,
                         sessions_per_principal=sessions_per_principal)
    _run(settings, stdio, agent, log_level)


@click.command()
@gateway_options
def record(home: Path | None, policy_file: Path | None, servers_files: tuple[Path, ...], discover: bool, host: str,
           port: int, stdio: bool, agent: str, insecure_no_auth: bool, token_file: Path | None,
           allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...], frame_listen: tuple[str, ...],
           isolate: bool, ledger_url: str | None, log_level: str, state_flag: str | None,
           sessions_per_principal: int) -> None:
    """Run the gateway and capture every session to <home>/sessions/<id>.mcpcap.json."""
    settings = _settings(home, policy_file, servers_files, discover, host, port, insecure_no_auth, token_file,
                         allowed_hosts, allowed_origins, ledger_url, frame_listen, isolate, state_flag=state_flag,
                         sessions_per_principal=sessions_per_principal)
    _run(settings, stdio, agent, log_level, record=True)


_WRAP_ENV_DROP = ("MCPWALL_TOKEN", "MCPWALL_GATEWAY_TOKEN", "MCPWALL_LEDGER_KEY")


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--name", "-n", required=True, help="Server name (used in the policy and the ledger).")
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy file (default: <home>/policy.yaml, else the built-in default).")
@click.option("--agent", default="", help="Agent identity of this session.")
@click.option("--process-name", default="", help="Process name recorded in the ledger.")
@click.option("--ledger", "ledger_url", default=None, help="Ledger database (default <home>/ledger.db).")
@click.option("--log-level", default="WARNING", show_default=True)
@click.option("--era", type=click.Choice(["auto", "legacy", "modern"]), default="auto", show_default=True,
              help="Protocol era to speak to the server (servers.X.era): auto opens with initialize and speaks "
                   "2026-07-28 to a server that refuses it; modern speaks 2026-07-28 to a dual-era server too.")
@home_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def wrap(name: str, policy_file: Path | None, agent: str, process_name: str, ledger_url: str | None,
         log_level: str, era: Literal["auto", "legacy", "modern"], home: Path | None,
         command: tuple[str, ...]) -> None:
    """Guard one stdio server in place: mcpwall wrap --name fs -- npx -y @modelcontextprotocol/server-filesystem /tmp

    The client launches this instead of the server; mcpwall starts the server,
    speaks MCP to the client on stdin/stdout and applies the policy to every
    message. The server gets this process's environment (what the client's
    config set for it), minus mcpwall's own secrets.
    """
    from mcpwall.proxy import GatewaySettings, build, configure_logging, run, serve_stdio

    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise click.UsageError("give the server command after the options, e.g. -- npx -y some-mcp-server")
    configure_logging(log_level)
    env = {k: v for k, v in os.environ.items() if k not in _WRAP_ENV_DROP}
    spec = ServerSpec(command=argv[0], args=argv[1:], env=env, era=era)
    settings = GatewaySettings(home=resolve_home(home), policy_path=policy_file, extra_servers={name: spec},
                               only_server=name, insecure_no_auth=True)
    settings.extras = {"ledger_url": ledger_url, "frame_listen": [], "state_url": state_url(None)}
    built = build(settings)
    try:
        run(serve_stdio(built, name, agent=agent, process_name=process_name or _parent_name()))
    except KeyboardInterrupt:
        sys.exit(130)
    upstream = built.gateway.servers.get(name)
    if upstream is not None and upstream.started_at is None:
        # SPEC 2: exit 1 on failure; the server it was to guard never ran
        click.echo(f"mcpwall: {name!r} never started: {upstream.last_error}", err=True)
        sys.exit(1)


def _parent_name() -> str:
    try:
        with open(f"/proc/{os.getppid()}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


__all__ = ["proxy", "record", "wrap"]
