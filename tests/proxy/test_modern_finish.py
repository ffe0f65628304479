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


def test_a_modern_servers_result_reaches_a_modern_client_with_the_gateways_stamp_and_a_legacy_one_plain() -> None:
    from typing import Any

    from mcpwall.proxy._upstream_modern import incoming

    def answer() -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 3, "result": {
            "content": [], "resultType": "complete", "_meta": {SERVER_INFO_META_KEY: {"name": "srv"}, "trace": "t"}}}

    upstream: Any = None  # (a tools/call's answer is not read against the server's catalog)
    passed = incoming(upstream, "tools/call", answer())
    # what the response stages scan and a legacy client reads: the server's words, not its stamp
    assert passed["result"] == {"content": [], "_meta": {"trace": "t"}}
    out = finish("tools/call", {"jsonrpc": "2.0", "id": 3, "result": passed["result"]})
    # the server's identity never reaches the client: the gateway answers
    assert out["result"] == {"content": [], "resultType": "complete",
                             "_meta": {"trace": "t", SERVER_INFO_META_KEY: SERVER_INFO}}
    said = incoming(upstream, "tools/call", {"id": 4, "result": {"resultType": "task", "task": {"taskId": "t1"}}})
    assert said["result"] == {"resultType": "task", "task": {"taskId": "t1"}}  # only "complete" is implied
