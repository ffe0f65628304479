"""Configured roots and the client notifications a shared server may hear (issue 22, class 2).

Strategy: `root_uris` and `spec_from_entry` are called directly with every spelling of a root
the configuration may hold; then an in-process gateway in front of
tests/proxy/servers/misbehave.py (which logs every notification it receives) shows which of a
client's notifications reach the server: progress does, roots/list_changed and unknown ones do
not, and the dropped list_changed is a ledger row.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mcpwall.errors import ConfigError
from mcpwall.proxy._server_messages import ROWS_PER_MINUTE, root_uris
from mcpwall.proxy._servers import spec_from_entry
from tests.harness import build_gateway
from tests.proxy.harness import PERMISSIVE, script_server


def test_configured_roots_become_file_uris() -> None:
    home = Path.home()
    assert root_uris("fs", ["/srv/work", "/srv/with space", "~/proj", "file:///data", "file://localhost/x",
                            "FILE:///upper"]) == [
        "file:///srv/work", "file:///srv/with%20space", (home / "proj").as_uri(), "file:///data", "file:///x",
        "file:///upper"]
    assert root_uris("fs", None) == []
    assert root_uris("fs", []) == []


@pytest.mark.parametrize("root", ["relative/dir", ".", "", "https://example.com/", "file://evil.example/etc",
                                  "file:relative", "smb://host/share"])
def test_a_root_that_is_not_an_absolute_local_directory_is_refused(root: str) -> None:
    with pytest.raises(ConfigError, match="root"):
        root_uris("fs", [root])


def test_a_servers_file_entry_may_configure_roots_as_a_list_of_strings() -> None:
    spec = spec_from_entry("fs", {"command": "x", "roots": ["/srv"]}, "servers.json")
    assert spec.roots == ["/srv"]
    assert spec_from_entry("fs", {"command": "x"}, "servers.json").roots is None
    for bad in ("/srv", [1], {"a": "/srv"}):
        with pytest.raises(ConfigError, match="roots"):
            spec_from_entry("fs", {"command": "x", "roots": bad}, "servers.json")


def test_a_gateway_with_an_unusable_root_does_not_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not an absolute path"):
        build_gateway(tmp_path, PERMISSIVE, {"m": {**script_server("misbehave", "ok"), "roots": ["ws"]}})


@pytest.mark.anyio
@pytest.mark.integration
async def test_only_progress_of_a_clients_notifications_reaches_a_shared_server(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path, PERMISSIVE, {"m": script_server("misbehave", "ok", str(tmp_path))}).gateway
    await gw.start()
    try:
        s = gw.open_session("stdio", "m")
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": True}},
                           "clientInfo": {"name": "t", "version": "1"}}}
        answer = await gw.handle_request(s, init)
        assert answer is not None
        assert "result" in answer
        for method in ("notifications/initialized", "notifications/roots/list_changed", "notifications/whatever",
                       "notifications/progress"):
            await gw.handle(s, {"jsonrpc": "2.0", "method": method, "params": {"progressToken": "t", "progress": 1}})
        log = tmp_path / "notifications.log"
        for _ in range(50):
            if log.exists() and "notifications/progress" in log.read_text():
                break
            await asyncio.sleep(0.1)
        heard = [json.loads(line)["method"] for line in log.read_text().splitlines()]
        assert heard == ["notifications/initialized", "notifications/progress"], heard
        assert gw.messages.counts["roots_changes_dropped"] == 1
        # Repeated, they are all dropped, and the ledger is spared past ROWS_PER_MINUTE.
        for _ in range(ROWS_PER_MINUTE + 5):
            await gw.handle(s, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        assert gw.messages.counts["unrecorded"] == 6  # the first one above counted against the minute too
        # The same notification sent as a request (with an id) is refused by the gateway, not forwarded.
        answer = await gw.handle_request(s, {"jsonrpc": "2.0", "id": 9, "method": "notifications/roots/list_changed"})
        assert answer is not None
        assert answer["error"]["code"] == -32600, answer
    finally:
        await gw.stop()
