"""A tools/call refused before it reaches the pipeline still gets its one ledger row (SPEC 5).

Strategy: a real gateway process (SQLite ledger in its home) in front of
server-everything; tools/call requests that are refused at the door (no
token, an unknown server, a bad envelope, a batch, no session on /mcp) are
sent over HTTP, then the ledger is read back: one `tool_calls` row per call,
`rejected`, with its id, server and tool, and the chain still verifies.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpwall.ledger import LedgerQuery, open_ledger
from tests.proxy.harness import EVERYTHING, GatewayProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    g = GatewayProcess(tmp_path_factory.mktemp("gw-refused"), {"everything": EVERYTHING}).start()
    yield g
    g.stop()


def call(rid: Any, name: str = "echo", params: Any = None, jsonrpc: str = "2.0") -> dict[str, Any]:
    return {"jsonrpc": jsonrpc, "id": rid, "method": "tools/call",
            "params": params if params is not None else {"name": name, "arguments": {"message": "hi"}}}


def rows(gw: GatewayProcess, expected: int) -> dict[Any, dict[str, Any]]:
    """The ledger's tool_calls rows by request id, once `expected` rows are there; each id at most once."""
    deadline = time.monotonic() + 10
    while True:
        with open_ledger(gw.home, None, create=False) as ledger:
            listed = list(ledger.iter_rows(LedgerQuery(order="asc", limit=200)))
            ok = ledger.verify().ok
        if len(listed) >= expected or time.monotonic() > deadline:
            assert ok
            counts = Counter(r["request_id"] for r in listed)
            assert all(n == 1 for n in counts.values()), counts  # exactly one row per call
            return {r["request_id"]: r for r in listed}
        time.sleep(0.2)


def test_calls_refused_at_the_door_each_leave_one_row(gw: GatewayProcess) -> None:
    auth = {**gw.headers, "Content-Type": "application/json"}
    r = httpx.post(f"{gw.url}/nosuch", json=call(13), headers=auth)
    assert r.status_code == 404
    assert r.json()["id"] == 13  # answered under the request's id
    assert httpx.post(f"{gw.url}/everything", json=call(14)).status_code == 401  # no token
    assert httpx.post(f"{gw.url}/mcp", json=call(15, "everything__echo"),
                      headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert "error" in httpx.post(f"{gw.url}/everything", json=call(16, params=["not", "an", "object"]),
                                 headers=auth).json()
    assert "error" in httpx.post(f"{gw.url}/everything", json=call(17, jsonrpc="1.0"), headers=auth).json()
    assert httpx.post(f"{gw.url}/everything", json=[call(18), call(19)], headers=auth).status_code == 400
    no_session = httpx.post(f"{gw.url}/mcp", json=call(20, "everything__echo"),
                            headers={**auth, "Accept": "application/json, text/event-stream"})
    assert no_session.status_code == 400
    assert httpx.post(f"{gw.url}/everything", json=call(21), headers=auth).json()["result"]  # a good one
    assert httpx.post(f"{gw.url}/", json=call(22)).status_code == 401  # no path, no token: refused, no row
    assert httpx.post(f"{gw.url}/everything", json=call(23), headers={**auth, "Host": "evil.example"}
                      ).status_code == 403  # rebinding guard: recorded too
    assert httpx.post(f"{gw.url}/everything", json=[call(24), call(25)]).status_code == 401  # no batch at the door

    found = rows(gw, 10)
    assert set(found) == set(range(13, 22)) | {23}
    for rid in [*range(13, 21), 23]:
        row = found[rid]
        assert row["outcome"] == "rejected", row
        assert row["method"] == "tools/call"
        assert row["tool_name"] == (None if rid == 16 else "echo")  # 16's params are not an object
    assert found[13]["server_name"] is None  # not a configured server: in the notes, not a metrics label
    assert found[13]["notes"]["unknown_server"] == "nosuch"
    assert found[15]["server_name"] == "everything"  # from the aggregated name
    assert "nauthorized" in (found[14]["error_message"] or "")
    assert found[21]["outcome"] == "ok"
