"""The ledger tests' gateway: server-everything behind a policy with a ledger block.

`ledger_gateway` is `tests.harness.build_gateway` with that server and a ledger URL; `Client`
is the harness's in-memory session as the tests' agent (`agent-7`, process `pytest`), calling
the server's tools by their own names."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpwall.protocol import Message
from mcpwall.proxy import Built
from tests.harness import MemoryClient, build_gateway, write_home
from tests.proxy.harness import EVERYTHING

SERVERS = {"everything": EVERYTHING}

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
    """The home `mcpwall proxy` is started on (its servers file), for the tests that run the command."""
    _, servers_file = write_home(home, policy, servers or SERVERS)
    assert servers_file is not None
    return servers_file


def ledger_gateway(home: Path, policy: str, ledger_url: str | None = None, **extras: Any) -> Built:
    return build_gateway(home, policy, SERVERS, ledger_url=ledger_url, **extras)


class Client(MemoryClient):
    """The tests' agent on an in-process gateway; `call` takes server-everything's own tool names."""

    def __init__(self, built: Built, name: str = "ledger-tests", agent: str = "agent-7") -> None:
        super().__init__(built.gateway, name=name, agent=agent, process_name="pytest", peer="test")

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Message:
        return await super().call(f"everything__{tool}", arguments)


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


__all__ = ["MIX", "POLICY", "SERVERS", "Client", "ledger_gateway", "policy_text", "run_mix", "setup_home"]
