"""The one test harness (tests/harness.py, issue 23 item 6): what it does, and that it stays the one.

Strategy: the in-memory transport is driven through a real gateway in front of
tests/proxy/servers/misbehave.py, whose `tell` tool sends a log line before it answers: the
answer comes back from `call` and the log line, a server-to-client message, lands in
`received`, masked as the gateway masks it. Then every test module is parsed: none may build
a gateway (`GatewaySettings`, `mcpwall.proxy.build`, the CLI's `_settings`), construct the
HTTP frontend or a `RequestContext`, or define its own free-port helper; those live in
tests/harness.py, so that a change to how the gateway is built touches one test file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.harness import MemoryClient, running, text_of
from tests.proxy.harness import PERMISSIVE, script_server

TESTS = Path(__file__).resolve().parent
GHP = "ghp_R8x2Lq9ZtV4mN7bK1cW3yH6dF0sJ5pA2eU8g"

#: Names only tests/harness.py may call, and the helpers only it may define.
BUILDERS = frozenset({"GatewaySettings", "HttpFrontend", "RequestContext", "_settings", "build_app"})
HELPERS = frozenset({"free_port", "_free_port", "_port"})


@pytest.mark.anyio
@pytest.mark.integration
@pytest.mark.timeout(60)
async def test_the_memory_client_gets_answers_back_and_server_messages_in_received(tmp_path: Path) -> None:
    policy = PERMISSIVE + "dlp: {arguments: off}\n"  # the call's argument reaches the server, which logs it
    async with running(tmp_path, policy, {"m": script_server("misbehave", "ok")}) as gw:
        answer = await gw.call("m__tell", {"token": GHP})
        assert text_of(answer) == "told"
        log = await gw.client.next_message(lambda m: m.get("method") == "notifications/message")
        assert GHP not in str(log)
        assert "[REDACTED-github-token]" in str(log["params"]["data"])
        assert all("id" not in m for m in gw.client.received)  # nothing the client must answer
        other = MemoryClient(gw.gateway)  # a second session on the same gateway
        assert "result" in await other.initialize()
        assert other.received == []
        other.close()
        assert other.session.id not in gw.gateway.sessions


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in BUILDERS:
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} calls {name}")
        elif isinstance(node, ast.ImportFrom) and node.module == "mcpwall.proxy":
            if any(alias.name == "build" for alias in node.names):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} imports mcpwall.proxy.build")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in HELPERS:
            found.append(f"{path.relative_to(TESTS)}:{node.lineno} defines {node.name}")
    return found


def test_no_test_module_builds_a_gateway_or_picks_a_port_except_through_the_harness() -> None:
    modules = [p for p in TESTS.rglob("*.py") if "node_modules" not in p.parts and p != TESTS / "harness.py"]
    assert len(modules) > 100
    offences = [line for path in sorted(modules) for line in _offences(path)]
    assert offences == []


def test_the_files_collected_first_for_the_workers_exist() -> None:
    # tests/conftest.py starts the longest files first; a renamed one would silently run last again
    from tests.conftest import _LAST, _LONGEST

    root = Path(__file__).resolve().parents[1]
    assert [name for name in (*_LONGEST, *_LAST) if not (root / name).is_file()] == []
