"""`mcpwall wrap` in front of servers of both eras, and its `--era` (issue 24: `wrap` among the frontends).

Strategy: the real `mcpwall wrap` command, launched by the official Python SDK 2.x stdio client
as a desktop client launches it, guards one real stdio server: tests/proxy/servers/modern_only.py
(the SDK's server made modern-only: it refuses `initialize`) and PyPI's mcp-server-time (on the
SDK, so dual-era). Clients of both eras list and call through it; the policy's deny holds (the
denied tool is not listed and its call refused); the
gateway's log (`--log-level INFO`, the client's errlog) says which revision wrap spoke upstream:
`auto` reaches the modern-only server in 2026-07-28 and keeps the handshake era with the
dual-era one, `--era modern` speaks 2026-07-28 to that one too, and `--era` takes only the
three values servers.json takes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.proxy.harness import HERE, MCPWALL, TIME
from tests.proxy.test_modern_upstream import MODERN, POLICY

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN_ONLY = [sys.executable, str(HERE / "servers" / "modern_only.py"), "stdio"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(POLICY)
    return home


def _wrap(home: Path, name: str, command: list[str], *options: str) -> StdioServerParameters:
    return StdioServerParameters(command=MCPWALL, args=["wrap", "--name", name, "--home", str(home),
                                                        "--log-level", "INFO", *options, "--", *command])


def spoken(log: Path, name: str) -> str:
    """The revision the wrapped server was opened in, from the gateway's `ready` line."""
    found = re.search(rf"\[{name}\] ready \([^,]+, ([0-9-]+)\)", log.read_text())
    assert found, log.read_text()[-3000:]
    return found.group(1)


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_wrap_in_auto_reaches_a_modern_only_server_for_clients_of_both_eras(tmp_path: Path, mode: str) -> None:
    home, log = _home(tmp_path), tmp_path / "wrap.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(_wrap(home, "m", MODERN_ONLY), errlog=errlog), mode=mode) as c:
            listed = {t.name for t in (await c.list_tools()).tools}
            assert "add" in listed
            assert "drop_table" not in listed  # a tool the policy always denies is not offered (listfilter)
            assert (await c.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5.0}
            with pytest.raises(MCPError) as denied:
                await c.call_tool("drop_table", {"name": "users"})
            assert denied.value.error.code == -32001
            if mode == "legacy":
                assert c.server_info is not None
                assert c.server_info.name == "modern-only"
    assert spoken(log, "m") == MODERN


@pytest.mark.parametrize(("era", "revision"), [("auto", "2025-11-25"), ("modern", MODERN)])
async def test_wrap_era_pins_the_revision_spoken_to_a_dual_era_server(tmp_path: Path, era: str,
                                                                      revision: str) -> None:
    home, log = _home(tmp_path), tmp_path / "wrap.log"
    options = [] if era == "auto" else ["--era", era]
    with log.open("w") as errlog:
        async with Client(stdio_client(_wrap(home, "time", [TIME["command"]], *options), errlog=errlog),
                          mode="legacy") as c:
            result = await c.call_tool("get_current_time", {"timezone": "UTC"})
            assert not result.is_error
            assert "UTC" in text(result)
    assert spoken(log, "time") == revision


def test_wrap_era_takes_only_the_eras_servers_json_takes(tmp_path: Path) -> None:
    done = subprocess.run([MCPWALL, "wrap", "--name", "m", "--home", str(tmp_path), "--era", "2026-07-28", "--",
                           *MODERN_ONLY], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          check=False)
    assert done.returncode == 2
    assert "auto" in done.stderr
    assert "modern" in done.stderr
