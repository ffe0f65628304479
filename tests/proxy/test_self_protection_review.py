"""Two bypasses of the gateway's self-protection, through the real gateway (issue 22, item 1, review).

Strategy: a real `mcpwall proxy` process in front of the real
`@modelcontextprotocol/server-filesystem`, whose allowed directory holds the
gateway's home two levels down (`base/p/home`, as the reviewer's reproduction
had it) and a directory with an `extends`'d policy file (`base/shared`); the
policy allows everything.

B1, renaming an ancestor: `move_file base/p base/q` moved every protected file
to a path nothing checked. Each spelling of a move, rename or replacement of an
ancestor of the home or of the extends file is refused with rule id
`mcpwall.self-protection`, and the tree on disk is unchanged; listings of the
ancestors (and of `/`, through a second server rooted there) and moves inside
the workspace still work. Identity: the test itself renames `base/p` behind the
gateway's back (as a shell or another server could) and the token, the policy
and new files in the renamed home are still refused, by (device, inode).

B2, the reload hold after a call the gateway stopped waiting for: a CPU-bound
`edit_file` dryRun stalls Node's event loop (a few seconds here, not the
reviewer's 15); the client cancels it, or the gateway's timeout gives up on
it. The server still runs it (and a `write_file` queued behind it, whose answer
Node then never sends); a policy change made after the gateway's grace but
while the server has not answered is held for a person. A late answer ends the
hold's cause (a later change reloads live); a call the server never answers
holds every change until `mcpwall policy reload`. On the old code each of these
changes was loaded live.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.harness import GatewayProcess, filesystem
from tests.proxy.test_self_protection import policy_status, run_cli, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

RULE = "mcpwall.self-protection"
ALLOW_ALL = ('version: "1"\nmode: enforce\ndefaultAction: allow\n{extra}extends: [{base}]\n'
             'stages:\n  ratelimit: {{requestsPerMinute: 0}}\n')
SHARED = 'version: "1"\nrules:\n  - id: base-rule\n    tools: [nothing-here]\n    action: deny\n'
#: Lines of the file and of the edit that does not match it: about (N - M) * M line compares in Node.
BLOCK_LINES, BLOCK_EDIT = 40000, 20000  # several seconds of Node: the grace (2 s) and the check must fit inside it, on a fast machine too


class Tree:
    def __init__(self, gw: GatewayProcess, base: Path) -> None:
        self.gw, self.base = gw, base
        self.p, self.home, self.shared, self.ws = base / "p", gw.home, base / "shared", base / "ws"
        self.ids = 0
        self.headers = gw.headers  # read from the home's token file now: the home moves in one test

    def call(self, tool: str, arguments: dict[str, Any], server: str = "fs") -> dict[str, Any]:
        self.ids += 1
        body: dict[str, Any] = httpx.post(f"{self.gw.url}/{server}", headers=self.headers, timeout=30, json={
            "jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}).json()
        return body


def refused(answer: dict[str, Any]) -> bool:
    err = answer.get("error")
    return isinstance(err, dict) and err.get("code") == -32001 and RULE in json.dumps(err.get("data"))


def text(answer: dict[str, Any]) -> str:
    return " ".join(str(c.get("text", "")) for c in answer.get("result", {}).get("content", []))


def start(base: Path, extra: str = "") -> GatewayProcess:
    (base / "shared").mkdir(parents=True)
    (base / "shared" / "base.yaml").write_text(SHARED)
    (base / "ws").mkdir()
    return GatewayProcess(base / "p" / "home", {"fs": filesystem(base), "root": filesystem(Path("/"))},
                          ALLOW_ALL.format(extra=extra, base=base / "shared" / "base.yaml")).start()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    base = tmp_path_factory.mktemp("review")
    g = start(base)
    t = Tree(g, base)
    (t.ws / "p-link").symlink_to(t.p)
    (t.ws / "notes.md").write_text("notes\n")
    try:
        yield t
    finally:
        g.stop()


def test_moving_renaming_or_replacing_an_ancestor_of_the_gateways_files_is_refused_issue_22(tree: Tree) -> None:
    """The review's `move_file {source: ws/p, destination: ws/q}` (home = ws/p/home), in every spelling."""
    b, q = tree.base, str(tree.base / "q")
    moves = [
        {"source": str(tree.p), "destination": q}, {"source": f"{tree.p}/", "destination": q},
        {"source": f"{tree.p}//", "destination": q}, {"source": f"{tree.home}/..", "destination": q},
        {"source": f"{tree.ws}/../p", "destination": q}, {"source": f"{tree.ws}/p-link", "destination": q},
        {"source": f"{tree.ws}/p-link/", "destination": q}, {"source": str(tree.home), "destination": q},
        {"source": "p", "destination": "q"}, {"source": "./p/", "destination": "q"},
        {"source": str(tree.p).upper(), "destination": q},
        {"source": str(tree.shared), "destination": str(b / "old")},  # the extends file's directory
        {"source": f"{tree.shared}/../shared", "destination": str(b / "old")},
        {"source": str(tree.ws / "notes.md"), "destination": str(tree.p)},  # replacing an ancestor
        {"source": str(tree.ws / "notes.md"), "destination": str(tree.shared)},
        {"source": str(b), "destination": f"{b}-gone"},
    ]
    let_through = [m for m in moves if not refused(tree.call("move_file", m))]
    assert let_through == []
    writes: list[tuple[str, dict[str, Any]]] = [("create_directory", {"path": str(tree.p)}), ("write_file", {"path": str(tree.p), "content": ""}),
                       ("edit_file", {"path": str(tree.shared), "edits": [{"oldText": "a", "newText": "b"}]})]
    for tool, args in writes:
        assert refused(tree.call(tool, args)), tool
    assert (tree.home / "policy.yaml").is_file()
    assert (tree.shared / "base.yaml").read_text() == SHARED
    assert not (b / "q").exists()
    assert not (b / "old").exists()
    assert refused(tree.call("read_text_file", {"path": str(tree.home / "run" / "gateway.token")}))


def test_listings_of_the_ancestors_and_of_root_and_workspace_moves_still_work(tree: Tree) -> None:
    for tool, args, server in [("list_directory", {"path": str(tree.base)}, "fs"),
                               ("list_directory", {"path": str(tree.p)}, "fs"),
                               ("directory_tree", {"path": str(tree.shared)}, "fs"),
                               ("search_files", {"path": str(tree.base), "pattern": "notes"}, "fs"),
                               ("get_file_info", {"path": str(tree.p)}, "fs"),
                               ("list_directory", {"path": "/"}, "root")]:
        answer = tree.call(tool, args, server)
        assert "error" not in answer, (tool, answer)
        assert not answer["result"].get("isError"), (tool, answer)
    (tree.ws / "a.txt").write_text("a\n")
    assert "error" not in tree.call("move_file", {"source": str(tree.ws / "a.txt"), "destination": str(tree.ws / "b.txt")})
    assert (tree.ws / "b.txt").read_text() == "a\n"
    assert "error" not in tree.call("create_directory", {"path": str(tree.ws / "new")})


def test_a_home_renamed_behind_the_gateways_back_is_still_its_home_by_inode_issue_22(tree: Tree) -> None:
    """Identity, not only path: after `mv base/p base/q` by anything else, q/home is still protected."""
    renamed = tree.base / "q"
    os.rename(tree.p, renamed)
    try:
        home = renamed / "home"
        token = (home / "run" / "gateway.token").read_text().strip()
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_text_file", {"path": str(home / "run" / "gateway.token")}),
            ("edit_file", {"path": str(home / "run" / "gateway.token"), "dryRun": True,  # a yes/no oracle
                           "edits": [{"oldText": token[:6], "newText": token[:6]}]}),
            ("write_file", {"path": str(home / "policy.yaml"), "content": 'version: "1"\nmode: audit\n'}),
            ("write_file", {"path": str(home / "ledger.db"), "content": "x"}),
            ("write_file", {"path": str(home / "run" / "new.txt"), "content": "x"}),
            ("list_directory", {"path": str(home)}),
            ("move_file", {"source": str(renamed), "destination": str(tree.base / "r")}),
        ]
        for tool, args in calls:
            answer = tree.call(tool, args)
            assert refused(answer), (tool, answer)
        assert "audit" not in (home / "policy.yaml").read_text()
    finally:
        if tree.p.exists():  # the gateway made its home again where it expects it (run/, the ledger)
            os.rename(tree.p, tree.base / "p-made-meanwhile")
        os.rename(renamed, tree.p)


# ---------------------------------------------------------------- B2: the hold lasts until the server answers


async def stall_and_give_up(g: GatewayProcess, base: Path, *, cancel: bool, queued: bool) -> float:
    """Send a blocking edit_file (and, `queued`, a write_file behind it) on one session; cancel them
    (`cancel`) or let the gateway's timeout give up. Returns when the gateway gave up (monotonic)."""
    (base / "ws" / "big.txt").write_text("\n".join(["a"] * BLOCK_LINES))
    headers = {**g.headers, "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=60) as c:
        r = await c.post(f"{g.url}/mcp/fs", headers=headers, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "agent", "version": "1"}}})
        h = {**headers, "Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        await c.post(f"{g.url}/mcp/fs", headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        calls = [(1, {"name": "edit_file", "arguments": {
            "path": str(base / "ws" / "big.txt"), "dryRun": True,
            "edits": [{"oldText": "\n".join(["a"] * BLOCK_EDIT + ["b"]), "newText": "x"}]}})]
        if queued:
            calls.append((2, {"name": "write_file", "arguments": {"path": str(base / "ws" / "late.txt"),
                                                                   "content": "written after the cancel"}}))
        tasks = []
        for i, params in calls:
            tasks.append(asyncio.create_task(c.post(f"{g.url}/mcp/fs", headers=h, json={
                "jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})))
            await asyncio.sleep(0.2)
        if cancel:
            await asyncio.sleep(0.3)
            for i, _ in calls:
                await c.post(f"{g.url}/mcp/fs", headers=h, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                                 "params": {"requestId": i}})
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        return time.monotonic()


@pytest.fixture
def stalled(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[GatewayProcess, Path]]:
    g = start(tmp_path, extra=getattr(request, "param", ""))
    try:
        yield g, tmp_path
    finally:
        g.stop()


CHANGED = SHARED + '  - id: changed\n    tools: [nothing-either]\n    action: deny\n'
CHANGED_AGAIN = CHANGED + '  - id: again\n    tools: [nothing-at-all]\n    action: deny\n'


@pytest.mark.parametrize(("stalled", "cancel"), [("", True), ("defaultTimeoutMs: 800\n", False)],
                         ids=["client-cancelled", "timed-out"], indirect=["stalled"])
def test_a_change_while_the_server_still_runs_a_call_the_gateway_gave_up_on_is_held_issue_22(
        stalled: tuple[GatewayProcess, Path], cancel: bool) -> None:
    g, base = stalled
    revision = policy_status(g)["revision"]
    gave_up = asyncio.run(stall_and_give_up(g, base, cancel=cancel, queued=False))
    time.sleep(max(0.0, gave_up + 2.3 - time.monotonic()))  # past the gateway's grace after the call's end
    assert "late answer" not in g.log.read_text()  # Node is still in the edit
    (base / "shared" / "base.yaml").write_text(CHANGED)  # as if that call had written it
    assert wait_for(lambda: policy_status(g)["held_reload"] is not None, 3.0)
    status = policy_status(g)
    assert status["revision"] == revision
    assert "edit_file" in status["held_reload"]["call"]
    # The server answers at last (the gateway no longer forwards it): the cause is gone, the hold stays.
    assert wait_for(lambda: "late answer" in g.log.read_text(), 60.0)
    assert policy_status(g)["revision"] == revision
    done = run_cli(g)
    assert done.returncode == 0, done.stderr
    loaded = policy_status(g)["revision"]
    assert loaded != revision
    time.sleep(2.5)
    (base / "shared" / "base.yaml").write_text(CHANGED_AGAIN)  # nothing unanswered now: live again
    assert wait_for(lambda: policy_status(g)["revision"] != loaded, 8.0)
    assert policy_status(g)["held_reload"] is None


@pytest.mark.parametrize("stalled", [""], indirect=True)
def test_a_write_queued_behind_a_stall_and_never_answered_holds_every_change_issue_22(
        stalled: tuple[GatewayProcess, Path]) -> None:
    """The review's shape: the writes run after the gateway counted them as ended, and Node never
    answers a request cancelled before it ran: the hold lasts until the server restarts."""
    g, base = stalled
    revision = policy_status(g)["revision"]
    gave_up = asyncio.run(stall_and_give_up(g, base, cancel=True, queued=True))
    assert wait_for(lambda: (base / "ws" / "late.txt").exists(), 60.0)  # it ran, after its cancel
    time.sleep(max(0.0, gave_up + 2.3 - time.monotonic()))
    (base / "shared" / "base.yaml").write_text(CHANGED)
    assert wait_for(lambda: policy_status(g)["held_reload"] is not None, 3.0)
    assert "write_file" in policy_status(g)["held_reload"]["call"] or "edit_file" in policy_status(g)["held_reload"]["call"]
    assert policy_status(g)["revision"] == revision
    assert run_cli(g).returncode == 0
    loaded = policy_status(g)["revision"]
    assert loaded != revision
    (base / "shared" / "base.yaml").write_text(CHANGED_AGAIN)
    assert wait_for(lambda: policy_status(g)["held_reload"] is not None, 3.0)
    assert "write_file" in policy_status(g)["held_reload"]["call"]
    assert policy_status(g)["revision"] == loaded
