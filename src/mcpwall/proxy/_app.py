"""Assembling a running gateway from the command line's options.

`build()` loads the policy, the server list, the token and the stages, and
returns the parts; `serve_http()` and `serve_stdio()` run them until a signal
or end of input. SIGHUP reloads the policy; SIGINT/SIGTERM shut down in order
(stop accepting, fail pending requests, flush the ledger, stop upstreams).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpwall import _endpoint
from mcpwall._token import NamedTokenWatch, load_named_tokens, load_token
from mcpwall.errors import ConfigError, PolicyError
from mcpwall.pipeline import PolicyStore, Service, Stage
from mcpwall.policy import ServerSpec
from mcpwall.policy._loader import locate_section
from mcpwall.proxy._conn import ConnectionGuard, ConnectionLimits, guarded_protocol
from mcpwall.proxy._door import Door
from mcpwall.proxy._gateway import Gateway, GatewayOptions
from mcpwall.proxy._http import SESSIONS_PER_PRINCIPAL, HttpFrontend
from mcpwall.proxy._servers import check_names, load_servers_file
from mcpwall.proxy._stdio import StdioFrontend
from mcpwall.stages import AuthStage, build_components, default_stages
from mcpwall.state import StateStore

log = logging.getLogger("mcpwall")

#: Services packages above this one add to a gateway being built (the admin API, frame listeners,
#: isolation): (settings, gateway) -> a `Service`, or None when the settings do not ask for it.
#: Each registers itself once (`mcpwall.admin.register()`...); none of them is a stage.
SERVICES: list[Callable[[GatewaySettings, Gateway], Service | None]] = []


@dataclass
class GatewaySettings:
    home: Path
    policy_path: Path | None = None
    servers_files: list[Path] = field(default_factory=list)
    extra_servers: dict[str, ServerSpec] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 9420
    insecure_no_auth: bool = False
    token_file: Path | None = None
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    only_server: str | None = None
    #: header and body deadlines, unauthenticated and per-peer connection caps (see proxy/_conn.py)
    connection_limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    #: streamable-HTTP sessions one principal may hold; past it the least recently used is closed
    sessions_per_principal: int = SESSIONS_PER_PRINCIPAL
    options: dict[str, Any] = field(default_factory=dict)
    #: Options for extensions (ledger URL, frame listeners, recording...).
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Built:
    settings: GatewaySettings
    gateway: Gateway
    policy: PolicyStore
    auth: AuthStage
    token_source: str


def prepare_home(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "run").mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(home / "run", 0o700)


def build(settings: GatewaySettings, extra_stages: Sequence[Stage] = ()) -> Built:
    """The gateway the settings describe; `extra_stages` run after the policy's (tests record with them)."""
    prepare_home(settings.home)
    policy_path = settings.policy_path
    if policy_path is None and (settings.home / "policy.yaml").exists():
        policy_path = settings.home / "policy.yaml"
    store = PolicyStore(policy_path, candidate=settings.home / "policy.yaml")
    servers: dict[str, ServerSpec] = dict(store.current.source.servers)
    for path in settings.servers_files:
        servers.update(load_servers_file(path))
    servers.update(settings.extra_servers)
    if settings.only_server is not None:
        servers = {settings.only_server: servers[settings.only_server]}
    check_names(servers)
    tokens: dict[str, str] = {}
    source = "disabled (--insecure-no-auth)"
    if not settings.insecure_no_auth:
        token, source = load_token(settings.home, settings.token_file)
        tokens[token] = ""
        tokens.update({t: identity for identity, t in load_named_tokens(settings.home).items()})
    auth = AuthStage(tokens, insecure_no_auth=settings.insecure_no_auth,
                     allowed_hosts=[settings.host, *settings.allowed_hosts], allowed_origins=settings.allowed_origins)
    if not settings.insecure_no_auth:
        auth.named = NamedTokenWatch(settings.home)  # init's new client tokens, uninstall's revocations
    try:
        sections = dict(store.current.source.sections)
        # The shared parts first (ledger, durable state, approvals, webhooks, metrics), then the
        # stages over them, then the gateway, then the services (admin API, frame listener...).
        components = build_components(sections, settings, _shared_state(settings))
        stages = [*default_stages(sections, settings, components), *extra_stages]
        gateway = Gateway(servers, store, stages, GatewayOptions(**settings.options), components)
        gateway.add_service(auth)  # the frontends' door check; in /health beside the stages
        for factory in SERVICES:
            service = factory(settings, gateway)
            if service is not None:
                gateway.add_service(service)
    except PolicyError:
        raise
    except ConfigError as exc:
        # A section of the policy (ledger:, dlp:, rbac:, stages.*) its stage refused: say where it is.
        located = locate_section(store.current.source.files, str(exc))
        if located is None:
            raise
        raise located from exc
    return Built(settings, gateway, store, auth, source)


def _shared_state(settings: GatewaySettings) -> StateStore | None:
    """The store several replicas share (`--state redis://...`): pins, honeytokens, approvals."""
    state_url = (settings.extras or {}).get("state_url")
    if not state_url:
        return None
    from mcpwall.shared import RedisStateStore

    return RedisStateStore(state_url)


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")


def _install_reload(built: Built) -> None:
    built.policy.watch()  # the file watcher and SIGHUP (PolicyStore.sighup, which never releases a held reload)


async def serve_http(built: Built, ready: Callable[[str], None] | None = None,
                     app_wrapper: Callable[[Any], Any] | None = None) -> None:
    import uvicorn

    settings = built.settings
    guard = ConnectionGuard(settings.connection_limits.fitted(_raise_open_files()), built.auth)
    frontend = HttpFrontend(built.gateway, built.auth, base_url=f"http://{_url_host(settings.host)}:{settings.port}",
                            extra=getattr(built.gateway, "ui_app", None),
                            metrics=getattr(built.gateway, "metrics_text", None),
                            door=Door(built.auth, settings.allowed_hosts),
                            sessions_per_principal=settings.sessions_per_principal, connections=guard)
    app = app_wrapper(frontend) if app_wrapper else frontend
    config = uvicorn.Config(app, host=settings.host, port=settings.port, lifespan="on", access_log=False,
                            log_level="warning", loop="uvloop" if _has("uvloop") else "asyncio",
                            http=guarded_protocol("httptools" if _has("httptools") else "h11", guard),
                            timeout_graceful_shutdown=5, backlog=2048,
                            # No limit_concurrency: uvicorn counts open connections against it, finished
                            # or not, so half-open ones made it answer 503 to everyone (issue 22). The
                            # guard caps requests being served and unauthenticated connections instead.
                            limit_concurrency=None, timeout_keep_alive=5,
                            # bounds what h11 (the fallback parser) buffers for an unfinished request head
                            h11_max_incomplete_event_size=64 * 1024,
                            # X-Forwarded-For from loopback would let any local process pick the
                            # peer address the rate limit and the ledger see; and a layer less per request.
                            proxy_headers=False, server_header=False)
    server = _server(config, on_shutdown=lambda: _endpoint.withdraw(settings.home),
                     on_stopping=built.gateway.traffic.listen.close_all)
    _install_reload(built)

    async def announce() -> None:
        while not server.started:  # noqa: ASYNC110 - uvicorn exposes only this flag
            await asyncio.sleep(0.05)
        _freeze_startup_objects()
        url = f"http://{_url_host(settings.host)}:{settings.port}"
        _endpoint.publish(settings.home, url)
        if ready is not None:
            ready(url)

    announcer = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        announcer.cancel()
        built.policy.stop()


def _server(config: Any, on_shutdown: Callable[[], None], on_stopping: Callable[[], None]) -> Any:
    """uvicorn's server with a step before its graceful shutdown and one after. `on_stopping` ends
    the long-lived responses (listen streams) that would otherwise hold the drain to its deadline
    and then be cut. On SIGTERM uvicorn re-raises the signal once `serve()` returns, so nothing
    after `serve()` runs then; `on_shutdown` does."""
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            on_stopping()
            try:
                await super().shutdown(sockets)
            finally:
                on_shutdown()

    return Server(config)


async def serve_stdio(built: Built, server: str | None, agent: str = "", process_name: str = "") -> None:
    _install_reload(built)
    await built.gateway.start()
    _freeze_startup_objects()
    main = asyncio.current_task()
    assert main is not None
    with contextlib.suppress(NotImplementedError, RuntimeError):
        # SIGTERM ends the session in order: the ledger flushes in gateway.stop().
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        await StdioFrontend(built.gateway, server, agent=agent, process_name=process_name).serve()
    except asyncio.CancelledError:
        pass
    finally:
        built.policy.stop()
        await built.gateway.stop()


def _raise_open_files() -> int:
    """Raise this process's open-file limit to its hard limit (many desktops start at 1,024 or
    256), and return it: the connection caps are fitted under it."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _freeze_startup_objects() -> None:
    """Move everything allocated at start-up (policy, stage tables, catalogs) out of the
    garbage collector's reach: full collections then scan only what requests allocate
    (about 15% less time per call in bench/stage_costs.py-style runs)."""
    gc.collect()
    gc.freeze()


def run(coro: Coroutine[Any, Any, None]) -> None:
    """Run the gateway's event loop: uvloop when installed (the relay's sockets and pipes
    are several times cheaper there, bench/proxy_overhead.py), else asyncio's."""
    try:
        if _has("uvloop"):
            import uvloop

            uvloop.run(coro)
        else:
            asyncio.run(coro)
    except SystemExit as exc:
        if exc.code == 3:  # uvicorn's "startup failed" (a port in use...): SPEC 2 says 1 for a failure
            raise SystemExit(1) from exc
        raise


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def servers_summary(servers: Mapping[str, ServerSpec]) -> str:
    return ", ".join(servers) or "(none)"


__all__ = ["SERVICES", "Built", "GatewaySettings", "build", "configure_logging",
           "prepare_home", "run", "serve_http", "serve_stdio"]
