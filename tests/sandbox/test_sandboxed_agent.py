"""Acceptance: an agent in a bubblewrap sandbox with no network reaches the gateway only by the relay.

Strategy: a real gateway (in-process) listens for frames on a Unix socket and serves the
built-in tools. The agent (tests/sandbox/agent.py, the official MCP client) runs under the
same bubblewrap confinement mcpwall builds for servers: no network namespace of its own, only
its runtime and the socket file bind-mounted. It first proves the network is gone (a port
listening on the host's loopback is unreachable), then lists and calls tools through
`mcpwall relay`. The ledger must name the agent's process for its calls.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest

from mcpwall.policy._model import SandboxSpec
from mcpwall.sandbox import sandbox_argv
from tests.relay.helpers import MCPWALL, builtin, framed_gateway
from tests.sandbox.conftest import needs_bwrap

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


async def test_an_agent_without_network_lists_and_calls_tools_through_the_relay_and_is_named_in_the_ledger(
        tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
            confine = sandbox_argv(SandboxSpec(read=[str(HERE), str(gw.socket)]), sys.executable)
            assert "--share-net" not in confine
            proc = await asyncio.create_subprocess_exec(
                *confine, sys.executable, str(HERE / "agent.py"), str(gw.socket), str(port), MCPWALL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 90)
            assert proc.returncode == 0, err.decode()[-3000:]
            report = json.loads(out.decode().strip().splitlines()[-1])
            assert report["tcp"].startswith("error:"), report
            assert "local__echo" in report["tools"]
            assert report["echo"] == "from inside the sandbox"
            rows = await gw.rows(1, tool="echo")
            assert [r["process_name"] for r in rows] == ["sandboxed-agent"]
            assert str(rows[0]["peer"]).startswith("unix pid=")
    finally:
        listener.close()
