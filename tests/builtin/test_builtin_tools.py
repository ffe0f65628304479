"""The built-in tools server: fetch_http, grep_http, http_headers and echo against a real web server.

Strategy: a real HTTP server on 127.0.0.1 (tests/builtin/web.py) and the real tools server,
driven by the official MCP client in-process (`Client(server)`) and, once, as the real
`mcpwall builtin` process behind a real gateway, where the tools are `local__*`. The policy
file's allowlist names 127.0.0.1 on purpose (private addresses are refused otherwise). Caps:
a 5 MB body is cut at max_bytes, a 5 s answer hits the time cap, redirects are re-checked.
format=json results must be parseable by json.loads, errors included.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcpwall.builtin import create_server
from tests.builtin.web import web_server
from tests.relay.helpers import FrameClient, builtin, framed_gateway, text_of

pytestmark = pytest.mark.anyio

ALLOW_LOOPBACK = """\
version: "1"
allowlist:
  hosts: ["127.0.0.1"]
"""


def _policy(tmp_path: Path, text: str = ALLOW_LOOPBACK) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def _call(client: Client, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
    result = await client.call_tool(tool, args)
    return result.content[0].text, bool(result.is_error)  # type: ignore[union-attr]


async def test_echo_returns_its_text_unchanged(tmp_path: Path) -> None:
    async with Client(create_server(None)) as client:
        assert await _call(client, "echo", {"text": "probe ✓"}) == ("probe ✓", False)
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"echo", "fetch_http", "grep_http", "http_headers"}


async def test_fetch_http_in_json_format_returns_only_parseable_json(tmp_path: Path) -> None:
    with web_server() as (base, seen):
        async with Client(create_server(_policy(tmp_path))) as client:
            text, failed = await _call(client, "fetch_http", {"url": f"{base}/data.json", "format": "json"})
            assert not failed
            doc = json.loads(text)  # nothing prepended
            assert doc["status"] == 200
            assert json.loads(doc["body"]) == {"items": [1, 2, 3]}
            assert doc["truncated"] is False
            text, _ = await _call(client, "fetch_http", {"url": f"{base}/hello"})
            assert text.startswith("HTTP 200")
            assert text.endswith("hello from the test server")
    assert seen[0][2] == base.removeprefix("http://")  # the Host header is the URL's


async def test_refusals_in_json_format_are_parseable_json_too(tmp_path: Path) -> None:
    async with Client(create_server(_policy(tmp_path))) as client:
        for tool in ("fetch_http", "http_headers"):
            text, failed = await _call(client, tool, {"url": "http://169.254.169.254/latest/", "format": "json"})
            assert failed
            assert json.loads(text)["kind"] == "refused"
        text, failed = await _call(client, "grep_http", {"url": "http://localhost/", "pattern": "x", "format": "json"})
        assert failed
        assert "allowlist" in json.loads(text)["error"]


async def test_a_large_body_is_cut_at_max_bytes(tmp_path: Path) -> None:
    with web_server() as (base, _):
        async with Client(create_server(_policy(tmp_path))) as client:
            text, _ = await _call(client, "fetch_http", {"url": f"{base}/big", "format": "json", "max_bytes": 10_000})
            doc = json.loads(text)
            assert doc["truncated"] is True
            assert doc["bytes"] == 10_000
            text, _ = await _call(client, "fetch_http", {"url": f"{base}/big", "format": "json",
                                                          "max_bytes": 50_000_000})
            assert json.loads(text)["bytes"] == 1024 * 1024  # the hard cap


async def test_a_slow_server_hits_the_time_cap(tmp_path: Path) -> None:
    with web_server() as (base, _):
        async with Client(create_server(_policy(tmp_path))) as client:
            started = time.monotonic()
            text, failed = await _call(client, "fetch_http", {"url": f"{base}/slow", "format": "json",
                                                              "timeout_s": 0.5})
            assert failed
            assert "0.5 s" in json.loads(text)["error"]
            assert time.monotonic() - started < 4


async def test_a_redirect_is_checked_again_before_it_is_followed(tmp_path: Path) -> None:
    with web_server() as (base, seen):
        async with Client(create_server(_policy(tmp_path))) as client:
            ok, _ = await _call(client, "fetch_http", {"url": f"{base}/redirect?to=/hello", "format": "json"})
            assert json.loads(ok)["body"] == "hello from the test server"
            for target in ("http://169.254.169.254/latest/meta-data/", "http://localhost/hello",
                           "http://[::1]/", "file:///etc/passwd"):
                text, failed = await _call(client, "fetch_http", {"url": f"{base}/redirect?to={target}",
                                                                  "format": "json"})
                assert failed, target
                assert json.loads(text)["kind"] == "refused"
    assert not any("meta-data" in path and host != base.removeprefix("http://") for _, path, host in seen)


async def test_grep_http_returns_matching_lines_with_their_numbers(tmp_path: Path) -> None:
    with web_server() as (base, _):
        async with Client(create_server(_policy(tmp_path))) as client:
            text, _ = await _call(client, "grep_http", {"url": f"{base}/lines", "pattern": "^alpha",
                                                       "ignore_case": True, "format": "json"})
            assert [m["line"] for m in json.loads(text)["matches"]] == [1, 3]
            text, _ = await _call(client, "grep_http", {"url": f"{base}/lines", "pattern": "two|four"})
            assert text == "2: beta two\n4: gamma four"
            text, failed = await _call(client, "grep_http", {"url": f"{base}/lines", "pattern": "(", "format": "json"})
            assert failed
            assert "invalid pattern" in json.loads(text)["error"]


async def test_http_headers_returns_the_status_and_headers(tmp_path: Path) -> None:
    with web_server() as (base, seen):
        async with Client(create_server(_policy(tmp_path))) as client:
            text, _ = await _call(client, "http_headers", {"url": f"{base}/hello", "format": "json"})
            doc = json.loads(text)
            assert doc["status"] == 200
            assert doc["headers"]["x-test-server"] == "mcpwall"
    assert seen[-1][0] == "HEAD"


async def test_the_allowlist_is_reread_when_the_policy_file_changes(tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'version: "1"\n')
    with web_server() as (base, _):
        async with Client(create_server(policy)) as client:
            _, failed = await _call(client, "fetch_http", {"url": f"{base}/hello"})
            assert failed  # 127.0.0.1 is private and not listed
            policy.write_text(ALLOW_LOOPBACK + "\n# edited\n", encoding="utf-8")
            _, failed = await _call(client, "fetch_http", {"url": f"{base}/hello"})
            assert not failed
            policy.write_text("version: [broken", encoding="utf-8")
            text, failed = await _call(client, "fetch_http", {"url": f"{base}/hello", "format": "json"})
            assert failed
            assert "invalid" in json.loads(text)["error"]  # fail closed


@pytest.mark.integration
async def test_through_the_gateway_the_builtin_tools_are_local_tools(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    with web_server() as (base, _):
        async with framed_gateway(tmp_path / "gw", {"local": builtin(policy)}) as gw:
            c = await FrameClient.open(gw.socket, "builtin-test")
            await c.initialize()
            assert text_of(await c.call("local__echo", {"text": "hi"})) == "hi"
            answer = await c.call("local__fetch_http", {"url": f"{base}/data.json", "format": "json"})
            if "error" in answer:  # a defence stage may refuse a loopback URL: that is the gateway's call
                assert answer["error"]["code"] == -32001
            else:
                assert json.loads(text_of(answer))["status"] == 200
            await c.close()
