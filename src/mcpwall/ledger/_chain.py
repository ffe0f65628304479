"""Tamper evidence: the HMAC chain, its key and the checkpoint of its tail.

Every event row's MAC is HMAC-SHA256(key, JSON([table, seq, prev_mac,
*columns])), where `prev_mac` is the MAC of the row before it (GENESIS for
the first). Editing, deleting, inserting or reordering rows therefore breaks
the chain at the first row touched. Deleting rows at the *end* leaves a valid
shorter chain, so the writer also records the last seq and MAC it committed
in a checkpoint file kept outside the database (`<home>/run/ledger.checkpoint`,
itself MAC'd); `verify` compares the tail with it.

The key is the text of `$MCPWALL_LEDGER_KEY`, else of `<home>/run/ledger.key`
(generated, mode 0600), used as UTF-8 bytes - the same convention as
mcp-seatbelt's `--secret`, so an exported JSONL file verifies there too.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpwall._secretfile import create_once
from mcpwall.ledger._errors import LedgerConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("mcpwall.ledger")

KEY_ENV = "MCPWALL_LEDGER_KEY"


def key_path(home: Path) -> Path:
    return home / "run" / "ledger.key"


def checkpoint_path(home: Path) -> Path:
    return home / "run" / "ledger.checkpoint"


def load_key(home: Path, *, create: bool = True) -> bytes:
    """The chain key: `$MCPWALL_LEDGER_KEY`, else `<home>/run/ledger.key`, generated if `create`."""
    env = os.environ.get(KEY_ENV, "").strip()
    if env:
        return env.encode("utf-8")
    path = key_path(home)
    if not path.exists():
        if not create:
            raise LedgerConfigError(f"no ledger key: {path} does not exist and {KEY_ENV} is not set")
        create_once(path, secrets.token_hex(32))  # another process may have won: its key is the one read
    try:
        if path.stat().st_mode & 0o077:
            log.warning("ledger key %s is readable by other users; chmod 600 it", path)
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise LedgerConfigError(f"cannot read the ledger key {path}: {exc}") from exc
    if not text:
        raise LedgerConfigError(f"the ledger key {path} is empty")
    return text.encode("utf-8")


def event_mac(key: bytes, table: str, seq: int, prev_mac: str, values: Sequence[Any]) -> str:
    """The MAC of one event row; `values` are the CHAINED columns in order."""
    return hmac.digest(key, orjson.dumps([table, seq, prev_mac, *values]), "sha256").hex()


def event_mac_json(key: bytes, table: str, seq: int, prev_mac: str, values_json: bytes) -> str:
    """`event_mac` from the JSON of the values, already serialised: the same bytes, built by splicing.

    `table` and `prev_mac` are plain ASCII (a table name, a hex MAC), so their JSON is the text in quotes.
    """
    message = b'["%s",%d,"%s",' % (table.encode(), seq, prev_mac.encode()) + values_json[1:]
    return hmac.digest(key, message, "sha256").hex()


def rule_mac(key: bytes, call_mac: str, values: Sequence[Any]) -> str:
    """The MAC of one security_rule_events row, chained to its call's MAC."""
    return hmac.digest(key, orjson.dumps(["rule", call_mac, *values]), "sha256").hex()


def same_mac(found: str, expected: str) -> bool:
    """`hmac.compare_digest` for a MAC read from a file or a row, which may hold any text."""
    return found.isascii() and hmac.compare_digest(found, expected)


def _checkpoint_check(key: bytes, ledger_id: str, seq: int, mac: str) -> str:
    return hmac.digest(key, orjson.dumps(["checkpoint", ledger_id, seq, mac]), "sha256").hex()


@dataclass(frozen=True)
class Checkpoint:
    """The last row one gateway home committed to a ledger."""

    seq: int
    mac: str
    #: False when the checkpoint's own MAC does not verify (the file was edited)
    authentic: bool


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def read_checkpoint(path: Path, key: bytes, ledger_id: str) -> Checkpoint | None:
    """This ledger's checkpoint in the file, or None if the file has none."""
    entry = _read(path).get("ledgers", {}).get(ledger_id)
    if not isinstance(entry, dict):
        return None
    try:
        seq, mac, check = int(entry["seq"]), str(entry["mac"]), str(entry["check"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return Checkpoint(0, "", False)
    return Checkpoint(seq, mac, same_mac(check, _checkpoint_check(key, ledger_id, seq, mac)))


def other_ledgers(path: Path, ledger_id: str) -> list[str]:
    """Ids of the other ledgers this checkpoint file records (a replaced database leaves its id here)."""
    ledgers = _read(path).get("ledgers")
    return sorted(k for k in ledgers if k != ledger_id) if isinstance(ledgers, dict) else []


def write_checkpoint(path: Path, key: bytes, ledger_id: str, seq: int, mac: str) -> None:
    """Advance the checkpoint to (seq, mac); never moves it back (several writers share a file)."""
    with _locked(path):
        data = _read(path)
        ledgers = data.get("ledgers") if isinstance(data.get("ledgers"), dict) else {}
        assert isinstance(ledgers, dict)
        current = ledgers.get(ledger_id)
        if isinstance(current, dict) and isinstance(current.get("seq"), int) and current["seq"] >= seq:
            return
        ledgers[ledger_id] = {"seq": seq, "mac": mac, "check": _checkpoint_check(key, ledger_id, seq, mac)}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps({"version": 1, "ledgers": ledgers}, option=orjson.OPT_INDENT_2))
        os.replace(tmp, path)


__all__ = ["KEY_ENV", "Checkpoint", "checkpoint_path", "event_mac", "event_mac_json", "key_path", "load_key", "other_ledgers", "read_checkpoint",
           "rule_mac", "same_mac", "write_checkpoint"]
