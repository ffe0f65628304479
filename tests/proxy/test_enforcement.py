"""Policy enforcement through the gateway, observed from the upstream's side.

Strategy: real servers (filesystem on a temp dir, everything, a call-logging
script server) behind a gateway process with an enforce policy; the official
client makes the calls. A denied call must never reach the upstream (the file
is not written, the call is not in the server's log), a denied tool must be
absent from `tools/list`, redacted keys must not reach the upstream, and the
client and agent identity must reach the decision.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.proxy.harness import EVERYTHING, PERMISSIVE, GatewayProcess, filesystem, http_client, script_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

_STAGES = "stages:\n  ratelimit: {requestsPerMinute: 0}\n"
POLICY = PERMISSIVE.replace(_STAGES, "") + """\
  - id: redact-secrets
    description: Secrets never leave
    target: argName
    match: contains
    values: [password, token]
    action: redact
  - id: cursor-may-not-act
    description: Cursor may not act
    tools: [act]
    clients: [cursor*]
    action: deny
  - id: interns-may-not-act
    description: Interns may not act
    tools: [act]
    agents: [intern]
    action: deny
  - id: no-completable-prompt
    description: A prompt nobody may use
    target: prompt
    match: exact
    values: [completable-prompt]
    action: deny
""" + _STAGES


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, workspace: Path, markers: Path) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path_factory.mktemp("gw-enforce"),
                       {"fs": filesystem(workspace), "everything": EVERYTHING,
                        "log": script_server("misbehave", "ok", str(markers))}, POLICY).start()
    yield g
    g.stop()


def upstream_calls(markers: Path) -> list[dict]:
    log = markers / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_denied_write_never_reaches_the_filesystem_server(gw: GatewayProcess, workspace: Path) -> None:
    async with http_client(f"{gw.url}/mcp", gw.token) as c:
        ok = await c.call_tool("fs__write_file", {"path": str(workspace / "allowed.txt"), "content": "yes"})
        assert not ok.is_error
        with pytest.raises(MCPError) as info:
            await c.call_tool("fs__write_file", {"path": str(workspace / "forbidden.txt"), "content": "no"})
    assert info.value.code == -32001
    assert "no-forbidden-writes" in json.dumps(info.value.error.data)
    assert (workspace / "allowed.txt").read_text() == "yes"
    assert not (workspace / "forbidden.txt").exists()


async def test_a_denied_tool_is_invisible_and_its_call_is_refused(gw: GatewayProcess) -> None:
    for url, name in ((f"{gw.url}/mcp", "everything__get-env"), (f"{gw.url}/mcp/everything", "get-env")):
        async with http_client(url, gw.token) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert name not in names
            assert name.replace("get-env", "echo") in names
            with pytest.raises(MCPError) as info:
                await c.call_tool(name, {})
            assert info.value.code == -32001


async def test_redacted_keys_never_reach_the_upstream(gw: GatewayProcess, markers: Path) -> None:
    async with http_client(f"{gw.url}/mcp/log", gw.token) as c:
        await c.call_tool("echo", {"user": "ada", "password": "hunter2", "nested": {"api_token": "t0k"}})
        # keys inside JSON carried in a string: the server parses it, so they go too
        await c.call_tool("echo", {"payload": json.dumps({"password": "hunter2", "keep": 1,
                                                           "deep": [{"api_token": "t0k", "id": 7}]}),
                                   "note": '{"not": "json"'})
    first, second = (call["arguments"] for call in upstream_calls(markers)[-2:])
    assert first == {"user": "ada", "nested": {}}
    assert json.loads(second["payload"]) == {"keep": 1, "deep": [{"id": 7}]}
    assert second["note"] == '{"not": "json"'


def test_a_call_sent_without_an_id_is_refused_and_never_reaches_the_upstream(gw: GatewayProcess,
                                                                             markers: Path) -> None:
    """`tools/call` as a notification would pass no policy and leave no ledger row; a server that acts
    on it anyway (this one logs it) must never see it, on either route."""
    before = len(upstream_calls(markers))
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "act", "arguments": {"x": 1}}}
    plain = gw.post("/log", call)
    assert plain.status_code == 400
    assert plain.json()["error"]["code"] == -32600
    accept = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    sid = {"Mcp-Session-Id": gw.post("/mcp/log", init, accept).headers["mcp-session-id"], **accept}
    gw.post("/mcp/log", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    for method in ("tools/call", "resources/read", "prompts/get"):
        answer = gw.post("/mcp/log", {**call, "method": method}, sid)
        assert answer.status_code == 400, method
        assert answer.json()["error"]["code"] == -32600
    assert len(upstream_calls(markers)) == before
    # the session and the route still serve calls with an id
    assert "result" in gw.post("/log", {**call, "id": 5, "params": {"name": "echo", "arguments": {}}}).json()
    assert len(upstream_calls(markers)) == before + 1


async def test_a_denied_prompt_cannot_be_completed_either(gw: GatewayProcess) -> None:
    """completion/complete asks the server about a prompt: denied with the prompt, not forwarded."""
    from mcp_types import PromptReference

    async with http_client(f"{gw.url}/mcp/everything", gw.token) as c:
        assert "completable-prompt" not in {p.name for p in (await c.list_prompts()).prompts}
        with pytest.raises(MCPError) as info:
            await c.get_prompt("completable-prompt", {"department": "Engineering"})
        assert info.value.code == -32001
        with pytest.raises(MCPError) as info:
            await c.complete(PromptReference(type="ref/prompt", name="completable-prompt"),
                             {"name": "department", "value": "E"})
        assert info.value.code == -32001
        assert "no-completable-prompt" in str(info.value.data)


async def test_client_and_agent_identity_reach_the_decision(gw: GatewayProcess, markers: Path) -> None:
    from mcp_types import Implementation

    async with http_client(f"{gw.url}/mcp/log", gw.token, client_info=Implementation(name="cursor-ide", version="1")) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("act", {"n": 1})
        assert "cursor-may-not-act" in json.dumps(info.value.error.data)
    r = gw.post("/log", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "act", "arguments": {}}},
                headers={"x-agent-id": "intern"})
    assert "interns-may-not-act" in json.dumps(r.json()["error"]["data"])
    r = gw.post("/log", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "act", "arguments": {}}},
                headers={"x-agent-id": "lead"})
    assert "result" in r.json()
    assert sum(1 for c in upstream_calls(markers) if c["name"] == "act") == 1


async def test_explain_shows_the_trace_without_calling_upstream(gw: GatewayProcess, markers: Path) -> None:
    before = len(upstream_calls(markers))
    r = gw.post("/log/explain", {"tool": "act", "args": {}, "agent": "intern"})
    body = r.json()
    assert body["action"] == "deny"
    assert any(t["rule_id"] == "interns-may-not-act" and t["matched"] for t in body["trace"])
    assert len(upstream_calls(markers)) == before


async def test_explain_reads_the_client_from_the_same_header_as_the_plain_route(gw: GatewayProcess) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "act", "arguments": {}}}
    headers = {"x-mcpwall-client": "cursor-ide"}
    assert "cursor-may-not-act" in json.dumps(gw.post("/log", call, headers=headers).json()["error"]["data"])
    explained = gw.post("/log/explain", call, headers=headers).json()
    assert explained["action"] == "deny"
    assert explained["rule_ids"] == ["cursor-may-not-act"]
