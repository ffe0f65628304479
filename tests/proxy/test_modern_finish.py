"""`protocol.modern.finish`: a modern request's result as 2026-07-28 shapes it, the server's own words kept."""

from __future__ import annotations

from mcpwall.protocol.modern import SERVER_INFO, SERVER_INFO_META_KEY, finish


def test_a_result_is_stamped_and_completed_keeping_what_the_server_said() -> None:
    body = {"content": [], "_meta": {"trace": "t"}}
    out = finish("tools/call", {"jsonrpc": "2.0", "id": 1, "result": body})
    assert out == {"jsonrpc": "2.0", "id": 1, "result": {
        "content": [], "resultType": "complete", "_meta": {"trace": "t", SERVER_INFO_META_KEY: SERVER_INFO}}}
    assert body == {"content": [], "_meta": {"trace": "t"}}  # the server's answer is not changed in place
    said = finish("tools/call", {"id": 1, "result": {"resultType": "input_required", "_meta": None}})["result"]
    assert said == {"resultType": "input_required", "_meta": {SERVER_INFO_META_KEY: SERVER_INFO}}
    assert finish("tools/call", {"id": 1, "result": {"resultType": None}})["result"]["resultType"] is None


def test_a_cacheable_result_is_private_with_a_valid_ttl() -> None:
    for ttl, kept in ((5, 5), (-1, 0), (True, 0), ("9", 0)):
        out = finish("tools/list", {"id": 1, "result": {"tools": [], "ttlMs": ttl}})["result"]
        assert (out["ttlMs"], out["cacheScope"], out["resultType"]) == (kept, "private", "complete")
