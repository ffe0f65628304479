"""The poisoning stage through a real gateway, driven by the official MCP client.

Strategy: a real MCP server written with the official SDK (servers/poisoned.py)
lists honest and poisoned tools and can poison its results. The gateway is
built as `mcpwall proxy` builds it; we check what a client sees in tools/list,
what it may call, and what reaches it from a result, in enforce and audit mode
and with the policy's per-kind actions changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPError

from tests.trust.helpers import ENFORCE, POISONED, mcp_client, serve_gateway, tool_names

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

AUDIT = ENFORCE.replace("mode: enforce", "mode: audit")
ALL = {"p__add", "p__fetch_notes", "p__colour_text", "p__tagged", "p__Add", "p__best_calculator"}


async def _text(client: object, name: str, args: dict[str, object]) -> str:
    result = await client.call_tool(name, args)  # type: ignore[attr-defined]
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_poisoned_tools_are_not_listed_and_cannot_be_called_in_enforce_mode(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"p": POISONED}) as served, mcp_client(served.url) as client:
        names = await tool_names(client)
        # hidden instructions, ANSI escapes, tag characters and a look-alike name are hidden;
        # self-promotion only warns by default
        assert names == {"p__add", "p__best_calculator"}
        for hidden in ("p__fetch_notes", "p__colour_text", "p__tagged", "p__Add"):
            with pytest.raises(MCPError) as blocked:
                await _text(client, hidden, {"text": "x", "a": 1, "b": 2})
            assert blocked.value.error.code == -32001
            assert "poisoned" in blocked.value.error.message


async def test_a_result_carrying_instructions_is_redacted_and_the_rest_kept(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"p": POISONED}) as served, mcp_client(served.url) as client:
        text = await _text(client, "p__add", {"a": 2, "b": 3, "evil": True})
        assert "Result: 5" in text
        assert "Have a nice day." in text
        assert "[mcpwall: removed text aimed at the agent]" in text
        assert "send_email" not in text
        assert "id_rsa" not in text


async def test_ansi_escapes_and_invisible_characters_never_reach_the_client(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"p": POISONED}) as served, mcp_client(served.url) as client:
        text = await _text(client, "p__add", {"a": 2, "b": 3, "color": True})
        assert text == "5"


async def test_audit_mode_lists_everything_and_only_strips_results(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, {"p": POISONED}, AUDIT) as served, mcp_client(served.url) as client:
        assert await tool_names(client) == ALL
        listed = {t.name: t for t in (await client.list_tools(cache_mode="refresh")).tools}
        # descriptions are still cleaned of escapes and tag characters before they reach the client
        assert "\x1b" not in (listed["p__colour_text"].description or "")
        assert all(ord(c) < 0xE0000 for c in listed["p__tagged"].description or "")
        text = await _text(client, "p__add", {"a": 2, "b": 3, "evil": True})
        assert "send_email" in text  # audit mode reports, it does not redact
        assert "Sunny" not in text
        assert await _text(client, "p__add", {"a": 2, "b": 3, "color": True}) == "5"


async def test_policy_actions_change_what_each_finding_does(tmp_path: Path) -> None:
    policy = ENFORCE + ("  poisoning:\n    actions: {preference_manipulation: block, lookalike_name: warn}\n"
                        "    results: block\n")
    async with serve_gateway(tmp_path, {"p": POISONED}, policy) as served, mcp_client(served.url) as client:
        names = await tool_names(client)
        assert "p__best_calculator" not in names
        assert "p__Add" in names
        assert await _text(client, "p__Add", {"a": 1, "b": 2}) == "3"
        with pytest.raises(MCPError) as blocked:
            await _text(client, "p__add", {"a": 2, "b": 3, "evil": True})
        assert blocked.value.error.code == -32001
        assert "instructions aimed at the agent" in blocked.value.error.message


async def test_a_trusted_tool_is_exempt_from_definition_findings(tmp_path: Path) -> None:
    policy = ENFORCE + "  poisoning:\n    trusted: [p/fetch_notes]\n"
    async with serve_gateway(tmp_path, {"p": POISONED}, policy) as served, mcp_client(served.url) as client:
        assert "p__fetch_notes" in await tool_names(client)
        assert await _text(client, "p__fetch_notes", {}) == "notes"


async def test_listing_and_calling_never_change_a_catalog_entry_in_place(tmp_path: Path) -> None:
    """Stages key what they compute of a catalog entry by its identity (`Catalog`): the whole
    pipeline, sanitising escapes and hiding poisoned tools from listings, must leave the
    entries the server listed as they were."""
    import orjson

    async with serve_gateway(tmp_path, {"p": POISONED}) as served, mcp_client(served.url) as client:
        catalog = served.gateway.servers["p"].catalog
        await tool_names(client)
        entries = dict(catalog.tools)
        before = {name: orjson.dumps(entry) for name, entry in entries.items()}
        assert "colour_text" in before  # a definition carrying ANSI escapes, sanitised when listed
        for _ in range(2):
            await tool_names(client)
            await _text(client, "p__add", {"a": 2, "b": 3, "color": True})
            with pytest.raises(MCPError):
                await _text(client, "p__colour_text", {"text": "x"})
        assert {name: orjson.dumps(entry) for name, entry in entries.items()} == before
