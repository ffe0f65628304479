"""Helpers for stage tests: an in-process gateway with real upstream servers, and a recording stage.

`running_gateway` builds a gateway the way `mcpwall proxy` does (`mcpwall.proxy.build`), with
one extra observer stage appended that keeps every finished request's `ctx.notes`, starts it,
yields it with an initialized aggregated session, and stops it (which stops the upstream
processes). `context(...)` makes a bare RequestContext for calling one hook directly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mcpwall.proxy import GatewaySettings, build
from mcpwall.proxy import _app as app_module
from mcpwall.proxy._session import Session
from mcpwall.stages import RequestContext, Stage

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
FAKES = ROOT / "tests" / "fakes"


def filesystem(root: Path) -> dict[str, Any]:
    return {"command": str(BIN / "mcp-server-filesystem"), "args": [str(root)]}


def web(log: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAKES / "web_server.py")], "env": {"REQUESTS_LOG": str(log)}}


class Recorder(Stage):
    """Keeps (method, target, outcome, notes) of every finished request."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, dict[str, Any]]] = []

    def on_complete(self, ctx: RequestContext) -> None:
        self.seen.append((ctx.method, ctx.target, ctx.outcome, dict(ctx.notes)))

    def last(self, target: str) -> dict[str, Any]:
        return next(notes for _, t, _, notes in reversed(self.seen) if t == target)


@dataclass
class Running:
    gateway: Any
    session: Session
    recorder: Recorder
    ids: list[int] = field(default_factory=lambda: [0])

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids[0] += 1
        answer = await self.gateway.handle_request(self.session, {"jsonrpc": "2.0", "id": self.ids[0],
                                                                  "method": method, "params": params})
        assert answer is not None
        return dict(answer)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})


def text_of(answer: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in answer["result"]["content"] if c.get("type") == "text")


def _write_inputs(tmp_path: Path, policy: str, servers: dict[str, dict[str, Any]]) -> tuple[Path, Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(policy, encoding="utf-8")
    servers_file = tmp_path / "servers.json"
    servers_file.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return tmp_path / "home", policy_path, servers_file


@asynccontextmanager
async def running_gateway(tmp_path: Path, policy: str, servers: dict[str, dict[str, Any]],
                          monkeypatch: pytest.MonkeyPatch, state: Any = None) -> AsyncIterator[Running]:
    recorder = Recorder()
    monkeypatch.setattr(app_module, "STAGE_PLUGINS", [lambda settings, stages: [*stages, recorder]])
    home, policy_path, servers_file = _write_inputs(tmp_path, policy, servers)
    built = build(GatewaySettings(home=home, policy_path=policy_path, servers_files=[servers_file],
                                  insecure_no_auth=True))
    gateway = built.gateway
    if state is not None:
        gateway.state = state
    await gateway.start()
    try:
        session = gateway.open_session("stdio", None)
        running = Running(gateway, session, recorder)
        init = await running.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                     "clientInfo": {"name": "pytest", "version": "1"}})
        assert "result" in init
        yield running
    finally:
        await gateway.stop()


def context(gateway: Any, method: str = "tools/call", server: str | None = "fs", target: str = "read_file",
            arguments: dict[str, Any] | None = None, session: Session | None = None,
            params: dict[str, Any] | None = None) -> RequestContext:
    """A RequestContext for calling one hook directly."""
    session = session or Session(kind="stdio")
    if params is None:
        params = {"name": target, "arguments": arguments or {}}
    msg = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return RequestContext(gateway, session, msg, method, 1, params, server=server, target=target)
