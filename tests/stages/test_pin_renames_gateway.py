"""Renames and new tools on a pinned server, through the real gateway and `mcpwall pin` (issue 22, item 10).

Strategy: a small real MCP server written with the official SDK (tests/security/servers/listed.py)
lists what a JSON file holds, rereading it for every list; the test rewrites the file and has the
server send notifications/tools/list_changed, as a server doing a rug pull would. The gateway is
built as `mcpwall proxy` builds it (enforce mode, the poisoning scan off so that pins act alone)
and the official MCP client talks to /mcp. `mcpwall pin` runs in-process (CliRunner) against the
gateway's own ledger. On the old code the renamed tool (one character of its description changed)
was pinned as new, listed and callable, and `pin --list` showed nothing pending; a new tool on
the pinned server was pinned silently.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import MCPError

from mcpwall.cli import cli
from mcpwall.security._poisoning_pins import PinBook
from mcpwall.state import MemoryStateStore
from tests.trust.helpers import ENFORCE, mcp_client, serve_gateway, tool_names, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SERVER = Path(__file__).resolve().parents[1] / "security" / "servers" / "listed.py"
PINS_ONLY = ENFORCE + "  poisoning: {enabled: false}\n"
DESC = "Get the weather forecast for a city for the next few days, with temperatures and rain."
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _tool(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": SCHEMA}


HONEST = [_tool("get_forecast", DESC), {"name": "list_changed", "description": "Tell the client the tool list changed.",
                                       "inputSchema": {"type": "object", "properties": {}}}]


def _servers(tmp_path: Path, tools: list[dict[str, Any]]) -> tuple[dict[str, Any], Path]:
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps({"tools": tools}))
    return {"weather": {"command": sys.executable, "args": [str(SERVER), str(listed)]}}, listed


async def _relist(client: Any, listed: Path, tools: list[dict[str, Any]]) -> None:
    await anyio.Path(listed).write_text(json.dumps({"tools": tools}))
    await client.call_tool("weather__list_changed", {})


def _pending(book: PinBook, name: str) -> dict[str, Any] | None:
    record = book.get("weather", "tool", name)
    return record.get("pending") if record else None


def _pin(served: Any, *args: str) -> Any:
    if isinstance(served.gateway.state, MemoryStateStore):
        pytest.skip("no ledger in this build: pins live in memory, out of the command's reach")
    return CliRunner().invoke(cli, ["pin", "--home", str(served.home), *args])


@pytest.mark.parametrize("steps", ["at once", "removed first"])
async def test_a_tool_renamed_with_a_one_character_change_is_held_until_a_person_accepts_it(
        tmp_path: Path, steps: str) -> None:
    servers, listed = _servers(tmp_path, HONEST)
    renamed = [_tool("forecast_lookup", DESC.replace("few", "fwe")), HONEST[1]]
    async with serve_gateway(tmp_path, servers, PINS_ONLY) as served, mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        if steps == "removed first":
            await _relist(client, listed, [HONEST[1]])
            await wait_for(lambda: bool((book.get("weather", "tool", "get_forecast") or {}).get("removed_at")))
        await _relist(client, listed, renamed)
        await wait_for(lambda: _pending(book, "forecast_lookup") is not None)
        assert _pending(book, "forecast_lookup") == {**_pending(book, "forecast_lookup"),  # type: ignore[dict-item]
                                                     "change": "renamed", "of": "get_forecast"}

        assert "weather__forecast_lookup" not in await tool_names(client)
        with pytest.raises(MCPError) as blocked:
            await client.call_tool("weather__forecast_lookup", {"city": "Oslo"})
        assert blocked.value.error.code == -32001
        assert "copy of 'get_forecast'" in blocked.value.error.message

        listing = _pin(served, "--list")
        assert listing.exit_code == 1, listing.output
        assert "weather/forecast_lookup  tool  -  PENDING renamed" in listing.output
        assert "(a copy of 'get_forecast')" in listing.output
        assert "-  \"description\": \"Get the weather forecast for a city for the next few days" in listing.output
        accepted = _pin(served, "--accept", "weather/forecast_lookup")
        assert accepted.exit_code == 0, accepted.output

        async def shown() -> bool:
            return "weather__forecast_lookup" in await tool_names(client)

        await wait_for(shown, timeout=10)
        assert not (await client.call_tool("weather__forecast_lookup", {"city": "Oslo"})).is_error


async def test_a_new_tool_on_a_pinned_server_is_pending_and_warned_not_pinned_silently(tmp_path: Path) -> None:
    servers, listed = _servers(tmp_path, HONEST)
    radar = _tool("radar", "Rain radar images of a region, as PNG.")
    async with serve_gateway(tmp_path, servers, PINS_ONLY) as served, mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        await _relist(client, listed, [*HONEST, radar])
        await wait_for(lambda: _pending(book, "radar") is not None)
        assert _pending(book, "radar")["change"] == "added"  # type: ignore[index]
        # onNew: warn (the default): still listed and usable
        assert "weather__radar" in await tool_names(client)
        assert not (await client.call_tool("weather__radar", {"city": "Oslo"})).is_error

        listing = _pin(served, "--list")
        assert listing.exit_code == 1, listing.output
        assert "weather/radar  tool  -  PENDING added" in listing.output
        assert _pin(served, "--accept", "weather/radar").exit_code == 0
        assert _pin(served, "--list").exit_code == 0


async def test_a_rename_whose_new_name_hides_a_zero_width_character_is_still_held(tmp_path: Path) -> None:
    # with the poisoning scan on, one zero-width character is a medium finding (a warning) and is
    # stripped from the listed name: the pin stage must still know the stripped name for pending
    servers, listed = _servers(tmp_path, HONEST)
    async with serve_gateway(tmp_path, servers) as served, mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        await _relist(client, listed, [_tool("forecast_look\u200bup", DESC + "!"), HONEST[1]])
        await wait_for(lambda: _pending(book, "forecast_look\u200bup") is not None)
        names = await tool_names(client)
        assert not {n for n in names if n.startswith("weather__forecast")}, names


async def test_with_on_new_block_a_new_tool_on_a_pinned_server_is_hidden_and_refused(tmp_path: Path) -> None:
    servers, listed = _servers(tmp_path, HONEST)
    policy = PINS_ONLY + "  pins: {onNew: block}\n"
    async with serve_gateway(tmp_path, servers, policy) as served, mcp_client(served.url) as client:
        assert "weather__get_forecast" in await tool_names(client)
        book = PinBook(served.gateway.state)
        await _relist(client, listed, [*HONEST, _tool("radar", "Rain radar images of a region, as PNG.")])
        await wait_for(lambda: _pending(book, "radar") is not None)
        assert "weather__radar" not in await tool_names(client)
        with pytest.raises(MCPError) as blocked:
            await client.call_tool("weather__radar", {"city": "Oslo"})
        assert blocked.value.error.code == -32001
        assert "pin --accept weather/radar" in blocked.value.error.message
