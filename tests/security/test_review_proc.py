"""Review of issue 22, item 1: the gateway's files through a server's own procfs links.

Strategy: a real `mcpwall proxy` in front of the real
`@modelcontextprotocol/server-filesystem` allowed `/`, started with its own
`cwd` (the directory holding the gateway's home, `base/p/home`), under a
policy that allows everything, once in audit mode and once in enforce mode with
the schema stage's path safety off: the self-protection guarantee holds in
both (SECURITY.md class 1), so it cannot lean on another stage. For the
server, `/proc/self/cwd` is its own cwd; the guard resolved it as the
gateway's (its realpath of `/proc/self`) and let `/proc/self/cwd/home/policy.yaml`
read and write the policy. Every procfs spelling (`self`, `thread-self`,
`self/task/TID`, doubled slashes, `.`) is refused with `mcpwall.self-protection`
and the files are unchanged; a workspace file through the same link is not
taken for the gateway's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import filesystem, gateway
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

POLICIES = {
    "audit": 'version: "1"\nmode: audit\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n',
    "no-path-safety": ('version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
                       '  schema: {pathSafety: false}\n'),
}


def server_pid(cwd: Path) -> str:
    """The pid of the server-filesystem running in `cwd` (a test's way to name its thread)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(cwd) and b"mcp-server-filesystem" in \
                        Path(f"/proc/{entry}/cmdline").read_bytes():
                    return entry
            except OSError:
                continue
    raise AssertionError("no server-filesystem runs in " + str(cwd))


@pytest.fixture(scope="module", params=sorted(POLICIES))
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Path]]:
    base = tmp_path_factory.mktemp(f"proc-{request.param}")
    (base / "p").mkdir()
    (base / "p" / "notes.txt").write_text("a note\n")
    with gateway(base / "p" / "home", {"fs": {**filesystem(Path("/")), "cwd": str(base / "p")}},
                 POLICIES[str(request.param)]) as g:
        yield Caller(g), base


def test_a_workspace_file_through_the_servers_own_cwd_link_is_not_the_gateways(site: tuple[Caller, Path]) -> None:
    """Not refused as the gateway's (in enforce mode the judge still finds /proc a sensitive path)."""
    caller, _ = site
    answer = caller.call("read_text_file", {"path": "/proc/self/cwd/notes.txt"})
    assert not refused(answer), answer


def test_the_gateways_files_through_the_servers_procfs_links_are_refused_issue_22(site: tuple[Caller, Path]) -> None:
    caller, base = site
    home = base / "p" / "home"
    policy = (home / "policy.yaml").read_text()
    pid = server_pid(base / "p")
    reads = ["/proc/self/cwd/home/policy.yaml", "/proc/thread-self/cwd/home/run/gateway.token",
             "/proc/self/cwd/./home//policy.yaml", "//proc//self/cwd/home/policy.yaml",
             f"/proc/self/task/{pid}/cwd/home/policy.yaml", "/proc/self/cwd/home/run/",
             f"/proc/{pid}/task/{pid}/cwd/home/policy.yaml", "/proc/self/root" + str(home / "policy.yaml")]
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("read_text_file", {"path": p}) for p in reads],
        ("read_multiple_files", {"paths": ["/proc/self/cwd/notes.txt", "/proc/self/cwd/home/run/gateway.token"]}),
        ("write_file", {"path": "/proc/self/cwd/home/policy.yaml", "content": 'version: "1"\nmode: audit\n'}),
        ("move_file", {"source": "/proc/self/cwd/home", "destination": "/proc/self/cwd/gone"}),
        ("move_file", {"source": "/proc/self/cwd/notes.txt", "destination": "/proc/self/cwd/home/policy.yaml"}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(caller.call(tool, args))]
    assert let_through == []
    assert (home / "policy.yaml").read_text() == policy
    assert not (base / "p" / "gone").exists()
