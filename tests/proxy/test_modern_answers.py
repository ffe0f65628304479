"""A 2026-07-28 client's answers to a 2026-07-28 server's questions pass the client-answer checks
(issue 24, acceptance: a secret in `inputResponses`), whichever era the server speaks.

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token) in front of
tests/proxy/servers/modern_only.py (the official Python SDK 2.x server, modern-only, over stdio),
whose `ask_name` tool asks for a name with an InputRequiredResult and greets whoever the answer
names, echoing it back. The official Python SDK 2.x client, pinned to 2026-07-28, answers the
elicitation through the gateway with an AWS key in several spellings (test_mrtr.py covers a
legacy server, test_modern_upstream.py a legacy client): the server must never have it to echo.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.harness import build_gateway, serve_http, token
from tests.proxy.test_modern_upstream import MODERN_STDIO, POLICY, SECRET, Asked, client, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

SPELLINGS = [SECRET, f"my key is {SECRET} ok", f"<{SECRET}>", f"aws_access_key_id={SECRET}"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-modern-answers")
    built = build_gateway(home, POLICY, {"modern": MODERN_STDIO}, auth=True)
    async with serve_http(built) as base:
        assert await built.gateway.servers["modern"].wait_ready(60), built.gateway.servers["modern"].last_error
        assert built.gateway.servers["modern"].era == "modern"
        yield {"url": base, "token": token(built), "home": home}


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_secret_in_a_modern_clients_answer_never_reaches_the_modern_server(
    gw: dict[str, Any], spelling: str
) -> None:
    for path, tool in (("/mcp", "modern__ask_name"), ("/mcp/modern", "ask_name")):
        asked = Asked(spelling)
        async with client(gw, "2026-07-28", path, elicitation_callback=asked) as c:
            try:
                shown = text(await c.call_tool(tool, {"greeting": "Hello"}))
            except MCPError as refused:
                shown = json.dumps(refused.error.model_dump(mode="json"))
        assert asked.messages == ["What is your name?"]  # the question did reach the client
        assert SECRET not in shown  # the server echoes the name it got: masked before it left
        # masked, or (once the key is known to this principal's history) the answer refused outright
        assert "REDACTED" in shown or "Blocked by mcpwall" in shown, shown
