"""The command line starts fast: `--help` imports no command module (issue 29, item 5).

Strategy: the listing `--help` prints comes from `SUMMARIES`, so one test keeps that table
equal to what click would print from each command's own docstring, and one runs `--help` in a
fresh interpreter and checks which modules it imported. Start-up times themselves are measured
by `bench/cli_startup.py`, never asserted here.
"""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from mcpwall.cli import COMMANDS, SUMMARIES, cli


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_listing_shows_each_commands_own_summary(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert SUMMARIES.get(name) == command.get_short_help_str(10**6)


def test_help_lists_every_command_without_importing_any_command_module() -> None:
    listing_of = {"approve": "Approve a held call (ID from the gateway's log, a...", "deny": "Deny a held call."}
    probe = ("import sys\nfrom mcpwall.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print('IMPORTED', sorted(m for m in sys.modules if m.startswith('mcpwall.cli._')"
             " or m in ('mcpwall.proxy', 'mcpwall.policy', 'httpx')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "IMPORTED []" in out
    for name in COMMANDS:
        assert f"  {name} " in out
    for summary in listing_of.values():
        assert summary in out
