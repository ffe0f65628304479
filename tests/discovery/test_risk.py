"""Risk rules: seatbelt's thirteen with its scores, the cases seatbelt missed, and ours.

Strategy: each rule gets launches that must fire it and near misses that must
not; the score and level arithmetic is checked against seatbelt's table; the
OWASP mapping must use the 2025 list only. Bypass attempts (launchers,
paths, `.exe`, flags before the package) are part of each rule's cases.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpwall.discovery import OWASP_LLM_2025, RULE_OWASP, RULES, Launch, assess
from mcpwall.discovery._model import level_for


def launch(command: str | None = None, *args: str, **kw: object) -> Launch:
    return Launch(command=command, args=tuple(args), **kw)  # type: ignore[arg-type]


def fired(x: Launch) -> set[str]:
    return {f.rule for f in assess(x).flags}


FIRES: list[tuple[str, Launch]] = [
    ("shell-interpreter", launch("bash", "-c", "echo hi")),
    ("shell-interpreter", launch("/bin/sh")),
    ("shell-interpreter", launch("python3", "-m", "srv")),  # seatbelt missed python3
    ("shell-interpreter", launch("/usr/bin/python3.12", "srv.py")),
    ("shell-interpreter", launch("C:\\Windows\\System32\\cmd.exe", "/c", "npx", "srv")),
    ("shell-interpreter", launch("pwsh.exe", "-Command", "x")),
    ("shell-interpreter", launch("env", "FOO=1", "bash", "-c", "x")),  # through a launcher
    ("shell-interpreter", launch("sudo", "-u", "root", "zsh")),
    ("shell-interpreter", launch("node", "-e", "require('child_process')")),
    ("docker-container", launch("docker", "run", "--privileged", "img")),
    ("docker-container", launch("docker", "run", "--network", "host", "img")),  # seatbelt wanted --network=host
    ("docker-container", launch("podman", "run", "-v", "/:/host", "img")),
    ("docker-container", launch("docker", "run", "-v", "/var/run/docker.sock:/var/run/docker.sock", "img")),
    ("docker-container", launch("docker", "run", "--mount", "type=bind,source=/etc,target=/e", "img")),
    ("docker-container", launch("docker", "run", "--cap-add=SYS_ADMIN", "img")),
    ("no-sandbox", launch("npx", "-y", "puppeteer-mcp", "--no-sandbox")),
    ("no-sandbox", launch("claude", "mcp", "serve", "--dangerously-skip-permissions")),
    ("network-tool", launch("curl", "https://x")),
    ("network-tool", launch("/usr/bin/socat", "STDIO", "TCP:host:1")),
    ("network-transport", launch(None, url="https://x/mcp", transport="streamable-http")),
    ("network-transport", launch(None, url="https://x/sse", transport="sse")),
    ("process-spawn", launch("node", "srv.js", "--allow-exec")),
    ("destructive-fs", launch("srv", "--cleanup", "rm -rf /tmp/x")),
    ("destructive-fs", launch("srv", "rm -r -f /x")),
    ("destructive-fs", launch("rm", "-rf", "/x")),
    ("destructive-fs", launch("srv", "format C:")),
    ("remote-access", launch("srv", "--endpoint", "https://api.example.com")),
    ("sensitive-env", launch("srv", env={"GITHUB_TOKEN": "${env:T}"})),  # seatbelt's \\bTOKEN\\b missed it
    ("sensitive-env", launch("srv", env={"apiKey": "x"})),
    ("sensitive-env", launch("srv", env={"DB_PASSWORD": "x"})),
    ("package-runner", launch("npx", "-y", "pkg@1.0.0")),
    ("package-runner", launch("uvx", "pkg==1.0")),
    ("package-runner", launch("npx.cmd", "pkg@1.0.0")),
    ("package-runner", launch("npm", "exec", "pkg@1.0.0")),
    ("risky-package", launch("npx", "-y", "mcp-shell-server")),  # seatbelt checked args[0] only: -y hid it
    ("risky-package", launch("npx", "--yes", "--package", "puppeteer-mcp-server", "run")),
    ("risky-package", launch("uvx", "--from", "mcp-exec-tools==1.0", "tool")),
    ("privilege-escalation", launch("srv", "--then", "sudo", "reboot")),
    ("privilege-escalation", launch("sudo", "node", "srv.js")),  # the command itself
    ("privilege-escalation", launch("doas", "srv")),
    ("sensitive-paths", launch("srv", "/etc/passwd")),
    ("sensitive-paths", launch("srv", "~/Documents")),
    ("sensitive-paths", launch("srv", "C:\\Users\\me\\Desktop")),
    ("sensitive-paths", launch("srv", "--root=/home/me")),
    ("inline-secret", launch("srv", env={"GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"})),
    ("inline-secret", launch(None, url="https://x", transport="sse", headers={"Authorization": "Bearer abc.def"})),
    ("inline-secret", launch("srv", env={"NOT_A_SECRET_NAME": "sk-ant-abcdefghijklmnopqrstuv"})),
    ("secret-in-args", launch("srv", "--api-key", "abcd1234efgh")),
    ("secret-in-args", launch("srv", "--token=abcd1234efgh")),
    ("secret-in-args", launch("bash", "-c", "srv --token SUPERSECRETVALUE123456789")),  # one argv word
    ("secret-in-args", launch("sh", "-c", "exec srv --api-key=SUPERSECRETVALUE444444444")),
    ("secret-in-args", launch("srv", "https://user:hunter22@db.example.com/x")),
    ("secret-in-args", launch("docker", "run", "-e", "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "img")),
    ("secret-in-args", launch(None, url="https://x/mcp?api_key=abcdef123456", transport="streamable-http")),
    ("plaintext-http", launch(None, url="http://mcp.example.com/mcp", transport="streamable-http")),
    ("plaintext-http", launch("npx", "mcp-remote@1.0.0", "http://10.0.0.5:8000/sse")),
    ("unpinned-package", launch("npx", "-y", "@modelcontextprotocol/server-memory")),
    ("unpinned-package", launch("npx", "-y", "pkg@latest")),
    ("unpinned-package", launch("npx", "pkg@^1.2.0")),
    ("unpinned-package", launch("uvx", "mcp-server-time")),
    ("unpinned-package", launch("uvx", "mcp-server-time>=1")),
    ("unpinned-package", launch("pipx", "run", "pkg")),
    ("broad-filesystem", launch("npx", "-y", "@modelcontextprotocol/server-filesystem@1.0.0", "/")),
    ("broad-filesystem", launch("srv", "~")),
    ("broad-filesystem", launch("srv", "--root=/home/me", home="/home/me")),
    ("broad-filesystem", launch("srv", "C:\\")),
]

QUIET: list[tuple[str, Launch]] = [
    ("shell-interpreter", launch("node", "server.js")),
    ("shell-interpreter", launch("bashful-server")),
    ("docker-container", launch("docker", "run", "-i", "--rm", "mcp/fetch")),
    ("docker-container", launch("docker", "run", "-v", "/srv/data:/data", "img")),
    ("no-sandbox", launch("srv", "--sandbox")),
    ("network-tool", launch("curlie-mcp")),
    ("network-transport", launch("srv")),
    ("process-spawn", launch("srv", "--executor-count", "2")),
    ("destructive-fs", launch("srv", "--format", "json")),  # seatbelt's format\\b matched this
    ("destructive-fs", launch("srv", "--output-format=text")),
    ("sensitive-env", launch("srv", env={"KEYBOARD_LAYOUT": "us", "SSH_KEY_PATH": "/k", "AUTHOR": "me"})),
    ("package-runner", launch("node", "x.js")),
    ("risky-package", launch("npx", "-y", "@modelcontextprotocol/server-memory")),
    ("privilege-escalation", launch("srv", "--summary")),
    ("sensitive-paths", launch("/opt/homebrew/bin/srv")),  # seatbelt's 'home' matched homebrew
    ("inline-secret", launch("srv", env={"GITHUB_TOKEN": "${env:GITHUB_TOKEN}", "API_KEY": "<your key>"})),
    ("inline-secret", launch("srv", env={"DEBUG": "true", "PORT": "8080"})),
    ("inline-secret", launch(None, url="https://x", transport="sse", headers={"Authorization": "Bearer ${TOKEN}"})),
    ("secret-in-args", launch("srv", "--token-file", "--verbose")),
    ("secret-in-args", launch("srv", "--api-key", "${API_KEY}")),
    ("plaintext-http", launch(None, url="http://127.0.0.1:9000/mcp", transport="streamable-http")),
    ("plaintext-http", launch(None, url="http://localhost:9000/mcp", transport="sse")),
    ("plaintext-http", launch(None, url="http://[::1]:9000/mcp", transport="sse")),
    ("plaintext-http", launch(None, url="https://x/mcp", transport="sse")),
    ("unpinned-package", launch("npx", "-y", "@scope/pkg@1.2.3")),
    ("unpinned-package", launch("uvx", "mcp-server-time==2025.1.1")),
    ("unpinned-package", launch("uvx", "mcp-server-time@2025.1.1")),
    ("unpinned-package", launch("npx", "./local-server")),
    ("broad-filesystem", launch("srv", "/home/me/projects/app", home="/home/me")),
]


@pytest.mark.parametrize(("rule", "x"), FIRES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(FIRES)])
def test_each_rule_fires_on_what_it_is_meant_to_catch(rule: str, x: Launch) -> None:
    assert rule in fired(x)


@pytest.mark.parametrize(("rule", "x"), QUIET, ids=[f"{r}-{i}" for i, (r, _) in enumerate(QUIET)])
def test_each_rule_stays_quiet_on_near_misses(rule: str, x: Launch) -> None:
    assert rule not in fired(x)


def test_seatbelts_thirteen_rules_keep_their_names_and_severities() -> None:
    seatbelt = {"shell-interpreter": "critical", "docker-container": "high", "no-sandbox": "critical",
                "network-tool": "high", "network-transport": "medium", "process-spawn": "high",
                "destructive-fs": "critical", "remote-access": "medium", "sensitive-env": "high",
                "package-runner": "medium", "risky-package": "high", "privilege-escalation": "critical",
                "sensitive-paths": "medium"}
    ours = {r.id: r.severity for r in RULES}
    assert {k: ours[k] for k in seatbelt} == seatbelt
    assert [r.id for r in RULES][:13] == list(seatbelt)


def test_scores_add_up_and_levels_use_seatbelts_thresholds() -> None:
    risk = assess(launch("bash", "-c", "sudo rm -rf /"))  # shell 40 + destructive 40 + privilege 40
    assert {f.rule for f in risk.flags} >= {"shell-interpreter", "destructive-fs", "privilege-escalation"}
    assert risk.score == sum({"critical": 40, "high": 25, "medium": 10, "low": 5}[f.severity] for f in risk.flags)
    assert risk.level == "critical"
    assert [level_for(s) for s in (0, 9, 10, 29, 30, 59, 60)] == ["low", "low", "medium", "medium", "high", "high",
                                                                  "critical"]
    clean = assess(launch("mcp-server-time"))
    assert (clean.score, clean.level, clean.flags) == (0, "low", ())


def test_a_critical_flag_makes_a_server_critical_even_below_60() -> None:
    """Issue 27, item 7: `bash -c` was "high (40)" in the table and CRITICAL in the footer."""
    risk = assess(launch("bash", "-c", "x"))
    assert risk.score == 40
    assert risk.level == "critical"
    assert risk.critical


def test_every_rule_maps_to_the_owasp_llm_top_10_of_2025_only() -> None:
    assert list(OWASP_LLM_2025) == [f"LLM{i:02d}" for i in range(1, 11)]
    assert OWASP_LLM_2025["LLM03"][0] == "Supply Chain"
    assert OWASP_LLM_2025["LLM10"][0] == "Unbounded Consumption"
    for rule in RULES:
        assert rule.owasp, rule.id
        assert set(rule.owasp) <= set(OWASP_LLM_2025), rule.id
    assert set(RULE_OWASP["privilege-escalation"]) == {"LLM06"}  # not 2023's LLM04 Model Denial of Service
    assert "LLM08" not in RULE_OWASP["remote-access"]  # not "Vector Embedding Weaknesses"


def test_flags_carry_their_owasp_tags_and_evidence_without_values() -> None:
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    risk = assess(launch("npx", "-y", "pkg", "--token", secret, env={"GITHUB_TOKEN": secret}))
    for f in risk.flags:
        assert f.owasp
        assert secret not in f.evidence
    assert next(f for f in risk.flags if f.rule == "inline-secret").evidence == "env GITHUB_TOKEN"


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_world_writable_command_or_script_is_critical(tmp_path: Path) -> None:
    script = tmp_path / "server.js"
    script.write_text("1")
    script.chmod(0o644)
    assert "world-writable-command" not in fired(launch("node", str(script)))
    script.chmod(0o666)
    assert "world-writable-command" in fired(launch("node", str(script)))
    exe = tmp_path / "open" / "srv"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    exe.parent.chmod(0o777)  # anyone may swap the file (no sticky bit)
    assert "world-writable-command" in fired(launch(str(exe)))
    exe.parent.chmod(0o1777)
    assert "world-writable-command" not in fired(launch(str(exe)))
    assert "world-writable-command" not in fired(launch(str(exe), local=False))
