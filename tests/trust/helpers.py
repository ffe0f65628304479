"""Test helpers for tool trust: a real gateway served in-process, the official MCP client, real servers.

`serve_gateway` builds a gateway from a policy and an mcpServers file exactly
as `mcpwall proxy` does (`tests.harness.build_gateway`), serves its HTTP frontend
with uvicorn on a free loopback port inside the test's event loop
(`tests.harness.serve_http`), and stops it on exit. Serving in-process (rather than as a subprocess) lets a test reach
`gateway.state`, where pins are kept, the way the ledger-backed `pin` command
reaches the same store from another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcpwall.proxy import Gateway
from tests.harness import build_gateway, serve_http

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent

RUGPULL = {"command": sys.executable, "args": [str(HERE / "servers" / "rugpull.py")]}
POISONED = {"command": sys.executable, "args": [str(HERE / "servers" / "poisoned.py")]}
TIME = {"command": str(VENV_BIN / "mcp-server-time")}
MEMORY = {"command": str(BIN / "mcp-server-memory")}
EVERYTHING = {"command": str(BIN / "mcp-server-everything"), "args": ["stdio"]}


def filesystem(root: Path) -> dict[str, Any]:
    return {"command": str(BIN / "mcp-server-filesystem"), "args": [str(root)]}


def git(repo: Path) -> dict[str, Any]:
    return {"command": str(VENV_BIN / "mcp-server-git"), "args": ["--repository", str(repo)]}


ENFORCE = """\
version: "1"
mode: enforce
defaultAction: allow
stages:
  ratelimit: {requestsPerMinute: 0}
"""


@dataclass
class Served:
    url: str
    gateway: Gateway
    home: Path


@contextlib.asynccontextmanager
async def serve_gateway(tmp_path: Path, servers: dict[str, dict[str, Any]], policy: str = ENFORCE,
                        extra_policy_files: dict[str, str] | None = None) -> AsyncIterator[Served]:
    """A gateway over `servers`, serving /mcp on loopback until the block ends."""
    home = tmp_path / "home"
    built = build_gateway(home, policy, servers, files=extra_policy_files)
    async with serve_http(built) as url:
        for upstream in built.gateway.servers.values():
            await upstream.wait_ready(60)
        yield Served(f"{url}/mcp", built.gateway, home)


@contextlib.asynccontextmanager
async def mcp_client(url: str, agent: str = "", name: str = "trust-tests") -> AsyncIterator[Client]:
    """The official MCP client over streamable HTTP; `agent` goes in the x-agent-id header."""
    from mcp.types import Implementation

    headers = {"x-agent-id": agent} if agent else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy",
                   client_info=Implementation(name=name, version="1")) as client:
        yield client


async def tool_names(client: Client) -> set[str]:
    listed = await client.list_tools(cache_mode="refresh")
    return {t.name for t in listed.tools}


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    """Poll an (async or plain) predicate until it holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)
