"""`mcpwall pin`: tool-definition pins and the changes waiting for a person.

    mcpwall pin --list [--server S] [--json]     pins, and pending changes with a diff
    mcpwall pin --accept SERVER[/NAME] ...       trust what the server shows now
    mcpwall pin --forget SERVER[/NAME] ...       drop pins (the next list pins afresh)

Pins live in the ledger's state table (the gateway's `gateway.state`), so this
command and a running gateway see the same pins. `--list` exits 1 while a
change is pending (a rug pull is a finding); `--accept` exits 1 when nothing
was pending for a target.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from mcpwall.cli._common import home_option, json_option, print_json, resolve_home
from mcpwall.errors import ConfigError
from mcpwall.security._poisoning_pins import PinBook, diff
from mcpwall.state import StateStore


def open_store(home: Path, url: str | None) -> StateStore:
    """The store the gateway keeps its pins in: the shared Redis of several replicas when
    `$MCPWALL_STATE_URL` names one, else the ledger of `home` (or `url`)."""
    from mcpwall.shared import RedisStateStore, state_url

    shared = state_url(None)
    if shared and url is None:
        return RedisStateStore(shared)
    try:
        from mcpwall.cli._ledger import ledger_url_for
        from mcpwall.ledger import open_ledger
    except ImportError as exc:  # pragma: no cover - the ledger ships with mcpwall
        raise ConfigError("pins are kept in the ledger (mcpwall.ledger), which is not installed") from exc
    # like the other ledger commands: a home without a ledger is refused (exit 2), not created
    store: StateStore = open_ledger(home, ledger_url_for(home, url), create=False)
    return store


@contextlib.contextmanager
def _store(home: Path, url: str | None) -> Iterator[StateStore]:
    store = open_store(home, url)
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


def _row(record: dict[str, Any]) -> dict[str, Any]:
    pending = record.get("pending") or None
    return {"server": record.get("server"), "kind": record.get("kind"), "name": record.get("name"),
            "hash": record.get("hash"), "pinned_at": record.get("pinned_at"),
            "removed": bool(record.get("removed_at")),
            "pending": None if pending is None else {"change": pending.get("change"), "of": pending.get("of"),
                                                     "hash": pending.get("hash"), "seen_at": pending.get("seen_at")}}


@click.command("pin")
@click.option("--list", "list_", is_flag=True, help="Show pins and pending changes (with a diff).")
@click.option("--accept", "accept", multiple=True, metavar="SERVER[/NAME]",
              help="Accept the pending change(s) of a server or one tool. Repeatable.")
@click.option("--forget", "forget", multiple=True, metavar="SERVER[/NAME]",
              help="Drop the pins of a server or one tool. Repeatable.")
@click.option("--server", "server", default=None, help="With --list: only this server.")
@click.option("--ledger", "ledger_url", default=None, help="Ledger database (default <home>/ledger.db).")
@json_option
@home_option
def pin(list_: bool, accept: tuple[str, ...], forget: tuple[str, ...], server: str | None,
        ledger_url: str | None, as_json: bool, home: Path | None) -> None:
    """Tool-definition pins: list them, accept a change, or forget a server."""
    if not (list_ or accept or forget):
        raise click.UsageError("give --list, --accept SERVER[/NAME] or --forget SERVER[/NAME]")
    for target in (*accept, *forget):
        if not target.partition("/")[0]:
            raise click.UsageError(f"{target!r}: expected SERVER or SERVER/NAME")
    with _store(resolve_home(home), ledger_url) as store:
        book = PinBook(store)
        failed = False
        done: dict[str, list[str]] = {}
        for target in accept:
            keys = book.accept(target)
            done[f"accept {target}"] = keys
            if not keys:
                failed = True
                click.echo(f"mcpwall: nothing pending for {target}", err=True)
            elif not as_json:
                click.echo(f"accepted {', '.join(keys)}")
        for target in forget:
            keys = book.forget(target)
            done[f"forget {target}"] = keys
            if not as_json:
                click.echo(f"forgot {len(keys)} pin(s) of {target}")
        if list_:
            records = sorted(book.all().values(), key=lambda r: (str(r.get("server")), str(r.get("kind")),
                                                                  str(r.get("name"))))
            if server is not None:
                records = [r for r in records if r.get("server") == server]
            pending = [r for r in records if r.get("pending")]
            if as_json:
                print_json({"pins": [_row(r) for r in records], "done": done,
                            "pending": [{**_row(r), "diff": diff(r, _original(book, r))} for r in pending]})
            else:
                _print(records, pending, book)
            failed = failed or bool(pending)
        elif as_json:
            print_json({"done": done})
    if failed:
        raise click.exceptions.Exit(1)


def _original(book: PinBook, record: dict[str, Any]) -> dict[str, Any] | None:
    of = (record.get("pending") or {}).get("of")
    return book.get(str(record.get("server")), str(record.get("kind")), str(of)) if of else None


def _print(records: list[dict[str, Any]], pending: list[dict[str, Any]], book: PinBook) -> None:
    if not records:
        click.echo("no pins yet (the gateway pins each server's tools when it first sees them)")
        return
    for r in records:
        state = "PENDING " + str((r.get("pending") or {}).get("change")) if r.get("pending") else \
            ("removed" if r.get("removed_at") else "pinned")
        digest = str(r.get("hash") or "-")[:12]
        click.echo(f"{r.get('server')}/{r.get('name')}  {r.get('kind')}  {digest}  {state}")
    for r in pending:
        p = r["pending"]
        of = f" (a copy of {p['of']!r})" if p.get("of") else ""
        click.echo(f"\n{r.get('server')}/{r.get('name')}: {p.get('change')}{of}; accept with "
                   f"`mcpwall pin --accept {r.get('server')}/{r.get('name')}`")
        click.echo(diff(r, _original(book, r)) or "(no textual difference)")


__all__ = ["open_store", "pin"]
