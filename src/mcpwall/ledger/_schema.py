"""The ledger's tables, one schema for SQLite and PostgreSQL, created and migrated here.

- `tool_calls`: exactly one row per `tools/call` the gateway saw, whatever
  happened to it (SPEC 5). `protocol_events` has the same columns and holds
  every other request (initialize, lists, resources/read, prompts/get, ...).
  Both share one sequence (`seq`) and one MAC chain, so together they are
  the ordered record of what the gateway decided.
- `security_rule_events`: one row per rule that decided a call, each MAC'd
  under its call's MAC.
- `event_body_blobs`: full request and response bodies under `<time>-<sha256>`
  ids (docs/LEDGER.md), a body a writer stored lately referenced again rather
  than stored twice; referenced by `request_body_id` / `response_body_id`.
- `state`: the StateStore of `mcpwall.state` (pins, honeytokens, approvals).
- `ledger_head` (the chain's last seq and MAC, the write lock), `meta`
  (`ledger_id`), `schema_version`.

Type placeholders ({SEQ}, {BIGINT}, {REAL}, {BLOB}) are filled by the backend.
JSON columns are TEXT on both backends: the MAC covers the exact text.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from mcpwall.ledger._backend import Backend, Connection
from mcpwall.ledger._errors import LedgerConfigError

GENESIS = "0" * 64
EVENT_TABLES = ("tool_calls", "protocol_events")

#: The columns of an event row after `seq`, in MAC order; `prev_mac` and `mac` follow.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("decision_id", "TEXT NOT NULL"),
    ("ts", "TEXT NOT NULL"),
    ("session_id", "TEXT"),
    ("client", "TEXT"),
    ("client_version", "TEXT"),
    ("agent_id", "TEXT"),
    ("process_name", "TEXT"),
    ("peer", "TEXT"),
    ("server_name", "TEXT"),
    ("method", "TEXT NOT NULL"),
    ("tool_name", "TEXT"),
    ("request_id", "TEXT"),
    ("decision", "TEXT NOT NULL"),
    ("outcome", "TEXT NOT NULL"),
    ("mode", "TEXT"),
    ("enforced_action", "TEXT"),
    ("policy_revision", "TEXT"),
    ("rule_ids", "TEXT NOT NULL"),
    ("reasons", "TEXT NOT NULL"),
    ("redacted_keys", "TEXT NOT NULL"),
    ("dlp", "TEXT NOT NULL"),
    ("notes", "TEXT NOT NULL"),
    ("arg_keys", "TEXT NOT NULL"),
    ("args_size", "{BIGINT}"),
    ("request_preview", "TEXT"),
    ("response_preview", "TEXT"),
    ("duration_ms", "{REAL}"),
    ("upstream_ms", "{REAL}"),
    ("error_code", "{BIGINT}"),
    ("error_message", "TEXT"),
    ("bytes_in", "{BIGINT}"),
    ("bytes_out", "{BIGINT}"),
    ("request_body_id", "TEXT"),
    ("response_body_id", "TEXT"),
    ("replica", "TEXT"),
)
CHAINED = tuple(name for name, _ in EVENT_COLUMNS)
ROW_COLUMNS = ("seq", *CHAINED, "prev_mac", "mac")
#: JSON-encoded columns, decoded by the query API.
JSON_COLUMNS = frozenset({"rule_ids", "reasons", "redacted_keys", "dlp", "notes", "arg_keys"})
RULE_COLUMNS = ("call_seq", "idx", "decision_id", "ts", "rule_id", "action", "layer", "compliance", "owasp", "mac")


def _event_table(name: str) -> str:
    cols = ",\n  ".join(f"{col} {sql_type}" for col, sql_type in EVENT_COLUMNS)
    return f"CREATE TABLE {name} (\n  seq {{SEQ}},\n  {cols},\n  prev_mac TEXT NOT NULL,\n  mac TEXT NOT NULL\n)"


_V1 = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE ledger_head (id INTEGER PRIMARY KEY, seq {BIGINT} NOT NULL, mac TEXT NOT NULL)",
    _event_table("tool_calls"),
    _event_table("protocol_events"),
    "CREATE INDEX tool_calls_ts ON tool_calls (ts)",
    "CREATE INDEX tool_calls_session ON tool_calls (session_id, seq)",
    "CREATE INDEX tool_calls_tool ON tool_calls (tool_name, seq)",
    "CREATE INDEX tool_calls_server ON tool_calls (server_name, seq)",
    "CREATE INDEX tool_calls_decision ON tool_calls (decision, seq)",
    "CREATE INDEX protocol_events_ts ON protocol_events (ts)",
    "CREATE INDEX protocol_events_session ON protocol_events (session_id, seq)",
    """CREATE TABLE security_rule_events (
  call_seq {BIGINT} NOT NULL,
  idx INTEGER NOT NULL,
  decision_id TEXT NOT NULL,
  ts TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  action TEXT,
  layer TEXT,
  compliance TEXT NOT NULL,
  owasp TEXT NOT NULL,
  mac TEXT NOT NULL,
  PRIMARY KEY (call_seq, idx)
)""",
    "CREATE INDEX security_rule_events_rule ON security_rule_events (rule_id, call_seq)",
    """CREATE TABLE event_body_blobs (
  id TEXT PRIMARY KEY,
  size {BIGINT} NOT NULL,
  stored {BIGINT} NOT NULL,
  truncated INTEGER NOT NULL,
  content {BLOB} NOT NULL,
  created TEXT NOT NULL
)""",
    """CREATE TABLE state (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
)""",
]

#: (version, statements). Append new versions; never edit a released one.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = ((1, tuple(_V1)),)
LATEST = MIGRATIONS[-1][0]


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def migrate(conn: Connection, backend: Backend) -> str:
    """Create or upgrade the schema; returns the ledger's id. Safe with concurrent openers."""
    conn.begin_exclusive()
    try:
        conn.execute(backend.ddl("CREATE TABLE IF NOT EXISTS schema_version "
                                 "(version INTEGER PRIMARY KEY, applied TEXT NOT NULL)"))
        rows = conn.execute("SELECT MAX(version) FROM schema_version")
        current = int(rows[0][0] or 0) if rows else 0
        if current > LATEST:
            raise LedgerConfigError(f"the ledger at {backend.describe()} has schema version {current}, newer "
                                    f"than this mcpwall understands ({LATEST}); upgrade mcpwall")
        for version, statements in MIGRATIONS:
            if version <= current:
                continue
            for statement in statements:
                conn.execute(backend.ddl(statement))
            if version == 1:
                conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", ("ledger_id", secrets.token_hex(16)))
                conn.execute("INSERT INTO ledger_head (id, seq, mac) VALUES (1, 0, ?)", (GENESIS,))
            conn.execute("INSERT INTO schema_version (version, applied) VALUES (?, ?)", (version, now_iso()))
        ledger_id = conn.execute("SELECT value FROM meta WHERE key = ?", ("ledger_id",))[0][0]
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return str(ledger_id)


def schema_version(conn: Connection) -> int:
    rows = conn.execute("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0] or 0) if rows else 0


__all__ = ["CHAINED", "EVENT_COLUMNS", "EVENT_TABLES", "GENESIS", "JSON_COLUMNS", "LATEST", "MIGRATIONS",
           "ROW_COLUMNS", "RULE_COLUMNS", "migrate", "now_iso", "schema_version"]
