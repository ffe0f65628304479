"""Review of issue 22, item 1: relative paths against the directories a server was given, as it reads them.

Strategy: a real `mcpwall proxy` (allow-all policy) in front of two real
`@modelcontextprotocol/server-filesystem`s that allow the same directory
`base/sub`, which holds the gateway's home (`base/sub/p/home`), spelled as
people write it in client configs: `server-filesystem sub` run with `cwd: base`
(`npx ... .` in a project is the everyday form) and `server-filesystem ~/sub`
with the server's own `HOME` (the gateway's $HOME is elsewhere). The server
resolves a relative path against its allowed directories; the guard knew only
absolute directory arguments expanded with its own $HOME, so `p/home/policy.yaml`
read the policy and the token and `move_file p q` was only stopped by chance.
Every relative spelling is refused with `mcpwall.self-protection` on both
servers, the tree is unchanged, and relative workspace paths still work.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import GatewayProcess, filesystem
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALLOW_ALL = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
SERVERS = ("relative", "tilde")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Path]]:
    base = tmp_path_factory.mktemp("relative-dirs")
    (base / "sub").mkdir()
    (base / "gateway-user").mkdir()
    (base / "sub" / "notes.txt").write_text("a note\n")
    servers = {"relative": {**filesystem(Path("sub")), "cwd": str(base)},
               "tilde": {**filesystem(Path("~/sub")), "env": {"HOME": str(base)}}}
    g = GatewayProcess(base / "sub" / "p" / "home", servers, ALLOW_ALL, env={"HOME": str(base / "gateway-user")}).start()
    try:
        yield Caller(g), base
    finally:
        g.stop()


@pytest.mark.parametrize("server", SERVERS)
def test_the_server_allows_the_directory_as_it_reads_its_argv(site: tuple[Caller, Path], server: str) -> None:
    caller, base = site
    listed = caller.call("list_allowed_directories", {}, server)
    assert str(base / "sub") in str(listed), listed
    assert "a note" in str(caller.call("read_text_file", {"path": "notes.txt"}, server))


@pytest.mark.parametrize("server", SERVERS)
def test_relative_spellings_of_the_gateways_files_are_refused_issue_22(site: tuple[Caller, Path], server: str) -> None:
    caller, base = site
    home = base / "sub" / "p" / "home"
    policy = (home / "policy.yaml").read_text()
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("read_text_file", {"path": p}) for p in (
            "p/home/policy.yaml", "./p/home/policy.yaml", "p//home/./run/gateway.token", "p/home/run/../policy.yaml",
            "p/home/run/gateway.token/", "notes.txt/../p/home/policy.yaml")],
        ("read_multiple_files", {"paths": ["notes.txt", "p/home/run/gateway.token"]}),
        ("list_directory", {"path": "p/home/run"}),
        ("write_file", {"path": "p/home/policy.yaml", "content": 'version: "1"\nmode: audit\n'}),
        ("move_file", {"source": "p", "destination": "q"}),
        ("move_file", {"source": "p/home", "destination": "elsewhere"}),
        ("move_file", {"source": "notes.txt", "destination": "p/home/policy.yaml"}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(caller.call(tool, args, server))]
    assert let_through == []
    assert (home / "policy.yaml").read_text() == policy
    assert not (base / "sub" / "q").exists()
    assert not (base / "sub" / "elsewhere").exists()
