"""A server's answer holding half a character reaches the client, over every upstream transport.

Strategy: a real TypeScript-SDK server (tests/proxy/servers/preview.mjs) cuts a text inside an
emoji, as a JavaScript preview does, and its SDK writes the half left as a lone surrogate escape
("\\ud83d"): valid JSON, no Unicode, which orjson refuses. Before, the gateway dropped such an
answer from stdio and from an SSE stream (the call waited for its timeout) and failed it as
invalid JSON from a JSON body. Through the gateway, with the official Python client, over stdio and
streamable HTTP (SSE and JSON answers): the answer arrives at once, the half character removed.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.harness import free_port, wait_answers
from tests.proxy.harness import HERE, PERMISSIVE, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SCRIPT = str(HERE / "servers" / "preview.mjs")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    procs, servers = [], {"stdio": {"command": "node", "args": [SCRIPT, "stdio"]}}
    for name, extra in (("sse", []), ("json", ["json"])):
        port = free_port()
        proc = subprocess.Popen(["node", SCRIPT, "http", str(port), *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}/mcp"
        wait_answers(url, proc, probe=lambda u: httpx.post(u, timeout=2))
        servers[name] = {"url": url, "type": "http"}
    g = GatewayProcess(tmp_path_factory.mktemp("gw-half"), servers, PERMISSIVE).start()
    yield g
    g.stop()
    for proc in procs:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("server", ["stdio", "sse", "json"])
async def test_an_answer_cut_inside_an_emoji_arrives_without_the_half(gw: GatewayProcess, server: str) -> None:
    async with http_client(f"{gw.url}/mcp", gw.token) as client:
        started = time.monotonic()
        whole = await client.call_tool(f"{server}__preview", {"text": "Ship it \U0001f680 today", "n": 10})
        cut = await client.call_tool(f"{server}__preview", {"text": "Ship it \U0001f680 today", "n": 9})
        assert time.monotonic() - started < 10  # not a timeout
    assert not whole.is_error
    assert whole.content[0].text == "Ship it \U0001f680"  # type: ignore[union-attr]
    assert not cut.is_error, cut
    assert cut.content[0].text == "Ship it "  # type: ignore[union-attr]
