"""Issue 22 item 4 through the real gateway: a credential file with a trailing separator is refused.

Strategy: the shipped default policy, with its workspace directory (`/workspace/`) pointed at a
temporary workspace holding `.env`, `id_rsa` and `README.md`, in front of the real npm
`mcp-server-filesystem` on that workspace (which resolves `.env/` to the file, as Node's
path.resolve does). Every spelling of the two credential files must be refused with -32001 and
their content never returned; the README must still be readable, as the default allows workspace
reads. On the old code `.env/` and its kin were allowed and the secret came back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpwall.policy import template_text
from tests.harness import running, text_of
from tests.stages.helpers import BIN, filesystem

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(120),
              pytest.mark.skipif(not (BIN / "mcp-server-filesystem").exists(), reason="npm servers not installed")]

SECRET = "OPENAI_API_KEY=sk-issue22-never-returned"
KEY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW-issue22"


def _policy(root: Path) -> str:
    text = template_text("default").replace("/workspace/", f"{root}/")
    return text + "stages:\n  ratelimit: {requestsPerMinute: 0}\n"


@pytest.mark.parametrize("suffix", ["/", "//", "/./", "/.//./", "/../.env/"])
async def test_a_credential_file_read_with_a_trailing_separator_is_refused_issue_22(
        tmp_path: Path, suffix: str) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / ".env").write_text(SECRET + "\n")
    (root / "id_rsa").write_text(KEY + "\n")
    (root / "README.md").write_text("# Workspace\nHello.\n")
    async with running(tmp_path / "home", _policy(root), {"fs": filesystem(root)}) as gw:
        readme = await gw.call("fs__read_text_file", {"path": str(root / "README.md")})
        assert "Hello." in text_of(readme)
        for name in (".env", "id_rsa"):
            path = f"{root}/{name}{suffix}"
            answer = await gw.call("fs__read_text_file", {"path": path})
            assert "error" in answer, (path, answer)
            assert answer["error"]["code"] == -32001, answer
            assert "block-credential-files" in answer["error"]["data"]["rule_ids"]
            assert "OPENAI_API_KEY" not in str(answer)
            assert KEY not in str(answer)
            for tool in ("fs__read_file", "fs__read_multiple_files"):
                args = {"paths": [path]} if tool.endswith("multiple_files") else {"path": path}
                other = await gw.call(tool, args)
                assert "OPENAI_API_KEY" not in str(other), (tool, other)
                assert KEY not in str(other), (tool, other)
