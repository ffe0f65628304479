"""What a server sends a client outside a result, and what the client answers, is screened too.

Strategy: an in-process gateway in front of tests/proxy/servers/misbehave.py,
whose `tell` tool logs its arguments (a server chatting about its caller's
data) before it answers. A secret in such a log line reaches the client
masked, as it would in a result, and a client's answer to a server's request
(sampling output, elicited input) that carries a secret the session was shown
or a planted decoy credential is refused instead of forwarded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from mcpwall.pipeline import ServerRequest
from tests.harness import build_gateway
from tests.proxy.harness import PERMISSIVE, script_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

GHP = "ghp_R8x2Lq9ZtV4mN7bK1cW3yH6dF0sJ5pA2eU8g"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                   "clientInfo": {"name": "t", "version": "1"}}}


def make(tmp_path: Path, extra: str = "") -> Any:
    # the call's own arguments are let through, so that the server itself holds the secret
    return build_gateway(tmp_path, PERMISSIVE + "dlp: {arguments: off}\n" + extra,
                         {"m": script_server("misbehave", "ok")}).gateway


async def session(gw: Any) -> Any:
    s = gw.open_session("stdio", "m")
    assert "result" in await gw.handle_request(s, INIT)
    await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return s


async def test_a_secret_in_a_servers_log_line_reaches_the_client_masked(tmp_path: Path) -> None:
    gw = make(tmp_path)
    await gw.start()
    try:
        s = await session(gw)
        seen: list[dict[str, Any]] = []
        s.observer = lambda _session, _direction, msg: seen.append(msg)
        answer = await gw.handle_request(s, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                             "params": {"name": "tell", "arguments": {"token": GHP}}})
        assert answer["result"]["content"][0]["text"] == "told"
        await asyncio.sleep(0.2)
        logs = [m for m in seen if m.get("method") == "notifications/message"]
        assert logs, seen
        assert GHP not in str(logs)
        assert "[REDACTED-github-token]" in str(logs[0]["params"]["data"])
    finally:
        await gw.stop()


async def test_a_clients_answer_to_a_server_cannot_carry_a_secret_it_was_shown(tmp_path: Path) -> None:
    gw = make(tmp_path)
    await gw.start()
    try:
        s = await session(gw)
        upstream = gw.servers["m"]
        sent: list[dict[str, Any]] = []

        async def respond(msg: dict[str, Any]) -> None:
            sent.append(msg)

        upstream.respond = respond
        # the server showed this session a secret (masked on its way, and remembered)...
        masked = gw.messages.mask(s.id, {"jsonrpc": "2.0", "method": "notifications/message",
                                 "params": {"level": "info", "data": f"token {GHP}"}})
        assert GHP not in str(masked)
        # ...then asks the client to sample, and the client's answer carries the secret back
        for did, text in ((101, f"sure: {GHP}"), (102, "a harmless answer")):
            s.server_requests[did] = ServerRequest("m", f"up-{did}", "sampling/createMessage")
            await gw.handle(s, {"jsonrpc": "2.0", "id": did, "result": {
                "role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}})
        assert sent[0]["id"] == "up-101"
        assert sent[0]["error"]["code"] == -32001
        assert GHP not in str(sent[0])
        assert sent[1]["id"] == "up-102"
        assert sent[1]["result"]["content"]["text"] == "a harmless answer"
    finally:
        await gw.stop()

