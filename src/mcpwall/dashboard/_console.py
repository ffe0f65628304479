"""What the dashboard reads and acts on: a running gateway, or a home directory.

`GatewayConsole` is the dashboard inside `mcpwall proxy` (`/ui/`): live
upstream states, the policy in force, approvals answered through the
gateway's own service (the held call wakes at once). `HomeConsole` is
`mcpwall dashboard`: the ledger and the policy file of a home directory;
answers are written to the ledger's approval book, where the gateway that
holds the call finds them within half a second.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mcpwall.approvals import ApprovalBook, mask_secrets
from mcpwall.errors import MCPWallError
from mcpwall.policy import Call, Context, evaluate, prepare
from mcpwall.security._poisoning_pins import FIELDS_VERSION, NAMESPACE, PinBook, diff, pin_key
from mcpwall.state import MemoryStateStore, StateStore

if TYPE_CHECKING:
    from mcpwall.approvals import Approvals
    from mcpwall.ledger import Ledger
    from mcpwall.pipeline import GatewayView, PolicyStore

log = logging.getLogger("mcpwall.dashboard")
_DESCRIPTION_CHARS = 300


class PinRefused(MCPWallError):
    """A pin cannot be accepted: nothing is pending for it, or what is pending is not what the person saw."""

    #: the HTTP status the API answers with
    status = 409


def _risk(spec: Any) -> Any:
    if spec is None:
        return None
    try:
        from mcpwall.discovery import risk_summary
    except ImportError:  # pragma: no cover - discovery ships with mcpwall
        return None
    try:
        return risk_summary(spec)
    except Exception:
        return None


def pin_rows(store: StateStore, server: str | None = None) -> list[dict[str, Any]]:
    """Pins in the shape of `mcpwall pin --list --json`; a pending change also has its `diff`
    (pinned -> seen, as `pin --list` prints it) and the pinned `description`."""
    rows = []
    records = PinBook(store).all()
    for record in records.values():
        if server and record.get("server") != server:
            continue
        pending = record.get("pending") or None
        of = (pending or {}).get("of")
        original = records.get(pin_key(str(record.get("server")), str(record.get("kind")), str(of))) if of else None
        definition = (pending or {}).get("definition") or record.get("definition") or {}
        described = definition.get("description") if isinstance(definition, dict) else None
        rows.append({"server": record.get("server"), "kind": record.get("kind"), "name": record.get("name"),
                     "description": mask_secrets(described[:_DESCRIPTION_CHARS]) if isinstance(described, str) else None,
                     "diff": mask_secrets(diff(record, original)) if pending else None,
                     "hash": record.get("hash"), "pinned_at": record.get("pinned_at"),
                     "removed": bool(record.get("removed_at")),
                     "state": "pending" if pending or record.get("hash") is None else
                     ("removed" if record.get("removed_at") else "pinned"),
                     "pending": None if pending is None else {k: pending.get(k) for k in
                                                              ("change", "of", "hash", "seen_at")}})
    return sorted(rows, key=lambda r: (str(r["server"]), str(r["kind"]), str(r["name"])))


def accept_pin(store: StateStore, server: str, kind: str, name: str, seen_hash: str | None) -> dict[str, Any]:
    """A person accepts the pending definition of one item: it becomes the pin (`pin --accept`, for one kind).

    `seen_hash` is the pending hash the person was shown: if the server changed the item again
    since, the newer definition is not accepted unseen (409)."""
    book = PinBook(store)
    record = book.get(server, kind, name)
    pending = (record or {}).get("pending")
    if record is None or not pending:
        raise PinRefused(f"nothing is pending for {kind} {server}/{name}")
    if seen_hash is not None and pending.get("hash") != seen_hash:
        raise PinRefused(f"{kind} {server}/{name} changed again since it was shown; look at the new change first")
    store.put_state(NAMESPACE, pin_key(server, kind, name),
                    {**record, "hash": pending["hash"], "definition": pending["definition"], "pinned_at": time.time(),
                     "removed_at": None, "pending": None, "fields": FIELDS_VERSION})
    log.warning("pin accepted from the dashboard: %s %s/%s is now pinned at %s", kind, server, name,
                str(pending["hash"])[:12])
    return {"accepted": pin_key(server, kind, name), "hash": pending["hash"]}


def tool_rows(pins: list[dict[str, Any]], catalog: Mapping[str, Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """A server's tools: those it lists now (`catalog`), else those pinned, each with its pin state."""
    by_name = {str(r["name"]): r for r in pins if r["kind"] == "tool"}
    if catalog is None:
        return [{"name": n, "description": r["description"], "pin": r["state"]} for n, r in sorted(by_name.items())]
    out = []
    for name, tool in sorted(catalog.items()):
        described = tool.get("description")
        pin = by_name.get(name)
        out.append({"name": name, "pin": pin["state"] if pin else "unpinned",
                    "description": mask_secrets(described[:_DESCRIPTION_CHARS]) if isinstance(described, str) else None})
    return out


def pin_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        s = out.setdefault(str(row["server"]), {"pinned": 0, "pending": 0, "removed": 0, "changes": []})
        s[row["state"]] = s.get(row["state"], 0) + 1
        if row["state"] == "pending":
            s["changes"].append({"kind": row["kind"], "name": row["name"],
                                 "change": (row["pending"] or {}).get("change", "added")})
    return out


class Console:
    """The common surface; see the two implementations."""

    mode = "console"
    ledger: Ledger | None = None
    approvals: Approvals | None = None

    @property
    def store(self) -> StateStore:
        raise NotImplementedError

    @property
    def book(self) -> ApprovalBook:
        book: ApprovalBook | None = getattr(self, "_book", None)
        if book is None or book.store is not self.store:
            book = ApprovalBook(self.store)
            self._book = book
        return book

    def policy(self) -> Any:
        raise NotImplementedError

    def policy_status(self) -> dict[str, Any] | None:
        """The policy store's `status()`: revision in force, mode, last refused reload, held reload."""
        raise NotImplementedError

    def servers(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def accept_pin(self, server: str, kind: str, name: str, seen_hash: str | None) -> dict[str, Any]:
        return accept_pin(self.store, server, kind, name, seen_hash)

    def simulate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    # ------------------------------------------------------------------ answers (gateway: wake the holder)

    def approve(self, approval_id: str, *, via: str, similar_minutes: int | None,
                expected_hash: str | None) -> dict[str, Any]:
        if self.approvals is not None:
            return self.approvals.approve(approval_id, via=via, similar_minutes=similar_minutes,
                                          expected_hash=expected_hash)
        return self.book.approve(approval_id, via=via, similar_minutes=similar_minutes, expected_hash=expected_hash)

    def deny(self, approval_id: str, *, via: str, reason: str | None) -> dict[str, Any]:
        if self.approvals is not None:
            return self.approvals.deny(approval_id, via=via, reason=reason)
        return self.book.deny(approval_id, via=via, reason=reason)

    def revoke(self, grant_id: str) -> dict[str, Any]:
        if self.approvals is not None:
            return self.approvals.revoke(grant_id)
        return self.book.revoke(grant_id)

    def rule_badges(self) -> dict[str, dict[str, list[str]]]:
        """rule id -> {owasp, compliance} of the policy in force (for rows the ledger has no rule rows for)."""
        policy = self.policy()
        if policy is None:
            return {}
        cached = getattr(self, "_badges", None)
        if cached is not None and cached[0] is policy:
            return dict(cached[1])
        rules = (*policy.all_rules, *policy.response_rules)
        badges = {r.id: {"owasp": list(r.owasp), "compliance": list(r.compliance)} for r in rules}
        self._badges = (policy, badges)
        return badges

    def trace(self, policy: Any, body: Mapping[str, Any], descriptions: Mapping[str, str]) -> dict[str, Any]:
        server = str(body.get("server") or "")
        tool = body.get("tool") or body.get("name")
        if not isinstance(tool, str) or not tool:
            raise ValueError("simulate needs a tool name")
        args = body.get("args", body.get("arguments", {})) or {}
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        call = Call(method=str(body.get("method") or "tools/call"), name=tool, arguments=args, server=server,
                    description=str(body.get("description") or descriptions.get(tool, "")),
                    client=str(body.get("client") or ""), agent=str(body.get("agent") or ""))
        decision = evaluate(policy, prepare(call), Context(now=datetime.now().astimezone()), trace=True)
        return {"server": server, "tool": tool, **decision.as_dict(with_trace=True)}


def _authorization(name: str, upstream: Any, last_error: str | None) -> dict[str, Any]:
    """The upstream's OAuth state (mcpwall.oauth): none / authorized until T / login required, from the
    index of its transport's token store (no secret read); the login command when one is needed."""
    from mcpwall.oauth import server_authorization

    store = getattr(getattr(upstream.transport, "auth", None), "store", None)
    held = store.index().get(name) if store is not None else None
    summary = server_authorization(held, last_error)
    if summary["state"] == "login required":
        summary["login"] = f"mcpwall login {name}"
    elif summary.get("step_up"):
        summary["login"] = f'mcpwall login {name} --scope "{summary["step_up"]}"'
    return summary


class GatewayConsole(Console):
    mode = "gateway"

    def __init__(self, gateway: GatewayView) -> None:
        self.gateway = gateway

    @property
    def store(self) -> StateStore:
        return self.gateway.state

    @property
    def ledger(self) -> Ledger | None:  # type: ignore[override]
        return getattr(self.gateway, "ledger", None)

    @property
    def approvals(self) -> Approvals | None:  # type: ignore[override]
        return getattr(self.gateway, "approvals", None)

    def policy(self) -> Any:
        return self.gateway.policy.current

    def policy_status(self) -> dict[str, Any] | None:
        status: dict[str, Any] = self.gateway.policy.status()
        return status

    def servers(self) -> list[dict[str, Any]]:
        rows = pin_rows(self.store)
        pins = pin_summary(rows)
        out = []
        for name, s in self.gateway.servers.items():
            status = s.status()
            out.append({"name": name, "state": status["state"], "circuit": status["circuit"],
                        "tools": status["tools"], "transport": status["transport"], "restarts": status["restarts"],
                        "last_error": status["last_error"], "risk": _risk(s.spec),
                        "tool_list": tool_rows([r for r in rows if r["server"] == name], s.catalog.tools),
                        "pins": pins.get(name, {"pinned": 0, "pending": 0, "removed": 0, "changes": []}),
                        "authorization": _authorization(name, s, status["last_error"])})
        return out

    def simulate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        server = str(body.get("server") or "")
        upstream = self.gateway.servers.get(server)
        descriptions = {n: str(t.get("description") or "") for n, t in upstream.catalog.tools.items()} \
            if upstream is not None else {}
        return self.trace(self.policy(), body, descriptions)


class HomeConsole(Console):
    mode = "standalone"

    def __init__(self, ledger: Ledger | None, policy: PolicyStore | None, store: StateStore | None = None) -> None:
        self._ledger = ledger
        self._policy = policy
        self._store: StateStore = store or ledger or MemoryStateStore()

    @property
    def store(self) -> StateStore:
        return self._store

    @property
    def ledger(self) -> Ledger | None:  # type: ignore[override]
        return self._ledger

    def policy(self) -> Any:
        if self._policy is None:
            return None
        with contextlib.suppress(OSError):
            # The file may have changed since the dashboard started; a bad file keeps the old one.
            if self._policy.changed():
                self._policy.reload()
        return self._policy.current

    def policy_status(self) -> dict[str, Any] | None:
        if self._policy is None:
            return None
        self.policy()
        status: dict[str, Any] = self._policy.status()
        return status

    def servers(self) -> list[dict[str, Any]]:
        rows = pin_rows(self.store)
        pins = pin_summary(rows)
        policy = self.policy()
        specs: dict[str, Any] = dict(policy.source.servers) if policy is not None else {}
        names = list(dict.fromkeys([*specs, *pins]))
        return [{"name": n, "state": "unknown", "circuit": None, "tools": None, "transport": None, "restarts": None,
                 "last_error": None, "risk": _risk(specs.get(n)),
                 "tool_list": tool_rows([r for r in rows if r["server"] == n], None),
                 "pins": pins.get(n, {"pinned": 0, "pending": 0, "removed": 0, "changes": []})} for n in names]

    def simulate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        policy = self.policy()
        if policy is None:
            from mcpwall.policy import compile_policy, load_template

            policy = compile_policy(load_template("default"))
        return self.trace(policy, body, {})


__all__ = ["Console", "GatewayConsole", "HomeConsole", "PinRefused", "accept_pin", "pin_rows", "pin_summary",
           "tool_rows"]
