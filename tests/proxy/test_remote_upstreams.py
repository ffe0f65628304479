"""Remote upstreams: streamable HTTP, legacy SSE and plain HTTP JSON-RPC.

Strategy: a remote MCP server written with the official SDK
(tests/proxy/servers/remote.py) runs as a real HTTP process over each
transport; a second mcpwall gateway's seatbelt route `POST /{server}` serves
as the plain HTTP JSON-RPC upstream. The official client calls through the
front gateway; progress and log messages sent on the upstream's SSE stream
must reach the caller.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import mcp_types as types
import pytest

from tests.harness import free_port, wait_answers
from tests.proxy.harness import HERE, MEMORY, PERMISSIVE, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def _serve(transport: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HERE / "servers" / "remote.py"), transport, str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = "/mcp" if transport == "streamable-http" else "/sse"
    url = f"http://127.0.0.1:{port}{path}"
    def probe(u: str) -> None:
        with httpx.stream("GET", u, timeout=2, headers={"Accept": "text/event-stream"}):
            pass

    try:
        wait_answers(url, proc, probe=probe)
    except RuntimeError:
        proc.kill()
        raise
    return proc, url


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    procs = []
    urls = {}
    for transport in ("streamable-http", "sse"):
        proc, url = _serve(transport)
        procs.append(proc)
        urls[transport] = url
    inner = GatewayProcess(tmp_path_factory.mktemp("inner"), {"memory": MEMORY}, PERMISSIVE,
                           extra=["--insecure-no-auth"]).start()
    urls["http"] = f"{inner.url}/memory"
    yield urls
    inner.stop()
    for proc in procs:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, str]) -> Iterator[GatewayProcess]:
    home: Path = tmp_path_factory.mktemp("gw-remote")
    servers = {"streamy": {"url": upstreams["streamable-http"], "type": "http"},
               "legacy": {"url": upstreams["sse"], "type": "sse"},
               # what `init` writes for Cursor's bare `url`: the server only speaks the older HTTP+SSE
               "guessed": {"url": upstreams["sse"], "type": "http"}}
    g = GatewayProcess(home, servers, PERMISSIVE.replace("defaultAction: allow", "defaultAction: allow\nservers:\n"
                       f"  plain: {{url: '{upstreams['http']}', transport: http}}")).start()
    yield g
    g.stop()


@pytest.mark.parametrize("server", ["streamy", "legacy", "guessed"])
async def test_tools_resources_and_prompts_over_remote_transports(gw: GatewayProcess, server: str) -> None:
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert {f"{server}__add", f"{server}__notify"} <= tools
        result = await c.call_tool(f"{server}__add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5.0}
        prompt = await c.get_prompt(f"{server}__haiku", {"topic": "walls"})
        assert "walls" in str(prompt.messages[0].content)
    async with http_client(f"{gw.url}/mcp/{server}", gw.token) as c:
        read = await c.read_resource("remote://greeting")
        assert getattr(read.contents[0], "text", "") == "hello from afar"


async def test_progress_and_logs_on_the_upstream_stream_reach_the_caller(gw: GatewayProcess) -> None:
    reported: list[float] = []
    logs: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    # The SDK 2.x client speaks 2026-07-28 through the gateway by default, and that revision
    # sends a server's log lines only at the logLevel a request's _meta names.
    async with http_client(f"{gw.url}/mcp/streamy", gw.token, logging_callback=on_log,
                           log_level="debug") as c:
        result = await c.call_tool("notify", {"steps": 3}, progress_callback=on_progress)
    assert "done 3" in str(result.content)
    assert reported == [1, 2, 3]
    assert logs == ["step 1", "step 2", "step 3"]


async def test_a_plain_http_json_rpc_upstream(gw: GatewayProcess) -> None:
    r = gw.post("/plain", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": "read_graph", "arguments": {}}})
    assert r.json()["id"] == 7
    assert "result" in r.json()
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        assert "plain__read_graph" in {t.name for t in (await c.list_tools()).tools}
