"""Which mcpwall `init` writes into client configs (issue 27, item 5): one that outlives a clone.

Strategy: real executables laid out as a user's disk has them (a clone with its `.venv`, a pipx
bin dir, uv's cache) and `init` as the process it is, with that argv[0] and PATH; the command
written into a real client config is read back. tests/packaging/test_install.py does the same
with real pipx, uv and a clone's venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from tests.discovery.homes import USER_PATHS, write


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def _clone(root: Path) -> Path:
    (root / "src" / "mcpwall").mkdir(parents=True)
    (root / "src" / "mcpwall" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[project]\nname = "mcpwall"\n')
    return _exe(root / ".venv" / "bin" / "mcpwall")


def _init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv0: Path, path: str) -> tuple[str, str]:
    """`mcpwall init --yes` run as `argv0` with PATH=`path`: the command written, and what it printed."""
    home = tmp_path / "home"
    config = write(
        home, USER_PATHS["cursor"]["linux"], json.dumps({"mcpServers": {"t": {"command": "mcp-server-time"}}})
    )
    monkeypatch.setattr(sys, "argv", [str(argv0)])
    monkeypatch.setenv("PATH", path)
    args = [
        "init",
        "--yes",
        "--home",
        str(tmp_path / "state"),
        "--scan-home",
        str(home),
        "--platform",
        "linux",
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(config.read_text())["mcpServers"]["t"]["command"], " ".join(result.output.split())


def test_an_installed_mcpwall_is_written_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = _exe(tmp_path / "pipx-bin" / "mcpwall")
    command, said = _init(tmp_path, monkeypatch, installed, str(installed.parent))
    assert command == str(installed)
    assert "Warning" not in said


def test_a_clones_venv_alone_is_written_with_a_warning_naming_the_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = tmp_path / "work" / "mcpwall"
    tree = _clone(clone)
    command, said = _init(tmp_path, monkeypatch, tree, "/usr/bin:/bin")
    assert command == str(tree)
    assert f"Warning: clients will launch {tree}, which is in the source checkout {clone}" in said, said
    assert f"`pipx install {clone}` or `uv tool install {clone}`" in said
    assert "mcpwall uninstall" in said


def test_from_a_clone_an_installed_mcpwall_on_path_is_written_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _clone(tmp_path / "clone")
    installed = _exe(tmp_path / "bin" / "mcpwall")
    command, said = _init(tmp_path, monkeypatch, tree, f"{installed.parent}:/usr/bin:/bin")
    assert command == str(installed)
    assert f"clients will launch {installed}, the installed mcpwall, not {tree}" in said, said


def test_uvx_s_cached_copy_is_written_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = _exe(tmp_path / ".cache" / "uv" / "archive-v0" / "Xq3bT0" / "bin" / "mcpwall")
    command, said = _init(tmp_path, monkeypatch, cached, "/usr/bin:/bin")
    assert command == str(cached)
    assert "uv's cache" in said
    assert "`uv tool install` or `pipx install`" in said
