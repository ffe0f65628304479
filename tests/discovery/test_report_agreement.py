"""One scoring, one set of labels: every report format counts the same servers the same way (issue 27, item 7).

Strategy: hypothesis builds fake homes from a pool of server configs a new
user meets (placeholders `${input:..}` and `${env:..}`, a `bash -c` server,
inline credentials, unpinned `npx` packages, sudo, docker, remote URLs) spread
over two clients' files, and runs the real CLI in-process on each: `check`
(text and `--json`), `report --format json`, Markdown and SARIF. For every
home, the summary counts equal the rows by level in each format, every
CRITICAL line under the table is a critical row (and every critical row has
one), and SARIF's levels follow the same map and stay schema-valid. The
placeholder and recommendation tests pin the exact complaints of the issue.
On the old code a `bash -c` server was "high (40)" in the table and CRITICAL
in the footer, `highRisk` counted critical servers too, and a placeholder in a
connection URL was flagged `secret-in-args`.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwall.cli import cli
from mcpwall.discovery import RULES
from tests.discovery.homes import USER_PATHS, write

HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((HERE / "sarif-2.1.0.json").read_text(encoding="utf-8"))
TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF2hJ4"

POOL: list[tuple[str, dict[str, Any]]] = [
    ("shell", {"command": "bash", "args": ["-c", "npx some-server"]}),
    ("github", {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}}),
    ("pg", {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres",
                                       "postgresql://app:${input:pg-pass}@localhost/db"]}),
    ("inline", {"command": "npx", "args": ["-y", "srv@1.0.0"], "env": {"GITHUB_TOKEN": TOKEN}}),
    ("sudo", {"command": "sudo", "args": ["srv"]}),
    ("time", {"command": "mcp-server-time"}),
    ("remote", {"url": "https://mcp.example.com/mcp"}),
    ("plain", {"url": "http://mcp.example.com/mcp"}),
    ("docker", {"command": "docker", "args": ["run", "--privileged", "-v", "/:/host", "img"]}),
    ("argtoken", {"command": "node", "args": ["srv.js", "--token", "hunter2hunter2"]}),
    ("wipe", {"command": "bash", "args": ["-c", "sudo rm -rf /tmp/x"]}),
    ("fetch", {"command": "uvx", "args": ["mcp-server-fetch"]}),
]
CLIENTS = {"cursor": USER_PATHS["cursor"]["linux"], "claude-desktop": USER_PATHS["claude-desktop"]["linux"]}
RULE_IDS = {r.id for r in RULES}
LABELS = {"CRITICAL": "critical", "HIGH": "high", "MEDIUM": "medium", "LOW": "low"}


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env={"COLUMNS": None}, catch_exceptions=False)


def build(home: Path, picks: list[tuple[int, str]]) -> None:
    files: dict[str, dict[str, Any]] = {c: {} for c in CLIENTS}
    for i, (pick, client) in enumerate(picks):
        kind, config = POOL[pick]
        files[client][f"s{i}-{kind}"] = config
    for client, servers in files.items():
        if servers:
            write(home, CLIENTS[client], json.dumps({"mcpServers": servers}, indent=2))


def scan_args(home: Path) -> list[str]:
    return ["--scan-home", str(home), "--platform", "linux"]


def table_rows(text: str) -> dict[str, str]:
    """server name -> level, read from `check`'s table (one line a row in a pipe)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("│").split("│")] if line.startswith("│") else []
        if len(cells) == 7 and cells[0]:
            rows[cells[0]] = cells[3].lower()
    return rows


def check_text_counts(text: str) -> dict[str, int]:
    line = next(x for x in text.splitlines() if x.startswith("Total:"))
    return {LABELS[m.group(1)]: int(m.group(2)) for m in re.finditer(r"\b(CRITICAL|HIGH|MEDIUM|LOW) (\d+)", line)}


def markdown_counts(text: str) -> tuple[dict[str, int], Counter[str]]:
    summary = {LABELS[m.group(1)]: int(m.group(2))
               for m in re.finditer(r"^\| \S+ (CRITICAL|HIGH|MEDIUM|LOW) \| (\d+) \|$", text, re.M)}
    section = text.split("## Servers", 1)[1].split("\n### ", 1)[0] if "## Servers" in text else ""
    rows = Counter(LABELS[m.group(1)] for m in re.finditer(r"^\|[^|]+\|[^|]+\|[^|]+\| \S+ (CRITICAL|HIGH|MEDIUM|LOW) \|",
                                                         section, re.M))
    return summary, rows


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(POOL) - 1), st.sampled_from(sorted(CLIENTS))), max_size=8))
def test_every_format_counts_the_servers_by_level_as_its_rows_do(picks: list[tuple[int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build(home, picks)
        report = json.loads(run("report", *scan_args(home), "--format", "json").stdout)
        levels = {s["name"]: s["risk"]["level"] for s in report["servers"]}
        by_level = Counter(levels.values())
        expected = {level: by_level.get(level, 0) for level in ("critical", "high", "medium", "low")}

        checked = run("check", *scan_args(home))
        rows = table_rows(checked.stdout)
        assert rows == levels or not levels
        footer = [x.split(":", 1)[0].removeprefix("CRITICAL ") for x in checked.stdout.splitlines()
                  if x.startswith("CRITICAL ")]
        assert sorted(footer) == sorted(n for n, lvl in rows.items() if lvl == "critical")
        assert check_text_counts(checked.stdout) == expected
        assert checked.exit_code == (1 if expected["critical"] else 0)

        summary = report["summary"]
        assert summary.get("levels") == expected
        assert (summary["critical"], summary.get("high"), summary["mediumRisk"], summary["lowRisk"]) == (
            expected["critical"], expected["high"], expected["medium"], expected["low"])
        assert summary["highRisk"] == expected["critical"] + expected["high"]  # seatbelt's meaning, documented
        assert sum(expected.values()) == summary["totalServers"]
        for s in report["servers"]:  # a server is never below its worst flag
            order = ["low", "medium", "high", "critical"]
            assert order.index(s["risk"]["level"]) >= max((order.index(f["severity"]) for f in s["risk"]["flags"]),
                                                          default=0), s

        as_json = json.loads(run("check", "--json", *scan_args(home)).stdout)
        assert as_json["summary"]["levels"] == expected
        assert sorted(c["name"] for c in as_json["critical"]) == sorted(footer)
        assert {s["name"]: s["level"] for s in as_json["servers"]} == levels

        md_summary, md_rows = markdown_counts(run("report", *scan_args(home)).stdout)
        assert md_summary == expected
        assert {k: md_rows.get(k, 0) for k in expected} == expected

        sarif = json.loads(run("report", *scan_args(home), "--format", "sarif").stdout)
        jsonschema.validate(sarif, SCHEMA)
        run_ = sarif["runs"][0]
        assert run_["invocations"][0]["properties"]["serversByLevel"] == expected
        to_sarif = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
        for result in run_["results"]:
            props = result["properties"]
            assert props["level"] == levels[props["server"]]
            assert result["level"] == to_sarif[props["severity"]]


PLACEHOLDERS: dict[str, dict[str, Any]] = {
    "input-url": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres@0.6.2",
                                             "postgresql://app:${input:pg-pass}@localhost:5432/db"]},
    "env-url-userinfo": {"command": "srv", "args": ["https://${env:USER}:${env:PASS}@api.example.com/x"]},
    "query-ref": {"command": "srv", "args": ["--endpoint", "https://api.example.com/?token=${env:TOK}"]},
    "query-dollar": {"command": "srv", "args": ["https://api.example.com/?api_key=$API_KEY"]},
    "percent-url": {"command": "srv", "args": ["postgres://u:%PGPASSWORD%@h/db"]},
    "flag-refs": {"command": "srv", "args": ["--token", "${env:GITHUB_TOKEN}", "--api-key=${API_KEY}",
                                            "--password", "$PGPASSWORD", "--secret", "%SECRET%",
                                            "--key", "{env:KEY}", "--pat", "{{PAT}}", "--auth", "$env:AUTH"]},
    "quoted": {"command": "srv", "args": ["--api-key", '"${API_KEY}"', "--token='${env:T}'"]},
    "header-arg": {"command": "srv", "args": ["--header", "Authorization: Bearer ${env:GITHUB_TOKEN}"]},
    "assignment": {"command": "docker", "args": ["run", "-e", "GITHUB_TOKEN=${env:GITHUB_TOKEN}", "img@sha256:1"]},
    "shell-line": {"command": "sh", "args": ["-c", "srv --token $GITHUB_TOKEN --url https://h/?token=$T"]},
    "env-refs": {"command": "srv", "env": {"GITHUB_TOKEN": "${env:GITHUB_TOKEN}", "API_KEY": "${input:key}",
                                           "DB_PASSWORD": '"${DB_PASSWORD}"', "PAT": "$env:PAT",
                                           "SECRET": "Bearer {env:SECRET}"}},
    "header-refs": {"url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${input:tok}", "X-Api-Key": "${env:KEY}",
                                "Cookie": "session=${env:SESSION}"}},
    "url-ref": {"url": "https://mcp.example.com/mcp?token=${env:TOK}"},
}


def test_no_placeholder_is_flagged_as_a_secret_in_any_spelling(tmp_path: Path) -> None:
    """`${input:id}`, `${env:X}`, `${X}`, `$X`, `$env:X`, `%X%`, `{env:X}`, `{{X}}`, quoted, after a scheme."""
    write(tmp_path, CLIENTS["cursor"], json.dumps({"mcpServers": PLACEHOLDERS}))
    report = json.loads(run("report", *scan_args(tmp_path), "--format", "json").stdout)
    flagged = {s["name"]: [f["rule"] for f in s["risk"]["flags"] if f["rule"] in ("secret-in-args", "inline-secret")]
               for s in report["servers"]}
    assert flagged == {name: [] for name in PLACEHOLDERS}
    # the reference is shown as written: nothing was hidden, so a reader sees where the secret comes from
    pg = next(s for s in report["servers"] if s["name"] == "input-url")
    assert "postgresql://app:${input:pg-pass}@localhost:5432/db" in pg["args"]


def test_a_real_secret_next_to_the_placeholders_is_still_flagged(tmp_path: Path) -> None:
    write(tmp_path, CLIENTS["cursor"], json.dumps({"mcpServers": {
        "url-pass": {"command": "srv", "args": ["postgresql://app:s3cretPass@localhost/db"]},
        "arg": {"command": "srv", "args": ["--token", TOKEN]},
        "quoted-literal": {"command": "srv", "args": ["--api-key", '"hunter2hunter2"']},
        "env": {"command": "srv", "env": {"GITHUB_TOKEN": TOKEN}},
        "query": {"url": "https://mcp.example.com/mcp?token=abcdef123456"},
    }}))
    report = json.loads(run("report", *scan_args(tmp_path), "--format", "json").stdout)
    rules = {s["name"]: {f["rule"] for f in s["risk"]["flags"]} for s in report["servers"]}
    assert "secret-in-args" in rules["url-pass"]
    assert "secret-in-args" in rules["arg"]
    assert "secret-in-args" in rules["quoted-literal"]
    assert "inline-secret" in rules["env"]
    assert "secret-in-args" in rules["query"]


def test_a_bash_dash_c_server_has_one_label_in_the_table_the_footer_and_the_summary(tmp_path: Path) -> None:
    write(tmp_path, CLIENTS["cursor"], json.dumps({"mcpServers": {"shell": POOL[0][1], "time": POOL[5][1]}}))
    out = run("check", *scan_args(tmp_path))
    assert out.exit_code == 1
    assert table_rows(out.stdout) == {"shell": "critical", "time": "low"}
    assert "CRITICAL shell: shell-interpreter (command bash)" in out.stdout
    assert check_text_counts(out.stdout) == {"critical": 1, "high": 0, "medium": 0, "low": 1}


def test_recommendations_say_what_to_do_not_the_flag_again(tmp_path: Path) -> None:
    write(tmp_path, CLIENTS["cursor"], json.dumps({"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": TOKEN}},
        "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
        "shell": {"command": "bash", "args": ["-c", "npx some-server"]},
        "argtoken": {"command": "node", "args": ["srv.js", "--api-key", "hunter2hunter2"]},
    }}))
    report = json.loads(run("report", *scan_args(tmp_path), "--format", "json").stdout)
    recs = report["recommendations"]
    text = "\n".join(recs)
    assert "github: move GITHUB_TOKEN into the environment and reference it as ${env:GITHUB_TOKEN}" in text
    assert "pin the package version: `npx -y @modelcontextprotocol/server-github@X.Y.Z`" in text
    assert "pin the package version: `uvx mcp-server-fetch==X.Y.Z`" in text
    assert "mcpwall wrap --name shell" in text
    assert '"API_KEY": "${env:API_KEY}"' in text
    assert TOKEN not in text
    assert "hunter2hunter2" not in text
    descriptions = {r.description for r in RULES}
    for line in recs:
        assert line.split(": ", 1)[-1] not in descriptions, line
    # worst server first (github: 70, shell: 40, both critical), worst flag first, the credential before its scope
    assert [r.split(":", 1)[0] for r in recs[:3]] == ["[HIGH] github", "[HIGH] github", "[MEDIUM] github"]
    assert recs[0].startswith("[HIGH] github: move GITHUB_TOKEN")
    assert recs.index(next(r for r in recs if "shell:" in r)) < recs.index(next(r for r in recs if "fetch:" in r))
    assert recs[-1].startswith("Route the 4 unguarded server(s) through mcpwall: `mcpwall init`")
    # Markdown shows the same advice next to each flag, SARIF in each result's message
    markdown = run("report", *scan_args(tmp_path)).stdout
    assert "| What to do |" in markdown
    assert "reference it as ${env:GITHUB_TOKEN}" in markdown
    sarif = json.loads(run("report", *scan_args(tmp_path), "--format", "sarif").stdout)
    assert any("To fix: pin the package version" in r["message"]["text"] for r in sarif["runs"][0]["results"])


def test_the_reference_syntax_follows_the_client_that_configures_the_server(tmp_path: Path) -> None:
    write(tmp_path, CLIENTS["claude-desktop"], json.dumps({"mcpServers": {}}))
    write(tmp_path, ".claude.json", json.dumps({"mcpServers": {"gh": {"command": "srv",
                                                                      "env": {"GITHUB_TOKEN": TOKEN}}}}))
    report = json.loads(run("report", *scan_args(tmp_path), "--format", "json").stdout)
    assert any("reference it as ${GITHUB_TOKEN}" in r for r in report["recommendations"])


def test_every_rule_has_advice_that_is_not_its_description() -> None:
    from mcpwall.discovery._advice import ADVICE

    assert set(ADVICE) == RULE_IDS
