"""Review of issue 22, item 1: the gateway's own process entries in /proc hold its secrets.

Strategy: a real `mcpwall proxy` given its token and ledger key in its
environment (`MCPWALL_TOKEN`, `MCPWALL_LEDGER_KEY`: both documented ways to
start it), in front of the real `@modelcontextprotocol/server-filesystem`
allowed `/`, under an allow-all policy in audit mode (self-protection holds in
audit mode; the schema stage's path safety only logs there). The review read
`/proc/<gateway pid>/environ` with `read_text_file` and got the admin token in
clear text. Every spelling of the gateway's process entries (environ, cmdline,
mem, fd, its threads' `/proc/TID`, `task/TID`, doubled slashes, the dry-run
oracle, the base64 reader) is refused with `mcpwall.self-protection` and no
answer carries the token; the server's own /proc entries are not the
gateway's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import GatewayProcess, filesystem
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

AUDIT_ALLOW = 'version: "1"\nmode: audit\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
TOKEN = "review-token-" + "Zq7xK2" * 6
KEY = "review-ledger-key-" + "Yw3kP9" * 6


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, int]]:
    base = tmp_path_factory.mktemp("process")
    g = GatewayProcess(base / "home", {"fs": filesystem(Path("/"))}, AUDIT_ALLOW,
                       env={"MCPWALL_TOKEN": TOKEN, "MCPWALL_LEDGER_KEY": KEY}).start()
    try:
        assert g.proc is not None
        yield Caller(g, {"Authorization": f"Bearer {TOKEN}"}), g.proc.pid
    finally:
        g.stop()


def test_the_gateways_process_entries_are_refused_and_never_show_its_token_issue_22(site: tuple[Caller, int]) -> None:
    caller, pid = site
    threads = [t for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    assert threads, "the gateway runs threads (the ledger writer)"
    paths = [f"/proc/{pid}/environ", f"//proc//{pid}/./environ", f"/proc/{pid}/task/{pid}/environ",
             f"/proc/{threads[0]}/environ", f"/proc/{pid}/task/{threads[0]}/environ", f"/proc/{pid}/cmdline",
             f"/proc/{pid}/mem", f"/proc/{pid}/maps", f"/proc/{pid}/fd/0", f"/proc/{pid}/environ/"]
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("read_text_file", {"path": p}) for p in paths],
        ("read_media_file", {"path": f"/proc/{pid}/environ"}),
        ("read_multiple_files", {"paths": ["/etc/hostname", f"/proc/{threads[0]}/environ"]}),
        ("list_directory", {"path": f"/proc/{pid}/fd"}),
        ("get_file_info", {"path": f"/proc/{pid}/environ"}),
        ("edit_file", {"path": f"/proc/{pid}/environ", "dryRun": True,  # a yes/no oracle on the token
                       "edits": [{"oldText": f"MCPWALL_TOKEN={TOKEN[:8]}", "newText": "x"}]}),
    ]
    answers = [(tool, args, caller.call(tool, args)) for tool, args in calls]
    assert [(tool, args) for tool, args, answer in answers if not refused(answer)] == []
    shown = json.dumps([answer for _, _, answer in answers])
    assert TOKEN[13:25] not in shown
    assert KEY[18:30] not in shown


def test_the_servers_own_process_entries_are_not_the_gateways(site: tuple[Caller, int]) -> None:
    caller, _ = site
    answer = caller.call("read_text_file", {"path": "/proc/self/status"})  # the server's, not the gateway's
    assert not refused(answer), answer
    assert "node" in json.dumps(answer).lower() or "mcp-server" in json.dumps(answer), answer
