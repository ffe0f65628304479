"""What a streamable-HTTP session keeps stays small, and one principal's sessions are capped (issue 22).

Strategy: the real HTTP frontend over httpx's ASGI transport, in front of the real
@modelcontextprotocol/server-memory, with two named tokens (alice, bob). Each `initialize` kept
its whole `capabilities` object for the session's life (an hour idle): 200 of them with 3 MB of
capabilities grew the gateway by 600 MB. The test measures what the sessions keep (tracemalloc
across the 200, and the kept objects' size), not time. Sessions per principal were uncapped:
the 65th session of alice now closes her least recently used one, which then answers 404
'Session not found', while bob's are untouched. `keep_capabilities` itself is tested directly.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import orjson
import pytest
from starlette.types import ASGIApp

from mcpwall.pipeline import keep_capabilities
from mcpwall.proxy import HttpFrontend
from tests.harness import build_gateway, frontend, started
from tests.proxy.harness import MEMORY, PERMISSIVE

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

TOKENS = {"alice": "tok-alice-0123456789abcdef", "bob": "tok-bob-0123456789abcdef"}
ACCEPT = {"Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def huge_capabilities(mb: float = 3.0) -> dict[str, Any]:
    third = "x" * int(mb * 1024 * 1024 / 3)
    return {"roots": {"listChanged": True, "padding": third}, "sampling": {"tools": {"deep": [third]}},
            "elicitation": {"form": {}, "url": {}}, "experimental": {"anything": third}}


def init(caps: dict[str, Any] | None = None, info: dict[str, Any] | None = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps or {},
        "clientInfo": info or {"name": "t", "version": "1"}}})


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[HttpFrontend, httpx.AsyncClient]]:
    built = build_gateway(tmp_path, PERMISSIVE, {"memory": MEMORY}, auth=True)
    built.auth.tokens.update({token: who for who, token in TOKENS.items()})
    app = frontend(built)
    # An ASGI app by behaviour; by type its own Scope/Receive/Send (mcpwall.proxy._asgi) are dicts
    # where ASGI's are MutableMappings. httpx hands it dicts.
    async with started(built), httpx.AsyncClient(transport=httpx.ASGITransport(app=cast(ASGIApp, app)),
                                                 base_url="http://127.0.0.1", timeout=60) as client:
        yield app, client


def auth(who: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {TOKENS[who]}", "Content-Type": "application/json"}


async def open_session(client: httpx.AsyncClient, who: str, body: bytes | None = None,
                       path: str = "/mcp/memory") -> str:
    r = await client.post(path, content=body or init(), headers=auth(who))
    assert r.status_code == 200, r.text[:300]
    return r.headers["mcp-session-id"]


async def ping(client: httpx.AsyncClient, who: str, sid: str, path: str = "/mcp/memory") -> int:
    r = await client.post(path, json=PING, headers={**auth(who), "Mcp-Session-Id": sid})
    return r.status_code


def test_only_the_capabilities_the_gateway_reads_are_kept_and_their_flags_flattened() -> None:
    kept = keep_capabilities(huge_capabilities(0.3))
    assert kept == {"roots": {"listChanged": True}, "sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}}
    assert keep_capabilities({"elicitation": {}, "roots": {"listChanged": False}, "sampling": None}) == {
        "elicitation": {}, "roots": {}}
    assert keep_capabilities({"roots": "yes", "sampling": False, "elicitation": {"form": False}}) == {
        "roots": {}, "elicitation": {}}
    junk: Any
    for junk in (None, [], "caps", 7, {"experimental": {"x": 1}, "tasks": {"list": {}}}):
        assert keep_capabilities(junk) == {}


async def test_200_initializes_with_3_mb_of_capabilities_keep_a_few_kilobytes_issue_22(
        served: tuple[HttpFrontend, httpx.AsyncClient]) -> None:
    frontend, client = served
    body = init(huge_capabilities(3.0))
    assert len(body) > 3_000_000
    await open_session(client, "alice", init())  # the first session's one-time allocations
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sids = [await open_session(client, who, body, path)
                for who in ("alice", "bob") for path in ("/mcp/memory", "/mcp") for _ in range(50)]
        for _ in range(100):  # what is only in flight (the ledger writer's queue) drains
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
            if grown < 20 * 1024 * 1024:
                break
            await anyio.sleep(0.1)
    finally:
        tracemalloc.stop()
    assert grown < 20 * 1024 * 1024, f"the gateway grew by {grown / 2**20:.1f} MiB over 200 initializes"
    sessions = [frontend.gateway.sessions[sid] for sid in sids if sid in frontend.gateway.sessions]
    kept = sum(len(orjson.dumps(s.capabilities)) for s in sessions)
    assert kept < 128 * 100, kept
    assert len(sessions) == 128  # 64 per principal (the cap below)
    assert all(s.supports("roots") and s.supports("elicitation") for s in sessions)
    assert await ping(client, "alice", sids[99], "/mcp") == 200


async def test_a_huge_client_info_keeps_only_a_short_name_and_version(
        served: tuple[HttpFrontend, httpx.AsyncClient]) -> None:
    frontend, client = served
    sid = await open_session(client, "alice", init(info={"name": "n" * 1_000_000, "version": "v" * 1_000_000,
                                                         "title": "t" * 1_000_000}))
    session = frontend.gateway.sessions[sid]
    assert len(session.client_name) <= 200
    assert len(session.client_version) <= 100


async def test_the_65th_session_of_a_principal_closes_its_least_recently_used_one_and_no_other_issue_22(
        served: tuple[HttpFrontend, httpx.AsyncClient]) -> None:
    frontend, client = served
    bobs = [await open_session(client, "bob") for _ in range(3)]
    alices = [await open_session(client, "alice", path="/mcp" if i % 2 else "/mcp/memory") for i in range(64)]
    path = ["/mcp/memory", "/mcp"]
    assert await ping(client, "alice", alices[0], path[0]) == 200  # now alices[1] is the least recently used
    newest = await open_session(client, "alice")
    r = await client.post("/mcp", json=PING, headers={**auth("alice"), "Mcp-Session-Id": alices[1]})
    assert r.status_code == 404
    assert r.json()["error"]["message"] == "Session not found"
    assert alices[1] not in frontend.gateway.sessions
    for i, sid in enumerate(alices):
        if i != 1:
            assert await ping(client, "alice", sid, path[i % 2]) == 200, i
    assert await ping(client, "alice", newest) == 200
    for sid in bobs:
        assert await ping(client, "bob", sid) == 200
    assert sum(1 for s in frontend.gateway.sessions.values() if s.principal == "alice") == 64
    # bob's own cap is his: 64 more of his close only his
    more = [await open_session(client, "bob") for _ in range(64)]
    assert [await ping(client, "bob", sid) for sid in bobs] == [404, 404, 404]
    assert await ping(client, "bob", more[0]) == 200
    assert await ping(client, "alice", newest) == 200
