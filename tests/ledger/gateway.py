"""Helpers to drive a real gateway (in-process or `mcpwall proxy`) against real MCP servers."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

from mcpwall.protocol import Message
from mcpwall.proxy import Built, GatewaySettings, build
from tests.proxy.harness import EVERYTHING

#: enforce mode; deny get-env, redact `secret` arguments, 100 ms timeout on the long-running tool
POLICY = """\
version: "1"
mode: {mode}
defaultAction: allow
rules:
  - id: no-env-dump
    description: Environment dumps are denied
    tools: [get-env]
    action: deny
    compliance:
      - {{framework: soc2, controls: [CC6.1]}}
  - id: redact-secret
    description: Secrets never reach a server
    target: argName
    match: exact
    values: [secret]
    action: redact
  - id: slow-ops-time-out
    description: Long operations get 100 ms
    tools: [trigger-long-running-operation]
    action: allow
    timeoutMs: 100
ledger:
{ledger}
stages:
  ratelimit: {{requestsPerMinute: 0}}
"""


def policy_text(mode: str = "enforce", **ledger: Any) -> str:
    body = "\n".join(f"  {k}: {json.dumps(v)}" for k, v in ledger.items()) or "  bodies: true"
    return POLICY.format(mode=mode, ledger=body)


def setup_home(home: Path, policy: str, servers: dict[str, Any] | None = None) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.yaml").write_text(policy)
    servers_file = home / "servers.json"
    servers_file.write_text(json.dumps({"mcpServers": servers or {"everything": EVERYTHING}}))
    return servers_file


def build_gateway(home: Path, policy: str, ledger_url: str | None = None, **extras: Any) -> Built:
    servers_file = setup_home(home, policy)
    settings = GatewaySettings(home=home, servers_files=[servers_file], insecure_no_auth=True)
    settings.extras = {"ledger_url": ledger_url, **extras}
    return build(settings)


class Client:
    """A session on an in-process gateway, speaking JSON-RPC through `handle_request`."""

    def __init__(self, built: Built, name: str = "ledger-tests", agent: str = "agent-7") -> None:
        self.gateway = built.gateway
        self.session = self.gateway.open_session("stdio", None, agent=agent, process_name="pytest", peer="test")
        self.name = name
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Message:
        msg = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params or {}}
        response = await self.gateway.handle_request(self.session, msg, bytes_in=len(json.dumps(msg)))
        assert response is not None
        return response

    async def initialize(self) -> Message:
        return await self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": self.name, "version": "1.0"}})

    async def call(self, tool: str, arguments: dict[str, Any]) -> Message:
        return await self.request("tools/call", {"name": f"everything__{tool}", "arguments": arguments})


#: (tool, arguments, expected ledger decision) by i % 10
MIX: list[tuple[str, dict[str, Any], str]] = [
    ("echo", {"message": "hello"}, "allow"),
    ("echo", {"message": "again"}, "allow"),
    ("get-sum", {"a": "not a number", "b": 1}, "invalid"),
    ("get-sum", {"a": 2, "b": 40}, "allow"),
    ("echo", {"message": "last"}, "allow"),
    ("get-env", {}, "deny"),
    ("echo", {"message": "with a secret", "secret": "hunter2-TOPSECRET"}, "redact"),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 2.5}, "error"),
    ("trigger-long-running-operation", {"duration": 0.4, "steps": 1}, "timeout"),
    ("no-such-tool", {}, "error"),
]


async def run_mix(client: Client, total: int, batch: int = 10) -> list[tuple[str, Message]]:
    """`total` calls, `batch` at a time; each batch holds at most one timeout, so five timeouts never
    come in a row and the upstream's circuit breaker stays closed."""
    out: list[tuple[str, Message]] = []
    for start in range(0, total, batch):
        kinds = [MIX[i % len(MIX)] for i in range(start, min(total, start + batch))]
        answers = await asyncio.gather(*(client.call(tool, {**args, "i": start + n})
                                         for n, (tool, args, _) in enumerate(kinds)))
        out.extend((expected, answer) for (_, _, expected), answer in zip(kinds, answers, strict=True))
    return out


__all__ = ["MIX", "POLICY", "Client", "build_gateway", "policy_text", "run_mix", "setup_home"]
