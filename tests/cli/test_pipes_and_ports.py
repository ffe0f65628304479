"""Output in pipes and CI logs, and a gateway port that is taken (issue 27, item 8).

Strategy: real subprocesses of the installed `mcpwall` command with stdout a
pipe, as `mcpwall check | cat` and a CI log see it. The home holds long
server names and servers with many flags; each table row must be one line
that holds its server's name and every rule id whole (rich folded them at 80
columns: `shell-interprete` / `r`). With $COLUMNS set narrow the rows may
wrap, but only between words. For the port, the test binds a socket on a free
port and runs `mcpwall proxy --port THAT` with the real npm memory server:
exit 1, one line naming the port and `--port`, and the server never started
(its stderr line "running on stdio", which the gateway logs at INFO, never
appears; the old code logged it, then uvicorn's `[Errno 98]`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.discovery.homes import USER_PATHS, write

ROOT = Path(__file__).resolve().parents[2]
MCPWALL = str(Path(sys.executable).with_name("mcpwall"))
MEMORY = ROOT / "node_modules" / ".bin" / "mcp-server-memory"

SERVERS = {
    "a-rather-long-server-name-for-the-table": {"command": "bash", "args": ["-c", "sudo rm -rf /tmp/x"]},
    "github-with-a-token-in-the-config-file": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                               "env": {"GITHUB_TOKEN": "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF2hJ4"}},
    "docker-everything": {"command": "docker", "args": ["run", "--privileged", "-v", "/:/host", "--network", "host",
                                                        "img", "--no-sandbox", "http://mcp.example.com/api"]},
    "time": {"command": "mcp-server-time"},
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "NO_COLOR": "1", **extra}


def _check(home: Path, **env: str) -> tuple[str, dict[str, list[str]]]:
    write(home, USER_PATHS["cursor"]["linux"], json.dumps({"mcpServers": SERVERS}))
    args = [MCPWALL, "check", "--scan-home", str(home), "--platform", "linux"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=_env(**env))
    assert out.returncode == 1, out.stderr
    data = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120,
                                     env=_env()).stdout)
    return out.stdout, {s["name"]: s["flags"] for s in data["servers"]}


def test_check_in_a_pipe_keeps_every_row_on_one_line_with_names_and_rule_ids_whole(tmp_path: Path) -> None:
    text, flags = _check(tmp_path)
    assert sum(len(f) for f in flags.values()) >= 12
    for name, rules in flags.items():
        lines = [x for x in text.splitlines() if x.startswith(f"│ {name} ")]
        assert len(lines) == 1, (name, text)
        cells = [c.strip() for c in lines[0].strip("│").split("│")]
        assert cells[0] == name
        assert cells[5].split(", ") == (rules or ["-"])
    # the CRITICAL lines and their advice are never folded either
    for name in ("a-rather-long-server-name-for-the-table", "github-with-a-token-in-the-config-file"):
        assert any(x.startswith(f"CRITICAL {name}: ") for x in text.splitlines()), text


def test_a_narrow_columns_setting_wraps_rows_between_words_never_inside_a_rule_id(tmp_path: Path) -> None:
    text, flags = _check(tmp_path, COLUMNS="60")
    words = {w.strip(",") for line in text.splitlines() for cell in line.split("│") for w in cell.split()}
    for name, rules in flags.items():
        assert name in words, (name, text)
        for rule in rules:
            assert rule in words, (rule, text)


def _taken_port() -> socket.socket:
    """A loopback port held by a listening socket (the port a test says is in use)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_proxy_on_a_taken_port_exits_1_with_one_line_and_starts_no_upstream(tmp_path: Path) -> None:
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"memory": {"command": str(MEMORY)}}}), encoding="utf-8")
    with _taken_port() as taken:
        port = taken.getsockname()[1]
        try:
            out = subprocess.run([MCPWALL, "proxy", "--home", str(tmp_path / "home"), "--port", str(port),
                                  "--servers", str(servers), "--log-level", "info"],
                                 capture_output=True, text=True, timeout=60, env=_env())
        except subprocess.TimeoutExpired as exc:  # the old code started the servers and kept running
            raise AssertionError(f"the gateway did not stop on a taken port: {exc.stderr!r}") from exc
    assert out.returncode == 1, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.strip()]
    assert lines == [f"mcpwall: port {port} is already in use on 127.0.0.1 (another mcpwall gateway, or another "
                     "program); stop it or choose another port with --port"], out.stderr
    assert "running on stdio" not in out.stderr + out.stdout
    assert "Errno" not in out.stderr


def test_the_port_check_passes_a_free_port_and_port_0_and_names_a_bad_host() -> None:
    from mcpwall.cli._port import AddressUnavailable, check_port

    with _taken_port() as sock:
        port = sock.getsockname()[1]
    check_port("127.0.0.1", port)  # free again: a closed listener (even in TIME_WAIT) does not count
    check_port("127.0.0.1", 0)
    with _taken_port() as sock, pytest.raises(AddressUnavailable, match=r"--port"):
        check_port("127.0.0.1", sock.getsockname()[1])
    with _taken_port() as sock, pytest.raises(AddressUnavailable, match=r"already in use on localhost"):
        check_port("localhost", sock.getsockname()[1])  # a name: each of its addresses is tried
    check_port("localhost", port)
    with pytest.raises(AddressUnavailable, match=r"not an address of this machine; check --host"):
        check_port("192.0.2.1", 9420)  # TEST-NET-1: never assigned to this machine


def test_print_whole_keeps_a_trace_table_of_long_rule_ids_on_one_line_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper `simulate -v` can use for its rule trace: rule ids of 40 characters at 80 columns."""
    import io

    from rich.console import Console
    from rich.table import Table

    from mcpwall.cli._tables import print_whole

    monkeypatch.delenv("COLUMNS", raising=False)
    ids = ["allow-workspace-filesystem-reads-in-project", "deny-credential-files-everywhere-on-disk"]
    table = Table(title="Rule trace")
    for col in ("rule", "layer", "action", "status", "why"):
        table.add_column(col)
    for rule in ids:
        table.add_row(rule, "profile", "allow", "[green]matched[/]", "argConstraints startsWith /workspace/ failed")
    out = io.StringIO()
    print_whole(Console(file=out, width=80), table)
    for rule in ids:
        assert sum(rule in line for line in out.getvalue().splitlines()) == 1, out.getvalue()
    narrow = io.StringIO()
    monkeypatch.setenv("COLUMNS", "60")
    print_whole(Console(file=narrow), table)
    words = {w for line in narrow.getvalue().splitlines() for cell in line.split("│") for w in cell.split()}
    assert set(ids) <= words, narrow.getvalue()


def test_simulate_verbose_in_a_pipe_prints_every_rule_id_of_its_trace_whole() -> None:
    """Issue 27, item 8: `simulate -v` cut rule ids at 80 columns when its output was not a terminal."""
    from mcpwall.policy import PolicyEngine

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([str(Path(sys.executable).parent / "mcpwall"), "simulate", "write_file", "--args",
                          '{"path": "/workspace/a.txt", "content": "x"}', "--verbose"],
                         capture_output=True, text=True, timeout=60, env=env, check=False).stdout
    ids = [r.id for r in PolicyEngine.from_template("default").compiled.all_rules]
    assert len(ids) > 5
    lines = out.splitlines()
    for rule_id in ids:
        assert any(rule_id in line for line in lines), rule_id
