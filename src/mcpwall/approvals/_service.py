"""Holding a call until a person answers: the gateway's `approvals` service.

The policy stage (and the chain stage, for a toxic flow under `action: ask`)
calls `await approvals.hold(ctx, decision)` when a decision is `ask` (the
service is `Components.approvals`, handed to those stages when they are built).
`hold` returns None to let the call proceed, or a `Reject` (BLOCKED, outcome
"ask-denied") to refuse it. While the call waits:

- an active "approve similar" grant covering it lets it through at once;
- otherwise a pending record is written to the approval book and listeners
  are told (webhook "ask" events, the dashboard's live stream);
- if the client sent a progress token, it receives `notifications/progress`
  every second, so it knows the call is alive and why it waits;
- the answer comes from `approve()` / `deny()` (the HTTP API, the dashboard,
  `mcpwall approve`), from another process writing the shared book (polled
  every half second), or, only when the policy allows it, from the client
  itself through MCP elicitation (`_elicit`);
- the rule's timeout (`decision.timeout_ms`) denies.

When the wait ends the holder settles its record: an approval is checked
against the call's hash and the policy revision, and consumed (single use).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwall._endpoint import command_hint
from mcpwall.approvals._book import ApprovalBook, CallView, call_hash
from mcpwall.approvals._elicit import Elicitor
from mcpwall.pipeline import Reject, RequestContext
from mcpwall.protocol import ErrorCode, notification
from mcpwall.protocol.mrtr import declares
from mcpwall.state import StateStore

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView
    from mcpwall.policy import Decision

log = logging.getLogger("mcpwall.approvals")

#: how often a held call looks for an answer written by another process
POLL_S = 0.5
Listener = Callable[[str, dict[str, Any]], None]


def call_view(ctx: RequestContext) -> CallView:
    """The book's view of a request: for tools/call and prompts/get the arguments, else the params."""
    params = ctx.params
    if ctx.method in ("tools/call", "prompts/get"):
        given = params.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
    else:
        arguments = {k: v for k, v in params.items() if k != "_meta"}
    session = ctx.session
    return CallView(server=ctx.server or "", method=ctx.method, target=ctx.target, arguments=arguments,
                    session=session.id, client=session.client_name, agent=session.agent)


class Approvals:
    """One per gateway (`Components.approvals`, bound by the gateway): holds calls, takes answers,
    tells listeners."""

    def __init__(self, *, via_elicitation: bool = False, progress_interval_s: float = 1.0) -> None:
        self.via_elicitation = via_elicitation
        self.progress_interval_s = progress_interval_s
        self.gateway: GatewayView | None = None
        self.listeners: list[Listener] = []
        self.counts: dict[str, int] = {}
        self._waiters: dict[str, asyncio.Future[None]] = {}
        self._book: ApprovalBook | None = None
        self._store: StateStore | None = None
        self.elicitor = Elicitor()
        #: The gateway's home, for the `mcpwall approve ID [--home H]` hints (set by who builds this).
        self.home: Path | None = None

    def bind(self, gateway: GatewayView) -> None:
        self.gateway = gateway
        if self.via_elicitation or gateway.options.allow_client_elicitation_approval:
            self.via_elicitation = True
            gateway.taps.append(self.elicitor.tap)

    @property
    def book(self) -> ApprovalBook:
        """The book over the gateway's current state store (the ledger replaces the memory store)."""
        assert self.gateway is not None, "Approvals.bind(gateway) first"
        store = self.gateway.state
        if self._book is None or self._store is not store:
            self._book, self._store = ApprovalBook(store), store
        return self._book

    # ------------------------------------------------------------------ answers

    def approve(self, approval_id: str, *, via: str, similar_minutes: int | None = None,
                expected_hash: str | None = None) -> dict[str, Any]:
        record = self.book.approve(approval_id, via=via, similar_minutes=similar_minutes,
                                   expected_hash=expected_hash)
        self._answered(record)
        if record.get("grant_id"):
            grant = self.book.store.get_state("approval_grants", str(record["grant_id"]))
            if grant is not None:
                self._tell("grant", grant)
        return record

    def deny(self, approval_id: str, *, via: str, reason: str | None = None) -> dict[str, Any]:
        record = self.book.deny(approval_id, via=via, reason=reason)
        self._answered(record)
        return record

    def revoke(self, grant_id: str) -> dict[str, Any]:
        grant = self.book.revoke(grant_id)
        self._tell("revoked", grant)
        return grant

    def _answered(self, record: dict[str, Any]) -> None:
        waiter = self._waiters.get(str(record.get("id")))
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self._tell("answered", record)

    def _tell(self, kind: str, record: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            try:
                listener(kind, record)
            except Exception:
                log.exception("approval listener failed")

    def _count(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    # ------------------------------------------------------------------ holding a call

    async def hold(self, ctx: RequestContext, decision: Decision) -> Reject | None:
        """Wait for a person's answer on this call; None lets it run, a Reject refuses it."""
        call = call_view(ctx)
        book = self.book
        data: dict[str, Any] = {"reasons": list(decision.reasons), "rule_ids": list(decision.rule_ids),
                                "revision": decision.revision, "mode": decision.mode}
        grant = book.use_grant(call, decision.rule_ids)
        if grant is not None:
            self._count("granted")
            ctx.notes["approval"] = {"status": "granted", "grant": grant["id"],
                                     "from_approval": grant.get("from_approval"),
                                     "call_hash": call_hash(call.server, call.method, call.target, call.arguments)}
            return None
        record = book.create(call, rule_ids=decision.rule_ids, reasons=decision.reasons, revision=decision.revision,
                             timeout_ms=decision.timeout_ms, redacted_keys=decision.redacted_keys)
        approval_id = str(record["id"])
        self._count("asked")
        log.warning("ask %s: %s/%s waits for approval (%s | %s), %d ms", approval_id, call.server, call.target,
                    command_hint("approve", approval_id, self.home), command_hint("deny", approval_id, self.home),
                    decision.timeout_ms)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[approval_id] = waiter
        self._tell("pending", record)
        started = time.monotonic()
        helpers = [asyncio.ensure_future(self._progress(ctx, record, started))]
        if self.via_elicitation and (ctx.session.supports("elicitation") or declares(ctx.params, "elicitation")):
            helpers.append(asyncio.ensure_future(self._elicit(ctx, record)))
        note: dict[str, Any] = {"id": approval_id, "status": "pending", "call_hash": record["call_hash"]}
        ctx.notes["approval"] = note
        try:
            await self._wait(approval_id, waiter, started + decision.timeout_ms / 1000)
        except asyncio.CancelledError:
            note["status"] = "cancelled"
            self._count("cancelled")
            try:  # the client went away; the record says so if the store still answers
                book.cancel(approval_id)
                cancelled = book.get(approval_id)
                if cancelled is not None:
                    self._tell("answered", cancelled)
            except Exception:
                log.exception("approval %s: cannot record the cancellation", approval_id)
            raise
        finally:
            self._waiters.pop(approval_id, None)
            for helper in helpers:
                helper.cancel()
        outcome, final = book.settle(approval_id, call, self._revision(decision))
        note.update(status=outcome, via=final.get("answered_via"),
                    waited_ms=round((time.monotonic() - started) * 1000, 1))
        self._count(outcome)
        if outcome == "expired":
            self._tell("answered", final)
        if outcome == "approved":
            if final.get("grant_id"):
                note["grant"] = final["grant_id"]
            return None
        data["approval"] = {"id": approval_id, "status": outcome}
        if outcome == "denied":
            why = final.get("reason")
            reason = f"approval {approval_id} denied by a person" + (f": {why}" if why else "")
        elif outcome == "expired":
            reason = f"no one approved this call within {decision.timeout_ms / 1000:g} s (approval {approval_id})"
        else:
            reason = f"approval {approval_id} cannot release this call: {final.get('reason')}"
        note["reason"] = reason
        data["reasons"] = [*data["reasons"], reason]
        return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: {reason}", data, outcome="ask-denied")

    def _revision(self, decision: Decision) -> str:
        gateway = self.gateway
        return gateway.policy.current.revision if gateway is not None else decision.revision

    async def _wait(self, approval_id: str, waiter: asyncio.Future[None], deadline: float) -> None:
        """Until answered here, answered in the shared book by another process, or the deadline."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            done, _ = await asyncio.wait({waiter}, timeout=min(remaining, POLL_S))
            if done:
                return
            record = self.book.get(approval_id)
            if record is None or record.get("status") != "pending":
                return

    async def _progress(self, ctx: RequestContext, record: dict[str, Any], started: float) -> None:
        meta = ctx.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is None or ctx.emit is None:
            return
        total = float(record.get("timeout_ms") or 0) / 1000
        message = (f"mcpwall: waiting for a person to approve this call (approval {record['id']}: "
                   f"{command_hint('approve', str(record['id']), self.home)})")
        try:
            while True:
                elapsed = round(time.monotonic() - started, 2)
                await ctx.emit(notification("notifications/progress", {
                    "progressToken": token, "progress": elapsed, "total": total, "message": message}))
                await asyncio.sleep(self.progress_interval_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client's stream went away; the hold goes on
            log.debug("progress for approval %s stopped: %s", record["id"], exc)

    async def _elicit(self, ctx: RequestContext, record: dict[str, Any]) -> None:
        """Ask the client's user through MCP elicitation (only when the policy allows it)."""
        try:
            answer = await self.elicitor.ask(ctx, record)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.info("approval %s: elicitation failed: %s", record["id"], exc)
            return
        if answer is None:
            return
        approved, reason = answer
        try:
            if approved:
                self.approve(str(record["id"]), via="elicitation")
            else:
                self.deny(str(record["id"]), via="elicitation", reason=reason or "declined in the client")
        except Exception as exc:  # answered elsewhere meanwhile
            log.info("approval %s: elicitation answer not taken: %s", record["id"], exc)

    def status(self) -> dict[str, Any]:
        return {"waiting": len(self._waiters), "via_elicitation": self.via_elicitation, **self.counts}


__all__ = ["POLL_S", "Approvals", "Listener", "call_view"]
