"""What a finished request is worth telling someone about: events for the webhooks.

`events_for(ctx)` reads a finished request's context (decision, outcome,
the notes other stages left) and returns its events, most specific first:

| event | when | from |
|---|---|---|
| honeytoken | a planted decoy credential came back in a request | `notes["honeytoken"]` (tripwire stage) |
| attack_chain | the session's kill chain reached exfiltration | `notes["chain"]["alert"]` (chain stage) |
| toxic_flow | private data + untrusted content + an outbound call | `notes["chain"]["toxic_flow"]` |
| rug_pull | a tool definition changed since it was pinned | `notes["pins"]` (pins stage) |
| ask | a call waits for a person | the approvals service, when the ask starts |
| deny | the call was refused (policy, a stage, an ask denied or timed out) | outcome deny / ask-denied |
| redact | arguments removed by a redact rule, or secrets masked by DLP | decision, `notes["dlp"]` |
| warn | a warn rule matched, or audit mode let through what enforce would refuse | decision |
| allow | a tools/call ran | decision |

Each webhook gets at most one notification per request: the first event in
this order that it lists (a honeytoken trip is also a deny; a webhook
listening for both hears about the honeytoken).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwall._endpoint import command_hint
from mcpwall.metrics import decision_word

if TYPE_CHECKING:
    from mcpwall.pipeline import RequestContext

EVENT_ORDER = ("honeytoken", "attack_chain", "toxic_flow", "rug_pull", "ask", "deny", "redact", "warn", "allow")
#: methods whose decisions (deny, warn, redact, allow) are worth an event
DECIDED = frozenset({"tools/call", "resources/read", "resources/subscribe", "prompts/get"})


@dataclass(frozen=True, slots=True)
class NotificationEvent:
    """One thing to tell a webhook. `arguments` are raw here; the sender redacts before sending."""

    event: str
    server: str
    tool: str
    reasons: tuple[str, ...]
    timestamp: str
    rule_ids: tuple[str, ...] = ()
    decision: str | None = None
    method: str | None = None
    session: str | None = None
    client: str | None = None
    agent: str | None = None
    arguments: Mapping[str, Any] | None = None
    redacted_keys: tuple[str, ...] = ()
    approval_id: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None
    #: the ledger's head when the event was made (`SEQ:MAC-PREFIX`), for `verify-audit --expect-head`
    ledger_head: str | None = None


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _error_data(ctx: RequestContext) -> Mapping[str, Any]:
    response = ctx.response
    err = response.get("error") if response is not None else None
    data = err.get("data") if isinstance(err, dict) else None
    return data if isinstance(data, dict) else {}


def _ledger_head(ctx: RequestContext) -> str | None:
    """The head the ledger's writer last committed (from memory: this runs on the event loop)."""
    ledger = getattr(ctx.gateway, "ledger", None)
    published = getattr(ledger, "published_head", None)
    if published is None:
        return None
    head = published(query=False)
    return str(head["head"]) if head.get("seq") else None


def _arguments(ctx: RequestContext) -> Mapping[str, Any]:
    args = ctx.params.get("arguments") if ctx.method in ("tools/call", "prompts/get") else ctx.params
    return args if isinstance(args, dict) else {}


def events_for(ctx: RequestContext, seen_pins: set[str] | None = None,
               wanted: frozenset[str] | set[str] | None = None) -> list[NotificationEvent]:
    """The request's events, most specific first (see the module docstring); only those in
    `wanted` when given (the events some webhook listens for), which keeps the common case cheap."""
    notes, decision, data = ctx.notes, ctx.decision, _error_data(ctx)
    word = decision_word(ctx)
    reasons = tuple(str(r) for r in (data.get("reasons") or (decision.reasons if decision else ()) or ()))
    if not reasons and ctx.error_message:
        reasons = (ctx.error_message,)
    rule_ids = tuple(str(r) for r in (data.get("rule_ids") or (decision.rule_ids if decision else ()) or ()))
    base: dict[str, Any] = {}
    out: list[NotificationEvent] = []

    def add(event: str, why: tuple[str, ...], ids: tuple[str, ...] = rule_ids, **detail: Any) -> None:
        if wanted is not None and event not in wanted:
            return
        if not base:
            base.update(server=ctx.server or "", tool=ctx.target, timestamp=iso(ctx.started_wall), decision=word,
                        method=ctx.method, session=ctx.session.id, client=ctx.session.client_name,
                        agent=ctx.session.agent, arguments=_arguments(ctx),
                        redacted_keys=decision.redacted_keys if decision is not None else (),
                        ledger_head=_ledger_head(ctx))
        out.append(NotificationEvent(event=event, reasons=why or reasons, rule_ids=ids, detail=detail, **base))

    honey = notes.get("honeytoken")
    if isinstance(honey, dict):
        add("honeytoken", reasons, ("mcpwall.honeytoken",), **{k: honey.get(k) for k in
                                                             ("type", "part", "planted_server", "planted_tool",
                                                              "path") if k in honey})
    chain = notes.get("chain")
    if isinstance(chain, dict):
        if chain.get("alert"):
            add("attack_chain", (str(chain["alert"]),), ("mcpwall.attack-chain",), state=chain.get("state"))
        if chain.get("toxic_flow"):
            add("toxic_flow", (str(chain["toxic_flow"]),), ("mcpwall.toxic-flow",))
    pins = notes.get("pins")
    if isinstance(pins, dict):
        pending = pins.get("pending")
        keys = [pending] if isinstance(pending, str) else [str(k) for k in pending or ()]
        fresh = [k for k in keys if seen_pins is None or k not in seen_pins]
        if fresh and (wanted is None or "rug_pull" in wanted):
            if seen_pins is not None:
                seen_pins.update(fresh)
            add("rug_pull", tuple(f"definition changed since it was pinned: {k}" for k in fresh[:20]),
                tuple(f"pins:{pins.get('change', 'changed')}" for _ in fresh[:1]), pending=fresh[:50])
    if ctx.method in DECIDED:
        if ctx.outcome in ("deny", "ask-denied") and word == "deny":
            approval = notes.get("approval")
            add("deny", reasons, approval_id=approval.get("id") if isinstance(approval, dict) else None)
        dlp = notes.get("dlp")
        dlp_hit = isinstance(dlp, dict) and bool(dlp.get("redactions") or dlp.get("exfiltration"))
        if decision is not None and (decision.redacted_keys or dlp_hit):
            add("redact", reasons or ("arguments or results redacted",), keys=list(decision.redacted_keys),
                dlp_types=sorted((dlp or {}).get("types", {})) if dlp_hit and isinstance(dlp, dict) else [])
        elif dlp_hit and isinstance(dlp, dict):
            add("redact", ("secrets masked by DLP",), ("mcpwall.dlp",), dlp_types=sorted(dlp.get("types", {})))
        if decision is not None and ctx.outcome == "ok" and (
                decision.action == "warn" or decision.warned
                or (decision.action == "allow" and decision.enforced_action in ("deny", "ask"))):
            extra = () if decision.enforced_action == decision.action else \
                (f"audit mode: enforce mode would {decision.enforced_action} this call",)
            add("warn", (*decision.reasons, *extra))
        if ctx.method == "tools/call" and ctx.outcome == "ok" and word in ("allow", "ask", "warn", "redact",
                                                                             "rewrite"):
            add("allow", reasons or ("allowed",))
    order = {name: i for i, name in enumerate(EVENT_ORDER)}
    return sorted(out, key=lambda e: order.get(e.event, len(order)))


def ask_event(record: Mapping[str, Any], url: str | None = None, home: Path | None = None) -> NotificationEvent:
    """The event for an ask that starts waiting (from the approvals service)."""
    approval_id = str(record.get("id"))
    reasons = tuple(str(r) for r in record.get("reasons") or ()) or ("this call needs a person's approval",)
    hint = f"approve: {command_hint('approve', approval_id, home)} | deny: {command_hint('deny', approval_id, home)}"
    args = record.get("arguments")
    return NotificationEvent(
        event="ask", server=str(record.get("server") or ""), tool=str(record.get("tool") or ""),
        reasons=(*reasons, hint), timestamp=iso(float(record.get("created") or 0)),
        rule_ids=tuple(str(r) for r in record.get("rule_ids") or ()), decision="ask", method=record.get("method"),
        session=record.get("session"), client=record.get("client"), agent=record.get("agent"),
        arguments=args if isinstance(args, dict) else None, approval_id=approval_id,
        detail={"expires": iso(float(record.get("expires") or 0)), "call_hash": record.get("call_hash")}, url=url)


def pick(events: list[NotificationEvent], wanted: list[str] | tuple[str, ...]) -> NotificationEvent | None:
    """The most specific event a webhook listens for (events are already in EVENT_ORDER)."""
    return next((e for e in events if e.event in wanted), None)


__all__ = ["DECIDED", "EVENT_ORDER", "NotificationEvent", "ask_event", "events_for", "iso", "pick"]
