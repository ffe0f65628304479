"""The approval book: asks waiting for a person, their answers, and "approve similar" grants.

Everything lives in a `StateStore` (the ledger's `state` table when a ledger
runs), so the gateway that holds a call, a second gateway replica, the
standalone dashboard and the HTTP API all see one book:

- namespace "approvals", key = the approval id: one record per held call,
  `pending` until a person approves or denies it, the call's timeout expires
  it (`expired`) or the client goes away (`cancelled`). An approved record is
  consumed once (`used_at`) by the call it was made for.
- namespace "approval_grants", key = the grant id: a narrow, expiring allow
  for calls *like* an approved one (same server, tool, agent, argument names
  and asking rules; any argument values) for N minutes. Visible and revocable.

Binding: a record carries the SHA-256 of (server, method, target,
arguments) and the policy revision. The holder checks both when it wakes,
so an approval cannot release a different call, a call whose arguments
changed, or a call under a different policy; and it is single use.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from mcpwall.errors import MCPWallError
from mcpwall.policy import redact_arguments
from mcpwall.state import StateStore

NAMESPACE = "approvals"
GRANTS = "approval_grants"
#: answered records are kept this long (they are also in the call's ledger row)
KEEP_ANSWERED_S = 7 * 86400
MAX_RECORDS = 2000
MAX_SIMILAR_MINUTES = 24 * 60
#: arguments shown to an approver are cut beyond this many bytes of JSON
MAX_SHOWN_BYTES = 64 * 1024

STATUSES = ("pending", "approved", "denied", "expired", "cancelled")


class ApprovalError(MCPWallError):
    """An answer that cannot be given (unknown id, already answered, expired)."""

    #: the HTTP status the API answers with
    status = 409


class ApprovalNotFound(ApprovalError):
    """No approval or grant has that id."""

    status = 404


def replica_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _holder_gone(replica: str) -> bool:
    """Whether the holder of a call ran on this host and its process is gone (a replica that was
    killed): an answer would be recorded as given, and nothing would ever run the call. A holder
    on another host cannot be checked from here."""
    host, _, pid = replica.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass(frozen=True, slots=True)
class CallView:
    """What the book needs to know about a held call."""

    server: str
    method: str
    target: str
    arguments: Mapping[str, Any]
    session: str = ""
    client: str = ""
    agent: str = ""

    @property
    def arg_keys(self) -> list[str]:
        return sorted(str(k) for k in self.arguments)


def call_hash(server: str, method: str, target: str, arguments: Mapping[str, Any]) -> str:
    """The identity of a call: SHA-256 of its canonical JSON (sorted keys, no `_meta`)."""
    body = {"server": server, "method": method, "target": target,
            "arguments": {k: v for k, v in arguments.items() if k != "_meta"}}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
                                       default=str)).hexdigest()


_scanner: Any = None
_scanner_lock = threading.Lock()


def _dlp() -> Any:
    global _scanner
    with _scanner_lock:
        if _scanner is None:
            from mcpwall.security.dlp import Scanner

            _scanner = Scanner()
        return _scanner


def safe_arguments(arguments: Mapping[str, Any], redacted_keys: Iterable[str] = ()) -> Any:
    """Arguments fit to show a person or send to a webhook: the policy's redactions applied,
    every secret DLP recognises masked, and cut to MAX_SHOWN_BYTES."""
    value: Any = redact_arguments(arguments, tuple(redacted_keys))
    value, _ = _dlp().redact(value)
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str)
    if len(text) > MAX_SHOWN_BYTES:
        return {"truncated": True, "preview": text[:MAX_SHOWN_BYTES].decode("utf-8", "replace")}
    return value


def mask_secrets(value: Any) -> Any:
    """Any JSON value with the secrets DLP recognises masked (reasons, notes, payloads)."""
    return _dlp().redact(value)[0]


class ApprovalBook:
    """Asks and grants over a StateStore; every read goes to the store (another process may write)."""

    def __init__(self, store: StateStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        # One process answers and consumes under this lock; across processes the
        # holder is the only writer of a record once someone answered it.
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ asks

    def create(self, call: CallView, *, rule_ids: Iterable[str], reasons: Iterable[str], revision: str,
               timeout_ms: int, redacted_keys: Iterable[str] = ()) -> dict[str, Any]:
        now = self.clock()
        record = {
            "id": secrets.token_hex(6), "status": "pending", "server": call.server, "method": call.method,
            "tool": call.target, "arguments": safe_arguments(call.arguments, redacted_keys),
            "arg_keys": call.arg_keys,
            "call_hash": call_hash(call.server, call.method, call.target, call.arguments),
            "revision": revision, "rule_ids": list(rule_ids), "reasons": mask_secrets(list(reasons)),
            "created": now, "expires": now + timeout_ms / 1000, "timeout_ms": timeout_ms,
            "session": call.session, "client": call.client, "agent": call.agent, "replica": replica_name(),
            "answered_at": None, "answered_via": None, "reason": None, "similar_minutes": None,
            "grant_id": None, "used_at": None,
        }
        with self._lock:
            self.store.put_state(NAMESPACE, record["id"], record)
        self._prune(now)
        return record

    def get(self, approval_id: str) -> dict[str, Any] | None:
        return self.store.get_state(NAMESPACE, approval_id)

    def all(self) -> list[dict[str, Any]]:
        """Every kept record, newest first."""
        records = list(self.store.all_state(NAMESPACE).values())
        return sorted(records, key=lambda r: float(r.get("created") or 0), reverse=True)

    def pending(self) -> list[dict[str, Any]]:
        """Asks still waiting for a person (not past their expiry), oldest first."""
        now = self.clock()
        out = [r for r in self.all() if r.get("status") == "pending" and float(r.get("expires") or 0) > now]
        return out[::-1]

    def approve(self, approval_id: str, *, via: str, similar_minutes: int | None = None,
                expected_hash: str | None = None) -> dict[str, Any]:
        """A person approved: the record's own call may run once. With `similar_minutes`, a grant too."""
        if similar_minutes is not None and not 1 <= int(similar_minutes) <= MAX_SIMILAR_MINUTES:
            raise ApprovalError(f"similar_minutes must be between 1 and {MAX_SIMILAR_MINUTES}")
        with self._lock:
            record = self._answerable(approval_id)
            if expected_hash is not None and expected_hash != record.get("call_hash"):
                raise ApprovalError(f"approval {approval_id} is for a different call (its hash is "
                                    f"{str(record.get('call_hash'))[:12]}…, not {expected_hash[:12]}…)")
            now = self.clock()
            record.update(status="approved", answered_at=now, answered_via=via)
            if similar_minutes:
                grant = self._grant_from(record, int(similar_minutes), now)
                record.update(similar_minutes=int(similar_minutes), grant_id=grant["id"])
            self.store.put_state(NAMESPACE, approval_id, record)
            return record

    def deny(self, approval_id: str, *, via: str, reason: str | None = None) -> dict[str, Any]:
        with self._lock:
            record = self._answerable(approval_id)
            record.update(status="denied", answered_at=self.clock(), answered_via=via,
                          reason=(reason or "").strip()[:1000] or None)
            self.store.put_state(NAMESPACE, approval_id, record)
            return record

    def _answerable(self, approval_id: str) -> dict[str, Any]:
        record = self.get(approval_id)
        if record is None:
            raise ApprovalNotFound(f"no approval {approval_id!r}")
        status = record.get("status")
        if status != "pending":
            raise ApprovalError(f"approval {approval_id} is already {status}")
        if float(record.get("expires") or 0) <= self.clock():
            raise ApprovalError(f"approval {approval_id} expired (the call's timeout passed)")
        if _holder_gone(str(record.get("replica") or "")):
            raise ApprovalError(f"approval {approval_id}: the gateway that held the call "
                                f"({record.get('replica')}) has stopped; the call will not run")
        return record

    def settle(self, approval_id: str, call: CallView, revision: str) -> tuple[str, dict[str, Any]]:
        """The holder's last word on its record: ("approved"|"denied"|"expired"|"invalid", record).

        An approved record is consumed here (single use) after its binding is checked: the
        same call (hash), the same policy revision, not consumed before.
        """
        with self._lock:
            record = self.get(approval_id)
            if record is None:
                return "invalid", {"id": approval_id, "reason": "the approval record disappeared"}
            status = record.get("status")
            now = self.clock()
            if status == "pending":
                record.update(status="expired", answered_at=now, answered_via="timeout")
                self.store.put_state(NAMESPACE, approval_id, record)
                return "expired", record
            if status != "approved":
                return ("denied" if status == "denied" else "invalid"), record
            problem = None
            if record.get("used_at") is not None:
                problem = "the approval was already used"
            elif record.get("call_hash") != call_hash(call.server, call.method, call.target, call.arguments):
                problem = "the approval was made for a different call"
            elif record.get("revision") != revision:
                problem = "the policy changed while the call was held"
            if problem is not None:
                return "invalid", {**record, "reason": problem}
            record["used_at"] = now
            self.store.put_state(NAMESPACE, approval_id, record)
            return "approved", record

    def cancel(self, approval_id: str, why: str = "the client went away") -> None:
        with self._lock:
            record = self.get(approval_id)
            if record is not None and record.get("status") == "pending":
                record.update(status="cancelled", answered_at=self.clock(), answered_via="client", reason=why)
                self.store.put_state(NAMESPACE, approval_id, record)

    def _prune(self, now: float) -> None:
        records = self.all()
        old = [r for r in records if r.get("status") != "pending"
               and float(r.get("answered_at") or r.get("created") or 0) < now - KEEP_ANSWERED_S]
        excess = [r for r in records[MAX_RECORDS:] if r.get("status") != "pending"]
        for r in {r["id"]: r for r in [*old, *excess] if "id" in r}.values():
            self.store.delete_state(NAMESPACE, str(r["id"]))

    # ------------------------------------------------------------------ grants

    def _grant_from(self, record: Mapping[str, Any], minutes: int, now: float) -> dict[str, Any]:
        keys = record.get("arg_keys")
        grant_id = "g" + secrets.token_hex(5)
        grant: dict[str, Any] = {"id": grant_id, "server": record.get("server"), "method": record.get("method"),
                 "tool": record.get("tool"), "agent": record.get("agent"), "client": record.get("client"),
                 "arg_keys": keys, "rule_ids": list(record.get("rule_ids") or []), "created": now,
                 "expires": now + minutes * 60, "minutes": minutes, "from_approval": record.get("id"),
                 "revoked_at": None, "uses": 0}
        self.store.put_state(GRANTS, grant_id, grant)
        return grant

    def grants(self, *, active_only: bool = True) -> list[dict[str, Any]]:
        now = self.clock()
        out = sorted(self.store.all_state(GRANTS).values(), key=lambda g: float(g.get("created") or 0),
                     reverse=True)
        if active_only:
            out = [g for g in out if g.get("revoked_at") is None and float(g.get("expires") or 0) > now]
        return out

    def revoke(self, grant_id: str) -> dict[str, Any]:
        with self._lock:
            grant = self.store.get_state(GRANTS, grant_id)
            if grant is None:
                raise ApprovalNotFound(f"no grant {grant_id!r}")
            if grant.get("revoked_at") is None:
                grant["revoked_at"] = self.clock()
                self.store.put_state(GRANTS, grant_id, grant)
            return grant

    def use_grant(self, call: CallView, rule_ids: Iterable[str]) -> dict[str, Any] | None:
        """An active grant covering this call (and count the use), else None.

        Narrow on purpose: the same server, method, tool and agent, exactly the same
        argument names, and only asks raised by rules the grant was made for.
        """
        asked = set(rule_ids)
        keys = call.arg_keys
        for grant in self.grants():
            if (grant.get("server"), grant.get("method"), grant.get("tool"), grant.get("agent")) != \
                    (call.server, call.method, call.target, call.agent):
                continue
            if grant.get("arg_keys") != keys or not asked <= set(grant.get("rule_ids") or ()):
                continue
            with self._lock:
                grant["uses"] = int(grant.get("uses") or 0) + 1
                self.store.put_state(GRANTS, str(grant["id"]), grant)
            return grant
        return None


__all__ = ["GRANTS", "MAX_SIMILAR_MINUTES", "NAMESPACE", "STATUSES", "ApprovalBook", "ApprovalError",
           "ApprovalNotFound", "CallView", "call_hash", "mask_secrets", "replica_name", "safe_arguments"]
