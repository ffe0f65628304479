"""A real gateway served on loopback for the approval, dashboard and metrics tests.

`served(tmp_path, policy)` builds a gateway the way `mcpwall proxy` does
(`tests.harness.build_gateway`: token authentication, SQLite ledger, every
stage of STAGE_ORDER), serves its HTTP frontend with what the notify and
metrics stages attach (the dashboard, `/metrics`) under uvicorn on a free
port (`tests.harness.serve_http`) and stops it (and its upstream processes)
at the end. The upstream is the npm `everything` server as `ev`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mcpwall._token import write_secret
from tests.harness import build_gateway, serve_http, token

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = {"command": str(ROOT / "node_modules" / ".bin" / "mcp-server-everything"), "args": ["stdio"]}

ASK_POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: ask-echo
    description: Echoes need a person's approval
    tools: [echo]
    action: ask
    timeoutMs: {timeout}
    owasp: [LLM06:2025]
    compliance: [{{framework: soc2, controls: [CC6.1]}}]
  - id: no-env
    description: Environment dumps are denied
    tools: [get-env]
    action: deny
    owasp: [LLM02:2025]
stages:
  ratelimit: {{requestsPerMinute: 0}}
{extra}"""


def ask_policy(timeout_ms: int = 20000, extra: str = "") -> str:
    return ASK_POLICY.format(timeout=timeout_ms, extra=extra)


@dataclass
class Served:
    url: str
    token: str
    gateway: Any
    home: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def api(self, token: str | None = None) -> httpx.AsyncClient:
        """An HTTP client for the dashboard API with the gateway's (or the given) bearer token."""
        headers = {"Authorization": f"Bearer {token if token is not None else self.token}"} if token != "" else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0, trust_env=False)

    async def pending(self, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Wait until at least `count` asks are pending; return them."""
        async with self.api() as http:
            deadline = asyncio.get_running_loop().time() + timeout
            while True:
                rows = (await http.get("/api/approvals")).json()
                if len(rows) >= count:
                    return list(rows)
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError(f"expected {count} pending asks, have {rows}")
                await asyncio.sleep(0.05)

    def ledger_rows(self, tool: str | None = None) -> list[dict[str, Any]]:
        """tool_calls rows, oldest first (after flushing the writer)."""
        from mcpwall.ledger import LedgerQuery

        ledger = self.gateway.ledger
        assert ledger.flush(10.0)
        return list(ledger.query(LedgerQuery(table="tool_calls", tool=tool, order="asc", limit=1000)).rows)


@asynccontextmanager
async def served(tmp_path: Path, policy: str, *, servers: dict[str, Any] | None = None,
                 agent_tokens: dict[str, str] | None = None) -> AsyncIterator[Served]:
    home = tmp_path / "home"
    for identity, secret in (agent_tokens or {}).items():
        write_secret(home / "run" / "tokens" / f"{identity}.token", secret)
    built = build_gateway(home, policy, servers if servers is not None else {"ev": EVERYTHING}, auth=True)
    async with serve_http(built) as url:
        yield Served(url, token(built), built.gateway, home)
