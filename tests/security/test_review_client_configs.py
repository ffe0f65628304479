"""Review of issue 22: the client configs `init` pointed at the gateway are the gateway's too.

Strategy: a fake user home holding Cursor's and Claude Code's configs (tests.discovery.homes);
`mcpwall init --yes` into the gateway's home rewrites them to reach the gateway, each with its
client's named token; then a real `mcpwall proxy` on that home runs the real
`@modelcontextprotocol/server-filesystem` over the user home. The review found that an agent could
read another client's config (DLP masked the token, but `edit_file`'s dry run told it apart one
character at a time, so one agent could take another's identity), and write one: a config
rewritten to run its servers directly takes that client around the gateway from its next start.
Every read, write, edit (even a dry run) and move of those files, in several spellings, is refused
with `mcpwall.self-protection` and leaves them unchanged; other files of the user home still read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpwall._token import write_secret
from mcpwall.cli import cli
from tests.discovery.homes import USER_PATHS, build_home
from tests.proxy.harness import filesystem, gateway
from tests.proxy.test_self_protection_review import refused
from tests.security.review_helpers import Caller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ALLOW_ALL = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages:\n  ratelimit: {requestsPerMinute: 0}\n'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Path, dict[str, Path]]]:
    base = tmp_path_factory.mktemp("client-configs")
    user, state = base / "user", base / "state"
    configs = build_home(user, "linux", ["cursor", "claude-code"])
    (user / "notes.txt").write_text("a note\n")
    state.mkdir()
    write_secret(state / "run" / "gateway.token", "g" * 43)  # a gateway ran here once
    result = CliRunner().invoke(cli, ["init", "--home", str(state), "--scan-home", str(user), "--platform", "linux",
                                      "--mcpwall", "/opt/mcpwall/bin/mcpwall", "--yes"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert all("127.0.0.1" in p.read_text() or "mcpwall" in p.read_text() for p in configs.values())
    with gateway(state, {"fs": filesystem(user)}, ALLOW_ALL) as g:
        yield Caller(g), user, configs


def test_a_client_config_init_rewrote_cannot_be_read_or_changed_through_a_tool_issue_22(
        site: tuple[Caller, Path, dict[str, Path]]) -> None:
    caller, user, configs = site
    cursor, claude = configs["cursor"], configs["claude-code"]
    before = {p: p.read_bytes() for p in configs.values()}
    relative = USER_PATHS["cursor"]["linux"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_text_file", {"path": str(cursor)}),
        ("read_text_file", {"path": f"{user}/./{relative}"}),
        ("read_text_file", {"path": f"{user}/.cursor//mcp.json"}),
        ("read_text_file", {"path": f"{user}/.cursor/../.cursor/MCP.json"}),
        ("read_file", {"path": str(claude)}),
        ("read_multiple_files", {"paths": [str(user / "notes.txt"), str(claude)]}),
        ("edit_file", {"path": str(cursor), "dryRun": True, "edits": [{"oldText": "Bearer a", "newText": "x"}]}),
        ("write_file", {"path": str(cursor), "content": '{"mcpServers": {"fs": {"command": "npx"}}}'}),
        ("move_file", {"source": str(cursor), "destination": str(user / "cursor-old.json")}),
        ("move_file", {"source": str(user / "notes.txt"), "destination": str(cursor)}),
        ("move_file", {"source": str(cursor.parent), "destination": str(user / "cursor-dir")}),  # its directory
    ]
    let_through = [(tool, args) for tool, args in calls if not refused(caller.call(tool, args))]
    assert let_through == []
    assert {p: p.read_bytes() for p in configs.values()} == before
    assert "a note" in str(caller.call("read_text_file", {"path": str(user / "notes.txt")}))
