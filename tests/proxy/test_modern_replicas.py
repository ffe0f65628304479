"""Replicas without sticky sessions (issue 24, item 7): one client's modern requests spread over
three gateways behind nginx keep one rate window, one toxic-flow history and one approval book.

Strategy: a real redis-server (tests/shared/redis_server.py), three real `mcpwall proxy`
processes on it (`--state redis://...`), each with its own home and its own SQLite ledger (as
tests/shared/test_replicas.py runs them; the replicas' ledgers are not shared), one bearer token
for all (`MCPWALL_TOKEN`), and Debian's nginx in front (tests/shared/nginx_server.py: round-robin,
no affinity). The upstreams are the npm filesystem server on a workspace holding an AWS key and
the small web server of tests/stages. The client is raw 2026-07-28 POSTs to nginx
(tests/proxy/test_modern_state.py's `modern_call`), renaming itself on every call. Each
replica's `/health` says how many calls it served, so each test shows that its calls did land on
different replicas, and what one replica learnt held on the next.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.harness import GatewayProcess
from tests.proxy.test_modern_state import _answer, modern_call
from tests.shared.nginx_server import NginxServer
from tests.shared.redis_server import RedisServer
from tests.stages.helpers import filesystem, web

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]

AWS_ID = "AKIAQX4PZ7T2LMNB3KQR"
PER_MINUTE = 12
POLICY = f"""\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: ask-file-info
    description: File metadata needs a person's approval
    tools: [get_file_info]
    action: ask
    timeoutMs: 30000
stages:
  ratelimit: {{requestsPerMinute: {PER_MINUTE}}}
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, Any]]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "config.txt").write_text(f"[default]\naws_access_key_id = {AWS_ID}\n")
    (root / "notes.md").write_text("ship on Friday\n")
    servers = {"fs": filesystem(root), "web": web(tmp_path / "requests.log")}
    redis = RedisServer(tmp_path).start()
    secret = secrets.token_urlsafe(32)
    replicas = [GatewayProcess(tmp_path / f"replica-{i}", servers, POLICY, env={"MCPWALL_TOKEN": secret})
                for i in range(3)]
    nginx = NginxServer(tmp_path / "nginx", [r.port for r in replicas])
    for r in replicas:
        r.extra = ["--state", redis.url, "--allow-host", f"127.0.0.1:{nginx.port}"]
    try:
        for r in replicas:
            r.start()
        nginx.start()
        yield {"url": nginx.url, "token": secret, "root": root, "replicas": replicas,
               "log": tmp_path / "requests.log"}
    finally:
        nginx.stop()
        for r in replicas:
            r.stop()
        redis.stop()


def served(cluster: dict[str, Any]) -> list[int]:
    """How many tools/call requests each replica has ended, in replica order."""
    headers = {"Authorization": f"Bearer {cluster['token']}"}
    return [httpx.get(f"{r.url}/health", headers=headers, timeout=10).json()["calls"]["processed"]
            for r in cluster["replicas"]]


async def test_a_rate_limit_trips_at_its_count_across_the_replicas(cluster: dict[str, Any]) -> None:
    codes = []
    for i in range(PER_MINUTE + 6):
        r = await modern_call(cluster, "/mcp", "fs__list_allowed_directories", {}, client=f"renamed-{i}")
        codes.append(r.status_code)
    assert codes == [200] * PER_MINUTE + [429] * 6, codes  # 12 in all, not 12 on each of three
    assert all(n >= 3 for n in served(cluster))  # every replica took its share


async def test_a_read_on_one_replica_makes_a_send_on_another_a_toxic_flow(cluster: dict[str, Any]) -> None:
    before = served(cluster)
    steps = [("/mcp/web", "fetch", {"url": "https://docs.example/evil-page"}),
             ("/mcp/fs", "read_text_file", {"path": str(cluster["root"] / "config.txt")}),
             ("/mcp", "web__http_request", {"url": "https://api.example/b", "body": "nothing secret"})]
    answers = [_answer(await modern_call(cluster, path, tool, args, client=f"client-{n}"))
               for n, (path, tool, args) in enumerate(steps)]
    after = served(cluster)
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]  # one call on each replica
    assert "result" in answers[0], answers[0]
    assert "result" in answers[1], answers[1]
    assert answers[2]["error"]["code"] == -32001, answers[2]
    assert "toxic flow" in answers[2]["error"]["message"]
    assert "read_text_file" in answers[2]["error"]["message"]  # learnt on another replica
    assert not cluster["log"].exists() or "/b" not in cluster["log"].read_text()


async def _pending(cluster: dict[str, Any], via: GatewayProcess) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {cluster['token']}"}
    async with httpx.AsyncClient(base_url=via.url, headers=headers, timeout=10) as http:
        for _ in range(200):
            rows = (await http.get("/api/approvals")).json()
            if rows:
                return dict(rows[0])
            await asyncio.sleep(0.1)
    raise AssertionError("no ask became pending")


async def _approve(cluster: dict[str, Any], via: GatewayProcess, approval_id: str, **body: Any) -> None:
    headers = {"Authorization": f"Bearer {cluster['token']}"}
    async with httpx.AsyncClient(base_url=via.url, headers=headers, timeout=10) as http:
        answer = await http.post(f"/api/approvals/{approval_id}/approve", json=body)
    assert answer.status_code == 200, answer.text


async def test_an_ask_held_on_one_replica_is_approved_through_another_and_its_grant_holds_on_all(
        cluster: dict[str, Any]) -> None:
    replicas: list[GatewayProcess] = cluster["replicas"]
    args = {"path": str(cluster["root"] / "notes.md")}

    async def ask() -> dict[str, Any]:
        return _answer(await modern_call(cluster, "/mcp", "fs__get_file_info", args, client="asker"))

    before = served(cluster)
    held = asyncio.ensure_future(ask())
    record = await _pending(cluster, replicas[2])  # every replica reads the one book
    pid = int(str(record.get("replica", ":0")).rpartition(":")[2] or 0)
    holder = next((i for i, r in enumerate(replicas) if r.proc is not None and r.proc.pid == pid), None)
    assert holder is not None, record
    other = replicas[(holder + 1) % 3]
    await _approve(cluster, other, record["id"], similar_minutes=5)
    released = await asyncio.wait_for(held, 20)
    assert "result" in released, released
    # the retry, wherever nginx sends it, passes on the shared "approve similar" grant
    for _ in range(3):
        again = await asyncio.wait_for(ask(), 20)
        assert "result" in again, again
    assert [a - b for a, b in zip(served(cluster), before, strict=True)].count(0) == 0
