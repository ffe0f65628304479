"""RBAC and per-client tool sets through a real gateway, driven by the official MCP client.

Strategy: real servers (mcp-server-time, mcp-server-memory) behind a gateway
built as `mcpwall proxy` builds it, casbin files written by `mcpwall
rbac-init` or by the test. Two clients connect with different identities
(x-agent-id, or only a clientInfo name) and we compare what each lists and
what each may call, including the bypass attempts a client would try: calling
a tool it was not shown, using the single-server endpoint, having no identity.
RBAC must fail closed when configured and broken, and be off when absent.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import MCPError

from mcpwall.cli import cli
from tests.trust.helpers import ENFORCE, MEMORY, TIME, mcp_client, serve_gateway, tool_names, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RBAC = ENFORCE + "rbac:\n  model: rbac_model.conf\n  policy: rbac_policy.csv\n"
SERVERS = {"time": TIME, "memory": MEMORY}
TIME_TOOLS = {"time__get_current_time", "time__convert_time"}
MEMORY_READ = {"memory__read_graph", "memory__search_nodes", "memory__open_nodes"}


def _rbac_files(home: Path, policy_lines: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    result = CliRunner().invoke(cli, ["rbac-init", "--home", str(home)])
    assert result.exit_code == 0, result.output
    if policy_lines:
        (home / "rbac_policy.csv").write_text(policy_lines)


async def _denied(client: object, name: str, args: dict[str, object]) -> str:
    with pytest.raises(MCPError) as denied:
        await client.call_tool(name, args)  # type: ignore[attr-defined]
    assert denied.value.error.code == -32001
    return denied.value.error.message


async def test_two_agents_with_different_roles_see_and_may_call_different_tools(tmp_path: Path) -> None:
    _rbac_files(tmp_path / "home", "p, timekeeper, time__*, execute\np, archivist, memory__*, execute\n"
                                   "g, alice, timekeeper\ng, bob, archivist\n")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url, agent="alice") as alice, mcp_client(served.url, agent="bob") as bob:
        alice_tools, bob_tools = await tool_names(alice), await tool_names(bob)
        assert alice_tools == TIME_TOOLS
        assert bob_tools
        assert all(n.startswith("memory__") for n in bob_tools)
        assert not alice_tools & bob_tools

        now = await alice.call_tool("time__get_current_time", {"timezone": "Etc/UTC"})
        assert not now.is_error
        graph = await bob.call_tool("memory__read_graph", {})
        assert not graph.is_error
        assert "'alice'" in await _denied(alice, "memory__read_graph", {})
        assert "'bob'" in await _denied(bob, "time__get_current_time", {"timezone": "Etc/UTC"})


async def test_the_default_policy_lets_viewers_call_only_read_only_tools(tmp_path: Path) -> None:
    _rbac_files(tmp_path / "home", "")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url, agent="agent_admin") as admin, \
            mcp_client(served.url, agent="agent_viewer") as viewer:
        admin_tools, viewer_tools = await tool_names(admin), await tool_names(viewer)
        assert TIME_TOOLS | MEMORY_READ | {"memory__create_entities"} <= admin_tools
        assert viewer_tools == TIME_TOOLS | MEMORY_READ
        await _denied(viewer, "memory__create_entities", {"entities": []})
        created = await admin.call_tool("memory__create_entities", {"entities": []})
        assert not created.is_error


async def test_a_client_without_an_agent_id_is_known_by_its_client_name(tmp_path: Path) -> None:
    _rbac_files(tmp_path / "home", "p, timekeeper, time__*, execute\ng, client:ci-bot, timekeeper\n")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url, name="ci-bot") as bot, mcp_client(served.url, name="stranger") as stranger:
        assert await tool_names(bot) == TIME_TOOLS
        assert await tool_names(stranger) == set()
        await _denied(stranger, "time__get_current_time", {"timezone": "Etc/UTC"})


async def test_the_single_server_endpoint_applies_the_same_roles(tmp_path: Path) -> None:
    _rbac_files(tmp_path / "home", "p, archivist, memory__*, execute\ng, bob, archivist\n")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url + "/time", agent="bob") as bob:
        assert await tool_names(bob) == set()
        assert "'bob'" in await _denied(bob, "get_current_time", {"timezone": "Etc/UTC"})


async def test_rbac_that_is_configured_but_broken_denies_everything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _rbac_files(home, "")
    (home / "rbac_model.conf").unlink()
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url, agent="agent_admin") as admin:
        assert await tool_names(admin) == set()
        assert "broken" in await _denied(admin, "time__get_current_time", {"timezone": "Etc/UTC"})


async def test_a_malformed_model_also_fails_closed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _rbac_files(home, "")
    (home / "rbac_model.conf").write_text("[request_definition]\nr = sub, obj, act\n[matchers]\nm = (((\n")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, \
            mcp_client(served.url, agent="agent_admin") as admin:
        assert await tool_names(admin) == set()
        await _denied(admin, "time__get_current_time", {"timezone": "Etc/UTC"})


async def test_without_an_rbac_section_rbac_is_off(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, SERVERS) as served, mcp_client(served.url, agent="nobody") as client:
        assert await tool_names(client) >= TIME_TOOLS
        assert served.gateway.pipeline.find("rbac") is None


async def test_an_edited_policy_file_takes_effect_without_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _rbac_files(home, "p, timekeeper, time__get_current_time, execute\ng, alice, timekeeper\n")
    async with serve_gateway(tmp_path, SERVERS, RBAC) as served, mcp_client(served.url, agent="alice") as alice:
        assert await tool_names(alice) == {"time__get_current_time"}
        policy = home / "rbac_policy.csv"
        policy.write_text("p, timekeeper, time__*, execute\ng, alice, timekeeper\n")
        later = time.time() + 5
        os.utime(policy, (later, later))

        async def sees_both() -> bool:
            return await tool_names(alice) == TIME_TOOLS

        await wait_for(sees_both, timeout=20)
        # a broken edit keeps the last good policy instead of opening up or locking out
        policy.write_text("p, timekeeper\n")
        os.utime(policy, (later + 5, later + 5))
        await asyncio.sleep(1.1)
        assert await tool_names(alice) == TIME_TOOLS


async def test_prompts_and_resources_a_client_may_not_use_are_neither_listed_nor_served(tmp_path: Path) -> None:
    from tests.trust.helpers import EVERYTHING

    _rbac_files(tmp_path / "home", "p, timekeeper, time__*, execute\ng, alice, timekeeper\n"
                                   "p, reader, *, read\ng, carol, reader\n")
    async with serve_gateway(tmp_path, {"time": TIME, "everything": EVERYTHING}, RBAC) as served, \
            mcp_client(served.url, agent="alice") as alice, mcp_client(served.url, agent="carol") as carol:
        assert (await alice.list_prompts()).prompts == []
        assert (await alice.list_resources()).resources == []
        uri = "demo://resource/static/document/architecture.md"
        with pytest.raises(MCPError) as denied:
            await alice.read_resource(uri)
        assert denied.value.error.code == -32001
        with pytest.raises(MCPError) as denied:
            await alice.get_prompt("everything__simple-prompt", {})
        assert denied.value.error.code == -32001
        # a reader role may read them
        assert any(str(r.uri) == uri for r in (await carol.list_resources()).resources)
        read = await carol.read_resource(uri)
        assert read.contents
