"""No client can set a shared server's roots (issue 22, class 2).

Strategy: a real gateway in front of the real @modelcontextprotocol/server-filesystem, which
replaces its allowed directories with whatever its client answers to `roots/list`. The attacker
is the official MCP client declaring roots and answering `file:///`. To be the one session
with a call in flight when the server asks (which is what the old gateway relayed the question
by), it reads a FIFO in the workspace, which blocks the server's read until the test writes to
it, and sends `notifications/roots/list_changed` meanwhile. Then another client (or, on the
stdio frontends, the same one) asks the server for its allowed directories and reads a file
outside the workspace and /etc/hostname: the server must still be confined to its
command-line directory. The policy allows everything, so only the server's own confinement is
under test. Configured roots (`roots:` in the server entry) are what the server gets, and an
empty list leaves server-filesystem on its command-line directories; each answer, and each
client's list_changed dropped, is a ledger row.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import sqlite3
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import FileUrl

from tests.proxy.harness import MCPWALL, GatewayProcess, filesystem, http_client, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

#: Everything allowed: the server's confinement is the only wall left.
OPEN = """\
version: "1"
mode: enforce
defaultAction: allow
stages:
  ratelimit: {requestsPerMinute: 0}
"""


class Attacker:
    """A client that declares roots, answers every roots/list with `file:///`, and counts the asks."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def list_roots(self, context: Any) -> types.ListRootsResult:
        self.asked.set()
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl("file:///"), name="everything")])


@pytest.fixture
def workspace(tmp_path: Path) -> dict[str, Path]:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "note.txt").write_text("inside")
    os.mkfifo(ws / "slow.pipe")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.txt").write_text("outside the workspace")
    return {"ws": ws.resolve(), "fifo": ws / "slow.pipe", "outside": (outside / "report.txt").resolve()}


async def _writer(fifo: Path) -> int:
    """The write end of `fifo`, opened once the server is blocked opening it for its read.

    Kept open, it holds the server's read (and so the call) until the test writes and closes it."""
    for _ in range(300):
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            await asyncio.sleep(0.1)  # no reader yet
    raise AssertionError("the server never opened the FIFO")


async def attack(client: Client, attacker: Attacker, fifo: Path, name: str) -> None:
    """Hold a call in flight, announce new roots, answer file:/// if asked; then end the call."""
    call = asyncio.ensure_future(client.call_tool(name, {"path": str(fifo)}))
    fd = await _writer(fifo)  # the call is in flight: the server is reading the FIFO
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.send_roots_list_changed()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(attacker.asked.wait(), 3.0)
        await asyncio.sleep(0.3)  # the server applies the answer
        os.write(fd, b"released\n")
    finally:
        os.close(fd)
    result = await asyncio.wait_for(call, 30)
    assert "released" in json.dumps(result.model_dump()), result


async def assert_confined(client: Client, prefix: str, ws: Path, outside: Path) -> None:
    listed = await client.call_tool(f"{prefix}list_allowed_directories", {})
    dirs = listed.content[0].text.splitlines()[1:]  # type: ignore[union-attr]
    assert dirs == [str(ws)], dirs
    read = await client.call_tool(f"{prefix}read_text_file", {"path": str(outside)})
    assert read.is_error, read
    assert "outside the workspace" not in json.dumps(read.model_dump())
    refused = ""
    try:
        read = await client.call_tool(f"{prefix}read_text_file", {"path": "/etc/hostname"})
    except MCPError as exc:
        refused = str(exc)
    # the gateway's own path check refuses it before the server does; else the server must
    assert "path-safety" in refused or read.is_error, (refused, read)


def ledger_rows(home: Path, method: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{home / 'ledger.db'}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT server_name, decision, response_preview, error_message FROM protocol_events "
                            "WHERE method = ?", (method,)).fetchall()


async def rows(home: Path, method: str) -> list[tuple[Any, ...]]:
    """The ledger's rows of `method` once the writer has committed them (it batches for 50 ms)."""
    for _ in range(50):
        found = ledger_rows(home, method)
        if found:
            return found
        await asyncio.sleep(0.1)
    return []


@pytest.fixture
def gw(tmp_path: Path, workspace: dict[str, Path]) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path / "home", {"fs": filesystem(workspace["ws"])}, OPEN).start()
    yield g
    g.stop()


@pytest.mark.parametrize("endpoint", ["/mcp/fs", "/mcp"])
async def test_a_clients_roots_do_not_widen_a_shared_filesystem_server_for_another_client(
        endpoint: str, gw: GatewayProcess, workspace: dict[str, Path]) -> None:
    attacker = Attacker()
    prefix = "" if endpoint == "/mcp/fs" else "fs__"
    async with http_client(f"{gw.url}{endpoint}", gw.token, list_roots_callback=attacker.list_roots, mode="legacy") as evil, \
            http_client(f"{gw.url}/mcp", gw.token) as victim:
        await attack(evil, attacker, workspace["fifo"], f"{prefix}read_text_file")
        assert not attacker.asked.is_set(), "a server's roots/list was relayed to a client"
        await assert_confined(victim, "fs__", workspace["ws"], workspace["outside"])
        await assert_confined(evil, prefix, workspace["ws"], workspace["outside"])
    dropped = await rows(gw.home, "notifications/roots/list_changed")
    assert dropped, "no ledger row for the client's roots/list_changed"
    assert dropped[0][1] == "rejected"
    assert "never from a client" in dropped[0][3]


@contextlib.asynccontextmanager
async def stdio_client(kind: str, home: Path, ws: Path, attacker: Attacker) -> AsyncIterator[Client]:
    fs = filesystem(ws)
    if kind == "wrap":
        args = ["wrap", "--name", "fs", "--home", str(home), "--", fs["command"], *fs["args"]]
    else:
        servers = write_servers(home / "servers.json", {"fs": fs})
        args = ["proxy", "--stdio", "--home", str(home), "--servers", str(servers)]
    # The whole environment, as GatewayProcess passes it: the gateway runs from the tree under test.
    params = StdioServerParameters(command=MCPWALL, args=args, env=dict(os.environ))
    async with Client(params, list_roots_callback=attacker.list_roots, mode="legacy") as c:
        yield c


@pytest.mark.parametrize("kind", ["wrap", "stdio"])
async def test_the_lone_client_of_a_stdio_gateway_cannot_widen_its_server_with_roots(
        kind: str, tmp_path: Path, workspace: dict[str, Path]) -> None:
    attacker = Attacker()
    prefix = "" if kind == "wrap" else "fs__"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "policy.yaml").write_text(OPEN)
    async with stdio_client(kind, tmp_path / "home", workspace["ws"], attacker) as client:
        await attack(client, attacker, workspace["fifo"], f"{prefix}read_text_file")
        assert not attacker.asked.is_set(), "a server's roots/list was relayed to the client"
        await assert_confined(client, prefix, workspace["ws"], workspace["outside"])
    assert await rows(tmp_path / "home", "notifications/roots/list_changed")


async def test_configured_roots_are_what_the_server_gets_and_the_answer_is_recorded(
        tmp_path: Path, workspace: dict[str, Path]) -> None:
    sub = workspace["ws"] / "sub"
    spec = {**filesystem(workspace["ws"]), "roots": [str(sub)]}
    attacker = Attacker()
    g = GatewayProcess(tmp_path / "home", {"fs": spec}, OPEN).start()
    try:
        answered = await rows(g.home, "roots/list")
        assert answered, "no ledger row for the gateway's roots/list answer"
        server, decision, preview, _ = answered[0]
        assert (server, decision) == ("fs", "allow")
        assert sub.as_uri() in preview
        async with http_client(f"{g.url}/mcp/fs", g.token, list_roots_callback=attacker.list_roots, mode="legacy") as evil:
            listed = await evil.call_tool("list_allowed_directories", {})
            assert listed.content[0].text.splitlines()[1:] == [str(sub)]  # type: ignore[union-attr]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await evil.send_roots_list_changed()
            await asyncio.sleep(0.5)
            listed = await evil.call_tool("list_allowed_directories", {})
            assert listed.content[0].text.splitlines()[1:] == [str(sub)]  # type: ignore[union-attr]
        assert not attacker.asked.is_set()
    finally:
        g.stop()


async def test_an_empty_roots_answer_leaves_server_filesystem_on_its_command_line_directories(
        tmp_path: Path, workspace: dict[str, Path]) -> None:
    g = GatewayProcess(tmp_path / "home", {"fs": {**filesystem(workspace["ws"]), "roots": []}}, OPEN).start()
    try:
        answered = await rows(g.home, "roots/list")
        assert answered, "no ledger row for the gateway's roots/list answer"
        assert '"roots":[]' in answered[0][2].replace(" ", ""), answered
        async with http_client(f"{g.url}/mcp", g.token) as client:
            await assert_confined(client, "fs__", workspace["ws"], workspace["outside"])
            inside = await client.call_tool("fs__read_text_file", {"path": str(workspace["ws"] / "note.txt")})
            assert not inside.is_error
            assert "inside" in json.dumps(inside.model_dump())
    finally:
        g.stop()
