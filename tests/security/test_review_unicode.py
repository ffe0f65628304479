"""Review of issue 22, item 1: the gateway's files spelled in another Unicode composition.

Strategy: a real `mcpwall proxy` with an allow-all policy in front of the real
`@modelcontextprotocol/server-filesystem`, rooted at a directory that holds the
gateway's home under a non-ASCII name (`café/hôme`, as a user called José or
Zoë has `/home/josé/.mcpwall`). server-filesystem opens a path that does not
exist as written at the directory entry whose NFC form is equal
(`resolveUnicodeEquivalentPath`), so `cafe\\u0301/hôme/run/gateway.token` (NFD)
read the token and wrote the policy while the guard, comparing code points,
saw a path that is not the gateway's. Both ways round: a home stored composed
(Linux) and one stored decomposed (made on macOS, copied over), each spelled in
the other form and mixed. Every spelling is refused with rule id
`mcpwall.self-protection` and the files on disk are unchanged; ordinary
non-ASCII workspace files still read and write.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.harness import GatewayProcess, filesystem
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALLOW_ALL = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'
WORDS = ("café", "hôme")


def nf(form: str, text: str) -> str:
    return unicodedata.normalize(form, text)  # type: ignore[arg-type]


class Site(Caller):
    def __init__(self, gw: GatewayProcess, base: Path, stored: str) -> None:
        super().__init__(gw)
        self.gw, self.base, self.stored = gw, base, stored
        self.home = gw.home
        self.policy = (self.home / "policy.yaml").read_text()

    def spell(self, forms: tuple[str, str], *rest: str) -> str:
        """The home spelled with `café` and `hôme` each in the given normal form, then `rest`."""
        return "/".join([str(self.base), nf(forms[0], WORDS[0]), nf(forms[1], WORDS[1]), *rest])

    def other_spellings(self, *rest: str) -> list[str]:
        """Every spelling that is not the one on disk (the guard used to see only that one)."""
        out = []
        for a in ("NFC", "NFD"):
            for b in ("NFC", "NFD"):
                if (a, b) != (self.stored, self.stored):
                    out.append(self.spell((a, b), *rest))
        return out


@pytest.fixture(scope="module", params=["NFC", "NFD"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    stored = str(request.param)
    base = tmp_path_factory.mktemp(f"unicode-{stored}")
    home = base / nf(stored, WORDS[0]) / nf(stored, WORDS[1])
    (base / "ws").mkdir()
    g = GatewayProcess(home, {"fs": filesystem(base)}, ALLOW_ALL).start()
    try:
        yield Site(g, base, stored)
    finally:
        g.stop()


def test_the_server_opens_the_other_composition_so_the_check_must_too(site: Site) -> None:
    """The premise, through an unprotected sibling: server-filesystem reads `cafe\\u0301/x` as `café/x`."""
    sibling = site.base / nf(site.stored, WORDS[0]) / "notes.txt"
    sibling.write_text("a note\n")
    other = "NFD" if site.stored == "NFC" else "NFC"
    answer = site.call("read_text_file", {"path": "/".join([str(site.base), nf(other, WORDS[0]), "notes.txt"])})
    assert "a note" in json.dumps(answer), answer


def test_reads_of_the_token_and_policy_in_another_composition_are_refused_issue_22(site: Site) -> None:
    token = site.other_spellings("run", "gateway.token")
    policy = site.other_spellings("policy.yaml")
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("read_text_file", {"path": p}) for p in token + policy],
        *[("read_file", {"path": p + "/"}) for p in token],
        ("read_multiple_files", {"paths": [str(site.base / "ws"), *token]}),
        ("get_file_info", {"path": policy[0]}),
        ("list_directory", {"path": site.other_spellings("run")[0]}),
        ("edit_file", {"path": token[0], "dryRun": True,  # the yes/no oracle on the token's text
                       "edits": [{"oldText": site.gw.token[:6], "newText": "x"}]}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(site.call(tool, args))]
    assert let_through == []


def test_writes_and_moves_in_another_composition_are_refused_and_change_nothing_issue_22(site: Site) -> None:
    audit = 'version: "1"\nmode: audit\ndefaultAction: allow\n'
    calls: list[tuple[str, dict[str, Any]]] = [
        *[("write_file", {"path": p, "content": audit}) for p in site.other_spellings("policy.yaml")],
        *[("write_file", {"path": p, "content": "x"}) for p in site.other_spellings("ledger.db")],
        ("edit_file", {"path": site.other_spellings("policy.yaml")[0],
                       "edits": [{"oldText": "mode: enforce", "newText": "mode: audit"}]}),
        ("create_directory", {"path": site.other_spellings("run", "tokens", "evil")[0]}),
        # the home's parent, which holds every protected file, moved away in the other composition
        ("move_file", {"source": "/".join([str(site.base), nf("NFD" if site.stored == "NFC" else "NFC", WORDS[0])]),
                       "destination": str(site.base / "moved")}),
        ("move_file", {"source": str(site.base / "ws"), "destination": site.other_spellings()[0]}),
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(site.call(tool, args))]
    assert let_through == []
    assert (site.home / "policy.yaml").read_text() == site.policy
    assert not (site.base / "moved").exists()


def test_ordinary_non_ascii_workspace_files_still_read_and_write(site: Site) -> None:
    for form in ("NFC", "NFD"):
        path = str(site.base / "ws" / nf(form, f"naïve-{form}.txt"))
        wrote = site.call("write_file", {"path": path, "content": "résumé\n"})
        assert "error" not in wrote, wrote
        assert not wrote["result"].get("isError"), wrote
        read = site.call("read_text_file", {"path": path})
        assert "résumé" in read["result"]["content"][0]["text"], read
