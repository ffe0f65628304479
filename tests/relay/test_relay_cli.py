"""`mcpwall relay` end to end: the official MCP client launches it as its stdio server.

Strategy: a real in-process gateway with a framed listener and the built-in tools server; the
official MCP Python client (2.x) starts the real `mcpwall relay` command as a subprocess, as
an agent would, and lists and calls tools through it. Other tests drive the relay against a
listener that misbehaves (closes, is absent) and check the agent is always answered and stdout
carries nothing but protocol. Addresses (tcp, vsock) are checked where this machine has them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcpwall.errors import ConfigError
from mcpwall.relay import Address, listen, parse_address
from tests.harness import free_port
from tests.relay.helpers import MCPWALL, Framed, builtin, framed_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def _relay(address: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=MCPWALL, args=["relay", "--connect", address, *extra])


async def test_the_official_client_lists_and_calls_tools_through_the_relay(tmp_path: Path) -> None:
    async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
        async with Client(_relay(gw.address, "--process-name", "cli-agent")) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "local__echo" in tools
            result = await client.call_tool("local__echo", {"text": "relayed"})
            assert result.content[0].text == "relayed"  # type: ignore[union-attr]
            fetched = await client.call_tool("local__fetch_http", {"url": "https://no-such-host.invalid/", "format": "json"})
            assert fetched.is_error
            assert json.loads(fetched.content[0].text)["kind"] == "refused"  # type: ignore[union-attr]
        rows = await gw.rows(2, tool="*")
        assert {r["process_name"] for r in rows} == {"cli-agent"}


async def test_without_a_process_name_the_relay_names_the_process_that_launched_it(tmp_path: Path) -> None:
    async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
        async with Client(_relay(gw.address)) as client:
            await client.call_tool("local__echo", {"text": "x"})
        rows = await gw.rows(1, tool="echo")
        # The launcher is this test process (python); /proc/<ppid>/comm names it.
        assert str(rows[0]["process_name"]).startswith(("python", "pytest"))


async def test_a_relay_that_cannot_reach_the_gateway_fails_with_a_message_on_stderr_only(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        MCPWALL, "relay", "--connect", f"unix:{tmp_path}/nobody.sock", "--connect-timeout", "2",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(b""), 30)
    assert proc.returncode == 1
    assert out == b""
    assert b"cannot connect" in err


async def test_pending_requests_are_answered_when_the_gateway_goes_away(tmp_path: Path) -> None:
    sock = Path("/tmp") / f"mw-gone-{id(tmp_path)}.sock"

    async def accept_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(200)  # the META line and the request frame
        await asyncio.sleep(0.3)
        writer.close()

    server = await listen(Address("unix", path=str(sock)), accept_then_hang_up)
    try:
        proc = await asyncio.create_subprocess_exec(MCPWALL, "relay", "--connect", f"unix:{sock}",
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE)
        request = {"jsonrpc": "2.0", "id": 41, "method": "tools/list"}
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        await proc.stdin.drain()
        out, _err = await asyncio.wait_for(proc.communicate(), 30)
        answer = json.loads(out.decode().strip().splitlines()[0])
        assert answer["id"] == 41
        assert answer["error"]["code"] == -32000
        assert proc.returncode == 1
    finally:
        server.close()
        sock.unlink(missing_ok=True)


async def test_a_line_that_is_not_json_is_answered_by_the_relay_itself(tmp_path: Path) -> None:
    async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
        proc = await asyncio.create_subprocess_exec(MCPWALL, "relay", "--connect", gw.address,
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(b"this is not json\n"), 30)
        lines = [json.loads(line) for line in out.decode().splitlines()]
        assert lines == [{"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": lines[0]["error"]["message"]}}]
        assert proc.returncode == 0


def test_relay_addresses_parse_in_their_three_forms() -> None:
    assert parse_address("unix:/run/x.sock") == Address("unix", path="/run/x.sock")
    assert parse_address("tcp:127.0.0.1:9000") == Address("tcp", host="127.0.0.1", port=9000)
    assert parse_address("tcp:[::1]:9000") == Address("tcp", host="::1", port=9000)
    assert parse_address("vsock:2:5002") == Address("vsock", cid=2, port=5002)
    for bad in ("unix:", "tcp:host", "tcp:1.2.3.4:99999", "vsock:x:1", "http://x"):
        with pytest.raises(ConfigError):
            parse_address(bad)


async def test_a_tcp_listener_is_refused_on_a_non_loopback_address() -> None:
    async def nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    with pytest.raises(ConfigError, match="loopback"):
        await listen(parse_address("tcp:0.0.0.0:9999"), nothing)


async def test_the_relay_works_over_loopback_tcp(tmp_path: Path) -> None:
    port = free_port()
    gw: Framed
    async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
        listener = gw.gateway.service("frame_listener").listener
        extra = Address("tcp", host="127.0.0.1", port=port)
        listener.addresses.append(extra)
        listener._servers.append(await listen(extra, listener._accept))
        async with Client(_relay(f"tcp:127.0.0.1:{port}", "--process-name", "tcp-agent")) as client:
            result = await client.call_tool("local__echo", {"text": "over tcp"})
            assert result.content[0].text == "over tcp"  # type: ignore[union-attr]


def _vsock_loopback() -> bool:
    if not hasattr(socket, "AF_VSOCK"):
        return False
    try:
        with socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM) as s:
            s.bind((socket.VMADDR_CID_ANY, 0))
            port = s.getsockname()[1]
            s.listen()
            with socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM) as c:
                c.settimeout(2)
                c.connect((1, port))  # VMADDR_CID_LOCAL
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _vsock_loopback(), reason="this kernel has no vsock loopback (vsock_loopback module)")
async def test_the_relay_works_over_vsock_where_the_kernel_has_it(tmp_path: Path) -> None:
    port = 15000 + (id(tmp_path) % 5000)
    async with framed_gateway(tmp_path, {"local": builtin()}) as gw:
        listener = gw.gateway.service("frame_listener").listener
        extra = Address("vsock", cid=socket.VMADDR_CID_ANY, port=port)
        listener._servers.append(await listen(extra, listener._accept))
        async with Client(_relay(f"vsock:1:{port}", "--process-name", "vm-agent")) as client:
            result = await client.call_tool("local__echo", {"text": "over vsock"})
            assert result.content[0].text == "over vsock"  # type: ignore[union-attr]
