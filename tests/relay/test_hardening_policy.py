"""Hardening matrix, policy: rules decide framed calls, live, and blocked data never leaks.

Strategy: one real gateway for the module (built-in tools, the npm `everything` server, and a
misbehave server that logs every call reaching it). Each test writes its rules into the
gateway's policy.yaml and reloads it in place, as the file watcher and SIGHUP do, so every
test is also a live policy change. Leak checks look at every byte the raw client received on
the connection and at what reached the upstream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcpwall.relay import Frame
from tests.relay.helpers import (
    EVERYTHING,
    FrameClient,
    Framed,
    builtin,
    framed_gateway,
    misbehave,
    text_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

HEAD = """\
version: "1"
mode: enforce
defaultAction: allow
stages:
  ratelimit: {requestsPerMinute: 0}
rules:
"""
SECRET = "hunter2-TOPSECRET-7f3a"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Framed]:
    tmp = tmp_path_factory.mktemp("policy")
    markers = tmp / "markers"
    markers.mkdir()
    servers = {"local": builtin(), "ev": EVERYTHING, "rec": misbehave("ok", markers)}
    async with framed_gateway(tmp, servers, HEAD + "  []\n") as framed:
        framed.markers = markers  # type: ignore[attr-defined]
        yield framed


class Recording(FrameClient):
    """Keeps every byte the gateway sent, for leak checks."""

    received = b""

    async def next_frame(self, timeout: float = 15.0) -> Frame | None:
        frame = await super().next_frame(timeout)
        if frame is not None:
            self.received += frame.payload
        return frame


@pytest.fixture
async def client(gw: Framed) -> AsyncIterator[Recording]:
    reader, writer = await asyncio.open_unix_connection(str(gw.socket))
    c = Recording(reader, writer)
    await c.raw(b"\x00MCPWALL_META:policy-test\n")
    await c.initialize()
    yield c
    await c.close()


def set_rules(gw: Framed, rules: str) -> None:
    gw.policy_path.write_text(HEAD + rules, encoding="utf-8")
    assert gw.built.policy.reload(), gw.built.policy.last_error


def _calls(gw: Framed) -> str:
    log: Path = gw.markers / "calls.log"  # type: ignore[attr-defined]
    return log.read_text() if log.exists() else ""


def _blocked(answer: dict[str, object], rule: str) -> None:
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["code"] == -32001
    assert rule in error["data"]["rule_ids"]


async def test_a_live_policy_change_applies_to_the_next_call_on_an_open_connection(gw: Framed,
                                                                                   client: Recording) -> None:
    set_rules(gw, "  []\n")
    assert text_of(await client.call("ev__echo", {"message": "before"})) == "Echo: before"
    set_rules(gw, "  - {id: stop-echo, tools: [echo], servers: [ev], action: deny}\n")
    _blocked(await client.call("ev__echo", {"message": "after"}), "stop-echo")
    set_rules(gw, "  []\n")
    assert text_of(await client.call("ev__echo", {"message": "again"})) == "Echo: again"


async def test_a_per_tool_block_denies_that_tool_and_no_other(gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: no-sum, tools: [get-sum], action: deny}\n")
    _blocked(await client.call("ev__get-sum", {"a": 1, "b": 2}), "no-sum")
    assert text_of(await client.call("ev__echo", {"message": "fine"})) == "Echo: fine"
    tools = {t["name"] for t in (await client.request("tools/list"))["result"]["tools"]}
    assert "ev__get-sum" not in tools  # denied tools are invisible
    assert "ev__echo" in tools


async def test_a_resource_uri_rule_blocks_reading_that_resource(gw: Framed, client: Recording) -> None:
    resources = (await client.request("resources/list"))["result"]["resources"]
    secret_uri, other_uri = resources[0]["uri"], resources[1]["uri"]
    set_rules(gw, f"  - {{id: no-doc, target: resource, match: exact, values: ['{secret_uri}'], action: deny}}\n")
    _blocked(await client.request("resources/read", {"uri": secret_uri}), "no-doc")
    assert (await client.request("resources/read", {"uri": other_uri}))["result"]["contents"]


async def test_an_argument_name_rule_blocks_calls_carrying_that_key_and_nothing_reaches_the_server(
        gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: no-password-arg, target: argName, match: exact, values: [password], action: deny}\n")
    before = _calls(gw)
    answer = await client.call("rec__echo", {"user": "bob", "nested": {"password": SECRET}})
    _blocked(answer, "no-password-arg")
    assert _calls(gw) == before
    assert SECRET.encode() not in client.received
    assert (await client.call("rec__echo", {"user": "bob"}))["result"]


async def test_an_argument_value_rule_blocks_calls_carrying_that_value(gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: no-drop, target: argValue, match: contains, values: ['DROP TABLE'], action: deny}\n")
    before = _calls(gw)
    _blocked(await client.call("rec__echo", {"sql": f"DROP TABLE users; -- {SECRET}"}), "no-drop")
    assert _calls(gw) == before
    assert SECRET.encode() not in client.received


async def test_a_return_value_rule_withholds_the_result_and_none_of_it_reaches_the_agent(
        gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: no-secret-out, target: response, match: contains, values: [TOPSECRET], action: deny}\n")
    answer = await client.call("ev__echo", {"message": f"the plan is {SECRET}"})
    assert answer["error"]["code"] == -32001
    assert "plan" not in client.received.decode()
    assert SECRET.encode() not in client.received
    assert text_of(await client.call("ev__echo", {"message": "harmless"})) == "Echo: harmless"


async def test_deny_beats_allow_when_both_match(gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: allow-echo, tools: [echo], action: allow}\n"
                  "  - {id: deny-echo, tools: [echo], servers: [ev], action: deny}\n")
    _blocked(await client.call("ev__echo", {"message": "x"}), "deny-echo")
    assert text_of(await client.call("local__echo", {"text": "local is only allowed"})) == "local is only allowed"


async def test_a_blocked_builtin_call_leaks_none_of_its_arguments(gw: Framed, client: Recording) -> None:
    set_rules(gw, "  - {id: no-fetch, tools: [fetch_http], servers: [local], action: deny}\n")
    answer = await client.call("local__fetch_http", {"url": f"https://example.com/?k={SECRET}"})
    _blocked(answer, "no-fetch")
    assert SECRET.encode() not in client.received
