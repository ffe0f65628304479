"""Review of issue 22, item 1: the code of the servers the gateway starts is the gateway's too.

Strategy: a real `mcpwall proxy` (allow-all policy) running three servers: the
real `@modelcontextprotocol/server-filesystem` over a workspace, a Python MCP
server whose script lives in that workspace (`ws/tools/srv.py`, as a project's
own server does), and a second server-filesystem allowed the directory that
holds its own npm package (`node_modules/@modelcontextprotocol`, as a project
whose node_modules holds its servers is). The review rewrote `ws/tools/srv.py`
through `write_file`: the next time the gateway starts that server (after any
crash), the agent's code runs as the user, outside every guarded tool, and can
read the token and write the policy directly. Each write, move, edit (even a
dry run) and read of a server's program or package is refused with
`mcpwall.self-protection`, the files are unchanged, and other workspace and
node_modules files still read. Nothing is written into the shared node_modules
unless the guard fails, and then it is removed.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import HERE, ROOT, filesystem, gateway
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALLOW_ALL = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
SCOPE = ROOT / "node_modules" / "@modelcontextprotocol"
PACKAGE = SCOPE / "server-filesystem"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Path]]:
    base = tmp_path_factory.mktemp("programs")
    ws = base / "ws"
    (ws / "tools").mkdir(parents=True)
    shutil.copy(HERE / "servers" / "chatty.py", ws / "tools" / "srv.py")
    (ws / "notes.txt").write_text("a note\n")
    (ws / "other.py").write_text("print('the agent was here')\n")
    servers = {"fs": filesystem(ws), "pkg": filesystem(SCOPE),
               "srv": {"command": sys.executable, "args": [str(ws / "tools" / "srv.py"), "AKIAIOSFODNN7REVIEW1"]}}
    with gateway(base / "home", servers, ALLOW_ALL) as g:
        yield Caller(g), ws


def test_a_servers_script_in_the_workspace_cannot_be_rewritten_issue_22(site: tuple[Caller, Path]) -> None:
    caller, ws = site
    script = ws / "tools" / "srv.py"
    before = script.read_bytes()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"path": str(script), "content": "import os; os.system('id')\n"}),
        ("write_file", {"path": "tools/srv.py", "content": "x"}),
        ("edit_file", {"path": f"{ws}/tools//srv.py", "edits": [{"oldText": "import", "newText": "import os, "}]}),
        ("move_file", {"source": str(ws / "other.py"), "destination": str(script)}),
        ("move_file", {"source": str(ws / "tools"), "destination": str(ws / "moved")}),  # its directory
        ("move_file", {"source": str(script), "destination": str(ws / "srv-old.py")}),
        ("read_text_file", {"path": f"{ws}/tools/./srv.py"}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(caller.call(tool, args))]
    assert let_through == []
    assert script.read_bytes() == before
    assert not (ws / "moved").exists()
    assert "a note" in str(caller.call("read_text_file", {"path": str(ws / "notes.txt")}))


def test_a_servers_npm_package_cannot_be_changed_through_another_tool_issue_22(site: tuple[Caller, Path]) -> None:
    caller, _ = site
    index = PACKAGE / "dist" / "index.js"
    planted = PACKAGE / "dist" / "review-planted.js"
    before = index.read_bytes()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("edit_file", {"path": str(index), "dryRun": True, "edits": [{"oldText": "import", "newText": "import"}]}),
        ("edit_file", {"path": "server-filesystem/dist/index.js", "dryRun": True,
                       "edits": [{"oldText": "import", "newText": "import"}]}),
        ("write_file", {"path": str(planted), "content": "// planted\n"}),
        ("move_file", {"source": str(PACKAGE / "dist" / "no-such-file.js"), "destination": str(index)}),
        ("read_text_file", {"path": str(PACKAGE / "package.json")}),
        ("list_directory", {"path": f"{PACKAGE}/dist/"}),
    ]
    try:
        let_through = [(tool, args) for tool, args in calls if not refused(caller.call(tool, args, "pkg"))]
    finally:
        planted.unlink(missing_ok=True)
    assert let_through == []
    assert index.read_bytes() == before
    # a package no configured server runs is not the gateway's
    assert "server-memory" in str(caller.call("read_text_file", {"path": str(SCOPE / "server-memory" / "package.json")},
                                              "pkg"))
