"""`mcpwall logs`, `mcpwall timeline` and `mcpwall verify-audit`: read and check the ledger."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import ConfigError

_COLORS = {"allow": "green", "deny": "red", "warn": "yellow", "ask": "yellow", "redact": "cyan",
           "rewrite": "cyan", "error": "magenta", "timeout": "magenta", "failed": "magenta"}
SECRET_ENV = "SEATBELT_AUDIT_SECRET"


def ledger_url_for(home: Path, explicit: str | None) -> str | None:
    """`--ledger`, else `ledger.url` of `<home>/policy.yaml` (relative paths are relative to home)."""
    if explicit:
        return explicit
    policy = home / "policy.yaml"
    if not policy.exists():
        return None
    import yaml

    try:
        doc = yaml.safe_load(policy.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    section = doc.get("ledger") if isinstance(doc, dict) else None
    url = section.get("url") if isinstance(section, dict) else None
    if not isinstance(url, str) or not url:
        return None
    if "://" not in url and not Path(url).expanduser().is_absolute():
        return str(home / url)
    return url


def _policy_anchor(home: Path) -> str | None:
    """`ledger.anchor` of `<home>/policy.yaml`, so verify-audit finds the anchor the gateway writes."""
    import yaml

    try:
        doc = yaml.safe_load((home / "policy.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    section = doc.get("ledger") if isinstance(doc, dict) else None
    anchor = section.get("anchor") if isinstance(section, dict) else None
    return "off" if anchor is False else anchor if isinstance(anchor, str) and anchor.strip() else None


def open_for_cli(home: Path | None, ledger: str | None, *, create: bool = False) -> Any:
    from mcpwall.ledger import LedgerOptions, open_ledger

    resolved = resolve_home(home)
    anchor = _policy_anchor(resolved)
    return open_ledger(resolved, ledger_url_for(resolved, ledger), create=create,
                       options=LedgerOptions(anchor=anchor) if anchor is not None else None)


def ledger_options(func: Any) -> Any:
    """--home and --ledger, shared by the ledger commands."""
    func = click.option("--ledger", "ledger_url", default=None,
                        help="Ledger: a path, sqlite:///PATH or postgresql://... "
                             "(default: ledger.url of <home>/policy.yaml, else <home>/ledger.db).")(func)
    return home_option(func)


def filter_options(func: Any) -> Any:
    options = [
        click.option("--since", default=None, help="From this time: ISO 8601 (local time if no zone) or 30s/10m/2h/7d."),
        click.option("--until", default=None, help="Up to this time (same forms as --since)."),
        click.option("--server", default=None, help="Server name (glob: fs-*)."),
        click.option("--tool", default=None, help="Tool name (glob), or server__tool."),
        click.option("--decision", "decisions", multiple=True,
                     help="allow, deny, warn, redact, ask, rewrite, error, timeout, failed, rejected, ... "
                          "Repeatable or comma-separated."),
        click.option("--session", default=None, help="Session id or its first characters."),
        click.option("--client", default=None, help="Client name from initialize (glob)."),
        click.option("--limit", default=None, type=click.IntRange(1, 100_000), help="Rows per page."),
        click.option("--cursor", default=None, help="Continue from a cursor printed by a previous page."),
        click.option("--follow", "-f", is_flag=True, help="Keep printing new rows as they are written."),
        click.option("--follow-for", type=float, default=None, metavar="SECONDS",
                     help="With --follow: stop after SECONDS (for scripts)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _query(since: str | None, until: str | None, server: str | None, tool: str | None,
           decisions: tuple[str, ...], session: str | None, client: str | None, **kw: Any) -> Any:
    from mcpwall.ledger import LedgerQuery, parse_time

    decided = tuple(d.strip() for value in decisions for d in value.split(",") if d.strip())
    return LedgerQuery(since=parse_time(since) if since else None, until=parse_time(until) if until else None,
                       server=server, tool=tool, decision=decided, session=session, client=client, **kw)


def local_time(ts: str) -> str:
    try:
        return datetime.fromisoformat(ts).astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except ValueError:
        return ts


def _target(row: dict[str, Any]) -> str:
    server, tool = row.get("server_name"), row.get("tool_name")
    if row.get("method") == "tools/call":
        return f"{server}/{tool}" if server else str(tool or "?")
    name = f" {server}/{tool}" if server and tool else (f" {tool}" if tool else "")
    return f"{row.get('method')}{name}"


def _styled(decision: str) -> str:
    return click.style(f"{decision:<9}", fg=_COLORS.get(decision))


_FAILURES = ("error", "timeout", "failed", "rejected", "invalid", "rate_limited", "circuit_open", "cancelled")


def _detail(row: dict[str, Any]) -> str:
    """Why: the error for failures, the reasons for policy decisions other than a plain allow."""
    decision = row.get("decision")
    if decision in _FAILURES and row.get("error_message"):
        detail = str(row["error_message"])
    elif decision not in ("allow", None):
        detail = "; ".join(r for r in row.get("reasons") or [] if not r.startswith("No matching rule found"))
    else:
        detail = ""
    if row.get("mode") == "audit" and row.get("enforced_action") not in (None, "allow", decision):
        detail = f"(audit: would {row['enforced_action']}) {detail}"
    return detail


def format_row(row: dict[str, Any]) -> str:
    detail = _detail(row)
    who = ", ".join(x for x in (row.get("client"), row.get("agent_id")) if x)
    ms = f"{row['duration_ms']:.1f} ms" if isinstance(row.get("duration_ms"), int | float) else ""
    meta = ", ".join(x for x in (who, ms) if x)
    return (f"#{row['seq']:<7} {local_time(str(row.get('ts', '')))}  {_styled(str(row.get('decision')))} "
            f"{_target(row)}" + (f"  {detail[:200]}" if detail else "") + (f"  ({meta})" if meta else ""))


def _follow(ledger: Any, query: Any, cursor: str, emit: Callable[[dict[str, Any]], None],
            follow_for: float | None) -> None:
    deadline = time.monotonic() + follow_for if follow_for is not None else None
    q = replace(query, order="asc", cursor=cursor, limit=1000)
    try:
        while deadline is None or time.monotonic() < deadline:
            page = ledger.query(q)
            for row in page.rows:
                emit(row)
            if page.next_cursor:
                q = replace(q, cursor=page.next_cursor)
            if len(page.rows) < q.limit:
                time.sleep(0.3)
    except KeyboardInterrupt:
        pass


def _head_cursor(ledger: Any) -> str:
    page = ledger.query(table="all", order="desc", limit=1)
    return f"asc:{page.rows[0]['seq'] if page.rows else 0}"


def _emit_json(row: dict[str, Any]) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(row, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
    sys.stdout.flush()


def read_secret(secret_file: Path | None, secret: str | None, home: Path | None) -> bytes | None:
    """The JSONL signing secret: --secret-file, --secret, $SEATBELT_AUDIT_SECRET, else None (the ledger key)."""
    if secret_file is not None:
        text = secret_file.read_text(encoding="utf-8").strip()
        if not text:
            raise ConfigError(f"{secret_file} is empty")
        return text.encode("utf-8")
    if secret:
        click.echo("mcpwall: warning: --secret puts the secret in the process list; prefer --secret-file or "
                   f"${SECRET_ENV}", err=True)
        return secret.encode("utf-8")
    env = os.environ.get(SECRET_ENV, "").strip()
    return env.encode("utf-8") if env else None


@click.command()
@ledger_options
@filter_options
@click.option("--order", type=click.Choice(["desc", "asc"]), default="desc", show_default=True,
              help="Newest first (desc) or oldest first (asc).")
@click.option("--all", "all_methods", is_flag=True, help="Include the other requests (initialize, lists, "
              "resources/read, prompts/get...) from protocol_events, not only tools/call.")
@click.option("--export", type=click.Choice(["jsonl"]), default=None,
              help="Write the matching tools/call rows as mcp-seatbelt signed JSONL instead.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --export: the file to write (default: stdout).")
@click.option("--secret-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help=f"With --export: sign with this secret (default: ${SECRET_ENV}, else the ledger key).")
@json_option
def logs(home: Path | None, ledger_url: str | None, since: str | None, until: str | None, server: str | None,
         tool: str | None, decisions: tuple[str, ...], session: str | None, client: str | None, limit: int | None,
         cursor: str | None, follow: bool, follow_for: float | None, order: str, all_methods: bool,
         export: str | None, output: Path | None, secret_file: Path | None, as_json: bool) -> None:
    """Query the ledger: one line per tools/call, newest first.

    Pages are cut by row number, so a cursor (`desc:N`: older than row N; `asc:N`:
    after row N) stays valid while rows are added; the next one is printed on
    stderr (in the JSON as next_cursor). --follow prints the newest rows, then
    every new row as it is committed. --export jsonl writes signed JSONL that
    `mcpwall verify-audit FILE` and mcp-seatbelt's verify-audit accept.
    """
    query = _query(since, until, server, tool, decisions, session, client, order=order, cursor=cursor,
                   table="all" if all_methods else "tool_calls", limit=limit or 50)
    with open_for_cli(home, ledger_url) as ledger:
        if export:
            secret = read_secret(secret_file, None, home)
            if output is None:
                n = ledger.export_jsonl(sys.stdout, secret, query)
            else:
                with output.open("w", encoding="utf-8") as f:
                    n = ledger.export_jsonl(f, secret, query)
            click.echo(f"exported {n} signed entries", err=True)
            return
        emit = _emit_json if as_json else (lambda row: click.echo(format_row(row)))
        if follow:
            start = cursor if cursor and cursor.startswith("asc:") else None
            if start is None:
                page = ledger.query(replace(query, order="desc", limit=limit or 10, cursor=None))
                for row in reversed(page.rows):
                    emit(row)
                start = _head_cursor(ledger) if not page.rows else f"asc:{page.rows[0]['seq']}"
            _follow(ledger, query, start, emit, follow_for)
            return
        page = ledger.query(query)
        if as_json:
            print_json({"rows": page.rows, "next_cursor": page.next_cursor, "order": page.order})
            return
        for row in page.rows:
            click.echo(format_row(row))
        if not page.rows:
            click.echo("no matching rows", err=True)
        if page.next_cursor:
            click.echo(f"next page: --cursor {page.next_cursor}", err=True)


def _sessions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        sid = str(row.get("session_id") or "-")
        g = groups.get(sid)
        if g is None:
            g = groups[sid] = {"session_id": sid, "client": row.get("client") or "", "agent": row.get("agent_id") or "",
                               "process": row.get("process_name") or "", "peer": row.get("peer") or "",
                               "first": row.get("ts"), "last": row.get("ts"), "counts": {}, "events": []}
        for key, col in (("client", "client"), ("agent", "agent_id"), ("process", "process_name")):
            if not g[key] and row.get(col):
                g[key] = row[col]
        g["last"] = row.get("ts")
        decision = str(row.get("decision"))
        g["counts"][decision] = g["counts"].get(decision, 0) + 1
        g["events"].append(row)
    for g in groups.values():
        # Chronological by arrival; seq is commit order (concurrent calls finish out of order).
        g["events"].sort(key=lambda r: (str(r.get("ts")), r["seq"]))
        g["first"], g["last"] = g["events"][0].get("ts"), max(str(r.get("ts")) for r in g["events"])
    return list(groups.values())


def _elapsed(first: str, ts: str) -> str:
    try:
        return f"+{(datetime.fromisoformat(ts) - datetime.fromisoformat(first)).total_seconds():.3f}s"
    except (TypeError, ValueError):
        return ""


def _print_session(g: dict[str, Any]) -> None:
    counts = ", ".join(f"{n} {d}" for d, n in sorted(g["counts"].items(), key=lambda kv: -kv[1]))
    who = "  ".join(f"{k} {g[k]}" for k in ("client", "agent", "process") if g[k])
    click.echo(click.style(f"session {g['session_id'][:12]}", bold=True) + (f"  {who}" if who else "")
               + f"  {local_time(str(g['first']))} → {local_time(str(g['last']))[11:]}  "
               f"{len(g['events'])} events: {counts}")
    for row in g["events"]:
        detail = _detail(row)
        ms = f"{row['duration_ms']:.1f} ms" if isinstance(row.get("duration_ms"), int | float) else ""
        click.echo(f"  {_elapsed(str(g['first']), str(row.get('ts'))):>10}  #{row['seq']:<7} "
                   f"{_styled(str(row.get('decision')))} {_target(row):<45} {ms:>9}"
                   + (f"  {detail[:160]}" if detail else ""))


@click.command()
@ledger_options
@filter_options
@click.option("--calls-only", is_flag=True, help="Only tools/call rows (default: every request of the session).")
@json_option
def timeline(home: Path | None, ledger_url: str | None, since: str | None, until: str | None, server: str | None,
             tool: str | None, decisions: tuple[str, ...], session: str | None, client: str | None,
             limit: int | None, cursor: str | None, follow: bool, follow_for: float | None, calls_only: bool,
             as_json: bool) -> None:
    """Per-session chronological view of the ledger.

    Events (every request: initialize, lists, tools/call, resources/read...)
    are grouped by session; each session shows who it was (client, agent,
    process), when, a count per decision, then its events in order with the
    time since the session's first event. Without --since or --cursor it shows
    the latest --limit (default 500) events; `--cursor asc:N` pages forward
    from row N, `--cursor desc:N` shows the events before row N. --follow then
    prints new events as they arrive, with a header when the session changes.
    """
    table = "tool_calls" if calls_only else "all"
    n = limit or 500
    query = _query(since, until, server, tool, decisions, session, client, table=table, limit=n)
    with open_for_cli(home, ledger_url) as ledger:
        if (cursor and cursor.startswith("asc:")) or (since and not cursor):
            page = ledger.query(replace(query, order="asc", cursor=cursor))
            rows, older = page.rows, None
        else:
            page = ledger.query(replace(query, order="desc", cursor=cursor))
            rows, older = list(reversed(page.rows)), page.next_cursor
        newer = f"asc:{rows[-1]['seq']}" if rows else (cursor if cursor and cursor.startswith("asc:") else
                                                       _head_cursor(ledger))
        groups = _sessions(rows)
        if as_json and not follow:
            print_json({"sessions": groups, "next_cursor": newer, "previous_cursor": older})
            return
        if as_json:
            for row in rows:
                _emit_json(row)
        else:
            for g in groups:
                _print_session(g)
            if not rows:
                click.echo("no matching events", err=True)
            if older:
                click.echo(f"earlier events: --cursor {older}", err=True)
        if not follow:
            click.echo(f"later events: --cursor {newer}", err=True)
            return
        current = {"session": rows[-1].get("session_id") if rows else None}

        def emit(row: dict[str, Any]) -> None:
            if as_json:
                _emit_json(row)
                return
            if row.get("session_id") != current["session"]:
                current["session"] = row.get("session_id")
                click.echo(click.style(f"session {str(row.get('session_id'))[:12]}", bold=True)
                           + f"  {row.get('client') or ''}")
            click.echo(f"  {local_time(str(row.get('ts')))[11:]}  #{row['seq']:<7} "
                       f"{_styled(str(row.get('decision')))} {_target(row)}")

        _follow(ledger, query, newer, emit, follow_for)


def _expected_head(text: str | None) -> tuple[int, str] | None:
    """`SEQ:MAC-PREFIX` -> (seq, lower-case prefix); a usage error (exit 2) otherwise."""
    if text is None:
        return None
    seq_text, _, mac = text.strip().partition(":")
    mac = mac.strip().lower()
    if not seq_text.strip().isdigit() or not 8 <= len(mac) <= 64 or any(c not in "0123456789abcdef" for c in mac):
        raise click.BadParameter(f"{text!r} is not SEQ:MAC (a row number, a colon, 8 to 64 hex digits of its MAC)",
                                 param_hint="--expect-head")
    return int(seq_text), mac


@click.command("verify-audit")
@ledger_options
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--no-checkpoint", is_flag=True,
              help="Check the chain alone (a ledger verified from another machine has no checkpoint here).")
@click.option("--no-bodies", is_flag=True, help="Skip re-hashing the stored bodies (faster).")
@click.option("--expect-head", "expect_head", default=None, metavar="SEQ:MAC",
              help="A head the gateway published (dashboard, /metrics, webhooks): fail unless the ledger "
                   "holds that row with that MAC (prefix of 8+ hex digits). Catches a ledger rolled back "
                   "together with its checkpoint.")
@click.option("--anchor", "anchor_dir_opt", default=None, metavar="DIR",
              help="The head anchors' directory (default: ledger.anchor, $MCPWALL_ANCHOR_DIR, else "
                   "$XDG_STATE_HOME/mcpwall/anchors); checked when this ledger's anchor is there.")
@click.option("--no-anchor", is_flag=True, help="Do not compare with the head anchor.")
@click.option("--secret-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help=f"FILE's HMAC secret (default: ${SECRET_ENV}, else the ledger key).")
@click.option("--secret", default=None, help="FILE's HMAC secret (mcp-seatbelt's option; visible to other "
              "users in the process list, prefer --secret-file).")
@json_option
def verify_audit(home: Path | None, ledger_url: str | None, file: Path | None, no_checkpoint: bool,
                 no_bodies: bool, expect_head: str | None, anchor_dir_opt: str | None, no_anchor: bool,
                 secret_file: Path | None, secret: str | None, as_json: bool) -> None:
    """Check the ledger's HMAC chain, or a signed JSONL audit file (mcp-seatbelt's format).

    Reports the first broken link - the row (or line) number of an edited,
    deleted, inserted or reordered row, or a truncated tail (against the
    checkpoint in <home>/run/ledger.checkpoint), or a ledger rolled back behind
    its head anchor or --expect-head - and exits 1.
    """
    expected = _expected_head(expect_head)
    if file is not None:
        from mcpwall.ledger import load_key, verify_jsonl

        key = read_secret(secret_file, secret, home) or load_key(resolve_home(home), create=False)
        report = verify_jsonl(file, key)
        target, unit = str(file), "line"
    else:
        from mcpwall.ledger import anchor_path

        with open_for_cli(home, ledger_url) as ledger:
            anchor = anchor_path(ledger.ledger_id, anchor_dir_opt) if anchor_dir_opt else None
            report = ledger.verify(use_checkpoint=not no_checkpoint, check_bodies=not no_bodies,
                                   use_anchor=not no_anchor, anchor=anchor, expect_head=expected)
            target, unit = ledger.url, "row"
    if as_json:
        print_json({"target": target, **report.as_dict()})
    elif report.ok:
        cp = f", checkpoint at row {report.checkpoint_seq}" if report.checkpoint_seq is not None else ""
        cp += f", anchor at row {report.anchor_seq}" if report.anchor_seq is not None else ""
        cp += f", head {report.head}" if report.head else ""
        click.echo(f"OK: {report.rows} {unit}s verified, chain intact{cp} ({target})")
        for warning in report.warnings:
            click.echo(f"note: {warning}", err=True)
    else:
        where = f" at {unit} {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        click.echo(f"BROKEN{where}: {report.problem} ({target}; {report.rows} {unit}s verified before it)")
    if not report.ok:
        raise click.exceptions.Exit(1)


__all__ = ["format_row", "ledger_options", "ledger_url_for", "logs", "open_for_cli", "timeline", "verify_audit"]
