"""The behavioural baseline: profiles per tool and the four kinds of deviation, from a ledger or a file.

Strategy: the model is fed synthetic call streams with one planted oddity
each; the `baseline` command replays a real ledger (both backends), an
mcp-seatbelt audit JSON array and a signed JSONL export.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.ledger import Ledger
from mcpwall.security.baseline import BehavioralBaseline, Observation
from tests.ledger.conftest import make_event

NOON = datetime(2026, 5, 20, 12, 0).astimezone()


def calls(n: int, tool: str = "read", args: dict[str, Any] | None = None, hour: int = 12) -> list[Observation]:
    when = NOON.replace(hour=hour)
    return [Observation.from_args(tool, args or {"path": f"/w/{i}"}, when + timedelta(minutes=i % 50), f"#{i}")
            for i in range(n)]


def kinds(model: BehavioralBaseline, stream: list[Observation]) -> list[str]:
    return [d.kind for d in model.replay(stream)]


def test_a_regular_stream_builds_profiles_and_raises_nothing() -> None:
    model = BehavioralBaseline()
    assert kinds(model, calls(60, "write", {"path": "/w", "content": "x"}) + calls(150)) == []
    read = model.profiles["read"]
    assert read.calls == 150
    assert read.hours[12] == 150
    assert sum(read.hours) == 150
    assert read.typical_keys() == ["path"]
    assert 15 < read.avg_size < 20


def test_a_new_tool_is_an_anomaly_only_after_the_learning_calls() -> None:
    model = BehavioralBaseline()
    assert kinds(model, calls(50) + calls(1, "early")) == []
    assert kinds(model, calls(60) + calls(1, "exfiltrate")) == ["new_tool"]


def test_new_argument_keys_are_an_anomaly_once_the_tool_is_known() -> None:
    model = BehavioralBaseline()
    stream = calls(5) + calls(1, args={"path": "/x", "recursive": True})
    assert kinds(model, stream) == []  # too few calls of the tool to judge
    assert kinds(model, calls(20) + calls(1, args={"path": "/x", "exec": "sh"})) == ["new_args"]


def test_oversized_arguments_are_an_anomaly() -> None:
    model = BehavioralBaseline()
    found = model.replay(calls(30) + calls(1, args={"path": "/x" * 400}))
    assert [d.kind for d in found] == ["size_anomaly"]
    assert "x the average" in found[0].detail
    assert found[0].ref == "#0"


def test_calls_at_an_unusual_hour_are_an_anomaly_after_learning() -> None:
    model = BehavioralBaseline()
    assert kinds(model, calls(120) + calls(1, hour=3)) == ["hour_anomaly"]
    assert kinds(BehavioralBaseline(), calls(20) + calls(1, hour=3)) == []  # still learning


def _audit_entries(n: int) -> list[dict[str, Any]]:
    out = [{"toolName": "read_file", "description": "", "args": {"path": f"/w/{i}"}, "action": "allow",
            "timestamp": NOON.replace(minute=i % 60).isoformat(), "reason": ""} for i in range(n)]
    out.append({"toolName": "read_file", "args": {"path": "/etc/shadow", "follow": True}, "action": "allow",
                "timestamp": NOON.replace(hour=4).isoformat(), "reason": ""})
    return out


def test_the_command_reads_a_seatbelt_audit_json_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(_audit_entries(120)))
    result = CliRunner().invoke(cli, ["baseline", str(path)])
    assert result.exit_code == 1, result.output
    assert "read_file" in result.stdout
    assert "120" in result.stdout
    assert "new_args" in result.stdout
    assert "hour_anomaly" in result.stdout
    assert "[entry 121]" in result.stdout
    data = json.loads(CliRunner().invoke(cli, ["baseline", str(path), "--json"]).stdout)
    assert data["observed"] == 121
    assert data["counts"]["new_args"] == 1
    path.write_text(json.dumps(_audit_entries(30)[:-1]))
    clean = CliRunner().invoke(cli, ["baseline", str(path)])
    assert clean.exit_code == 0
    assert "No anomalies" in clean.stdout


def test_the_command_replays_the_ledger_and_its_jsonl_export(filled: Callable[..., Ledger], tmp_path: Path) -> None:
    ledger = filled(120)
    ledger.submit(make_event(500, tool_name="echo", params={"name": "echo", "arguments": {"message": "x",
                                                                                          "shell": "rm -rf /"}}))
    assert ledger.flush()
    extra = ["--ledger", ledger.backend.url] if ledger.backend.name == "postgresql" else []  # type: ignore[attr-defined]
    result = CliRunner().invoke(cli, ["baseline", "--home", str(ledger.home), *extra, "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {p["tool"] for p in data["profiles"]} == {"everything__echo", "everything__get-sum"}
    assert [(a["kind"], a["ref"]) for a in data["anomalies"]] == [("new_args", "row 121")]
    export = tmp_path / "export.jsonl"
    with export.open("w") as f:
        ledger.export_jsonl(f)
    from_file = json.loads(CliRunner().invoke(cli, ["baseline", str(export), "--json"]).stdout)
    assert [a["kind"] for a in from_file["anomalies"]] == ["new_args"]


def test_the_command_reads_a_record_capture_and_refuses_other_json(tmp_path: Path) -> None:
    """`record` captures (seatbelt's .mcpcap.json) were read as "0 calls", any JSON object too."""
    events = [{"timestamp": 1764400000000 + i, "direction": "request", "kind": "request",
               "payload": {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": "fs__read_file", "arguments": {"path": f"/w/{i}"}}}}
              for i in range(5)]
    events.insert(2, {"timestamp": 1764400000003, "direction": "response", "kind": "response",
                      "payload": {"jsonrpc": "2.0", "id": 1, "result": {}}})
    capture = tmp_path / "s.mcpcap.json"
    capture.write_text(json.dumps({"sessionId": "s", "startedAt": 1, "events": events}))
    data = json.loads(CliRunner().invoke(cli, ["baseline", str(capture), "--json"]).stdout)
    assert data["observed"] == 5
    other = tmp_path / "other.json"
    other.write_text('{"foo": 1}')
    refused = CliRunner().invoke(cli, ["baseline", str(other)])
    assert refused.exit_code == 2
    assert "not an audit log" in refused.output
