"""Review of issue 22, items 1 and 4: a path checked just before a move is checked again after it.

Strategy: a real `mcpwall proxy` in front of the real
`@modelcontextprotocol/server-filesystem` over `base`, which holds the
gateway's home (`base/p/home`), a vault a policy rule denies (`base/vault`),
and a workspace with symlinks already in it (a checkout's links: the agent
makes none), `ws/dN/link` to the home's parent or to the vault. Both checks
resolve symlinks through a cache trusted for two seconds, so the review first
asked for `ws/eN/link/...` (nothing there yet: not protected, not denied, and
now cached), then moved `ws/dN` to `ws/eN` (an ordinary move), then asked again
within the two seconds: the cached answer let the token, the policy and the
vault be read and the policy be written. A call that can change the file system
(not marked read-only) now drops both caches when it is let through and when it
ends; each spelling is refused (self-protection, or the vault's rule) and the
files are unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import filesystem, gateway
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-vault
    target: file
    match: pattern
    values: ['/vault(/|$)']
    action: deny
stages:
  ratelimit: {requestsPerMinute: 0}
"""


class Site(Caller):
    def __init__(self, caller: Caller, base: Path) -> None:
        super().__init__(caller.gw)
        self.base, self.ws = base, base / "ws"
        self.n = itertools.count()

    def primed_then_moved(self, target: Path, tail: str, spell: Callable[[str], str], tool: str,
                          args: dict[str, Any]) -> dict[str, Any]:
        """Ask for `ws/eN/link/TAIL` (not there), move `ws/dN` (holding `link` -> `target`) to `ws/eN`,
        and ask again at once with `tool`; `spell` turns the absolute path into the spelling asked."""
        n = next(self.n)
        (self.ws / f"d{n}").mkdir()
        (self.ws / f"d{n}" / "link").symlink_to(target)
        path = spell(str(self.ws / f"e{n}" / "link" / tail))
        first = self.call("read_text_file", {"path": path})
        assert "ENOENT" in str(first), first  # nothing there yet: passed, and remembered
        moved = self.call("move_file", {"source": str(self.ws / f"d{n}"), "destination": str(self.ws / f"e{n}")})
        assert "Successfully moved" in str(moved), moved
        return self.call(tool, {**args, "path": path})


def denied(answer: dict[str, Any], rule: str) -> bool:
    err = answer.get("error")
    return isinstance(err, dict) and err.get("code") == -32001 and rule in str(err.get("data"))


#: absolute, with a doubled slash, relative to the server's directory
SPELLINGS: list[Callable[[str], str]] = [str, lambda p: p.replace("/ws/", "/ws//"), lambda p: "ws/" + p.split("/ws/", 1)[1]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("cache")
    (base / "ws").mkdir()
    (base / "vault").mkdir()
    (base / "vault" / "plans.txt").write_text("the vault's plans\n")
    with gateway(base / "p" / "home", {"fs": filesystem(base)}, POLICY) as g:
        yield Site(Caller(g), base)


@pytest.mark.parametrize("spell", range(len(SPELLINGS)))
def test_the_gateways_files_behind_a_moved_link_are_refused_after_the_move_issue_22(site: Site, spell: int) -> None:
    home = site.base / "p" / "home"
    policy = (home / "policy.yaml").read_text()
    how = SPELLINGS[spell]
    for tail, tool, args in [("home/run/gateway.token", "read_text_file", {}),
                             ("home/policy.yaml", "write_file", {"content": 'version: "1"\nmode: audit\n'}),
                             ("home/policy.yaml", "get_file_info", {})]:
        answer = site.primed_then_moved(site.base / "p", tail, how, tool, args)
        assert refused(answer), (tail, tool, answer)
    assert (home / "policy.yaml").read_text() == policy


@pytest.mark.parametrize("spell", range(2))  # relative paths are not matched against file rules (yet)
def test_a_denied_directory_behind_a_moved_link_is_denied_after_the_move_issue_22(site: Site, spell: int) -> None:
    answer = site.primed_then_moved(site.base / "vault", "plans.txt", SPELLINGS[spell], "read_text_file", {})
    assert denied(answer, "no-vault"), answer
    assert "the vault's plans" not in str(answer)
