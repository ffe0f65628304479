"""Rug pulls through a real gateway, driven by the official MCP client (issue 8 acceptance).

Strategy: a real MCP server written with the official SDK (servers/rugpull.py)
changes its own tool list at run time and sends
notifications/tools/list_changed. The gateway is built exactly as `mcpwall
proxy` builds it and serves HTTP on loopback; the client talks to /mcp. We
check what the client sees (tools/list) and what it may call (tools/call)
before a change, after it, and after a person accepts it through the pin book
the `pin` command uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPError

from mcpwall.security._poisoning_pins import PinBook
from tests.trust.helpers import ENFORCE, RUGPULL, mcp_client, serve_gateway, tool_names, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

AUDIT = ENFORCE.replace("mode: enforce", "mode: audit")
#: The poisoning scan would hide the poisoned description on its own; switch it off to see pins act alone.
PINS_ONLY = ENFORCE + "  poisoning: {enabled: false}\n"


async def _call(client: object, name: str, args: dict[str, object]) -> str:
    result = await client.call_tool(name, args)  # type: ignore[attr-defined]
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _pending(book: PinBook, name: str) -> bool:
    record = book.get("weather", "tool", name)
    return record is not None and bool(record.get("pending"))


async def test_a_changed_description_is_hidden_and_blocked_until_a_person_accepts_it(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, PINS_ONLY) as served, \
            mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})

        await _call(client, "weather__set_mode", {"mode": "change"})
        book = PinBook(served.gateway.state)
        await wait_for(lambda: _pending(book, "get_forecast"))

        assert "weather__get_forecast" not in await tool_names(client)
        with pytest.raises(MCPError) as blocked:
            await _call(client, "weather__get_forecast", {"city": "Oslo"})
        assert blocked.value.error.code == -32001
        assert "rug pull" in blocked.value.error.message
        assert "pin --accept weather/get_forecast" in blocked.value.error.message

        assert book.accept("weather/get_forecast") == ["weather/tool:get_forecast"]
        assert "weather__get_forecast" in await tool_names(client)
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})


async def test_a_renamed_copy_of_a_pinned_tool_is_caught(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, PINS_ONLY) as served, \
            mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        await _call(client, "weather__set_mode", {"mode": "rename"})
        book = PinBook(served.gateway.state)
        await wait_for(lambda: _pending(book, "forecast_lookup"))

        record = book.get("weather", "tool", "forecast_lookup")
        assert record is not None
        assert record["pending"]["change"] == "renamed"
        assert record["pending"]["of"] == "get_forecast"
        names = await tool_names(client)
        assert "weather__forecast_lookup" not in names
        assert "weather__get_forecast" not in names
        with pytest.raises(MCPError) as blocked:
            await _call(client, "weather__forecast_lookup", {"city": "Oslo", "notes": "x"})
        assert blocked.value.error.code == -32001
        assert "copy of 'get_forecast'" in blocked.value.error.message


async def test_a_removed_tool_that_comes_back_different_is_caught(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, PINS_ONLY) as served, \
            mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        await _call(client, "weather__set_mode", {"mode": "remove"})
        await wait_for(lambda: bool((book.get("weather", "tool", "get_forecast") or {}).get("removed_at")))
        await _call(client, "weather__set_mode", {"mode": "readd"})
        await wait_for(lambda: _pending(book, "get_forecast"))
        assert book.get("weather", "tool", "get_forecast")["pending"]["change"] == "readded"  # type: ignore[index]
        with pytest.raises(MCPError) as blocked:
            await _call(client, "weather__get_forecast", {"city": "Oslo"})
        assert blocked.value.error.code == -32001


async def test_a_server_that_reverts_the_change_is_trusted_again(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, PINS_ONLY) as served, \
            mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        await _call(client, "weather__set_mode", {"mode": "change"})
        await wait_for(lambda: _pending(book, "get_forecast"))
        await _call(client, "weather__set_mode", {"mode": "honest"})
        await wait_for(lambda: not (book.get("weather", "tool", "get_forecast") or {}).get("pending"))
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})


async def test_audit_mode_reports_the_change_but_lets_calls_through(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, AUDIT) as served, \
            mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        await _call(client, "weather__set_mode", {"mode": "change"})
        book = PinBook(served.gateway.state)
        await wait_for(lambda: _pending(book, "get_forecast"))
        assert "weather__get_forecast" in await tool_names(client)
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})


async def test_with_the_poisoning_scan_on_the_poisoned_change_is_hidden_even_after_acceptance(
        tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"weather": RUGPULL}) as served, mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        await _call(client, "weather__set_mode", {"mode": "change"})
        book = PinBook(served.gateway.state)
        await wait_for(lambda: _pending(book, "get_forecast"))
        book.accept("weather")
        # accepted as a pin, but the new description carries hidden instructions: still not listed
        assert "weather__get_forecast" not in await tool_names(client)
        with pytest.raises(MCPError) as blocked:
            await _call(client, "weather__get_forecast", {"city": "Oslo"})
        assert blocked.value.error.code == -32001
        assert "poisoned" in blocked.value.error.message


async def test_the_pin_command_accepts_a_change_while_the_gateway_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcpwall.cli import cli
    from mcpwall.state import MemoryStateStore

    async with serve_gateway(tmp_path, {"weather": RUGPULL}, PINS_ONLY) as served, \
            mcp_client(served.url) as client:
        if isinstance(served.gateway.state, MemoryStateStore):
            pytest.skip("no ledger in this build: pins live in memory, out of the command's reach")
        assert "weather__get_forecast" in await tool_names(client)
        await _call(client, "weather__set_mode", {"mode": "change"})
        book = PinBook(served.gateway.state)
        await wait_for(lambda: _pending(book, "get_forecast"))

        listed = CliRunner().invoke(cli, ["pin", "--home", str(served.home), "--list"])
        assert listed.exit_code == 1, listed.output
        assert "PENDING changed" in listed.output
        assert "+" in listed.output
        accepted = CliRunner().invoke(cli, ["pin", "--home", str(served.home), "--accept", "weather/get_forecast"])
        assert accepted.exit_code == 0, accepted.output

        async def forecast_listed() -> bool:
            return "weather__get_forecast" in await tool_names(client)

        # the gateway's ledger caches state reads briefly; another process's write shows within that time
        await wait_for(forecast_listed, timeout=10)
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})


async def test_a_definition_poisoned_after_calls_is_blocked_on_its_next_call(tmp_path: Path) -> None:
    """The poisoning stage remembers what it computed of a catalog entry; the rug pull's new
    definition is a new entry, so the call after it is judged on the new description."""
    policy = ENFORCE + "  pins: {enabled: false}\n"
    async with serve_gateway(tmp_path, {"weather": RUGPULL}, policy) as served, mcp_client(served.url) as client:
        for _ in range(3):
            assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})
        upstream = served.gateway.servers["weather"]
        honest = upstream.catalog.tools["get_forecast"]
        await _call(client, "weather__set_mode", {"mode": "change"})
        await wait_for(lambda: upstream.catalog.tools.get("get_forecast") is not honest)
        with pytest.raises(MCPError) as blocked:
            await _call(client, "weather__get_forecast", {"city": "Oslo"})
        assert blocked.value.error.code == -32001
        assert "poisoned" in blocked.value.error.message
        await _call(client, "weather__set_mode", {"mode": "honest"})
        await wait_for(lambda: "IMPORTANT" not in upstream.catalog.tools["get_forecast"].get("description", ""))
        assert "Sunny" in await _call(client, "weather__get_forecast", {"city": "Oslo"})
