"""The head anchor: the ledger's head, kept where restoring the home does not reach.

The checkpoint (`<home>/run/ledger.checkpoint`) catches a truncated tail, but
it lives beside `ledger.db`: whoever can copy the home aside and back restores
both, and the older pair verifies. The anchor is a second record of the head
(`seq`, `mac`, MAC'd with the ledger key) that the writer advances after each
commit and never moves back, kept *outside* the home, by default in
`$XDG_STATE_HOME/mcpwall/anchors/<ledger_id>.head` (`~/.local/state/...`).
A writer that opens a ledger whose head is behind its anchor, or whose row at
the anchor's seq is not the anchored one, refuses to write (`LedgerRolledBack`),
and `verify-audit` reports it.

"Outside the home" is relative: the gateway runs as the user, so an agent with
the user's file access can reach the anchor too unless the gateway's
self-protection refuses that path (`anchor_dir` / `anchor_path` name it) or
the anchor directory is given (`ledger.anchor`, `$MCPWALL_ANCHOR_DIR`) on a
location the agent cannot write. docs/LEDGER.md lists what remains.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcpwall.ledger._chain import _locked, _read, same_mac
from mcpwall.ledger._errors import LedgerConfigError

ANCHOR_ENV = "MCPWALL_ANCHOR_DIR"
#: `ledger.anchor` / `$MCPWALL_ANCHOR_DIR` values that switch the anchor off
OFF = frozenset({"off", "none", "false", "no", "0"})


class LedgerRolledBack(LedgerConfigError):
    """The ledger is behind (or forked from) the head its anchor recorded: restored from a copy."""


def anchor_dir(configured: str | os.PathLike[str] | None = None) -> Path | None:
    """Where anchors live: `configured` (policy `ledger.anchor`), else `$MCPWALL_ANCHOR_DIR`, else
    `$XDG_STATE_HOME/mcpwall/anchors` (default `~/.local/state/mcpwall/anchors`); None when switched off.

    The self-protection guard protects this directory like the home.
    """
    value = str(configured) if configured is not None else os.environ.get(ANCHOR_ENV, "")
    value = value.strip()
    if value.lower() in OFF:
        return None
    if value:
        return Path(value).expanduser()
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state).expanduser() if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "mcpwall" / "anchors"


def anchor_path(ledger_id: str, configured: str | os.PathLike[str] | None = None) -> Path | None:
    """The anchor file of one ledger (see `anchor_dir`), or None when anchors are off."""
    folder = anchor_dir(configured)
    if folder is None:
        return None
    if not ledger_id or not all(c.isalnum() for c in ledger_id):
        raise LedgerConfigError(f"ledger id {ledger_id!r} cannot name an anchor file")
    return folder / f"{ledger_id}.head"


def _check(key: bytes, ledger_id: str, seq: int, mac: str) -> str:
    return hmac.digest(key, orjson.dumps(["anchor", ledger_id, seq, mac]), "sha256").hex()


@dataclass(frozen=True)
class Anchor:
    """The highest head a writer on this machine committed to one ledger."""

    seq: int
    mac: str
    #: False when the file's MAC does not verify (edited, or written with another key)
    authentic: bool

    @property
    def label(self) -> str:
        return head_label(self.seq, self.mac)


def head_label(seq: int, mac: str) -> str:
    """The published form of a head, `SEQ:MAC-PREFIX` (16 hex digits): what `--expect-head` takes."""
    return f"{seq}:{mac[:16]}"


def read_anchor(path: Path, key: bytes, ledger_id: str) -> Anchor | None:
    """The anchor in `path`, or None if there is none (no file, or one for another ledger)."""
    data = _read(path)
    if not data:
        return None
    if data.get("ledger_id") != ledger_id:
        return Anchor(0, "", False)
    seq, mac, check = data.get("seq"), data.get("mac"), data.get("check")
    if type(seq) is not int or not isinstance(mac, str) or not isinstance(check, str) or seq < 0:
        return Anchor(0, "", False)
    return Anchor(seq, mac, same_mac(check, _check(key, ledger_id, seq, mac)))


def write_anchor(path: Path, key: bytes, ledger_id: str, seq: int, mac: str) -> Anchor | None:
    """Advance the anchor to (seq, mac); never moves it back. Returns the anchor found before, if any."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _locked(path):
        found = read_anchor(path, key, ledger_id)
        if found is not None and (found.seq >= seq or not found.authentic):
            return found  # ahead (another writer), or altered: never overwrite the evidence
        entry: dict[str, Any] = {"version": 1, "ledger_id": ledger_id, "seq": seq, "mac": mac,
                                 "check": _check(key, ledger_id, seq, mac)}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(entry))
        os.replace(tmp, path)
        return found


__all__ = ["ANCHOR_ENV", "Anchor", "LedgerRolledBack", "anchor_dir", "anchor_path", "head_label", "read_anchor",
           "write_anchor"]
