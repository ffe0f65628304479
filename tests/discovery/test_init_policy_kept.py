"""`init` keeps a policy.yaml it did not write, and says so before it wraps anything.

Strategy: a fake home with Cursor's config and a state home holding a policy the
user wrote, `mcpwall init` through CliRunner as a user runs it; assertions on
what it prints (before its question, when it asks), on `--json`, and that the
kept file is byte for byte what it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from tests.discovery.homes import build_home, write

ENFORCE = "version: '1'\nmode: enforce\ndefaultAction: deny\n"
AUDIT = "version: '1'\nmode: audit\ndefaultAction: deny\n"


def init(tmp_path: Path, policy: str, *extra: str, input: str | None = None) -> tuple[Any, Path]:
    home, state = tmp_path / "home", tmp_path / "state"
    build_home(home, "linux", ["cursor"])
    kept = write(state, "policy.yaml", policy)
    args = ["init", "--home", str(state), "--scan-home", str(home), "--platform", "linux",
            "--mcpwall", "/opt/mcpwall/bin/mcpwall", *extra]
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False), kept


def flat(text: str) -> str:
    return " ".join(text.split())


def test_an_enforce_policy_kept_under_policy_audit_is_named_before_the_question(tmp_path: Path) -> None:
    result, kept = init(tmp_path, ENFORCE, "--policy", "audit", input="n\n")
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    note = (f"Keeping your {kept} (enforce mode; init did not write it, so --policy audit did not change it). "
            "That means every call through mcpwall, wrapped servers included, is decided by its rules and a call "
            "they deny is blocked, not only recorded.")
    assert note in out, out
    assert out.index(note) < out.index("Rewrite "), "said before the user is asked to wrap the servers"
    assert "--overwrite-policy" in out
    assert kept.read_text() == ENFORCE


def test_an_audit_policy_kept_under_policy_enforce_says_nothing_is_blocked(tmp_path: Path) -> None:
    result, kept = init(tmp_path, AUDIT, "--policy", "enforce", "--yes")
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    assert f"Keeping your {kept} (audit mode; init did not write it, so --policy enforce did not change it)" in out
    assert "nothing is blocked: calls its rules deny are only recorded" in out
    assert kept.read_text() == AUDIT


def test_a_kept_policy_of_the_requested_mode_is_named_without_a_warning(tmp_path: Path) -> None:
    result, kept = init(tmp_path, ENFORCE, "--policy", "enforce", "--yes")
    out = flat(result.output)
    assert f"Keeping your {kept} (enforce mode;" in out, out
    assert "That means" not in out, out


def test_a_kept_policy_that_does_not_load_is_said_to_stop_mcpwall(tmp_path: Path) -> None:
    result, kept = init(tmp_path, "version: '1'\nmode: sometimes\n", "--dry-run")
    out = flat(result.output)
    assert f"Keeping your {kept} (init did not write it), but it does not load" in out, out
    assert "mcpwall refuses to start on it until it is fixed" in out


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_json_carries_the_same_sentence(tmp_path: Path, mode: str) -> None:
    result, kept = init(tmp_path, ENFORCE, "--policy", mode, "--json")
    summary = json.loads(result.stdout)
    assert summary["policy"] is None
    assert summary["keptPolicy"].startswith(f"Keeping your {kept} (enforce mode;")
    assert ("blocked, not only recorded" in summary["keptPolicy"]) == (mode == "audit")
