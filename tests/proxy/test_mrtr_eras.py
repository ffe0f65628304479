"""A 2026-07-28 client's input rounds through upstreams of both eras (issue 24, items 2 and 3).

Strategy: one gateway (tests.harness, served by uvicorn, with named tokens `alice` and `bob` for
two principals) in front of the conformance suite's dual-era reference server
(tests/conformance2/reference_server2.py, the official Python SDK 2.x) over stdio twice: `ref`
opened with `initialize` (`era: legacy`: its questions come as server-to-client requests, and
a stdio server does not say which call they are for) and `mref` spoken to in 2026-07-28 (`era:
modern`: its questions come in its own InputRequiredResults), both with configured roots, and
`mbare`, modern with none. Raw
2026-07-28 POSTs show what is on the wire: a modern server's own keys reach the client; the
client's per-request capabilities reach a modern server, narrowed to what the gateway routes (a
client's `roots` never), so the server refuses what the client cannot do (-32021); a server's
`roots/list` is asked of the client but answered from the configuration, whatever the client
says (several spellings of a wider root); a legacy stdio server's question goes to the held call
that can be asking while another call of the same principal waits for its retry, and to nobody
while another principal's does; an `initialize` in the 2026-07-28 envelope is method-not-found.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import PYTHON
from tests.conformance2.runner2 import HERE as CONF2
from tests.harness import build_gateway, serve_http, token
from tests.proxy.test_mrtr import MODERN, meta, post

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
allowSampling: true
stages:
  ratelimit: {requestsPerMinute: 0}
"""
REFERENCE = {"command": PYTHON, "args": [str(CONF2 / "reference_server2.py"), "stdio"], "roots": ["/workspace"]}
ALL: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-mrtr-eras")
    tokens = home / "run" / "tokens"
    tokens.mkdir(parents=True)
    for who in ("alice", "bob"):
        (tokens / f"{who}.token").write_text(f"{who}-token-{'x' * 32}\n")
        (tokens / f"{who}.token").chmod(0o600)
    bare = {k: v for k, v in REFERENCE.items() if k != "roots"}
    built = build_gateway(home, POLICY, {"ref": {**REFERENCE, "era": "legacy"}, "mref": {**REFERENCE, "era": "modern"},
                                         "mbare": {**bare, "era": "modern"}}, auth=True)
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        assert built.gateway.servers["mref"].era == "modern"
        assert built.gateway.servers["ref"].era == "legacy"
        yield {"url": base, "token": token(built), "gateway": built.gateway,
               **{who: f"{who}-token-{'x' * 32}" for who in ("alice", "bob")}}


def call(rid: int, name: str, caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}, **extra}
    params["_meta"] = meta(**(ALL if caps is None else caps)) if caps != {} else {
        **meta(), "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def result_text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return " ".join(c.get("text", "") for c in answer["result"].get("content", []))


async def first_round(gw: dict[str, Any], rid: int, name: str, server: str, bearer: str | None = None,
                      caps: dict[str, Any] | None = None) -> dict[str, Any]:
    status, answer = await post(gw, call(rid, name, caps), bearer, f"/mcp/{server}")
    assert status == 200, answer
    assert answer["result"]["resultType"] == "input_required", answer
    return dict(answer["result"])


async def test_a_modern_servers_questions_reach_the_client_under_the_servers_own_keys(gw: dict[str, Any]) -> None:
    got = await first_round(gw, 11, "test_input_required_result_multiple_inputs", "mref")
    assert set(got["inputRequests"]) == {"user_name", "greeting", "client_roots"}
    assert {r["method"] for r in got["inputRequests"].values()} == {
        "elicitation/create", "sampling/createMessage", "roots/list"}
    status, final = await post(gw, call(12, "test_input_required_result_multiple_inputs", requestState=got["requestState"],
                                        inputResponses={"user_name": NAME, "greeting": SAMPLED,
                                                        "client_roots": {"roots": []}}), path="/mcp/mref")
    assert status == 200, final
    assert "state-ok" in result_text(final)
    # A handshake-era server's question has no key: the gateway names it.
    legacy = await first_round(gw, 13, "test_input_required_result_elicitation", "ref")
    (key,) = legacy["inputRequests"]
    assert key.startswith("mcpwall-")
    _, done = await post(gw, call(14, "test_input_required_result_elicitation", inputResponses={key: NAME},
                                  requestState=legacy["requestState"]), path="/mcp/ref")
    assert result_text(done) == "Hello, Ada!"


@pytest.mark.parametrize("uri", ["file:///home/alice/.ssh", "file:///", "file://localhost/etc", "file:///workspace/../"])
@pytest.mark.parametrize("server", ["mref", "ref"])
async def test_a_servers_roots_question_is_asked_but_answered_from_the_configuration(
        gw: dict[str, Any], server: str, uri: str) -> None:
    got = await first_round(gw, 21, "test_input_required_result_list_roots", server)
    ((key, question),) = got["inputRequests"].items()
    assert question["method"] == "roots/list"
    extra = {"requestState": got["requestState"]} if "requestState" in got else {}
    status, final = await post(gw, call(22, "test_input_required_result_list_roots",
                                        inputResponses={key: {"roots": [{"uri": uri}]}}, **extra), path=f"/mcp/{server}")
    assert status == 200, final
    text = result_text(final)
    assert "client_roots=file:///workspace" in text  # the configured root, never the client's
    assert uri not in text.replace("client_roots=file:///workspace", "")


async def test_a_modern_server_sees_the_clients_capabilities_and_refuses_what_it_did_not_declare(
        gw: dict[str, Any]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        headers = {"Authorization": f"Bearer {gw['token']}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                   "Mcp-Name": "test_missing_capability", "Accept": "application/json, text/event-stream"}
        r = await http.post(f"{gw['url']}/mcp/mref", json=call(31, "test_missing_capability", {}), headers=headers)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32021
    assert r.json()["error"]["data"]["requiredCapabilities"] == {"sampling": {}}
    status, declared = await post(gw, call(32, "test_missing_capability", {"sampling": {}}), path="/mcp/mref")
    assert status == 200
    assert result_text(declared) == "the client declared sampling"
    # Only what the client declared is offered: sampling alone, not elicitation and not roots.
    only = await first_round(gw, 33, "test_input_required_result_capabilities", "mref", caps={"sampling": {}})
    assert [q["method"] for q in only["inputRequests"].values()] == ["sampling/createMessage"]
    (key,) = only["inputRequests"]
    _, done = await post(gw, call(34, "test_input_required_result_capabilities", {"sampling": {}},
                                  inputResponses={key: SAMPLED}, requestState=only["requestState"]), path="/mcp/mref")
    # the server's roots question went to no client (it declared none): the gateway answered it from the
    # configured roots, which the gateway declares for this server as its own
    assert result_text(done) == "capabilities: ['roots', 'sampling']"


@pytest.mark.parametrize("caps", [{"roots": {}}, {"roots": {"listChanged": True}}, {"experimental": {"roots": {}}}])
async def test_a_clients_roots_capability_never_reaches_a_modern_server(gw: dict[str, Any], caps: dict[str, Any]) -> None:
    status, answer = await post(gw, call(41, "test_input_required_result_capabilities", caps), path="/mcp/mbare")
    assert status == 200, answer
    assert answer["result"].get("resultType") != "input_required", answer
    # a server with no configured roots sees no roots capability: none of it is the client's
    assert result_text(answer) == "capabilities: []"


async def test_a_legacy_stdio_servers_question_goes_to_the_call_that_can_be_asking(gw: dict[str, Any]) -> None:
    holds = gw["gateway"].traffic.mrtr
    # alice's first call asks and waits for her retry; her next call's question is still hers.
    waiting = await first_round(gw, 51, "test_input_required_result_request_state", "ref", gw["alice"])
    sampling = await first_round(gw, 52, "test_input_required_result_sampling", "ref", gw["alice"])
    assert [q["method"] for q in sampling["inputRequests"].values()] == ["sampling/createMessage"]
    (skey,) = sampling["inputRequests"]
    _, done = await post(gw, call(53, "test_input_required_result_sampling", inputResponses={skey: SAMPLED},
                                  requestState=sampling["requestState"]), gw["alice"], "/mcp/ref")
    assert "capital_question=Paris" in result_text(done)
    # While alice's call waits, bob's call cannot be told apart from hers: its question is nobody's.
    status, bobs = await post(gw, call(54, "test_input_required_result_elicitation"), gw["bob"], "/mcp/ref")
    # the server was refused its question ("cannot route"), and its tool failed with that refusal
    assert status == 404, bobs
    assert "cannot route elicitation/create" in bobs["error"]["message"], bobs
    assert "Ada" not in json.dumps(bobs)
    (wkey,) = waiting["inputRequests"]
    _, final = await post(gw, call(55, "test_input_required_result_request_state", requestState=waiting["requestState"],
                                   inputResponses={wkey: {"action": "accept", "content": {"ok": True}}}),
                          gw["alice"], "/mcp/ref")
    assert "state-ok" in result_text(final)
    assert holds.status()["holding"] == 0  # every call of this module was answered to its end


@pytest.mark.parametrize("path", ["/mcp/ref", "/mcp/mref", "/mcp"])
async def test_an_initialize_in_the_2026_envelope_is_method_not_found(gw: dict[str, Any], path: str) -> None:
    headers = {"Authorization": f"Bearer {gw['token']}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "initialize",
               "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as http:
        r = await http.post(f"{gw['url']}{path}", headers=headers,
                            json={"jsonrpc": "2.0", "id": 61, "method": "initialize", "params": {"_meta": meta()}})
        assert r.status_code == 404, r.text
        assert r.json()["error"]["code"] == -32601
        handshake = await http.post(f"{gw['url']}{path}", headers={
            "Authorization": f"Bearer {gw['token']}", "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 62, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert handshake.status_code == 200
    assert "protocolVersion" in handshake.text
