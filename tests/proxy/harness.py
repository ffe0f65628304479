"""Test helpers for the gateway: real servers, a real gateway process, the official client.

Everything here starts real processes (the npm and PyPI MCP servers, `mcpwall
proxy`) on loopback and stops them by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.harness import free_port, wait_answers

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
MCPWALL = str(VENV_BIN / "mcpwall")
HERE = Path(__file__).resolve().parent

EVERYTHING: dict[str, Any] = {"command": str(BIN / "mcp-server-everything"), "args": ["stdio"]}
MEMORY = {"command": str(BIN / "mcp-server-memory")}
TIME = {"command": str(VENV_BIN / "mcp-server-time")}


def filesystem(root: Path) -> dict[str, Any]:
    return {"command": str(BIN / "mcp-server-filesystem"), "args": [str(root)]}


def script_server(name: str, *args: str) -> dict[str, Any]:
    """One of the small misbehaving servers in tests/proxy/servers/."""
    return {"command": sys.executable, "args": [str(HERE / "servers" / f"{name}.py"), *args]}


#: An enforce-mode policy that allows by default, with a few rules the tests rely on.
PERMISSIVE = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-etc
    description: No system paths
    target: file
    match: pattern
    values: ['^/etc(/|$)']
    action: deny
  - id: no-env-dump
    description: Environment dumps are denied
    tools: [get-env]
    action: deny
  - id: no-forbidden-writes
    description: Nothing named forbidden may be written
    target: file
    match: contains
    values: [forbidden]
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
"""


@contextlib.contextmanager
def http_script_server(name: str, *args: str) -> Iterator[str]:
    """One of tests/proxy/servers/ run as `NAME.py [ARGS...] PORT` on a free loopback port, for the
    block; yields its `/mcp` URL once it answers, and stops it by PID."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "servers" / f"{name}.py"), *args, str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_answers(url, proc, probe=lambda u: httpx.post(u, timeout=2))
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def write_servers(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


class GatewayProcess:
    """`mcpwall proxy` as a subprocess on a free loopback port."""

    def __init__(self, home: Path, servers: dict[str, dict[str, Any]], policy: str = PERMISSIVE,
                 extra: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        (home / "policy.yaml").write_text(policy)
        self.servers_file = write_servers(home / "servers.json", servers)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = extra or []
        self.env = {**os.environ, **(env or {})}
        #: the mcpwall it runs and the folder it runs in (tests/packaging: an installed wheel's, outside the tree)
        self.command = MCPWALL
        self.cwd: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = home / "gateway.log"
        self._log_file: Any = None

    def start(self, timeout: float = 60.0) -> GatewayProcess:
        self._log_file = self.log.open("ab")
        self.proc = subprocess.Popen(
            [self.command, "proxy", "--home", str(self.home), "--servers", str(self.servers_file),
             "--port", str(self.port), *self.extra],
            stdout=subprocess.DEVNULL, stderr=self._log_file, env=self.env, cwd=self.cwd, start_new_session=True)
        try:
            return self._wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, timeout: float) -> GatewayProcess:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {self.log.read_text()[-3000:]}")
            try:
                r = httpx.get(f"{self.url}/health", headers=self.headers, timeout=1.0)
                if r.status_code == 200 and r.json().get("status") == "ok":
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gateway did not become healthy: {self.log.read_text()[-3000:]}")

    @property
    def token(self) -> str:
        path = self.home / "run" / "gateway.token"
        return path.read_text().strip() if path.exists() else ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def _stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.post(f"{self.url}{path}", content=data, timeout=30.0,
                          headers={**self.headers, "Content-Type": "application/json", **(headers or {})})


@contextlib.contextmanager
def gateway(home: Path, servers: dict[str, dict[str, Any]], policy: str = PERMISSIVE,
            extra: list[str] | None = None) -> Iterator[GatewayProcess]:
    g = GatewayProcess(home, servers, policy, extra).start()
    try:
        yield g
    finally:
        g.stop()


@contextlib.asynccontextmanager
async def http_client(url: str, token: str = "", **kwargs: Any) -> AsyncIterator[Client]:
    """The official MCP client over streamable HTTP, with the gateway's bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            Client(streamable_http_client(url, http_client=http), **kwargs) as client:
        yield client
