"""The one test harness: a gateway built as `mcpwall proxy` builds it, and what drives it.

Every test that needs a gateway gets it here, so that when the gateway's construction changes
this module is the one test file that follows it:

- `build_gateway(home, policy, servers, ...)` writes `home/policy.yaml` and `home/servers.json`,
  turns them into settings with the command line's own `mcpwall.cli._proxy._settings` (which
  also registers the relay, isolation and admin plugins, as `mcpwall proxy` does) and builds
  with `mcpwall.proxy.build`. `stages` appends observer stages (a `Recorder`) to the list.
- `started(built)` starts the gateway (stage start hooks, upstream processes) and stops it.
- `frontend(built)` is the HTTP frontend with what the stages mounted (dashboard, metrics), for
  httpx's ASGI transport; `serve_http(built)` serves it under uvicorn on `built.settings.port`
  inside the test's event loop.
- `MemoryClient` is the in-memory transport: one session whose messages go to the gateway's
  `handle()`/`handle_request()` as a frontend would send them, with every message the gateway
  pushes outside an answer (notifications, server requests) collected in `received`.
- `context(...)` is the recording context: a `RequestContext` fixture message for calling one
  stage hook directly; `StageView` is what such a hook reads of a gateway (a real policy store,
  no servers, no processes); `Recorder` keeps what every finished request left in `ctx.notes`.
- `free_port()` is the one free-port helper; `wait_answers(url, proc)` waits for a server the test
  started to answer HTTP.

Everything listens on 127.0.0.1 and is stopped by the context manager that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import orjson
import uvicorn

from mcpwall.protocol import Message
from mcpwall.proxy import Built, GatewaySettings, HttpFrontend, PolicyStore, Session, build
from mcpwall.stages import RequestContext, Stage

#: An enforce-mode policy that allows everything and does not rate-limit the tests' bursts.
ALLOW_ALL = """\
version: "1"
mode: enforce
defaultAction: allow
rules: []
stages:
  ratelimit: {requestsPerMinute: 0}
"""

#: The `initialize` params a test client sends unless it says otherwise.
PROTOCOL_VERSION = "2025-06-18"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_answers(url: str, proc: subprocess.Popen[bytes], log: Path | None = None, timeout: float = 90.0,
                 probe: Callable[[str], object] | None = None) -> None:
    """Wait until the server `proc` started answers HTTP at `url` (any status; `probe(url)` may say what a
    try is, by default a GET). The deadline is of the clock, not a count of tries: a Python server's
    imports take seconds on a loaded 2-core machine. Raises, with the tail of `log`, when it exits or
    never answers."""
    def tail() -> str:
        return log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited ({proc.returncode}) before answering on {url}: {tail()}")
        try:
            (probe or (lambda u: httpx.get(u, timeout=2)))(url)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{proc.args!r} did not answer on {url} within {timeout:.0f} s: {tail()}"
                                   ) from None
            time.sleep(0.1)


# ---------------------------------------------------------------------- building


def write_home(home: Path, policy: str | None = ALLOW_ALL, servers: Mapping[str, Mapping[str, Any]] | None = None,
               files: Mapping[str, str] | None = None) -> tuple[Path | None, Path | None]:
    """Write a gateway's home: `policy.yaml` (None: none, the built-in default policy applies),
    `servers.json` (None: none) and any other `files` (name -> text, e.g. an `extends` target).
    Returns (policy path, servers file)."""
    home.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {}).items():
        (home / name).write_text(text, encoding="utf-8")
    policy_path = servers_file = None
    if policy is not None:
        policy_path = home / "policy.yaml"
        policy_path.write_text(policy, encoding="utf-8")
    if servers is not None:
        servers_file = home / "servers.json"
        servers_file.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return policy_path, servers_file


def build_gateway(home: Path, policy: str | None = ALLOW_ALL, servers: Mapping[str, Mapping[str, Any]] | None = None,
                  *, auth: bool = False, port: int | None = None, stages: Sequence[Stage] = (),
                  files: Mapping[str, str] | None = None, state: Any = None,
                  options: Mapping[str, Any] | None = None, **extras: Any) -> Built:
    """A gateway over `servers` under `policy`, built as `mcpwall proxy` builds it (not started).

    auth: False is `--insecure-no-auth`; True makes and checks the home's token as the command
    does. port: what `--port` says (a free one when None; it matters only to `serve_http`).
    stages: appended after the pipeline's own (observers such as `Recorder`). state: the durable
    state store, in place of the ledger's (several gateways sharing it, as replicas share Redis).
    options: `GatewayOptions` fields. extras: what the command's other options set
    (`ledger_url`, `frame_listen`, `isolate`, `record`, `body_timeout`...).
    """
    from mcpwall.cli._proxy import _settings

    policy_path, servers_file = write_home(home, policy, servers, files)
    ledger_url = extras.pop("ledger_url", None)
    frame_listen = tuple(extras.pop("frame_listen", ()))
    isolate = bool(extras.pop("isolate", False))
    settings = cast(GatewaySettings, _settings(
        home=home, policy_file=policy_path, servers_files=(servers_file,) if servers_file is not None else (),
        discover=False, host="127.0.0.1", port=port if port is not None else free_port(), insecure_no_auth=not auth,
        token_file=None, allowed_hosts=(), allowed_origins=(), ledger_url=ledger_url, frame_listen=frame_listen,
        isolate=isolate, **extras))
    # A test names its shared state (below); the developer's $MCPWALL_STATE_URL is not read.
    settings.extras["state_url"] = None
    settings.options = dict(options or {})
    built = build(settings, extra_stages=stages)
    if state is not None:
        built.gateway.components.state = state
    return built


@contextlib.asynccontextmanager
async def started(built: Built) -> AsyncIterator[Built]:
    """The gateway started (stages, then upstream processes) for the block, then stopped in order."""
    await built.gateway.start()
    try:
        yield built
    finally:
        await built.gateway.stop()
        built.policy.stop()


@dataclass
class Running:
    """A started gateway and one initialized in-memory session on it (see `running`)."""

    built: Built
    client: MemoryClient

    @property
    def gateway(self) -> Any:
        return self.built.gateway

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Message:
        return await self.client.request(method, params)

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Message:
        return await self.client.call(tool, arguments)


@contextlib.asynccontextmanager
async def running(home: Path, policy: str | None = ALLOW_ALL, servers: Mapping[str, Mapping[str, Any]] | None = None,
                  **build: Any) -> AsyncIterator[Running]:
    """`build_gateway(home, policy, servers, **build)`, started, with a `MemoryClient` that has
    sent `initialize` (as `mcpwall proxy --stdio` serves one client), for the block."""
    built = build_gateway(home, policy, servers, **build)
    async with started(built):
        client = MemoryClient(built.gateway)
        answer = await client.initialize()
        assert "result" in answer, answer
        yield Running(built, client)


def stage_settings(home: Path) -> GatewaySettings:
    """The gateway settings a stage factory (`build(config, settings)`) reads: only a home."""
    return GatewaySettings(home=home)


def frontend(built: Built, base_url: str = "") -> HttpFrontend:
    """The gateway's HTTP frontend with what its stages mounted (the dashboard and `/metrics`)."""
    gateway = built.gateway
    return HttpFrontend(gateway, built.auth, base_url=base_url, extra=getattr(gateway, "ui_app", None),
                        metrics=getattr(gateway, "metrics_text", None))


@contextlib.asynccontextmanager
async def serve_http(built: Built, *, app_wrapper: Callable[[Any], Any] | None = None) -> AsyncIterator[str]:
    """The HTTP frontend served by uvicorn on 127.0.0.1:`built.settings.port` for the block; yields
    its base URL. The frontend's lifespan starts and stops the gateway. `app_wrapper` wraps the
    frontend as `serve_http(built, app_wrapper=...)` does in production (the admin API)."""
    port = built.settings.port
    url = f"http://127.0.0.1:{port}"
    app = frontend(built, url)
    server = uvicorn.Server(uvicorn.Config(app_wrapper(app) if app_wrapper else app, host="127.0.0.1", port=port,
                                           lifespan="on", log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=2))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(1200):
            if server.started or task.done():
                break
            await asyncio.sleep(0.05)
        if task.done():
            task.result()
            raise RuntimeError(f"uvicorn stopped before it served {url}")
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)
        built.policy.stop()


def token(built: Built) -> str:
    """The gateway's bearer token (the home's `run/gateway.token`), "" when it has none."""
    path = built.settings.home / "run" / "gateway.token"
    return path.read_text().strip() if path.exists() else ""


# ---------------------------------------------------------------------- the in-memory transport


class MemoryClient:
    """One client session on an in-process gateway, without a socket or a pipe.

    Messages go in as the stdio frontend hands them over (requests through `handle_request`
    with their size, everything else through `handle`); answers come back as return values, and
    whatever the gateway sends the session outside an answer (progress, log lines, list_changed,
    a server's sampling or elicitation request) lands in `received`, in order.
    """

    def __init__(self, gateway: Any, server: str | None = None, *, kind: str = "stdio", name: str = "pytest",
                 **fields: Any) -> None:
        self.gateway = gateway
        self.name = name
        self.session: Session = gateway.open_session(kind, server, **fields)
        self.session.send = self._arrive
        self.received: list[Message] = []
        self._ids = itertools.count(1)
        self._arrived = asyncio.Condition()

    async def _arrive(self, msg: Message) -> None:
        async with self._arrived:
            self.received.append(msg)
            self._arrived.notify_all()

    async def send(self, msg: Message) -> Message | None:
        """Hand one message to the gateway; the answer to a request, or what it answers to the rest."""
        if "method" in msg and "id" in msg:
            answer: Message | None = await self.gateway.handle_request(self.session, msg,
                                                                       bytes_in=len(orjson.dumps(msg)))
            return answer
        reply: Message | None = await self.gateway.handle(self.session, msg)
        return reply

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Message:
        """A request with the next id; its answer (a request the gateway cancelled has none: that fails)."""
        msg: Message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": dict(params or {})}
        answer = await self.send(msg)
        assert answer is not None, f"{method} was not answered"
        return answer

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Message:
        return await self.request("tools/call", {"name": tool, "arguments": dict(arguments or {})})

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> Message | None:
        msg: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        return await self.send(msg)

    async def respond(self, rid: Any, result: Any = None, *, error: Mapping[str, Any] | None = None) -> None:
        """Answer a request the gateway sent this client (one of `received`)."""
        body = {"error": dict(error)} if error is not None else {"result": result if result is not None else {}}
        await self.send({"jsonrpc": "2.0", "id": rid, **body})

    async def initialize(self, capabilities: Mapping[str, Any] | None = None, *,
                         version: str = PROTOCOL_VERSION, initialized: bool = False) -> Message:
        """The initialize handshake; `initialized` also sends notifications/initialized."""
        answer = await self.request("initialize", {"protocolVersion": version, "capabilities": dict(capabilities or {}),
                                                   "clientInfo": {"name": self.name, "version": "1.0"}})
        if initialized:
            await self.notify("notifications/initialized")
        return answer

    async def next_message(self, predicate: Callable[[Message], bool] = lambda m: True,
                           timeout: float = 10.0) -> Message:
        """The first message in `received` that `predicate` holds for, waiting up to `timeout`."""
        async with asyncio.timeout(timeout), self._arrived:
            while True:
                for msg in self.received:
                    if predicate(msg):
                        return msg
                await self._arrived.wait()

    def close(self) -> None:
        self.gateway.close_session(self.session)


# ---------------------------------------------------------------------- the recording context


@dataclass
class StageView:
    """What a stage's hook reads of the gateway it runs in, with no gateway: the real policy store
    of a policy text, and no servers, sessions or approval service unless a test gives them."""

    policy: PolicyStore
    servers: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    approvals: Any = None
    ledger: Any = None


def stage_view(home: Path, policy: str = ALLOW_ALL) -> StageView:
    """A `StageView` over `policy`, loaded from `home/policy.yaml` as the gateway loads it."""
    policy_path, _ = write_home(home, policy)
    return StageView(PolicyStore(policy_path))


def context(gateway: Any = None, method: str = "tools/call", server: str | None = "fs", target: str = "read_file",
            arguments: Mapping[str, Any] | None = None, session: Session | None = None,
            params: Mapping[str, Any] | None = None) -> RequestContext:
    """A fixture request for calling one hook directly: `method` on `server`'s `target` with
    `arguments` (or exactly `params`), in `session` (a fresh stdio one), seen by `gateway` (a
    built gateway, a `StageView`, or None for hooks that read none of it)."""
    session = session or Session(kind="stdio")
    body = dict(params) if params is not None else {"name": target, "arguments": dict(arguments or {})}
    msg: Message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": body}
    return RequestContext(gateway, session, msg, method, 1, body, server=server, target=target)


class Recorder(Stage):
    """An observer stage: keeps (method, target, outcome, notes) of every finished request."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, dict[str, Any]]] = []

    def on_complete(self, ctx: RequestContext) -> None:
        self.seen.append((ctx.method, ctx.target, ctx.outcome, dict(ctx.notes)))

    def last(self, target: str) -> dict[str, Any]:
        """The notes of the last finished request for `target`."""
        return next(notes for _, t, _, notes in reversed(self.seen) if t == target)


def text_of(answer: Mapping[str, Any]) -> str:
    """The text parts of a tools/call result, joined by newlines."""
    return "\n".join(c.get("text", "") for c in answer["result"]["content"] if c.get("type") == "text")


__all__ = ["ALLOW_ALL", "PROTOCOL_VERSION", "MemoryClient", "Recorder", "Running", "StageView", "build_gateway",
           "context", "free_port", "frontend", "running", "serve_http", "stage_settings", "stage_view", "started",
           "text_of", "token", "write_home"]
