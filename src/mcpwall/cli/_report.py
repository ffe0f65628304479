"""`mcpwall check` (a CI gate that writes nothing) and `mcpwall report` (Markdown, JSON, SARIF).

Both scan the client configs of this machine, or of a fake home given with
`--scan-home DIR --platform linux|darwin|win32` (also $MCPWALL_SCAN_HOME and
$MCPWALL_SCAN_PLATFORM), plus any `--project DIR`. `check` exits 1 when any
server is critical (a critical flag or a critical total). Everything printed
passes through the scan's secret scrubber.

The table, the CRITICAL lines and the totals are all read from one
`report_data()`, with its levels and labels, so they cannot disagree. In a
pipe or a CI log (stdout not a terminal, no $COLUMNS) the table is printed at
its natural width, one line per server: rich's default of 80 columns folded
`shell-interpreter` into `shell-interprete` / `r`, which neither a reader nor
grep finds. On a terminal, no column is narrower than its longest word.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import home_option, json_option

_LEVEL_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "green"}


def scan_options(func: Any) -> Any:
    """`--scan-home`, `--platform`, `--project`: which machine's configs to look at."""
    from mcpwall.discovery import PLATFORMS

    options = [
        click.option("--scan-home", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Look for client configs under this home directory instead of yours "
                          "(also $MCPWALL_SCAN_HOME). Only --project directories are scanned then."),
        click.option("--platform", type=click.Choice(PLATFORMS), default=None,
                     help="Use this platform's config locations (default: this machine's; $MCPWALL_SCAN_PLATFORM)."),
        click.option("--project", "projects", multiple=True, type=click.Path(file_okay=False, path_type=Path),
                     help="Also scan this project's .mcp.json, .cursor/, .vscode/... (repeatable). The current "
                          "directory is scanned by default when scanning your own home."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def run_scan(scan_home: Path | None, platform: str | None, projects: tuple[Path, ...]) -> Any:
    from mcpwall.discovery import make_target, scan

    return scan(make_target(scan_home, platform, list(projects)))


def print_risk_table(console: Any, data: dict[str, Any], scrub: Callable[[str], str]) -> None:
    """The risk table `init` and `check` show (every cell scrubbed, no markup from configs)."""
    from rich.table import Table
    from rich.text import Text

    from mcpwall.cli._tables import print_whole
    from mcpwall.discovery import LEVEL_LABELS, LEVELS

    rows = []
    for s in data["servers"]:
        level = s["risk"]["level"]
        transport = {"streamable-http": "http"}.get(s["transport"], s["transport"])
        rows.append([Text(scrub(s["name"])), Text(scrub(", ".join(s["clients"]))), Text(transport),
                     Text(LEVEL_LABELS[level], style=_LEVEL_STYLE[level]), Text(str(s["risk"]["score"])),
                     Text(", ".join(f["rule"] for f in s["risk"]["flags"]) or "-"),
                     Text("yes" if s["guarded"] else "no")])
    table = Table(title="MCP servers", title_justify="left")
    for column in ("Server", "Clients", "Transport", "Risk", "Score", "Flags", "Guarded"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    if data["servers"]:
        print_whole(console, table)  # a row may wrap between words, never inside a name or a rule id
    else:
        console.print("No MCP servers found.")
    for p in data["problems"]:
        console.print(Text(scrub(f"! {p['client']}: {p['path']}: {p['status']}: {p['error']}"), style="yellow"),
                      soft_wrap=True)
    sm = data["summary"]
    counts = " | ".join(f"{LEVEL_LABELS[level]} {sm['levels'][level]}" for level in LEVELS)
    console.print(f"Total: {sm['totalServers']} server(s) | {counts} | {sm['problems']} unreadable file(s)",
                  soft_wrap=True)


def critical_lines(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """One (CRITICAL line, what to do) per critical row of the table, in the table's order."""
    from mcpwall.discovery import LEVEL_LABELS
    from mcpwall.discovery._report import advice_order

    out = []
    for s in data["servers"]:
        if s["risk"]["level"] != "critical":
            continue
        crit = [f for f in s["risk"]["flags"] if f["severity"] == "critical"]
        why = ", ".join(f"{f['rule']} ({f['evidence']})" for f in crit) if crit else (
            f"total score {s['risk']['score']} (60 or more is critical) from "
            + ", ".join(f["rule"] for f in s["risk"]["flags"]))
        worst = sorted(crit or [f for f in s["risk"]["flags"] if f["severity"] != "medium"] or s["risk"]["flags"],
                       key=advice_order)
        todo = list(dict.fromkeys(f["advice"] for f in worst if f["advice"]))[:3]
        out.append((f"{LEVEL_LABELS['critical']} {s['name']}: {why}", todo))
    return out


@click.command()
@scan_options
@json_option
@home_option
def check(scan_home: Path | None, platform: str | None, projects: tuple[Path, ...], as_json: bool,
          home: Path | None) -> None:
    """Scan client configs and exit 1 on any critical risk (a CI gate; writes nothing)."""
    from rich.console import Console
    from rich.text import Text

    from mcpwall.cli._common import print_json
    from mcpwall.discovery import report_data, scrubber_for

    result = run_scan(scan_home, platform, projects)
    data = report_data(result)
    scrub = scrubber_for(result)
    critical = [s for s in data["servers"] if s["risk"]["level"] == "critical"]
    if as_json:
        import json

        print_json(json.loads(scrub(json.dumps({
            "ok": not critical, "summary": data["summary"],
            "critical": [{"name": s["name"], "clients": s["clients"], "score": s["risk"]["score"],
                          "flags": [f["rule"] for f in s["risk"]["flags"] if f["severity"] == "critical"]}
                         for s in critical],
            "servers": [{"name": s["name"], "clients": s["clients"], "level": s["risk"]["level"],
                         "score": s["risk"]["score"], "flags": [f["rule"] for f in s["risk"]["flags"]]}
                        for s in data["servers"]],
            "recommendations": data["recommendations"],
            "problems": data["problems"]}))))
    else:
        console = Console(highlight=False)
        print_risk_table(console, data, scrub)
        for line, todo in critical_lines(data):
            console.print(Text(scrub(line), style="bold red"), soft_wrap=True)
            for step in todo:
                console.print(Text(scrub(f"  what to do: {step}")), soft_wrap=True)
        console.print("Critical risks found." if critical else "No critical risks found.")
        if data["recommendations"]:
            console.print("Every recommendation: mcpwall report (Markdown), or check --json.", soft_wrap=True)
    if critical:
        raise click.exceptions.Exit(1)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "sarif"]), default=None,
              help="Report format (default markdown).")
@click.option("--sarif", "sarif_flag", is_flag=True, help="Same as --format sarif (mcp-seatbelt's flag).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report to this file instead of standard output.")
@scan_options
@json_option
@home_option
def report(fmt: str | None, sarif_flag: bool, output: Path | None, scan_home: Path | None, platform: str | None,
           projects: tuple[Path, ...], as_json: bool, home: Path | None) -> None:
    """Write a risk report of every MCP server found: Markdown, JSON or SARIF 2.1.0."""
    from mcpwall.discovery import render_json, render_markdown, render_sarif, report_data, scrubber_for
    from mcpwall.errors import ConfigError

    chosen = {f for f, on in (("sarif", sarif_flag), ("json", as_json), (fmt, fmt is not None)) if on and f}
    if len(chosen) > 1:
        raise ConfigError(f"choose one report format, not {' and '.join(sorted(chosen))}")
    fmt = chosen.pop() if chosen else "markdown"
    result = run_scan(scan_home, platform, projects)
    data = report_data(result)
    scrub = scrubber_for(result)
    text = {"markdown": render_markdown, "json": render_json, "sarif": render_sarif}[fmt](data, scrub)
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror}") from exc
    click.echo(f"Wrote {fmt} report of {data['summary']['totalServers']} server(s) to {output}", err=True)


__all__ = ["check", "critical_lines", "print_risk_table", "report", "run_scan", "scan_options"]
