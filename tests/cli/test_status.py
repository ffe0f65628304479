"""`mcpwall status` reports the running gateway it finds through its home (SPEC 2).

Strategy: a real `mcpwall proxy` on a free port with the npm everything server; the real CLI
(in-process, CliRunner) with only `--home`, so it must find the gateway where the gateway
recorded its address. Then the policy file is broken on disk: the gateway refuses the reload
and keeps its policy, and `status` must say so and exit 1.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from tests.proxy.harness import PERMISSIVE, ROOT, GatewayProcess

pytestmark = pytest.mark.integration

EVERYTHING = {"command": str(ROOT / "node_modules" / ".bin" / "mcp-server-everything"), "args": ["stdio"]}


def _status(home: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["status", "--home", str(home), *extra])
    return result.exit_code, result.output


def _wait(condition: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_status_finds_the_gateway_by_its_home_and_reports_a_refused_reload(tmp_path: Path) -> None:
    g = GatewayProcess(tmp_path / "home", {"ev": EVERYTHING}, PERMISSIVE).start(timeout=120)
    try:
        _wait(lambda: (g.home / "run" / "gateway.json").exists())
        code, out = _status(g.home)
        assert code == 0, out
        assert g.url in out
        assert "upstream  ev: ready" in out
        assert "mode enforce" in out
        from mcpwall import _native
        assert f"hot path  {_native.hot_path()['state']}" in out  # the gateway runs this tree's build, as we do
        code, out = _status(g.home, "--json")
        data = json.loads(out)
        assert data["findings"] == []
        revision = data["policy"]["revision"]
        assert data["servers"]["ev"]["state"] == "ready"

        (g.home / "policy.yaml").write_text("rules: [\n  - {id: broken\n")
        _wait(lambda: json.loads(_status(g.home, "--json")[1])["policy"]["last_error"])
        code, out = _status(g.home)
        assert code == 1
        assert "the last policy reload was refused" in out
        assert json.loads(_status(g.home, "--json")[1])["policy"]["revision"] == revision
    finally:
        g.stop()
    code, out = _status(g.home)
    assert code == 1
    assert "no gateway with an HTTP API is running" in out
