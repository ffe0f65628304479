"""Review of issue 22, item 1: `~` and `$VAR` as the server expands them, not as the gateway does.

Strategy: a real `mcpwall proxy` (allow-all policy) whose own $HOME is a scratch
directory, in front of the real `@modelcontextprotocol/server-filesystem` given
its own `HOME` in the servers file (`env: {HOME: base/p}`) with the gateway's
home at `base/p/.mcpwall`: a service account's gateway guarding a user's
servers, or a server given a scratch home. Node expands `~` with the server's
own $HOME (os.homedir()), so `~/.mcpwall/policy.yaml` is the gateway's policy
while the guard expanded it with its own $HOME and let it through; the review
read the policy and the token that way and moved the whole home away with
`move_file ~/.mcpwall`. Every spelling is refused with `mcpwall.self-protection`
and the tree is unchanged; a workspace file under the server's `~` still
reads. `$VAR` spellings are decided under the server's `env` too (checked
directly: no npm server here expands variables).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcpwall.security.selfguard import ProtectedSet, server_env
from tests.proxy.harness import MCPWALL, GatewayProcess, filesystem, write_servers
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALLOW_ALL = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'


class Site(Caller):
    def __init__(self, gw: GatewayProcess, base: Path) -> None:
        super().__init__(gw)
        self.gw, self.base, self.home = gw, base, gw.home
        self.policy = (self.home / "policy.yaml").read_text()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("server-env")
    (base / "gateway-user").mkdir()
    (base / "p" / "ws").mkdir(parents=True)
    (base / "p" / "ws" / "notes.txt").write_text("a note\n")
    fs = {**filesystem(base), "env": {"HOME": str(base / "p")}}
    g = GatewayProcess(base / "p" / ".mcpwall", {"fs": fs}, ALLOW_ALL,
                       env={"HOME": str(base / "gateway-user")}).start()
    try:
        yield Site(g, base)
    finally:
        g.stop()


def test_the_servers_tilde_is_its_own_home(site: Site) -> None:
    """The premise: server-filesystem reads `~/ws/notes.txt` under the HOME its spec gives it."""
    answer = site.call("read_text_file", {"path": "~/ws/notes.txt"})
    assert "a note" in str(answer), answer


def test_the_gateways_files_under_the_servers_tilde_are_refused_issue_22(site: Site) -> None:
    reads = ["~/.mcpwall/policy.yaml", "~/.mcpwall/run/gateway.token", "~/.mcpwall//policy.yaml/",
             "~/./.mcpwall/../.mcpwall/policy.yaml", "~/ws/../.mcpwall/run/gateway.token", "~/.MCPWALL/policy.yaml"]
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("read_text_file", {"path": p}) for p in reads],
        ("read_multiple_files", {"paths": ["~/ws/notes.txt", "~/.mcpwall/run/gateway.token"]}),
        ("list_directory", {"path": "~/.mcpwall/run"}),
        ("write_file", {"path": "~/.mcpwall/policy.yaml", "content": 'version: "1"\nmode: audit\n'}),
        ("edit_file", {"path": "~/.mcpwall/policy.yaml", "edits": [{"oldText": "enforce", "newText": "audit"}]}),
        ("write_file", {"path": "~/.mcpwall/ledger.db", "content": "x"}),
        ("move_file", {"source": "~/.mcpwall", "destination": str(site.base / "gone")}),
        ("move_file", {"source": "~", "destination": str(site.base / "gone")}),  # an ancestor of the home
        ("move_file", {"source": "~/", "destination": str(site.base / "gone")}),
        ("move_file", {"source": "~/ws/notes.txt", "destination": "~/.mcpwall/policy.yaml"}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(site.call(tool, args))]
    assert let_through == []
    assert (site.home / "policy.yaml").read_text() == site.policy
    assert not (site.base / "gone").exists()


def test_variables_are_expanded_with_the_servers_own_env(tmp_path: Path) -> None:
    """A shell server with `env: {DATA: <home's parent>}` runs `cat $DATA/.mcpwall/...`: the same file."""
    home = tmp_path / "p" / ".mcpwall"
    (home / "run").mkdir(parents=True)
    (home / "policy.yaml").write_text("version: '1'\n")
    guard = ProtectedSet.build(home, [home / "policy.yaml"], installation=False)
    env = server_env({"DATA": str(tmp_path / "p"), "HOME": str(tmp_path / "p"), "N": "1"})
    for args in [{"command": "cat $DATA/.mcpwall/policy.yaml"}, {"command": "cat ${DATA}/.mcpwall/run/x"},
                 {"path": "$DATA/.mcpwall/policy.yaml"}, {"command": "echo hi > ~/.mcpwall/policy.yaml"},
                 {"command": "rm -rf $HOME"}]:
        assert guard.check(args, (str(tmp_path),), mutating=True, env=env) is not None, args
        assert guard.check(args, (str(tmp_path),), mutating=True) is None, args  # the gateway's own env: elsewhere
    assert guard.check({"command": "cat $DATA/ws/notes.txt"}, (str(tmp_path),), env=env) is None


@pytest.mark.anyio
async def test_the_stdio_frontend_decides_the_same_issue_22(tmp_path: Path) -> None:
    """`mcpwall proxy --stdio`, the official SDK's stdio client: the server's `~` is refused there too."""
    (tmp_path / "gateway-user").mkdir()
    (tmp_path / "p").mkdir()
    home = tmp_path / "p" / ".mcpwall"
    home.mkdir()
    (home / "policy.yaml").write_text(ALLOW_ALL)
    servers = write_servers(home / "servers.json",
                            {"fs": {**filesystem(tmp_path), "env": {"HOME": str(tmp_path / "p")}}})
    params = StdioServerParameters(command=MCPWALL, args=["proxy", "--stdio", "--home", str(home),
                                                          "--servers", str(servers)],
                                   env={**os.environ, "HOME": str(tmp_path / "gateway-user")})
    async with Client(params, mode="legacy") as client:
        for tool, args in [("fs__read_text_file", {"path": "~/.mcpwall/policy.yaml"}),
                           ("fs__read_text_file", {"path": "~/.mcpwall/run/gateway.token"}),
                           ("fs__move_file", {"source": "~/.mcpwall", "destination": str(tmp_path / "gone")})]:
            with pytest.raises(MCPError) as refused_call:
                await client.call_tool(tool, args)
            assert refused_call.value.error.code == -32001, tool
            assert "mcpwall.self-protection" in str(refused_call.value.error.data), tool
    assert not (tmp_path / "gone").exists()
