"""Sessions of seatbelt's plain route (`POST /{server}`) stay bounded.

The route keeps one session per server, agent and client name, all three
chosen by the client's headers: a client that sends a new X-Mcpwall-Client
with every call must not grow the gateway, and a session idle for an hour
goes like a streamable-HTTP one. Strategy: the real HTTP frontend over
httpx's ASGI transport, in front of the npm `everything` server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from starlette.types import ASGIApp

from mcpwall.proxy import HttpFrontend, _http
from tests.harness import build_gateway, frontend, started
from tests.proxy.harness import EVERYTHING, PERMISSIVE

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def _call(rid: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": message}}}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[HttpFrontend, httpx.AsyncClient]]:
    built = build_gateway(tmp_path, PERMISSIVE, {"everything": EVERYTHING})
    app = frontend(built)
    # An ASGI app by behaviour; by type its own Scope/Receive/Send (mcpwall.proxy._asgi) are dicts
    # where ASGI's are MutableMappings. httpx hands it dicts.
    async with started(built), httpx.AsyncClient(transport=httpx.ASGITransport(app=cast(ASGIApp, app)),
                                                 base_url="http://127.0.0.1:9420") as client:
        yield app, client


def _plain(frontend: HttpFrontend) -> list[Any]:
    return [s for s in frontend.gateway.sessions.values() if s.kind == "plain"]


async def test_new_client_names_on_every_call_do_not_grow_the_gateway(
        served: tuple[HttpFrontend, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch) -> None:
    frontend, client = served
    monkeypatch.setattr(_http, "PLAIN_SESSIONS", 20)
    for i in range(75):
        r = await client.post("/everything", json=_call(i, f"m{i}"), headers={"X-Mcpwall-Client": f"client-{i}"})
        assert r.json()["result"]["content"][0]["text"] == f"Echo: m{i}"
    assert len(_plain(frontend)) <= 20
    assert all(not s.closed for s in _plain(frontend))
    # A client that keeps calling keeps its session while one-off names come and go.
    steady: list[Any] = []
    for i in range(60):
        await client.post("/everything", json=_call(i, "x"), headers={"X-Mcpwall-Client": f"once-{i}"})
        assert "result" in (await client.post("/everything", json=_call(i, "s"),
                                              headers={"X-Mcpwall-Client": "steady"})).json()
        now = [s for s in _plain(frontend) if s.client_name == "steady"]
        assert len(now) == 1
        assert steady in ([], now)
        steady = now
    assert len(_plain(frontend)) <= 20


async def test_a_session_with_a_call_in_flight_is_not_closed_to_make_room(
        served: tuple[HttpFrontend, httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch) -> None:
    frontend, client = served
    monkeypatch.setattr(_http, "PLAIN_SESSIONS", 3)
    slow = asyncio.create_task(client.post("/everything", headers={"X-Mcpwall-Client": "slow"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 2}}}))
    for _ in range(100):
        if any(s.client_name == "slow" and s.inflight for s in _plain(frontend)):
            break
        await asyncio.sleep(0.02)
    for i in range(10):
        assert "result" in (await client.post("/everything", json=_call(i, "x"),
                                              headers={"X-Mcpwall-Client": f"c{i}"})).json()
    answer = (await slow).json()
    assert "result" in answer, answer
    assert [s.client_name for s in _plain(frontend) if s.client_name == "slow"] == ["slow"]


async def test_idle_plain_sessions_expire_like_streamable_http_ones(
        served: tuple[HttpFrontend, httpx.AsyncClient]) -> None:
    frontend, client = served
    for name in ("old", "recent"):
        await client.post("/everything", json=_call(1, name), headers={"X-Mcpwall-Client": name})
    old = next(s for s in _plain(frontend) if s.client_name == "old")
    old.last_seen = time.monotonic() - _http.SESSION_IDLE_S - 1
    frontend.expire_idle(time.monotonic() - _http.SESSION_IDLE_S)
    assert old.closed
    assert [s.client_name for s in _plain(frontend)] == ["recent"]
    again = await client.post("/everything", json=_call(2, "back"), headers={"X-Mcpwall-Client": "old"})
    assert again.json()["result"]["content"][0]["text"] == "Echo: back"
    assert sorted(s.client_name for s in _plain(frontend)) == ["old", "recent"]
