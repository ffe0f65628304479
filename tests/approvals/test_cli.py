"""`mcpwall approve` and `mcpwall deny` against a running gateway.

Strategy: a real gateway from `harness.served` holds `echo` calls made by the official client;
the commands run in-process through click's CliRunner (in a worker thread, so the gateway's
event loop keeps serving) with the token from `MCPWALL_TOKEN` or `<home>/run/gateway.token`.
Checked: listing, approving (with a grant), denying with a reason, exit codes for an unknown
or already answered id, a token on the command line refused, an unreachable gateway.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp.shared.exceptions import MCPError

from mcpwall.cli import cli
from tests.approvals.harness import EVERYTHING, ask_policy, served
from tests.harness import MemoryClient, build_gateway, free_port, started
from tests.proxy.harness import http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def _run(args: list[str], env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, cli, args, env=env or {}, catch_exceptions=False)


async def test_approve_lists_and_releases_a_held_call_and_deny_refuses_one_with_a_reason(tmp_path: Path) -> None:
    async with served(tmp_path, ask_policy()) as gw, http_client(f"{gw.url}/mcp", gw.token) as client:
        conn = ["--url", gw.url, "--home", str(gw.home)]  # token from <home>/run/gateway.token
        first = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "via the cli"}))
        [ask] = await gw.pending()
        listed = await _run(["approve", "--list", *conn])
        assert listed.exit_code == 0, listed.output
        assert ask["id"] in listed.output
        assert "ev/echo" in listed.output
        as_json = await _run(["approve", "--list", "--json", *conn])
        assert [a["id"] for a in json.loads(as_json.output)] == [ask["id"]]
        done = await _run(["approve", ask["id"], "--similar", "1", *conn])
        assert done.exit_code == 0, done.output
        assert f"approved {ask['id']}" in done.output
        assert "grant" in done.output
        result: Any = await asyncio.wait_for(first, 20)
        assert result.content[0].text == "Echo: via the cli"

        second = asyncio.ensure_future(client.call_tool("ev__echo", {"other": "shape"}))
        [ask2] = await gw.pending()
        refused = await _run(["deny", ask2["id"], "--reason", "wrong shape", "--json", "--url", gw.url],
                             env={"MCPWALL_TOKEN": gw.token})
        assert refused.exit_code == 0, refused.output
        assert json.loads(refused.output)["status"] == "denied"
        with pytest.raises(MCPError, match="wrong shape"):
            await asyncio.wait_for(second, 20)
        again = await _run(["deny", ask2["id"], *conn])
        assert again.exit_code == 1
        unknown = await _run(["approve", "000000000000", *conn])
        assert unknown.exit_code == 1
        rows = gw.ledger_rows("echo")
        assert [r["notes"]["approval"]["via"] for r in rows] == ["cli", "cli"]


async def test_the_commands_refuse_a_token_on_the_command_line_and_report_an_unreachable_gateway(
        tmp_path: Path) -> None:
    on_argv = await _run(["approve", "abc", "--token", "secret"])
    assert on_argv.exit_code == 2
    assert "argv is readable" in on_argv.output
    no_token = await _run(["approve", "abc", "--home", str(tmp_path / "empty")])
    assert no_token.exit_code == 2
    down = await _run(["deny", "abc", "--url", f"http://127.0.0.1:{free_port()}"], env={"MCPWALL_TOKEN": "t" * 20})
    assert down.exit_code == 1
    assert "cannot reach the gateway" in down.output
    assert "t" * 20 not in down.output


async def test_via_ledger_answers_a_gateway_that_serves_no_http_api(tmp_path: Path) -> None:
    """`wrap` and `proxy --stdio` have no HTTP API: the answer goes through the home's ledger."""
    home = tmp_path / "home"
    built = build_gateway(home, ask_policy(), {"ev": EVERYTHING})
    gateway = built.gateway
    async with started(built):
        client = MemoryClient(gateway, name="desk")
        await client.initialize()

        def call(message: str) -> Any:
            return asyncio.ensure_future(client.call("ev__echo", {"message": message}))

        held = call("from the desktop")
        listed = None
        for _ in range(200):
            listed = await _run(["approve", "--list", "--json", "--via-ledger", "--home", str(home)])
            if json.loads(listed.output):
                break
            await asyncio.sleep(0.05)
        assert listed is not None
        [ask] = json.loads(listed.output)
        done = await _run(["approve", ask["id"], "--via-ledger", "--home", str(home)])
        assert done.exit_code == 0, done.output
        answer = await asyncio.wait_for(held, 10)  # the holder polls the shared book
        assert answer["result"]["content"][0]["text"] == "Echo: from the desktop"

        refused = call("second")
        approvals = gateway.approvals
        assert approvals is not None
        for _ in range(200):
            pending = approvals.book.pending()
            if pending:
                break
            await asyncio.sleep(0.05)
        denied = await _run(["deny", pending[0]["id"], "--reason", "no", "--via-ledger", "--home", str(home)])
        assert denied.exit_code == 0, denied.output
        answer = await asyncio.wait_for(refused, 10)
        assert answer["error"]["code"] == -32001
        assert (await _run(["deny", pending[0]["id"], "--via-ledger", "--home", str(home)])).exit_code == 1


async def test_approve_finds_a_gateway_started_on_another_port_and_its_printed_hint_works(tmp_path: Path) -> None:
    """Issue 29, item 3: `approve ID --home H` always called 127.0.0.1:9420, so for a gateway started
    with --port the hint in its own log failed with a connection error."""
    import re
    import shlex

    from tests.proxy.harness import GatewayProcess

    g = GatewayProcess(tmp_path / "home", {"ev": EVERYTHING}, ask_policy()).start(timeout=120)
    try:
        assert g.port != 9420
        published = g.home / "run" / "gateway.json"
        for _ in range(200):  # written just after uvicorn starts accepting, which /health already shows
            if published.exists():
                break
            await asyncio.sleep(0.05)
        record = json.loads(published.read_text())
        assert record["url"] == g.url
        assert published.stat().st_mode & 0o777 == 0o600
        async with http_client(f"{g.url}/mcp", g.token) as client:
            held = asyncio.ensure_future(client.call_tool("ev__echo", {"message": "found by its home"}))
            hint = None
            for _ in range(1200):
                if (m := re.search(r"\((mcpwall approve \S+[^|]*?) \| (mcpwall deny [^)]*)\)", g.log.read_text())):
                    hint = m.group(1)
                    break
                await asyncio.sleep(0.05)
            assert hint is not None, g.log.read_text()[-2000:]
            assert f"--home {g.home}" in hint
            # the hint as printed, with no --url: the command finds the gateway through its home
            done = await _run(shlex.split(hint)[1:])
            assert done.exit_code == 0, done.output
            result: Any = await asyncio.wait_for(held, 60)
            assert result.content[0].text == "Echo: found by its home"
    finally:
        g.stop()
    assert not (g.home / "run" / "gateway.json").exists()
    gone = await _run(["approve", "--list", "--home", str(g.home), "--json"])
    assert gone.exit_code == 0, gone.output  # no gateway any more: answered from the home's ledger
    assert json.loads(gone.output) == []
