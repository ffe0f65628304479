"""The ledger: every decision recorded, tamper-evident, queryable (SPEC 5, docs/LEDGER.md).

    ledger = open_ledger(home)                      # <home>/ledger.db, or a postgresql:// URL
    ledger.put_state("pins", "fs/read_file", {...})  # the gateway's durable StateStore
    page = ledger.query(LedgerQuery(decision=("deny",), limit=20))
    report = ledger.verify()                         # the HMAC chain, first broken row

The gateway's ledger stage (`mcpwall.stages.audit`) submits one `Event` per
request; a writer thread commits them in batches, HMAC-chained.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # the GIL-free batch writer `_bulk` when built: see mcpwall._native

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
