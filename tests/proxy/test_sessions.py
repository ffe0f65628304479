"""Sessions share upstreams without ever mixing up their requests.

Strategy: an in-process gateway (no HTTP) in front of a slow script server;
sessions send requests with the same JSON-RPC ids concurrently and each must
get its own answer; a cancelled request is cancelled upstream; aggregated
names, collisions and list_changed are checked against real servers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcpwall.pipeline import Stage
from tests.harness import build_gateway
from tests.proxy.harness import EVERYTHING, MEMORY, PERMISSIVE, script_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

INIT: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}}}


def make(tmp_path: Path, servers: dict[str, dict[str, Any]]) -> Any:
    return build_gateway(tmp_path, PERMISSIVE, servers)


async def session(gw: Any, server: str | None = None) -> Any:
    s = gw.open_session("stdio", server)
    assert "result" in await gw.handle_request(s, INIT)
    await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return s


def call(rid: int | str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}


async def test_the_same_ids_from_many_sessions_never_collide(tmp_path: Path) -> None:
    built = make(tmp_path, {"slow": script_server("misbehave", "slow", str(tmp_path))})
    gw = built.gateway
    await gw.start()
    try:
        sessions = [await session(gw, "slow") for _ in range(5)]
        answers = await asyncio.gather(*(gw.handle_request(s, call(1, "act", {"who": i, "seconds": 0.3 - i * 0.05}))
                                         for i, s in enumerate(sessions)))
        for i, answer in enumerate(answers):
            assert answer["id"] == 1
            assert json.loads(answer["result"]["content"][0]["text"])["who"] == i
    finally:
        await gw.stop()


async def test_a_cancelled_request_is_cancelled_upstream(tmp_path: Path) -> None:
    built = make(tmp_path, {"slow": script_server("misbehave", "slow", str(tmp_path))})
    gw = built.gateway
    await gw.start()
    try:
        s = await session(gw, "slow")
        task = asyncio.create_task(gw.handle_request(s, call("c1", "act", {"seconds": 5})))
        await asyncio.sleep(0.3)
        await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": "c1", "reason": "user gave up"}})
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(30):
            log = tmp_path / "notifications.log"
            if log.exists() and "notifications/cancelled" in log.read_text():
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        cancelled = [m for m in sent if m["method"] == "notifications/cancelled"]
        assert len(cancelled) == 1  # told once, not again when the request's task ends
        assert isinstance(cancelled[0]["params"]["requestId"], int)  # the gateway's own id
        assert cancelled[0]["params"]["reason"] == "user gave up"
    finally:
        await gw.stop()


async def test_aggregated_names_route_and_collisions_are_reported(tmp_path: Path) -> None:
    a = {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "a.jsonl")}}
    b = {**MEMORY, "env": {"MEMORY_FILE_PATH": str(tmp_path / "b.jsonl")}}
    built = make(tmp_path, {"a": a, "b": b, "everything": EVERYTHING})
    gw = built.gateway
    await gw.start()
    try:
        s = await session(gw)
        listed = await gw.handle_request(s, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        names = {t["name"] for t in listed["result"]["tools"]}
        assert {"a__read_graph", "b__read_graph", "everything__echo"} <= names
        status = gw.status()
        assert status["collisions"]["tools"]["read_graph"] == ["a", "b"]
        created = await gw.handle_request(s, call(2, "a__create_entities", {"entities": [
            {"name": "only-in-a", "entityType": "t", "observations": []}]}))
        assert "result" in created
        graph_b = await gw.handle_request(s, call(3, "b__read_graph", {}))
        assert "only-in-a" not in json.dumps(graph_b)
        bad = await gw.handle_request(s, call(4, "read_graph", {}))
        assert bad["error"]["code"] == -32602
        unknown = await gw.handle_request(s, call(5, "zzz__read_graph", {}))
        assert unknown["error"]["code"] == -32601
    finally:
        await gw.stop()


async def test_list_changed_is_followed_and_passed_on(tmp_path: Path) -> None:
    built = make(tmp_path, {"everything": EVERYTHING})
    gw = built.gateway
    await gw.start()
    pushed: list[dict[str, Any]] = []
    try:
        s = await session(gw)

        async def send(msg: dict[str, Any]) -> None:
            pushed.append(msg)

        s.send = send
        upstream = gw.servers["everything"]
        upstream.catalog.tools.pop("echo")
        for _ in range(5):
            gw.on_upstream_notification(upstream, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                                        None)
        for _ in range(50):
            if pushed:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert pushed
        assert all(m == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} for m in pushed)
        assert len(pushed) <= 2  # a burst is coalesced
        assert "echo" in upstream.catalog.tools  # refreshed from the server
    finally:
        await gw.stop()


def _watch(s: Any) -> list[dict[str, Any]]:
    """Every message the gateway pushes to session `s` (delivered or buffered)."""
    seen: list[dict[str, Any]] = []
    s.observer = lambda _session, _direction, msg: seen.append(msg)
    return seen


async def test_a_log_line_sent_during_one_sessions_call_reaches_only_that_session(tmp_path: Path) -> None:
    built = make(tmp_path, {"m": script_server("misbehave", "ok")})
    gw = built.gateway
    await gw.start()
    try:
        s1, s2 = await session(gw, "m"), await session(gw, "m")
        for s in (s1, s2):  # both asked for logs: only whose request it was may decide who sees it
            await gw.handle_request(s, {"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
                                        "params": {"level": "info"}})
        seen1, seen2 = _watch(s1), _watch(s2)
        answer = await gw.handle_request(s1, call(1, "tell", {"secret": "S1-ONLY"}))
        assert answer["result"]["content"][0]["text"] == "told"
        await asyncio.sleep(0.3)
        assert any("S1-ONLY" in json.dumps(m) for m in seen1)
        assert not any("S1-ONLY" in json.dumps(m) for m in seen2)

        # Both in flight: the server cannot say whose log line it is, so nobody gets it.
        seen1.clear()
        seen2.clear()
        slow = asyncio.ensure_future(gw.handle_request(s2, call(2, "tell", {"secret": "S2-ONLY", "seconds": 0.8})))
        await asyncio.sleep(0.3)
        await gw.handle_request(s1, call(3, "tell", {"secret": "S1-AGAIN"}))
        await slow
        await asyncio.sleep(0.2)
        assert not any("S1-AGAIN" in json.dumps(m) for m in seen2)
        assert not any("S2-ONLY" in json.dumps(m) for m in seen1)
    finally:
        await gw.stop()


async def test_sampling_asked_for_one_session_never_goes_to_another(tmp_path: Path) -> None:
    built = make(tmp_path, {"everything": EVERYTHING})
    gw = built.gateway
    await gw.start()
    try:
        caller = await session(gw, "everything")  # declares no sampling capability
        bystander = gw.open_session("stdio", "everything")
        init = {**INIT, "params": {**INIT["params"], "capabilities": {"sampling": {}}}}
        assert "result" in await gw.handle_request(bystander, init)
        await gw.handle(bystander, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        seen = _watch(bystander)
        secret = call(1, "trigger-sampling-request", {"prompt": "the caller's SECRET", "maxTokens": 5})

        # The bystander has a call in flight to the same server...
        busy = asyncio.ensure_future(gw.handle_request(
            bystander, call(1, "trigger-long-running-operation", {"duration": 1.5, "steps": 3})))
        await asyncio.sleep(0.3)
        answer = await asyncio.wait_for(gw.handle_request(caller, dict(secret)), 10)
        await busy
        # ...then it is idle.
        answer_idle = await asyncio.wait_for(gw.handle_request(caller, {**secret, "id": 2}), 10)

        assert not any("SECRET" in json.dumps(m) for m in seen)
        for a in (answer, answer_idle):  # refused at once, not after the tool's timeout
            assert "error" in a or a["result"].get("isError")
    finally:
        await gw.stop()


async def test_a_server_that_hangs_on_lists_delays_the_merged_list_only_up_to_the_timeout_then_not_at_all(
        tmp_path: Path) -> None:
    gw = build_gateway(tmp_path, PERMISSIVE + "defaultTimeoutMs: 1000\n",
                       {"memory": MEMORY, "stuck": script_server("misbehave", "listhang")}).gateway
    await gw.start()
    try:
        s = await session(gw)
        took = []
        for i in range(7):
            started = asyncio.get_running_loop().time()
            answer = await gw.handle_request(s, {"jsonrpc": "2.0", "id": i, "method": "tools/list"})
            assert answer is not None
            took.append(asyncio.get_running_loop().time() - started)
            names = {t["name"] for t in answer["result"]["tools"]}
            assert "memory__read_graph" in names
            assert "stuck__act" in names  # its last known tools, not silently gone
        assert all(t < 3 for t in took)  # the policy's 1 s, not 30 s
        assert took[-1] < 0.5  # five failures opened its circuit: no more waiting
        assert gw.servers["stuck"].breaker.state == "open"
    finally:
        await gw.stop()


async def test_server_messages_while_only_the_gateway_itself_waits_or_for_a_closed_session(tmp_path: Path) -> None:
    from mcpwall.proxy._requests import Pending

    built = make(tmp_path, {"m": script_server("misbehave", "ok")})
    gw = built.gateway
    await gw.start()
    try:
        listener, quiet = await session(gw, "m"), await session(gw, "m")
        await gw.handle_request(listener, {"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
                                           "params": {"level": "info"}})  # forwarded, and remembered
        seen, unasked = _watch(listener), _watch(quiet)
        upstream = gw.servers["m"]
        loop = asyncio.get_running_loop()
        # The gateway's own request in flight (a list refresh): a log line is no client's, it is not dropped.
        upstream.pending[10_001] = Pending(loop.create_future(), "tools/list", None, None)
        gw.on_upstream_notification(upstream, {"jsonrpc": "2.0", "method": "notifications/message",
                                               "params": {"level": "info", "data": "server news"}}, None)
        await asyncio.sleep(0.1)
        assert any("server news" in json.dumps(m) for m in seen)
        assert not unasked  # of two sessions, only the one that asked for logs
        # A request attributed to a session that has closed goes to nobody, not to whoever is left.
        gone = Pending(loop.create_future(), "tools/call", "a-closed-session", 1)
        assert gw.traffic.target_session(upstream, gone, "sampling") is None
        assert gw.traffic.target_session(upstream, gone) is None
        upstream.pending.pop(10_001)
    finally:
        await gw.stop()


async def test_calls_refused_at_the_door_are_recorded_only_up_to_a_budget_per_peer(tmp_path: Path) -> None:
    from mcpwall.proxy._refusals import DOOR_ROWS_PER_MINUTE

    gw = make(tmp_path, {"m": script_server("misbehave", "ok")}).gateway
    recorded: list[str] = []

    class Spy(Stage):  # the last observer: sees each request whose row the ledger stage was handed
        name = "spy"

        def on_complete(self, ctx: Any) -> None:
            recorded.append(ctx.session.peer)

    gw.pipeline._complete.append(Spy())  # (the pipeline runs compiled: its methods cannot be replaced)
    for i in range(DOOR_ROWS_PER_MINUTE + 10):
        await gw.refused(call(i, "x", {}), -32003, "Unauthorized", server="m", peer="10.9.8.7")
    await gw.refused(call(1, "x", {}), -32003, "Unauthorized", server="m", peer="127.0.0.1")
    assert recorded.count("10.9.8.7") == DOOR_ROWS_PER_MINUTE  # a flood costs the ledger a bounded number of rows
    assert recorded.count("127.0.0.1") == 1  # and does not silence anyone else
    assert gw.calls["unrecorded"] == 10
