"""`mcpwall baseline`: replay the ledger or an audit log through the behavioural baseline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import json_option, print_json
from mcpwall.cli._ledger import ledger_options, open_for_cli
from mcpwall.errors import ConfigError
from mcpwall.security.baseline import BehavioralBaseline, Deviation, Observation

_BARS = " ▁▂▃▄▅▆▇█"


def _when(value: Any) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC).astimezone()
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ConfigError(f"not a timestamp: {value!r}") from exc
        return parsed.astimezone()  # naive: local time
    return datetime.now().astimezone()


def _file_entries(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A JSON array of audit entries (seatbelt `--audit-file`), {"entries": [...]}, JSONL, or a
    session capture of `mcpwall record` (seatbelt's `.mcpcap.json`: its tools/call requests)."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")) and not stripped.startswith("{\"_seq\""):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("events"), list):
            yield from _captured_calls(data)
            return
        if isinstance(data, dict):
            if not isinstance(data.get("entries"), list):
                raise ConfigError(f"{path}: not an audit log: expected a JSON array of entries, "
                                  '{"entries": [...]}, JSON lines, or a capture of `mcpwall record`')
            data = data["entries"]
        if isinstance(data, list):
            for i, entry in enumerate(data, 1):
                if isinstance(entry, dict):
                    yield i, entry
            return
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 may be in values
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if isinstance(entry, dict):
            yield number, entry


def _captured_calls(capture: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, event in enumerate(capture["events"], 1):
        if not isinstance(event, dict):
            continue
        payload = event.get("payload")
        if event.get("direction") != "request" or not isinstance(payload, dict) \
                or payload.get("method") != "tools/call" or not isinstance(payload.get("params"), dict):
            continue
        params = payload["params"]
        yield number, {"tool": params.get("name"), "args": params.get("arguments"),
                       "timestamp": event.get("timestamp")}


def file_observations(path: Path) -> Iterator[Observation]:
    for number, entry in _file_entries(path):
        tool = entry.get("toolName") or entry.get("tool_name") or entry.get("tool")
        if not isinstance(tool, str) or not tool:
            continue
        server = entry.get("server")
        name = f"{server}__{tool}" if isinstance(server, str) and server and "__" not in tool else tool
        args = entry.get("args") if isinstance(entry.get("args"), dict) else {}
        assert isinstance(args, dict)
        yield Observation.from_args(name, args, _when(entry.get("timestamp")), f"entry {number}")


def ledger_observations(ledger: Any, since: str | None) -> Iterator[Observation]:
    from mcpwall.ledger import LedgerQuery, parse_time

    query = LedgerQuery(table="tool_calls", order="asc", limit=2000, since=parse_time(since) if since else None)
    for row in ledger.iter_rows(query):
        tool = row.get("tool_name")
        if not tool:
            continue
        server = row.get("server_name")
        keys = row.get("arg_keys") if isinstance(row.get("arg_keys"), list) else []
        yield Observation(f"{server}__{tool}" if server else str(tool), tuple(str(k) for k in keys),
                          int(row.get("args_size") or 0), _when(row.get("ts")), f"row {row['seq']}")


def _spark(hours: list[int]) -> str:
    top = max(hours) or 1
    return "".join(_BARS[0 if n == 0 else max(1, round(n / top * (len(_BARS) - 1)))] for n in hours)


def _print(report: dict[str, Any], deviations: list[Deviation], source: str) -> None:
    click.echo(f"Behavioural baseline of {report['observed']} calls ({source})\n")
    if report["profiles"]:
        click.echo(f"{'tool':<40} {'calls':>7} {'avg size':>9}  hours 0h..23h               typical keys")
        for p in report["profiles"]:
            keys = ", ".join(p["typical_keys"]) or "-"
            click.echo(f"{p['tool'][:40]:<40} {p['calls']:>7} {p['avg_size']:>9.0f}  |{_spark(p['hours'])}|  {keys}")
    if deviations:
        tools = len({d.tool for d in deviations})
        counts = ", ".join(f"{n} {k}" for k, n in report["counts"].items() if n)
        click.echo(click.style(f"\nAnomalies: {len(deviations)} ({counts}) in {tools} tool(s)", fg="yellow",
                               bold=True))
        for d in deviations[:50]:
            click.echo(f"  {d.when}  {d.kind:<13} {d.tool}: {d.detail}  [{d.ref}]")
        if len(deviations) > 50:
            click.echo(f"  ... and {len(deviations) - 50} more (--json lists all)")
    elif report["observed"]:
        click.echo("\nNo anomalies.")
    else:
        click.echo("No calls to learn from: run the gateway (the ledger records every call) or give an audit file.")


@click.command()
@ledger_options
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--since", default=None, help="Only ledger rows from this time (ISO 8601 or 10m/2h/7d).")
@click.option("--learning-calls", type=click.IntRange(0), default=100, show_default=True,
              help="Calls observed before new tools and unusual hours count as anomalies.")
@click.option("--min-tool-calls", type=click.IntRange(1), default=10, show_default=True,
              help="Calls of a tool before its argument keys and sizes are judged.")
@json_option
def baseline(home: Path | None, ledger_url: str | None, file: Path | None, since: str | None, learning_calls: int,
             min_tool_calls: int, as_json: bool) -> None:
    """Replay the ledger (or FILE, a JSON or JSONL audit log) through the behavioural baseline.

    Builds per-tool profiles (call count, hour-of-day histogram, typical
    argument keys, average argument size) call by call, and reports each call
    that departs from what came before it: new_tool, new_args, size_anomaly,
    hour_anomaly. FILE may be mcp-seatbelt's audit JSON array, its signed
    audit.jsonl, or `mcpwall logs --export jsonl` output. Exits 1 when there
    are anomalies.
    """
    model = BehavioralBaseline(learning_calls=learning_calls, min_tool_calls=min_tool_calls)
    if file is not None:
        deviations = model.replay(file_observations(file))
        source = str(file)
    else:
        with open_for_cli(home, ledger_url) as ledger:
            deviations = model.replay(ledger_observations(ledger, since))
            source = ledger.url
    report = model.report(deviations)
    if as_json:
        print_json({"source": source, **report})
    else:
        _print(report, deviations, source)
    if deviations:
        raise click.exceptions.Exit(1)


__all__ = ["baseline", "file_observations", "ledger_observations"]
