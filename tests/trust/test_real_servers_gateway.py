"""The trust stages on the real servers our tests use: nothing hidden, nothing pending, nothing redacted.

Strategy: filesystem, memory, everything, time and git behind one gateway in
enforce mode with pins, the poisoning scan and RBAC (an admin role) all on;
the official MCP client lists twice and calls a tool of each server. A
false positive here would block a real user's everyday tools.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpwall.security._poisoning_pins import PinBook
from tests.trust.helpers import (
    ENFORCE,
    EVERYTHING,
    MEMORY,
    ROOT,
    TIME,
    filesystem,
    git,
    mcp_client,
    serve_gateway,
    tool_names,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

POLICY = ENFORCE + "rbac:\n  model: rbac_model.conf\n  policy: rbac_policy.csv\n"


async def test_real_servers_pass_every_trust_stage_untouched(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcpwall.cli import cli

    home = tmp_path / "home"
    home.mkdir()
    assert CliRunner().invoke(cli, ["rbac-init", "--home", str(home)]).exit_code == 0
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n")
    servers = {"filesystem": filesystem(files), "everything": EVERYTHING, "time": TIME, "git": git(ROOT),
               "memory": {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.json")}}}
    async with serve_gateway(tmp_path, servers, POLICY) as served, \
            mcp_client(served.url, agent="agent_admin") as client:
        first = await tool_names(client)
        expected = sum(len(u.catalog.tools) for u in served.gateway.servers.values())
        assert len(first) == expected
        assert expected >= 40
        assert await tool_names(client) == first

        read = await client.call_tool("filesystem__read_text_file", {"path": str(files / "hello.txt")})
        assert read.content[0].text == "hello\n"  # type: ignore[union-attr]
        echoed = await client.call_tool("everything__echo", {"message": "hi there"})
        assert "hi there" in echoed.content[0].text  # type: ignore[union-attr]
        status = await client.call_tool("git__git_status", {"repo_path": str(ROOT)})
        assert not status.is_error
        now = await client.call_tool("time__get_current_time", {"timezone": "Etc/UTC"})
        assert not now.is_error
        graph = await client.call_tool("memory__read_graph", {})
        assert not graph.is_error

        prompts = await client.list_prompts()
        assert prompts.prompts
        book = PinBook(served.gateway.state)
        assert book.pending() == []
        assert book.records("everything", "prompt")
        assert book.records("everything", "resource")
        assert book.records("memory", "tool")
