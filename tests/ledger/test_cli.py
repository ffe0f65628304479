"""`mcpwall logs` and `mcpwall timeline`: filters, JSON, cursor paging that survives new rows, --follow.

Strategy: a ledger filled through the writer on each backend, read with the
real commands through click's CliRunner; for --follow, a thread appends rows
while the command runs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpwall.cli import cli
from mcpwall.ledger import Ledger
from tests.ledger.conftest import make_event


def run(ledger: Ledger, *args: str) -> Result:
    extra = ["--ledger", ledger.backend.url] if ledger.backend.name == "postgresql" else []  # type: ignore[attr-defined]
    return CliRunner().invoke(cli, [args[0], "--home", str(ledger.home), *extra, *args[1:]])


def rows(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data["rows"]


@pytest.fixture
def ledger(filled: Callable[..., Ledger]) -> Ledger:
    return filled(40)


def test_logs_lists_tool_calls_newest_first_with_a_cursor_to_the_next_page(ledger: Ledger) -> None:
    result = run(ledger, "logs", "--limit", "5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["#39", "#38", "#37", "#36", "#35"]
    assert "everything/" in lines[0]
    assert "next page: --cursor desc:35" in result.stderr
    denied = run(ledger, "logs", "--decision", "deny").stdout.splitlines()
    assert denied
    assert all("deny" in line and "[no-etc] No system paths" in line for line in denied)


def test_json_pages_cover_every_row_once_even_while_rows_are_added(ledger: Ledger) -> None:
    seen: list[int] = []
    cursor = None
    extra = 100
    while True:
        args = ["logs", "--json", "--limit", "7"] + (["--cursor", cursor] if cursor else [])
        result = run(ledger, *args)
        page = json.loads(result.stdout)
        seen += [r["seq"] for r in page["rows"]]
        ledger.submit(make_event(extra))  # new rows arrive between pages
        extra += 1
        assert ledger.flush()
        cursor = page["next_cursor"]
        if cursor is None:
            break
    expected = [s for s in range(40, 0, -1) if s % 10]  # rows 10, 20, 30, 40 are protocol events
    assert seen == expected
    forward = rows(run(ledger, "logs", "--json", "--cursor", "asc:35", "--limit", "3"))
    assert [r["seq"] for r in forward] == [36, 37, 38]


@pytest.mark.parametrize(("args", "expected"), [
    (("--tool", "echo"), lambda r: r["tool_name"] == "echo"),
    (("--tool", "everything__get-*"), lambda r: r["tool_name"] == "get-sum"),
    (("--server", "every*"), lambda r: r["server_name"] == "everything"),
    (("--decision", "deny,error"), lambda r: r["decision"] in ("deny", "error")),
    (("--session", "session-1"), lambda r: r["session_id"] == "session-1"),
    (("--client", "claude-*"), lambda r: r["client"] == "claude-code"),
])
def test_filters_select_matching_rows(ledger: Ledger, args: tuple[str, ...],
                                      expected: Callable[[dict[str, Any]], bool]) -> None:
    found = rows(run(ledger, "logs", "--json", "--limit", "100", *args))
    assert found
    assert all(expected(r) for r in found)
    everything = rows(run(ledger, "logs", "--json", "--limit", "100"))
    assert len(found) == sum(1 for r in everything if expected(r))


def test_time_filters_and_all_methods(ledger: Ledger) -> None:
    assert len(rows(run(ledger, "logs", "--json", "--limit", "100", "--since", "1h"))) == 36
    assert rows(run(ledger, "logs", "--json", "--until", "2000-01-01")) == []
    every = rows(run(ledger, "logs", "--json", "--all", "--limit", "100"))
    assert len(every) == 40
    assert {r["method"] for r in every} == {"tools/call", "tools/list"}


def test_bad_input_exits_2_with_one_line(ledger: Ledger, tmp_path: Path) -> None:
    for args in (("logs", "--since", "yesterday-ish"), ("logs", "--cursor", "sideways:3")):
        result = run(ledger, *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("mcpwall: ")
    empty = CliRunner().invoke(cli, ["logs", "--home", str(tmp_path / "nothing-here")])
    assert empty.exit_code == 2
    assert "no ledger" in empty.stderr


def test_follow_prints_rows_as_they_are_committed(ledger: Ledger) -> None:
    def writer() -> None:
        time.sleep(1.0)
        for i in range(200, 203):
            ledger.submit(make_event(i, tool_name="followed"))
        ledger.flush()

    thread = threading.Thread(target=writer)
    thread.start()
    result = run(ledger, "logs", "--follow", "--follow-for", "3", "--limit", "2")
    thread.join()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["#38", "#39"]
    assert sum("followed" in line for line in lines) == 3
    as_json = run(ledger, "logs", "--follow", "--follow-for", "0.5", "--json", "--limit", "1")
    assert [json.loads(line)["tool_name"] for line in as_json.stdout.splitlines()] == ["followed"]


def test_timeline_groups_events_by_session_in_order(ledger: Ledger) -> None:
    result = run(ledger, "timeline")
    assert result.exit_code == 0, result.output
    headers = [line for line in result.stdout.splitlines() if line.startswith("session ")]
    assert len(headers) == 3
    assert "client claude-code" in headers[0]
    assert "events:" in headers[0]
    data = json.loads(run(ledger, "timeline", "--json").stdout)
    sessions = {s["session_id"]: s for s in data["sessions"]}
    assert set(sessions) == {"session-0", "session-1", "session-2"}
    for s in sessions.values():
        seqs = [e["seq"] for e in s["events"]]
        assert seqs == sorted(seqs)
        assert sum(s["counts"].values()) == len(s["events"])
    assert sum(len(s["events"]) for s in sessions.values()) == 40
    one = json.loads(run(ledger, "timeline", "--json", "--session", "session-2", "--calls-only").stdout)
    assert [s["session_id"] for s in one["sessions"]] == ["session-2"]
    assert all(e["method"] == "tools/call" for e in one["sessions"][0]["events"])
    page = json.loads(run(ledger, "timeline", "--json", "--limit", "5", "--cursor", "asc:10").stdout)
    assert [e["seq"] for s in page["sessions"] for e in s["events"]] == [11, 14, 12, 15, 13]
    assert page["next_cursor"] == "asc:15"
