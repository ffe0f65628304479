"""The gateway protects its own files, through the real gateway (issue 22, item 1).

Strategy: a real `mcpwall proxy` process in front of the real
`@modelcontextprotocol/server-filesystem`, whose allowed directory is the
*parent* of the gateway's home (so the server itself would open every file of
the home), and the real server-everything; the policy ALLOWS everything
(`defaultAction: allow`, no rules), once in enforce and once in audit mode. An
agent writes `<home>/policy.yaml` (the attack: `mode: audit`), reads
`run/gateway.token`, writes `ledger.db`, through every spelling (`..`, `//`,
trailing `/`, a symlink in the workspace, a symlinked parent, a relative path
the server resolves in its allowed directory, `file://` in resources/read): each
is refused with -32001 and rule id `mcpwall.self-protection`, the file on disk
is unchanged, and each refusal has its `tool_calls` row. Ordinary workspace
calls still work. On the old code every one of these calls was forwarded.

The reload hold: a policy file of the `extends` chain (outside the home) is
changed by the test while a slow allowed call (everything's long-running
operation) is in flight: the gateway keeps its revision, says so in `/health`,
its log and its ledger, until the real `mcpwall policy reload` CLI asks it to
load; SIGHUP does not release it. A change with nothing in flight reloads live.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.proxy.harness import EVERYTHING, MCPWALL, GatewayProcess, filesystem

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

RULE = "mcpwall.self-protection"
ALLOW_ALL = 'version: "1"\nmode: {mode}\ndefaultAction: allow\nstages:\n  ratelimit: {{requestsPerMinute: 0}}\n'
ATTACK = 'version: "1"\nmode: audit\ndefaultAction: allow\n'


class Setup:
    def __init__(self, gw: GatewayProcess, base: Path, ws: Path) -> None:
        self.gw, self.base, self.ws, self.home = gw, base, ws, gw.home
        self.ids = 0

    def call(self, tool: str, arguments: dict[str, Any], server: str = "fs") -> dict[str, Any]:
        self.ids += 1
        r = self.gw.post(f"/{server}", {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
                                        "params": {"name": tool, "arguments": arguments}})
        body: dict[str, Any] = r.json()
        return body

    def rpc(self, method: str, params: dict[str, Any], server: str = "fs") -> dict[str, Any]:
        self.ids += 1
        body: dict[str, Any] = self.gw.post(f"/{server}", {"jsonrpc": "2.0", "id": self.ids, "method": method,
                                                           "params": params}).json()
        return body


def refused(answer: dict[str, Any]) -> bool:
    err = answer.get("error")
    return isinstance(err, dict) and err.get("code") == -32001 and RULE in json.dumps(err.get("data"))


@pytest.fixture(scope="module", params=["enforce", "audit"])
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    base = tmp_path_factory.mktemp(f"selfprot-{request.param}")
    ws = base / "ws"
    ws.mkdir()
    home = base / "home"
    g = GatewayProcess(home, {"fs": filesystem(base), "everything": EVERYTHING},
                       ALLOW_ALL.format(mode=request.param)).start()
    (ws / "home-link").symlink_to(home)
    (ws / "token-link").symlink_to(home / "run" / "gateway.token")
    os.link(home / "run" / "gateway.token", ws / "token-hardlink")
    (ws / "sub").mkdir()
    (ws / "sub" / "up").symlink_to(base)
    try:
        yield Setup(g, base, ws)
    finally:
        g.stop()


def policy_spellings(s: Setup) -> list[str]:
    home, ws = str(s.home), str(s.ws)
    return [f"{home}/policy.yaml", f"{ws}/../home/policy.yaml", f"{home}/policy.yaml/", f"{home}//policy.yaml",
            f"{home}/./policy.yaml", f"{ws}/home-link/policy.yaml", f"{ws}/sub/up/home/policy.yaml",
            "home/policy.yaml", f"{home.upper()}/POLICY.YAML"]


def test_writing_the_policy_file_is_refused_and_the_file_stays_as_it_was_issue_22(setup: Setup) -> None:
    policy = setup.home / "policy.yaml"
    before = policy.read_bytes()
    for path in policy_spellings(setup):
        answer = setup.call("write_file", {"path": path, "content": ATTACK})
        assert refused(answer), (path, answer)
        answer = setup.call("edit_file", {"path": path, "edits": [{"oldText": "enforce", "newText": "audit"}]})
        assert refused(answer), (path, answer)
    assert policy.read_bytes() == before
    moved = setup.call("move_file", {"source": str(setup.ws / "x.yaml"), "destination": str(policy)})
    assert refused(moved)


def test_reading_the_gateway_token_is_refused_issue_22(setup: Setup) -> None:
    token = setup.gw.token
    home, ws = setup.home, setup.ws
    for tool, args in (("read_text_file", {"path": f"{home}/run/gateway.token"}),
                       ("read_file", {"path": f"{home}/run/gateway.token"}),
                       ("read_text_file", {"path": f"{ws}/token-link"}),
                       ("read_text_file", {"path": f"{ws}/token-hardlink"}),
                       ("read_text_file", {"path": f"{ws}/home-link/run/gateway.token"}),
                       ("read_text_file", {"path": f"{ws}/../home/run//gateway.token"}),
                       ("read_text_file", {"path": "home/run/gateway.token"}),
                       ("read_media_file", {"path": f"{home}/run/gateway.token"}),
                       ("read_multiple_files", {"paths": [f"{ws}/x", f"{home}/run/gateway.token"]}),
                       ("get_file_info", {"path": f"{home}/run/ledger.key"}),
                       ("list_directory", {"path": f"{home}/run/"}),
                       ("directory_tree", {"path": f"{ws}/home-link"}),
                       ("search_files", {"path": str(home), "pattern": "token"})):
        answer = setup.call(tool, args)
        assert refused(answer), (tool, args, answer)
        assert token not in json.dumps(answer)


def test_writing_the_ledger_is_refused_issue_22(setup: Setup) -> None:
    for name in ("ledger.db", "ledger.db-wal", "ledger.db-shm", "run/ledger.checkpoint"):
        answer = setup.call("write_file", {"path": f"{setup.home}/{name}", "content": "junk"})
        assert refused(answer), (name, answer)
    assert b"junk" not in (setup.home / "ledger.db").read_bytes()


def test_a_file_uri_into_the_home_is_refused_on_every_server_issue_22(setup: Setup) -> None:
    home = setup.home
    for server in ("fs", "everything"):
        for uri in (f"file://{home}/run/gateway.token", f"file://localhost{home}/policy.yaml",
                    f"file://{home}/run/gateway%2Etoken", f"file://{setup.ws}/home-link/policy.yaml"):
            assert refused(setup.rpc("resources/read", {"uri": uri}, server)), (server, uri)
    # a path in any argument of any server's tool
    assert refused(setup.call("echo", {"message": f"{home}/run/gateway.token"}, "everything"))


def test_every_refusal_has_its_ledger_row_and_workspace_calls_still_work(setup: Setup) -> None:
    ok = setup.call("write_file", {"path": str(setup.ws / "notes.txt"), "content": "hello"})
    assert "error" not in ok, ok
    assert not ok["result"].get("isError"), ok
    read = setup.call("read_text_file", {"path": str(setup.ws / "notes.txt")})
    assert "hello" in json.dumps(read)
    assert refused(setup.call("read_text_file", {"path": f"{setup.home}/policy.yaml"}))
    deadline = time.monotonic() + 10
    rows: list[tuple[str, str]] = []
    while time.monotonic() < deadline:
        with sqlite3.connect(f"file:{setup.home / 'ledger.db'}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT decision, rule_ids FROM tool_calls WHERE tool_name = 'read_text_file' "
                              "ORDER BY seq").fetchall()
        if any(RULE in r[1] for r in rows) and any(d == "allow" for d, _ in rows):
            break
        time.sleep(0.2)
    assert ("deny", json.dumps([RULE])) in [(d, json.dumps(json.loads(r))) for d, r in rows]


# ---------------------------------------------------------------------------------------- the reload hold

EXTENDED = 'version: "1"\nmode: enforce\ndefaultAction: allow\nextends: [{base}]\n' \
           'stages:\n  ratelimit: {{requestsPerMinute: 0}}\n'
BASE = 'version: "1"\nrules:\n  - id: base-rule\n    tools: [nothing-here]\n    action: deny\n'
DENY_ECHO = BASE + '  - id: no-echo\n    tools: [echo]\n    action: deny\n'


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[GatewayProcess, Path]]:
    shared = tmp_path / "shared"
    shared.mkdir()
    base = shared / "base.yaml"
    base.write_text(BASE)
    g = GatewayProcess(tmp_path / "home", {"everything": EVERYTHING}, EXTENDED.format(base=base)).start()
    try:
        yield g, base
    finally:
        g.stop()


def policy_status(g: GatewayProcess) -> dict[str, Any]:
    status: dict[str, Any] = httpx.get(f"{g.url}/health", headers=g.headers, timeout=10).json()["policy"]
    return status


def echo(g: GatewayProcess) -> dict[str, Any]:
    body: dict[str, Any] = g.post("/everything", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                 "params": {"name": "echo", "arguments": {"message": "hi"}}}).json()
    return body


def wait_for(predicate: Any, timeout: float = 8.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def run_cli(g: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MCPWALL, "policy", "reload", "--home", str(g.home), "--url", g.url, *args],
                          capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "MCPWALL_TOKEN"})


def test_a_policy_change_while_an_allowed_call_is_in_flight_waits_for_a_person_issue_22(
        held: tuple[GatewayProcess, Path]) -> None:
    g, base = held
    revision = policy_status(g)["revision"]
    assert "error" not in echo(g)

    def slow() -> None:
        g.post("/everything", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "trigger-long-running-operation", "arguments": {"duration": 3, "steps": 3}}})

    caller = threading.Thread(target=slow)
    caller.start()
    time.sleep(1.0)
    base.write_text(DENY_ECHO)  # as if the slow call had written it
    caller.join(30)
    assert wait_for(lambda: policy_status(g)["held_reload"] is not None)
    status = policy_status(g)
    assert status["revision"] == revision
    assert str(base) in status["held_reload"]["files"]
    assert "trigger-long-running-operation" in status["held_reload"]["call"]
    time.sleep(3.5)  # the watcher keeps polling: still held, nothing loaded
    assert policy_status(g)["revision"] == revision
    assert "error" not in echo(g)
    log = g.log.read_text()
    assert "POLICY RELOAD HELD" in log
    assert str(base) in log
    assert "trigger-long-running-operation" in log

    assert g.proc is not None
    os.kill(g.proc.pid, signal.SIGHUP)  # anyone with a shell can signal: it does not release the hold
    time.sleep(1.0)
    assert policy_status(g)["revision"] == revision
    assert policy_status(g)["held_reload"] is not None

    done = run_cli(g)
    assert done.returncode == 0, done.stderr
    after = policy_status(g)
    assert after["revision"] != revision
    assert after["revision"] in done.stdout
    assert after["held_reload"] is None
    assert echo(g)["error"]["code"] == -32001

    def ledger_rows() -> list[tuple[str, str]]:
        with sqlite3.connect(f"file:{g.home / 'ledger.db'}?mode=ro", uri=True) as db:
            return db.execute("SELECT decision, reasons FROM protocol_events WHERE method = 'policy/reload'"
                              ).fetchall()

    assert wait_for(lambda: [d for d, _ in ledger_rows()] == ["held", "allow"])


def test_a_policy_change_with_nothing_in_flight_reloads_live(held: tuple[GatewayProcess, Path]) -> None:
    g, base = held
    revision = policy_status(g)["revision"]
    time.sleep(2.5)  # past the grace of the start-up calls
    base.write_text(DENY_ECHO)
    assert wait_for(lambda: policy_status(g)["revision"] != revision)
    assert policy_status(g)["held_reload"] is None
    assert echo(g)["error"]["code"] == -32001


def test_policy_reload_reports_a_bad_file_and_a_missing_token(held: tuple[GatewayProcess, Path],
                                                            tmp_path: Path) -> None:
    g, base = held
    revision = policy_status(g)["revision"]
    base.write_text("rules: [unclosed\n")
    bad = run_cli(g)
    assert bad.returncode == 1
    assert "failed" in bad.stderr
    assert revision in bad.stderr
    assert policy_status(g)["revision"] == revision
    empty = tmp_path / "nohome"
    empty.mkdir()
    missing = subprocess.run([MCPWALL, "policy", "reload", "--home", str(empty), "--url", g.url],
                             capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k != "MCPWALL_TOKEN"})
    assert missing.returncode == 2
    usage = subprocess.run([MCPWALL, "policy", "reload", "--nope"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2


# ---------------------------------------------------------------------------------------- the stdio frontend

@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["enforce", "audit"])
async def test_wrap_over_stdio_refuses_the_gateways_files_too_issue_22(tmp_path: Path, mode: str) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    home = tmp_path / "home"
    home.mkdir()
    policy = home / "policy.yaml"
    policy.write_text(ALLOW_ALL.format(mode=mode))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "home-link").symlink_to(home)
    args = ["wrap", "--name", "fs", "--home", str(home), "--", *[filesystem(tmp_path)["command"], str(tmp_path)]]
    async with Client(StdioServerParameters(command=MCPWALL, args=args)) as c:
        for path in (str(policy), f"{ws}/home-link/policy.yaml", f"{ws}/../home/policy.yaml/"):
            with pytest.raises(MCPError) as info:
                await c.call_tool("write_file", {"path": path, "content": ATTACK})
            assert info.value.code == -32001
            assert RULE in json.dumps(info.value.error.data)
        ok = await c.call_tool("write_file", {"path": str(ws / "fine.txt"), "content": "fine"})
        assert not ok.is_error
    assert policy.read_text() == ALLOW_ALL.format(mode=mode)
    assert (ws / "fine.txt").read_text() == "fine"
