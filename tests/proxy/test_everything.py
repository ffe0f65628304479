"""server-everything through every gateway path works as it does directly.

Strategy: the same scenario (tools, resources, prompts, completion, progress,
sampling, elicitation) runs with the official MCP Python client against
@modelcontextprotocol/server-everything directly over stdio, then through the
gateway's `/mcp` (aggregated, `everything__` names), `/mcp/everything`,
`mcpwall proxy --stdio` and `mcpwall wrap`. Results must be equal to the
direct ones. One gateway process serves the HTTP paths for the module.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.proxy.harness import EVERYTHING, MCPWALL, GatewayProcess, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

PATHS = ["direct", "mcp", "mcp_server", "stdio", "wrap"]

DETERMINISTIC: list[tuple[str, dict[str, Any]]] = [
    ("echo", {"message": "hello through the wall"}),
    ("get-sum", {"a": 2, "b": 40}),
    ("get-annotated-message", {"messageType": "success", "includeImage": True}),
    ("get-tiny-image", {}),
    ("get-structured-content", {"location": "Chicago"}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 3}),
    ("get-resource-links", {"count": 2}),
]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    home = tmp_path_factory.mktemp("gw-everything")
    g = GatewayProcess(home, {"everything": EVERYTHING}).start()
    yield g
    g.stop()


async def _sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled ok"),
                                     model="test-model", stop_reason="endTurn")


async def _elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"color": "blue", "name": "Ada", "email": "ada@example.com",
                                                        "age": 36, "score": 7, "interests": ["math"],
                                                        "role": "admin", "subscribe": True})


@contextlib.asynccontextmanager
async def connect(path: str, gw: GatewayProcess, **callbacks: Any) -> AsyncIterator[Client]:
    if path == "direct":
        target: Any = StdioServerParameters(command=EVERYTHING["command"], args=EVERYTHING["args"])
    elif path == "stdio":
        target = StdioServerParameters(command=MCPWALL, args=["proxy", "--stdio", "--home", str(gw.home),
                                                              "--servers", str(gw.servers_file)])
    elif path == "wrap":
        target = StdioServerParameters(command=MCPWALL, args=["wrap", "--name", "everything", "--home",
                                                              str(gw.home), "--", EVERYTHING["command"],
                                                              *EVERYTHING["args"]])
    else:
        url = f"{gw.url}/mcp" if path == "mcp" else f"{gw.url}/mcp/everything"
        async with http_client(url, gw.token, **callbacks) as client:
            yield client
        return
    async with Client(target, **callbacks) as client:
        yield client


def namer(path: str) -> Callable[[str], str]:
    return (lambda n: f"everything__{n}") if path in ("mcp", "stdio") else (lambda n: n)


_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}( [AP]M)?")


def _content(result: types.CallToolResult) -> Any:
    """The result as data, with wall-clock times (which differ run to run) masked."""
    return json.loads(_CLOCK.sub("<time>", json.dumps(result.model_dump(exclude_none=True, exclude={"meta"}))))


@pytest.fixture(scope="module")
def direct_results(gw: GatewayProcess) -> dict[str, Any]:
    import anyio

    async def run() -> dict[str, Any]:
        async with connect("direct", gw) as c:
            return {name: _content(await c.call_tool(name, args)) for name, args in DETERMINISTIC}

    return anyio.run(run)


@pytest.mark.parametrize("path", PATHS)
async def test_tools_answer_exactly_as_directly(path: str, gw: GatewayProcess, direct_results: dict[str, Any]) -> None:
    name = namer(path)
    async with connect(path, gw, sampling_callback=_sampling, elicitation_callback=_elicitation) as c:
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {name(n) for n, _ in DETERMINISTIC} <= listed
        for tool, args in DETERMINISTIC:
            assert _content(await c.call_tool(name(tool), args)) == direct_results[tool], tool


@pytest.mark.parametrize("path", PATHS)
async def test_resources_templates_and_subscriptions(path: str, gw: GatewayProcess) -> None:
    # resources/subscribe is the handshake era's (2026-07-28 has subscriptions/listen): a legacy client
    async with connect(path, gw, mode="legacy") as c:
        resources = (await c.list_resources()).resources
        uris = {str(r.uri) for r in resources}
        assert "demo://resource/static/document/features.md" in uris
        read = await c.read_resource("demo://resource/static/document/features.md")
        assert read.contents
        assert getattr(read.contents[0], "text", "")
        templates = (await c.list_resource_templates()).resource_templates
        assert "demo://resource/dynamic/text/{resourceId}" in {t.uri_template for t in templates}
        dynamic = await c.read_resource("demo://resource/dynamic/text/7")
        assert "7" in getattr(dynamic.contents[0], "text", "")
        with pytest.warns(Warning, match="removed"):
            await c.subscribe_resource("demo://resource/dynamic/text/7")
        with pytest.warns(Warning, match="removed"):
            await c.unsubscribe_resource("demo://resource/dynamic/text/7")


@pytest.mark.parametrize("path", PATHS)
async def test_prompts_and_completion(path: str, gw: GatewayProcess) -> None:
    name = namer(path)
    async with connect(path, gw) as c:
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert {name("simple-prompt"), name("args-prompt"), name("completable-prompt")} <= prompts
        simple = await c.get_prompt(name("simple-prompt"))
        assert simple.messages
        args = await c.get_prompt(name("args-prompt"), {"city": "Lyon", "state": "Rhone"})
        assert "Lyon" in str(args.messages[0].content)
        completion = await c.complete(types.PromptReference(type="ref/prompt", name=name("completable-prompt")),
                                      {"name": "department", "value": "E"})
        assert "Engineering" in completion.completion.values


@pytest.mark.parametrize("path", PATHS)
async def test_progress_notifications_reach_the_caller(path: str, gw: GatewayProcess) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with connect(path, gw) as c:
        result = await c.call_tool(namer(path)("trigger-long-running-operation"), {"duration": 0.6, "steps": 3},
                                   progress_callback=on_progress)
    assert not result.is_error
    assert [v for v, _ in seen] == [1, 2, 3]
    assert all(t == 3 for _, t in seen)


@pytest.mark.parametrize("path", PATHS)
async def test_sampling_requests_are_answered_by_the_calling_client(path: str, gw: GatewayProcess) -> None:
    # In the SDK's default mode: a 2026-07-28 client through the gateway gets them as input rounds (MRTR)
    async with connect(path, gw, sampling_callback=_sampling) as c:
        result = await c.call_tool(namer(path)("trigger-sampling-request"), {"prompt": "say hi", "maxTokens": 20})
    assert not result.is_error
    assert "sampled ok" in str(result.content)


@pytest.mark.parametrize("path", PATHS)
async def test_elicitation_requests_are_answered_by_the_calling_client(path: str, gw: GatewayProcess) -> None:
    async with connect(path, gw, elicitation_callback=_elicitation) as c:
        result = await c.call_tool(namer(path)("trigger-elicitation-request"), {})
    assert not result.is_error
    assert "Ada" in str(result.content)
