"""The ledger: every decision recorded, tamper-evident, queryable (SPEC 5, docs/LEDGER.md).

    ledger = open_ledger(home)                      # <home>/ledger.db, or a postgresql:// URL
    ledger.put_state("pins", "fs/read_file", {...})  # the gateway's durable StateStore
    page = ledger.query(LedgerQuery(decision=("deny",), limit=20))
    report = ledger.verify()                         # the HMAC chain, first broken row

The gateway's ledger stage (`mcpwall.stages.audit`) submits one `Event` per
request; a writer thread commits them in batches, HMAC-chained.
"""

from __future__ import annotations

import importlib
import typing

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # the GIL-free batch writer `_bulk` when built: see mcpwall._native
# (before any submodule is imported: each is imported on first use of one of its names, below)

if typing.TYPE_CHECKING:  # (`typing.`: the module's public names are its __all__)
    from mcpwall.ledger._anchor import ANCHOR_ENV, LedgerRolledBack, anchor_dir, anchor_path, head_label
    from mcpwall.ledger._backend import LedgerLocation, parse_url
    from mcpwall.ledger._chain import KEY_ENV, checkpoint_path, key_path, load_key
    from mcpwall.ledger._errors import LedgerConfigError, LedgerError, LedgerUnavailable
    from mcpwall.ledger._event import Event, RuleInfo, iso
    from mcpwall.ledger._ledger import Ledger, open_ledger
    from mcpwall.ledger._options import LedgerOptions
    from mcpwall.ledger._query import LedgerQuery, Page, parse_cursor, parse_time
    from mcpwall.ledger._schema import CHAINED, EVENT_TABLES, GENESIS, LATEST
    from mcpwall.ledger._seatbelt import entry_from_row, js_stringify, signed_line, verify_jsonl
    from mcpwall.ledger._verify import VerifyReport

#: name -> the submodule that defines it, imported on first use (PEP 562): a command that needs
#: only the ledger's file names (`simulate`'s self-protection) does not import SQLite and the
#: writer thread (issue 29, start-up).
_WHERE: dict[str, str] = {
    "ANCHOR_ENV": "_anchor",
    "LedgerRolledBack": "_anchor",
    "anchor_dir": "_anchor",
    "anchor_path": "_anchor",
    "head_label": "_anchor",
    "LedgerLocation": "_backend",
    "parse_url": "_backend",
    "KEY_ENV": "_chain",
    "checkpoint_path": "_chain",
    "key_path": "_chain",
    "load_key": "_chain",
    "LedgerConfigError": "_errors",
    "LedgerError": "_errors",
    "LedgerUnavailable": "_errors",
    "Event": "_event",
    "RuleInfo": "_event",
    "iso": "_event",
    "Ledger": "_ledger",
    "open_ledger": "_ledger",
    "LedgerOptions": "_options",
    "LedgerQuery": "_query",
    "Page": "_query",
    "parse_cursor": "_query",
    "parse_time": "_query",
    "CHAINED": "_schema",
    "EVENT_TABLES": "_schema",
    "GENESIS": "_schema",
    "LATEST": "_schema",
    "entry_from_row": "_seatbelt",
    "js_stringify": "_seatbelt",
    "signed_line": "_seatbelt",
    "verify_jsonl": "_seatbelt",
    "VerifyReport": "_verify",
}


def __getattr__(name: str) -> typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "ANCHOR_ENV",
    "CHAINED",
    "EVENT_TABLES",
    "GENESIS",
    "KEY_ENV",
    "LATEST",
    "Event",
    "Ledger",
    "LedgerConfigError",
    "LedgerError",
    "LedgerLocation",
    "LedgerOptions",
    "LedgerQuery",
    "LedgerRolledBack",
    "LedgerUnavailable",
    "Page",
    "RuleInfo",
    "VerifyReport",
    "anchor_dir",
    "anchor_path",
    "checkpoint_path",
    "entry_from_row",
    "head_label",
    "iso",
    "js_stringify",
    "key_path",
    "load_key",
    "open_ledger",
    "parse_cursor",
    "parse_time",
    "parse_url",
    "signed_line",
    "verify_jsonl",
]
