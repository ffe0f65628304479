"""Multi round-trip requests through the gateway: a modern client, a legacy upstream (issue 24, item 3).

Strategy: one gateway (tests.harness, served by uvicorn, with its bearer token and two named
tokens, `alice` and `bob`, for two principals) in front of @modelcontextprotocol/server-everything
from node_modules over stdio, a legacy server whose `trigger-sampling-request` and
`trigger-elicitation-request` tools send `sampling/createMessage` and `elicitation/create` mid-call.
The official Python SDK 2.x client drives it in the 2026-07-28 revision (pinned, and `auto`, which
adopts it after `server/discover`) with sampling and elicitation callbacks, on `/mcp`,
`/mcp/{server}` and `mcpwall proxy --stdio`: the tool's result arrives with the callback's
answer in it, and the call has one ledger row whose notes count its rounds. Adversarial retries
are raw POSTs holding the state of a real round: another principal's token, the state edited in
several ways, a stale or expired state, an answer for a key never asked, changed arguments after
an approval, a secret the session was shown or a planted decoy credential sent back in an
answer (several spellings each), sampling while `allowSampling` is false, and more waiting calls
than a principal may have. A Recorder stage shows each call's notes as the ledger gets them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.harness import Recorder, build_gateway, serve_http, token
from tests.proxy.harness import EVERYTHING, MCPWALL, write_servers

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120)]

MODERN = "2026-07-28"
SECRET = "AKIAQX4BZ7WD3K5N2HPL"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
allowSampling: {sampling}
rules:
  - id: ask-for-sums
    description: Sampling for a sum needs a person
    tools: [trigger-sampling-request]
    agents: [carol]
    action: ask
    timeoutMs: 30000
honeytokens: {{enabled: true, tools: [get-sum]}}
stages:
  ratelimit: {{requestsPerMinute: 0}}
"""
ELICIT = "trigger-elicitation-request"
SAMPLE = "trigger-sampling-request"
ANSWER = {"action": "accept", "content": {"name": "Ada", "check": True, "email": "ada@example.com"}}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("gw-mrtr")
    tokens = home / "run" / "tokens"
    tokens.mkdir(parents=True)
    for who in ("alice", "bob", "carol"):
        (tokens / f"{who}.token").write_text(f"{who}-token-{'x' * 32}\n")
        (tokens / f"{who}.token").chmod(0o600)
    recorder = Recorder()
    # The server knows a secret (in its environment, which get-env shows): a result may carry it.
    everything = {**EVERYTHING, "env": {"MRTR_TEST_KEY": SECRET}}
    # A second server: a stdio server does not say which call a request is for, so one held call per
    # server at a time is told apart (as the legacy routing tells one caller apart).
    built = build_gateway(home, POLICY.format(sampling="true"), {"everything": everything, "second": EVERYTHING},
                          auth=True,
                          stages=[recorder])
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        yield {"url": base, "token": token(built), "home": home, "gateway": built.gateway, "built": built,
               "recorder": recorder, **{who: f"{who}-token-{'x' * 32}" for who in ("alice", "bob", "carol")}}


class Callbacks:
    """The client's user and model: what they were asked, and their answers."""

    def __init__(self, elicited: dict[str, Any] | None = None) -> None:
        self.asked: list[str] = []
        self.elicited = elicited or ANSWER

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sampling")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled ok"),
                                         model="test-model", stop_reason="endTurn")

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append("elicitation")
        return types.ElicitResult(**self.elicited)


@contextlib.asynccontextmanager
async def http_client(gw: dict[str, Any], path: str, mode: str, cb: Callbacks, bearer: str | None = None
                      ) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer or gw['token']}"},
                           timeout=httpx2.Timeout(30.0, read=60.0)) as http,
        Client(streamable_http_client(f"{gw['url']}{path}", http_client=http), mode=mode,
               sampling_callback=cb.sampling, elicitation_callback=cb.elicitation) as c,
    ):
        yield c


def meta(**caps: Any) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps or {"elicitation": {}, "sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "raw-mrtr", "version": "1"}}


def call(rid: int, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta(), **extra}}


async def post(gw: dict[str, Any], body: dict[str, Any], bearer: str | None = None, path: str = "/mcp/everything"
               ) -> tuple[int, dict[str, Any]]:
    """POST one modern request; the status and the JSON-RPC answer (from JSON or the event stream)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {bearer or gw['token']}", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": body["method"], "Mcp-Name": body["params"]["name"]}
    async with httpx.AsyncClient(timeout=60.0) as http:
        r = await http.post(f"{gw['url']}{path}", content=json.dumps(body).encode(), headers=headers)
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        events = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
        answer = next(e for e in reversed(events) if "id" in e and ("result" in e or "error" in e))
    else:
        answer = r.json()
    return r.status_code, answer


async def asked(gw: dict[str, Any], rid: int, name: str = ELICIT, args: dict[str, Any] | None = None,
                bearer: str | None = None, path: str = "/mcp/everything") -> dict[str, Any]:
    """A first call's InputRequiredResult."""
    status, answer = await post(gw, call(rid, name, args or {}), bearer, path)
    assert status == 200, answer
    result = answer["result"]
    assert result["resultType"] == "input_required", answer
    return result


def refusal(answer: dict[str, Any], detail: str) -> str:
    err = answer["error"]
    assert err["code"] == -32602, answer
    assert err["data"] == {"reason": "invalid_request_state", "detail": detail}, answer
    return str(err["message"])


async def ledger_notes(gw: dict[str, Any], tool: str, predicate: Any) -> dict[str, Any]:
    """The notes of the ledger's latest row for `tool` that satisfies `predicate` (written in the background)."""
    for _ in range(100):
        with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
            rows = [json.loads(n) for (n,) in db.execute(
                "SELECT notes FROM tool_calls WHERE tool_name = ? ORDER BY rowid DESC", (tool,))]
        found = next((n for n in rows if predicate(n)), None)
        if found is not None:
            return found
        await anyio.sleep(0.1)
    raise AssertionError(f"no ledger row for {tool} matched; rows: {rows}")


# ---------------------------------------------------------------------- real clients


@pytest.mark.parametrize("mode", [MODERN, "auto"])
@pytest.mark.parametrize("path", ["/mcp", "/mcp/everything"])
async def test_a_modern_sdk_client_answers_a_legacy_servers_sampling_and_elicitation_in_input_rounds(
        gw: dict[str, Any], path: str, mode: str) -> None:
    name = (lambda n: f"everything__{n}") if path == "/mcp" else (lambda n: n)
    cb = Callbacks()
    async with http_client(gw, path, mode, cb) as c:
        assert c.protocol_version == MODERN
        sampled = await c.call_tool(name(SAMPLE), {"prompt": f"say hi {path} {mode}", "maxTokens": 20})
        elicited = await c.call_tool(name(ELICIT), {})
    assert not sampled.is_error
    assert "sampled ok" in str(sampled.content)
    assert not elicited.is_error
    assert "Ada" in str(elicited.content)
    assert cb.asked == ["sampling", "elicitation"]
    # One ledger row for the call and its rounds.
    notes = await ledger_notes(gw, SAMPLE, lambda n: n.get("mrtr", {}).get("answered") == [
        {"key": "mcpwall-1", "method": "sampling/createMessage"}])
    assert notes["mrtr"]["rounds"] == 1
    assert notes["mrtr"]["asked"][0]["method"] == "sampling/createMessage"
    assert notes["mrtr"]["withheld"] == []


async def test_a_modern_client_on_the_stdio_frontend_gets_its_input_rounds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "policy.yaml").write_text(POLICY.format(sampling="true"))
    servers = write_servers(home / "servers.json", {"everything": EVERYTHING})
    cb = Callbacks()
    params = StdioServerParameters(command=MCPWALL, args=["proxy", "--stdio", "--home", str(home),
                                                          "--servers", str(servers)])
    async with Client(params, mode=MODERN, sampling_callback=cb.sampling, elicitation_callback=cb.elicitation) as c:
        assert c.protocol_version == MODERN
        sampled = await c.call_tool(f"everything__{SAMPLE}", {"prompt": "over stdio", "maxTokens": 20})
        elicited = await c.call_tool(f"everything__{ELICIT}", {})
    assert "sampled ok" in str(sampled.content)
    assert "Ada" in str(elicited.content)
    assert cb.asked == ["sampling", "elicitation"]


# ---------------------------------------------------------------------- the round on the wire


async def test_the_input_round_is_an_input_required_result_and_its_retry_gets_the_result(gw: dict[str, Any]) -> None:
    first = await asked(gw, 101)
    assert set(first["inputRequests"]) == {"mcpwall-1"}
    question = first["inputRequests"]["mcpwall-1"]
    assert question["method"] == "elicitation/create"
    assert "requestedSchema" in question["params"]
    assert first["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcpwall"
    status, final = await post(gw, call(102, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                        requestState=first["requestState"]))
    assert status == 200
    assert final["id"] == 102
    assert final["result"]["resultType"] == "complete"
    assert "Ada" in json.dumps(final["result"]["content"])
    # The state is spent with the call: a replay finds nothing held.
    _, again = await post(gw, call(103, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                   requestState=first["requestState"]))
    assert "No call is held" in refusal(again, "unknown")


@pytest.mark.parametrize("caps", [{"experimental": {}}, {"sampling": {}}, {"roots": {"listChanged": True}}])
async def test_a_client_that_cannot_be_asked_gets_its_answer_and_the_server_a_refusal(
        gw: dict[str, Any], caps: dict[str, Any]) -> None:
    # A client that declared no elicitation is never held for one: the server's question is refused
    # (as the legacy routing refuses it), the call ends with the server's own answer in one POST.
    body = call(150, ELICIT, {})
    body["params"]["_meta"] = meta(**caps)
    status, answer = await post(gw, body)
    assert status == 200, answer
    result = answer.get("result") or {}
    assert result.get("resultType") != "input_required", answer
    assert "Ada" not in json.dumps(answer)
    assert gw["gateway"].traffic.mrtr.status()["holding"] == 0


async def test_a_request_state_replayed_with_another_principals_token_is_refused(gw: dict[str, Any]) -> None:
    first = await asked(gw, 111, bearer=gw["alice"])
    retry = call(112, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER}, requestState=first["requestState"])
    for bearer in (gw["bob"], gw["token"]):
        status, answer = await post(gw, retry, bearer)
        assert status == 400
        assert "another principal" in refusal(answer, "principal")
    status, final = await post(gw, retry, gw["alice"])  # the one it was given to still may
    assert status == 200
    assert "Ada" in json.dumps(final["result"]["content"])


def _edits(state: str) -> list[str]:
    payload, mac = state.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = dict(body, r=body["r"] + 1, e=body["e"] + 3_600_000)
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
    return [f"{flipped}.{mac}", f"{payload}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}", f"{forged_payload}.{mac}",
            f"{payload}.", f".{mac}", payload, state + "x", state.upper()]


async def test_an_edited_request_state_is_refused_in_every_spelling(gw: dict[str, Any]) -> None:
    first = await asked(gw, 121)
    for n, edited in enumerate([*_edits(first["requestState"]), "", 42, {"h": "x"}]):
        status, answer = await post(gw, call(200 + n, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                             requestState=edited))
        assert status == 400, (edited, answer)
        assert answer["error"]["data"]["reason"] == "invalid_request_state", (edited, answer)
        assert answer["error"]["data"]["detail"] in ("signature", "malformed"), (edited, answer)
    _, final = await post(gw, call(122, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                   requestState=first["requestState"]))
    assert "Ada" in json.dumps(final["result"]["content"])  # the hold waited through the attempts


async def test_answers_for_keys_never_asked_reach_no_server_and_the_question_is_asked_again(
        gw: dict[str, Any]) -> None:
    first = await asked(gw, 131)
    status, second = await post(gw, call(132, ELICIT, {}, requestState=first["requestState"], inputResponses={
        "mcpwall-2": ANSWER, "../mcpwall-1": ANSWER, "MCPWALL-1": ANSWER, "": ANSWER}))
    assert status == 200
    assert second["result"]["resultType"] == "input_required"
    assert set(second["result"]["inputRequests"]) == {"mcpwall-1"}  # still unanswered
    _, stale = await post(gw, call(133, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                   requestState=first["requestState"]))
    assert "Stale" in refusal(stale, "stale")
    _, final = await post(gw, call(134, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                   requestState=second["result"]["requestState"]))
    assert "Ada" in json.dumps(final["result"]["content"])
    notes = await ledger_notes(gw, ELICIT, lambda n: n.get("mrtr", {}).get("rounds") == 2)
    assert sorted(notes["mrtr"]["ignored"]) == sorted(["mcpwall-2", "../mcpwall-1", "MCPWALL-1", ""])


async def test_responses_without_a_state_or_of_another_shape_are_refused(gw: dict[str, Any]) -> None:
    _, answer = await post(gw, call(141, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER}))
    assert "without requestState" in refusal(answer, "missing")
    first = await asked(gw, 142)
    _, answer = await post(gw, call(143, ELICIT, {}, inputResponses=["not", "an", "object"],
                                    requestState=first["requestState"]))
    refusal(answer, "responses")
    _, final = await post(gw, call(144, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                   requestState=first["requestState"]))
    assert "Ada" in json.dumps(final["result"]["content"])


async def test_an_expired_hold_gives_the_call_up_and_a_late_retry_is_told_so(gw: dict[str, Any]) -> None:
    holds = gw["gateway"].traffic.mrtr
    holds.ttl_s = 0.5
    try:
        first = await asked(gw, 151)
        await anyio.sleep(1.2)
    finally:
        holds.ttl_s = 120.0
    _, late = await post(gw, call(152, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                  requestState=first["requestState"]))
    assert "Expired" in refusal(late, "expired")
    notes = await ledger_notes(gw, ELICIT, lambda n: n.get("mrtr", {}).get("expired") is True)
    assert notes["mrtr"]["rounds"] == 1


async def test_an_approved_call_cannot_be_retried_with_other_arguments(gw: dict[str, Any]) -> None:
    approvals = gw["gateway"].approvals
    args = {"prompt": "what is 2+2", "maxTokens": 20}
    carol = gw["carol"]  # the policy asks a person about carol's sampling calls
    approved: list[str] = []

    async def approve_when_held() -> None:
        for _ in range(200):
            pending = approvals.book.pending()
            if pending:
                approvals.approve(pending[0]["id"], via="test")
                approved.append(pending[0]["id"])
                return
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(approve_when_held)
        first = await asked(gw, 161, SAMPLE, args, bearer=carol)
    assert len(approved) == 1
    reply = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m", "stopReason": "endTurn"}
    state = first["requestState"]
    for n, changed in enumerate([{**args, "prompt": "now run rm -rf /"}, {**args, "maxTokens": 21},
                                 {**args, "extra": True}, {"prompt": args["prompt"]}]):
        _, answer = await post(gw, call(170 + n, SAMPLE, changed, inputResponses={"mcpwall-1": reply},
                                        requestState=state), carol)
        assert "a changed call is a new call" in refusal(answer, "call"), changed
    _, other_tool = await post(gw, call(175, ELICIT, {}, inputResponses={"mcpwall-1": reply},
                                 requestState=state), carol)
    refusal(other_tool, "call")
    _, final = await post(gw, call(176, SAMPLE, dict(reversed(list(args.items()))),  # same call, keys reordered
                                   inputResponses={"mcpwall-1": reply}, requestState=state), carol)
    assert "LLM sampling result" in json.dumps(final["result"]["content"])
    assert approvals.book.pending() == []  # decided once, for the call as approved


async def test_a_secret_the_session_was_shown_is_withheld_when_an_answer_sends_it_back(gw: dict[str, Any]) -> None:
    bearer = gw["alice"]
    _, shown = await post(gw, call(181, "get-env", {}), bearer)
    assert "MRTR_TEST_KEY" in json.dumps(shown)
    assert SECRET not in json.dumps(shown)
    spellings = [{"name": SECRET}, {"name": f"my key is {SECRET} ok"}, {"email": f"<{SECRET}>"},
                 {"nested": {"deeper": [SECRET]}}]
    for n, content in enumerate(spellings):
        first = await asked(gw, 190 + 2 * n, bearer=bearer)
        _, final = await post(gw, call(191 + 2 * n, ELICIT, {}, requestState=first["requestState"],
                                       inputResponses={"mcpwall-1": {"action": "accept", "content": content}}),
                              bearer)
        assert SECRET not in json.dumps(final), content  # the server never had it to echo back
        notes = await ledger_notes(gw, ELICIT, lambda n: bool(n.get("mrtr", {}).get("withheld"))
                                   and n["mrtr"]["rounds"] == 1 and len(n["mrtr"]["asked"]) == 1)
        withheld = notes["mrtr"]["withheld"][0]
        assert withheld["method"] == "elicitation/create"
        assert "exfiltration" in withheld["reason"]


async def test_sampling_is_never_asked_while_allow_sampling_is_false(gw: dict[str, Any]) -> None:
    built = gw["built"]
    policy_file = gw["home"] / "policy.yaml"
    cb = Callbacks()
    policy_file.write_text(POLICY.format(sampling="false"))
    try:
        assert built.policy.reload()
        async with http_client(gw, "/mcp/everything", MODERN, cb) as c:
            result = await c.call_tool(SAMPLE, {"prompt": "sampling is off", "maxTokens": 20})
        assert result.is_error
        assert "sampling is disabled by policy" in str(result.content)
        assert cb.asked == []
    finally:
        policy_file.write_text(POLICY.format(sampling="true"))
        assert built.policy.reload()


async def test_a_sampling_answer_given_after_allow_sampling_turned_false_is_withheld(gw: dict[str, Any]) -> None:
    built = gw["built"]
    policy_file = gw["home"] / "policy.yaml"
    first = await asked(gw, 301, SAMPLE, {"prompt": "before the change", "maxTokens": 20})
    policy_file.write_text(POLICY.format(sampling="false"))
    try:
        assert built.policy.reload()
        reply = {"role": "assistant", "content": {"type": "text", "text": "leak"}, "model": "m"}
        _, final = await post(gw, call(302, SAMPLE, {"prompt": "before the change", "maxTokens": 20},
                                       inputResponses={"mcpwall-1": reply}, requestState=first["requestState"]))
        assert "leak" not in json.dumps(final)
        notes = await ledger_notes(gw, SAMPLE, lambda n: bool(n.get("mrtr", {}).get("withheld")))
        assert "allowSampling: false" in notes["mrtr"]["withheld"][0]["reason"]
    finally:
        policy_file.write_text(POLICY.format(sampling="true"))
        assert built.policy.reload()


async def test_a_principal_has_a_bounded_number_of_calls_waiting_for_its_input(gw: dict[str, Any]) -> None:
    holds = gw["gateway"].traffic.mrtr
    bearer, second = gw["bob"], "/mcp/second"
    holds.cap = 1
    try:
        waiting = await asked(gw, 401, bearer=bearer)
        _, over = await post(gw, call(402, ELICIT, {}), bearer, second)
        assert over["result"].get("resultType") != "input_required"  # asked nothing: the server was refused
        assert "too many calls" in json.dumps(over)
        other = await asked(gw, 403, bearer=gw["alice"], path=second)  # another principal's are not held back
    finally:
        holds.cap = 16
    for n, (first, who, path) in enumerate([(waiting, bearer, "/mcp/everything"), (other, gw["alice"], second)]):
        _, final = await post(gw, call(420 + n, ELICIT, {}, inputResponses={"mcpwall-1": ANSWER},
                                       requestState=first["requestState"]), who, path)
        assert "Ada" in json.dumps(final["result"]["content"])


async def test_a_decoy_credential_sent_back_in_an_answer_trips_the_honeytoken_wire(gw: dict[str, Any]) -> None:
    _, planted = await post(gw, call(501, "get-sum", {"a": 1, "b": 2}), gw["bob"])
    text = json.dumps(planted["result"]["content"])
    decoys = [re.search(pattern, text) for pattern in (r"ghp_[A-Za-z0-9]{36}", r"AKIA[A-Z0-9]{16}",
                                                        r"postgresql://[^\\\s\"]+")]
    assert all(decoys), text  # planted by the gateway in this result
    spellings = [{"name": decoys[0].group(0)}, {"name": f"token: {decoys[1].group(0)} thanks"},  # type: ignore[union-attr]
                 {"homepage": decoys[2].group(0)}]  # type: ignore[union-attr]
    for n, content in enumerate(spellings):
        first = await asked(gw, 510 + 2 * n, bearer=gw["alice"])  # another principal: decoys are everyone's
        _, final = await post(gw, call(511 + 2 * n, ELICIT, {}, requestState=first["requestState"],
                                       inputResponses={"mcpwall-1": {"action": "accept", "content": content}}),
                              gw["alice"])
        assert content[next(iter(content))] not in json.dumps(final)  # the server never had it
    assert await tripped_rows(gw, 3) == 3  # one withheld answer per spelling, each in its call's row


async def tripped_rows(gw: dict[str, Any], want: int) -> int:
    """How many calls' ledger rows say an answer was withheld by the honeytoken tripwire."""
    count = 0
    for _ in range(100):
        with contextlib.closing(sqlite3.connect(gw["home"] / "ledger.db")) as db:
            rows = [json.loads(n) for (n,) in db.execute("SELECT notes FROM tool_calls WHERE tool_name = ?",
                                                           (ELICIT,))]
        count = sum(1 for n in rows if n.get("mrtr", {}).get("answered") == [] and any(
            "honeytoken" in w["reason"] for w in n["mrtr"].get("withheld", [])))
        if count >= want:
            break
        await anyio.sleep(0.1)
    return count
