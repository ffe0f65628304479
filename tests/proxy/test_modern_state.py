"""Security state without protocol sessions (issue 24, item 6): a 2026-07-28 client cannot shed it.

Strategy: one gateway served over HTTP (tests.harness, bearer token) in front of the npm
filesystem server on a workspace holding AWS keys and the small web server of tests/stages
(fetch returns a page with instructions aimed at the agent; http_request records what it is
sent). A modern client is raw POSTs of 2026-07-28 requests (no initialize, no Mcp-Session-Id),
so that each can say what an adversarial client would: another `clientInfo` on every call, a
`traceparent` dropped, forged or changed, another endpoint (`/mcp`, `/mcp/fs`, `/mcp/web`), an
`Mcp-Session-Id` of its own. Untrusted content, then private data, then an outbound send must
still be a toxic flow, and the rate window must still count every call. Each test is its own
agent (X-Agent-Id, what a client with the gateway's token is told apart by), so the tests share
one gateway without sharing a history.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import build_gateway, serve_http, token
from tests.stages.helpers import BIN, filesystem, web

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120),
              pytest.mark.skipif(not (BIN / "mcp-server-filesystem").exists(), reason="npm servers not installed")]

MODERN = "2026-07-28"
AWS_ID = "AKIAQX4PZ7T2LMNB3KQR"
POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules: []
stages:
  ratelimit: {requestsPerMinute: %d}
"""
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def _gateway(tmp_path: Path, per_minute: int = 0) -> AsyncIterator[dict[str, Any]]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "config.txt").write_text(f"[default]\naws_access_key_id = {AWS_ID}\n")
    built = build_gateway(tmp_path / "home", POLICY % per_minute,
                          {"fs": filesystem(root), "web": web(tmp_path / "requests.log")}, auth=True)
    async with serve_http(built) as base:
        for upstream in built.gateway.servers.values():
            assert await upstream.wait_ready(60), upstream.last_error
        yield {"url": base, "token": token(built), "root": root, "log": tmp_path / "requests.log"}


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    async for g in _gateway(tmp_path_factory.mktemp("state")):
        yield g


@pytest.fixture
async def limited(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    async for g in _gateway(tmp_path, per_minute=5):
        yield g


async def modern_call(gw: dict[str, Any], path: str, tool: str, arguments: dict[str, Any], *, client: str,
                      traceparent: str | None = None, extra_headers: dict[str, str] | None = None) -> httpx.Response:
    """One 2026-07-28 tools/call, as a client that names itself `client` would send it."""
    meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                            "io.modelcontextprotocol/clientCapabilities": {},
                            "io.modelcontextprotocol/clientInfo": {"name": client, "version": str(next(_ids))}}
    if traceparent is not None:
        meta["traceparent"] = traceparent
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}
    headers = {"Authorization": f"Bearer {gw['token']}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": tool, **(extra_headers or {})}
    async with httpx.AsyncClient(timeout=30.0) as http:
        return await http.post(f"{gw['url']}{path}", content=json.dumps(body).encode(), headers=headers)


def _answer(r: httpx.Response) -> dict[str, Any]:
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
        return next(f for f in frames if "id" in f)
    return dict(r.json())


TRACE_A = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE_B = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#: (endpoint, tool name there) for each step: the aggregated endpoint, or the owning server's
ROUTES = {
    "aggregated": {"fetch": ("/mcp", "web__fetch"), "read": ("/mcp", "fs__read_text_file"),
                   "send": ("/mcp", "web__http_request")},
    "per-server": {"fetch": ("/mcp/web", "fetch"), "read": ("/mcp/fs", "read_text_file"),
                   "send": ("/mcp/web", "http_request")},
    "mixed": {"fetch": ("/mcp/web", "fetch"), "read": ("/mcp", "fs__read_text_file"),
              "send": ("/mcp/web", "http_request")},
}
#: how the client dresses each of its three calls: (clientInfo name, traceparent, extra headers)
DISGUISES: dict[str, list[tuple[str, str | None, dict[str, str]]]] = {
    "rotating clientInfo": [("claude-code", TRACE_A, {}), ("cursor", TRACE_A, {}), ("innocent-ide", TRACE_A, {})],
    "traceparent dropped then forged": [("agent", TRACE_A, {}), ("agent", None, {}), ("agent", TRACE_B, {})],
    "everything rotated": [("a", None, {"Mcp-Session-Id": "s1"}), ("b", TRACE_A, {"Mcp-Session-Id": "s2"}),
                           ("c", "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01", {})],
    "clientInfo in another script": [("\u0441laude", TRACE_A, {}), ("CLAUDE", TRACE_B, {}), ("", None, {})],
}


@pytest.mark.parametrize("routes", sorted(ROUTES))
@pytest.mark.parametrize("disguise", sorted(DISGUISES))
async def test_a_modern_client_that_renames_itself_keeps_its_toxic_flow_history(
        gw: dict[str, Any], routes: str, disguise: str) -> None:
    route, dress = ROUTES[routes], DISGUISES[disguise]
    agent = {"X-Agent-Id": f"bot-{routes}-{disguise}"}  # one history a test on the shared gateway
    steps = [("fetch", {"url": "https://docs.example/evil-page"}),
             ("read", {"path": str(gw["root"] / "config.txt")}),
             ("send", {"url": "https://api.example/b", "body": "nothing secret"})]
    answers = []
    for (step, args), (name, trace, extra) in zip(steps, dress, strict=True):
        path, tool = route[step]
        answers.append(_answer(await modern_call(gw, path, tool, args, client=name, traceparent=trace,
                                                 extra_headers={**agent, **extra})))
    assert "result" in answers[0], answers[0]
    assert "result" in answers[1], answers[1]
    denied = answers[2]
    assert denied["error"]["code"] == -32001, denied
    assert "toxic flow" in denied["error"]["message"]
    assert "read_text_file" in denied["error"]["message"]  # the read made under another name and endpoint
    assert not gw["log"].exists() or "/b" not in gw["log"].read_text()


async def test_a_modern_client_that_renames_itself_keeps_its_rate_window(limited: dict[str, Any]) -> None:
    codes = []
    for i, (name, trace) in enumerate(itertools.islice(
            itertools.cycle([("a", TRACE_A), ("b", None), ("c", TRACE_B)]), 8)):
        path, tool = ("/mcp/fs", "list_allowed_directories") if i % 2 else ("/mcp", "fs__list_allowed_directories")
        r = await modern_call(limited, path, tool, {}, client=f"{name}-{i}", traceparent=trace)
        codes.append(r.status_code)
    assert codes == [200] * 5 + [429] * 3, codes
