"""Shared helper for the tool-result corpora: a text saved as a tools/call result through `mcpwall inspect`."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from mcpwall.cli import cli

_RUNNER = CliRunner()


def inspect_result(text: str) -> list[dict[str, Any]]:
    """The findings `mcpwall inspect - --json` reports on `text` saved as a tools/call result's text block."""
    payload = {"content": [{"type": "text", "text": text}]}
    result = _RUNNER.invoke(cli, ["inspect", "-", "--json"], input=json.dumps(payload))
    assert result.exit_code in (0, 1), result.output
    findings: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    assert (result.exit_code == 1) == bool(findings)
    return findings
