"""mcp-seatbelt's signed JSONL: what we write, seatbelt accepts; what seatbelt writes, we check.

Strategy: node runs seatbelt's own algorithm (tests/ledger/seatbelt_oracle.mjs:
HMAC-SHA256(secret, String(_seq) + JSON.stringify(entry)), as in its
src/audit.ts) as the reference. `js_stringify` must print tricky JSON exactly
as node does; files node signs must verify with `mcpwall verify-audit FILE`,
and a tampered line must be reported by line number; the ledger's
`logs --export jsonl` must verify under node.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.ledger import Ledger, js_stringify, verify_jsonl

ORACLE = Path(__file__).with_name("seatbelt_oracle.mjs")
SECRET = "correct horse battery staple"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is needed as the JSON.stringify reference")

TRICKY = [
    '{"a": 1.0, "b": 1e21, "c": 1e-7, "d": 0.1, "e": -0.0, "f": 5e-324, "g": 123456789012345678901234}',
    '{"z": 1, "10": 2, "2": 3, "-1": 4, "01": 5, "4294967295": 6, "4294967294": 7}',
    '{"s": "tab\\t nl\\n ctl\\u0001\\u001f del\\u007f quote\\" back\\\\ slash/ é 漢 😀 \\u2028\\u2029"}',
    '{"lone": "\\ud800 and \\udfff"}',
    '[1e16, 1e15, 123.456, 100, 1.5e300, -2.5e-10, 0.000001, 0.0000001, 9007199254740993]',
    '{"nested": {"list": [true, false, null, {"k": []}], "empty": {}}, "dup": 1, "dup": 2}',
]


def node(*args: str, stdin: str = "") -> str:
    assert NODE is not None
    proc = subprocess.run([NODE, str(ORACLE), *args], input=stdin, capture_output=True, text=True, timeout=60,
                          check=True)
    return proc.stdout


def test_js_stringify_prints_json_exactly_as_node_does() -> None:
    expected = node("stringify", stdin="\n".join(TRICKY)).split("\n")[:-1]  # not splitlines: U+2028
    assert [js_stringify(json.loads(t)) for t in TRICKY] == expected


def entries(n: int = 6) -> list[dict[str, Any]]:
    return [{"toolName": f"tool_{i}", "description": "d", "args": {"path": f"/tmp/{i}", "n": i * 1.0, "é": "ü"},
             "action": "allow" if i % 2 else "deny", "timestamp": "2026-05-20T10:00:00.000Z",
             "reason": "No matching rule found", "context": {"client": "cursor", "requestCount": i}}
            for i in range(n)]


@pytest.fixture
def signed_by_seatbelt(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    path.write_text(node("sign", SECRET, stdin=json.dumps(entries())), encoding="utf-8")
    return path


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret"
    path.write_text(SECRET + "\n")
    return path


def verify_cli(path: Path, secret_file: Path) -> Any:
    return CliRunner().invoke(cli, ["verify-audit", str(path), "--secret-file", str(secret_file)])


def test_a_file_seatbelt_signed_verifies(signed_by_seatbelt: Path, secret_file: Path) -> None:
    result = verify_cli(signed_by_seatbelt, secret_file)
    assert result.exit_code == 0, result.output
    assert "OK: 6 lines verified" in result.output


def test_the_secret_may_come_from_seatbelts_environment_variable(signed_by_seatbelt: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEATBELT_AUDIT_SECRET", SECRET)
    assert CliRunner().invoke(cli, ["verify-audit", str(signed_by_seatbelt)]).exit_code == 0
    monkeypatch.setenv("SEATBELT_AUDIT_SECRET", "wrong")
    assert CliRunner().invoke(cli, ["verify-audit", str(signed_by_seatbelt)]).exit_code == 1


def _tamper(path: Path, how: str) -> None:
    lines = path.read_text().splitlines()
    if how == "edit":
        entry = json.loads(lines[2])
        entry["reason"] = "nothing to see here"
        lines[2] = json.dumps(entry, separators=(",", ":"))
    elif how == "delete":
        del lines[2]
    elif how == "insert":
        lines.insert(3, lines[1])
    elif how == "swap":
        lines[2], lines[3] = lines[3], lines[2]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("how", "line"), [("edit", 3), ("delete", 3), ("insert", 4), ("swap", 3)])
def test_a_tampered_seatbelt_file_is_reported_at_the_line(signed_by_seatbelt: Path, secret_file: Path, how: str,
                                                         line: int) -> None:
    _tamper(signed_by_seatbelt, how)
    result = verify_cli(signed_by_seatbelt, secret_file)
    assert result.exit_code == 1, result.output
    assert f"BROKEN at line {line}:" in result.output


def test_a_restart_at_seq_0_is_a_new_proxy_run_not_tampering(tmp_path: Path) -> None:
    path = tmp_path / "two-runs.jsonl"
    run = node("sign", SECRET, stdin=json.dumps(entries(3)))
    path.write_text(run + run)
    report = verify_jsonl(path, SECRET.encode())
    assert report.ok, report.problem
    assert report.rows == 6


def test_the_ledger_export_verifies_under_seatbelts_algorithm_and_ours(filled: Callable[..., Ledger],
                                                                       tmp_path: Path, secret_file: Path) -> None:
    ledger = filled(25)
    out = tmp_path / "export.jsonl"
    args = ["logs", "--home", str(ledger.home), "--export", "jsonl", "-o", str(out), "--secret-file", str(secret_file)]
    if ledger.backend.name == "postgresql":
        args += ["--ledger", ledger.backend.url]  # type: ignore[attr-defined]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == ledger.count("tool_calls") == 23  # rows 10 and 20 are protocol events
    first = json.loads(lines[0])
    assert list(first)[:8] == ["_seq", "_hmac", "toolName", "description", "args", "action", "timestamp", "reason"]
    assert first["args"] == {"message": "call 1", "n": 1}
    entries_out = [json.loads(line) for line in lines]
    # seatbelt's vocabulary and precision; how a call ended stays in `outcome`
    by_outcome = {e["outcome"]: e["action"] for e in entries_out}
    assert by_outcome == {"ok": "allow", "deny": "deny", "error": "allow"}  # a tool error: the policy allowed it
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["timestamp"]) for e in entries_out)
    assert json.loads(node("verify", str(out), SECRET)) == {"total": 23, "tampered": []}
    assert verify_cli(out, secret_file).exit_code == 0
    _tamper(out, "edit")
    assert json.loads(node("verify", str(out), SECRET))["tampered"] == [3]
    assert "BROKEN at line 3" in verify_cli(out, secret_file).output
    report = verify_jsonl(out, secret_file.read_bytes().strip())
    assert report.last_seq == 1  # the _seq of the last good entry (line 2), not a line number


def test_the_export_is_signed_with_the_ledger_key_by_default(filled: Callable[..., Ledger], tmp_path: Path) -> None:
    ledger = filled(5)
    out = tmp_path / "export.jsonl"
    with out.open("w") as f:
        assert ledger.export_jsonl(f) == 5
    key = ledger.key.decode()
    assert json.loads(node("verify", str(out), key)) == {"total": 5, "tampered": []}
    args = ["verify-audit", str(out), "--home", str(ledger.home)]
    assert CliRunner().invoke(cli, args).exit_code == 0
