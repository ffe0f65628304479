"""Hardening matrix, dispatch: every method an agent uses, through the framed listener.

Strategy: one real gateway for the module with the built-in tools server (`local`) and the
npm `everything` server (`ev`); a raw `FrameClient` sends each request on its own stream and
checks the answer that comes back on that stream with END: the gateway's own answers
(initialize, merged lists) and routed ones (a built-in and an external stdio tools/call), and
how errors map to JSON-RPC codes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.relay.helpers import EVERYTHING, FrameClient, Framed, builtin, framed_gateway, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Framed]:
    async with framed_gateway(tmp_path_factory.mktemp("dispatch"), {"local": builtin(), "ev": EVERYTHING}) as f:
        yield f


@pytest.fixture
async def client(gw: Framed) -> AsyncIterator[FrameClient]:
    c = await FrameClient.open(gw.socket, "dispatch-test")
    yield c
    await c.close()


async def test_initialize_is_answered_by_the_gateway_with_the_aggregated_capabilities(client: FrameClient) -> None:
    answer = await client.initialize()
    result = answer["result"]
    assert result["serverInfo"]["name"] == "mcpwall"
    assert result["protocolVersion"] == "2025-06-18"
    assert "tools" in result["capabilities"]
    assert "local" in result["instructions"]


async def test_tools_list_merges_the_builtin_and_external_tools_under_their_server_names(
        client: FrameClient) -> None:
    await client.initialize()
    names = {t["name"] for t in (await client.request("tools/list"))["result"]["tools"]}
    assert {"local__echo", "local__fetch_http", "local__grep_http", "local__http_headers"} <= names
    assert {"ev__echo", "ev__get-sum"} <= names


async def test_a_builtin_tools_call_reaches_the_builtin_server(client: FrameClient) -> None:
    await client.initialize()
    answer = await client.call("local__echo", {"text": "through the frames"})
    assert text_of(answer) == "through the frames"


async def test_an_external_stdio_tools_call_reaches_its_server(client: FrameClient) -> None:
    await client.initialize()
    answer = await client.call("ev__get-sum", {"a": 2, "b": 40})
    assert "42" in text_of(answer)


async def test_resources_list_returns_the_servers_resources(client: FrameClient) -> None:
    await client.initialize()
    resources = (await client.request("resources/list"))["result"]["resources"]
    assert any(r["uri"].startswith("demo://resource/") for r in resources)
    uri = resources[0]["uri"]
    read = await client.request("resources/read", {"uri": uri})
    assert read["result"]["contents"][0]["uri"] == uri


async def test_prompts_list_returns_the_servers_prompts_under_their_server_names(client: FrameClient) -> None:
    await client.initialize()
    prompts = {p["name"] for p in (await client.request("prompts/list"))["result"]["prompts"]}
    assert "ev__simple-prompt" in prompts
    got = await client.request("prompts/get", {"name": "ev__simple-prompt"})
    assert got["result"]["messages"]


@pytest.mark.parametrize(("method", "params", "code"), [
    ("no/such/method", {}, -32601),
    ("tools/call", {"name": "nosuchserver__tool", "arguments": {}}, -32601),
    ("tools/call", {"name": "not-namespaced", "arguments": {}}, -32602),
    ("tools/call", {"arguments": {}}, -32602),
    ("resources/read", {"uri": "nobody://offers/this"}, -32602),
])
async def test_method_errors_map_to_their_json_rpc_codes(client: FrameClient, method: str,
                                                          params: dict[str, object], code: int) -> None:
    await client.initialize()
    answer = await client.request(method, params)
    assert answer["error"]["code"] == code
    assert answer["id"] is not None


async def test_a_request_before_initialize_is_refused(client: FrameClient) -> None:
    answer = await client.request("tools/list")
    assert answer["error"]["code"] == -32600
