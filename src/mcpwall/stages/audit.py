"""The ledger stage: one ledger row for every request the gateway decided (SPEC 5).

`on_complete` fires once per request, whatever happened to it, and turns the
request's context into a ledger `Event` (attribute reads only; serialising
happens on the ledger's writer thread). `tools/call` rows go to `tool_calls`,
every other method to `protocol_events`.

Durability (`ledger.durability` in policy.yaml):
- `batched` (default): the row is queued and committed within 50 ms (or 500
  rows), and on shutdown; the answer is not delayed.
- `strict`: `on_complete` returns an awaitable that resolves when the row is
  committed, so the answer leaves only after its row is durable. If the
  commit fails or takes longer than `strictTimeoutMs`, enforce mode replaces
  the answer by a -32001 error (a result the ledger could not record is not
  delivered); audit mode delivers it and logs loudly.

When the ledger cannot write (disk full, database down), enforce mode fails
closed: `on_request` refuses calls routed to an upstream with -32001 and rule
id `mcpwall.ledger` until the writer succeeds again; audit mode lets them
pass and logs. The rows of refused calls are kept and written on recovery.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any

from mcpwall.errors import ConfigError
from mcpwall.ledger import Event, Ledger, LedgerError, LedgerOptions, RuleInfo, open_ledger, parse_url
from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode, error
from mcpwall.stages._components import Components

log = logging.getLogger("mcpwall.ledger")

#: Methods refused while the ledger is down in enforce mode: everything that reaches an upstream.
GUARDED = frozenset({"tools/call", "prompts/get", "resources/read", "resources/subscribe",
                     "resources/unsubscribe", "completion/complete"})
#: Methods whose arguments must have passed the policy's redaction before they are recorded.
_POLICED = frozenset({"tools/call", "resources/read", "resources/subscribe", "prompts/get"})
LEDGER_RULE = "mcpwall.ledger"


class AuditStage(Stage):
    name = "audit"

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.strict = ledger.options.durability == "strict"
        self.strict_timeout = ledger.options.strict_timeout_ms / 1000
        self.refused = 0
        self.withheld = 0
        self._rules_for: Any = None
        self._rules: dict[str, RuleInfo] = {}
        self._last_loud = 0.0
        #: answers held back while the batched writer caught up (backpressure)
        self.waited = 0

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.ledger.start()

    async def stop(self) -> None:
        await asyncio.to_thread(self.ledger.close)

    def status(self) -> dict[str, Any]:
        return {**self.ledger.status(), "refused": self.refused, "withheld": self.withheld,
                "backpressure_waits": self.waited}

    # ------------------------------------------------------------------ hooks

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if self.ledger.healthy or ctx.method not in GUARDED:
            return None
        reason = f"ledger unavailable: {self.ledger.writer.last_error or 'cannot write'}"
        if ctx.gateway.policy.current.mode == "enforce":
            self.refused += 1
            return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: {reason}",
                          {"reasons": [reason], "rule_ids": [LEDGER_RULE]})
        self._loud(f"AUDIT MODE: {ctx.method} {ctx.target!r} allowed although the {reason}")
        ctx.notes["ledger"] = "unavailable when the call was allowed (audit mode)"
        return None

    def on_complete(self, ctx: RequestContext) -> Awaitable[None] | None:
        event = self.event(ctx)
        if not self.strict or (not self.ledger.healthy and not self._must_wait(ctx)):
            writer = self.ledger.writer  # (`Ledger.submit` is its `submit`: one interpreted call less a row)
            writer.submit(event)
            return self._catch_up() if writer.behind else None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        if not self.ledger.submit(event, (loop, future)):
            return None
        return self._committed(ctx, event, future)

    async def _catch_up(self) -> None:
        """Backpressure in batched mode: while the writer is far behind, answers wait for it
        to catch up (for at most strictTimeoutMs) instead of rows piling up in memory."""
        writer = self.ledger.writer
        deadline = time.monotonic() + self.strict_timeout
        self.waited += 1
        # Polling, not an Event: the writer is a thread, and waking each waiter from it would
        # cost every commit a call_soon_threadsafe while nobody waits.
        while not writer.caught_up and writer.running and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)

    @staticmethod
    def _must_wait(ctx: RequestContext) -> bool:
        """With the ledger down, strict mode still holds back a result in enforce mode (a call that
        passed before the outage was noticed); refusals and audit mode do not wait for a dead database."""
        response = ctx.response
        return ctx.gateway.policy.current.mode == "enforce" and response is not None and "error" not in response

    async def _committed(self, ctx: RequestContext, event: Event, future: asyncio.Future[None]) -> None:
        try:
            await asyncio.wait_for(future, self.strict_timeout)
        except (LedgerError, TimeoutError) as exc:
            self._not_committed(ctx, event, exc)

    def _not_committed(self, ctx: RequestContext, event: Event, exc: BaseException) -> None:
        reason = f"ledger unavailable: {exc or 'commit timed out'}"
        response = ctx.response
        if ctx.gateway.policy.current.mode != "enforce" or response is None or "error" in response:
            self._loud(f"strict ledger: the row of {ctx.method} {ctx.target!r} is not committed yet ({reason}); "
                       "answer delivered")
            return
        # Fail closed: the answer object is the one about to be sent; replace it in place.
        self.withheld += 1
        replacement = error(ctx.id, ErrorCode.BLOCKED, f"Blocked by mcpwall: {reason}",
                            {"reasons": [reason, "the upstream's answer was withheld"], "rule_ids": [LEDGER_RULE]})
        response.clear()
        response.update(replacement)
        event.outcome = "failed"
        event.decision = "failed"
        event.error_message = f"answer withheld: {reason}"
        ctx.notes["ledger"] = "answer withheld: not committed in strict mode"

    # ------------------------------------------------------------------ the row

    def event(self, ctx: RequestContext) -> Event:
        """The ledger's view of a finished request."""
        session, decision, outcome, response = ctx.session, ctx.decision, ctx.outcome, ctx.response
        data: Mapping[str, Any] = {}
        code = None
        if response is not None:
            err = response.get("error")
            if isinstance(err, dict):
                code = err.get("code")
                if isinstance(err.get("data"), dict):
                    data = err["data"]
        word: str
        error_message = ctx.error_message
        if outcome == "ok" and response is not None and _tool_error(response):
            # The upstream ran the call and reported a failure in its result (isError).
            outcome = word = "error"
            error_message = _tool_error(response)
        elif outcome == "ok":
            word = decision.action if decision is not None else "allow"
        elif outcome == "pending":
            # The request ended without an answer: an exception left the pipeline.
            outcome = word = "failed"
            error_message = error_message or "the request ended without an answer (gateway error)"
        elif outcome in ("deny", "ask-denied"):
            # A stage refused the call: a block (-32001) is a deny; malformed arguments (-32602) are not
            # a policy question.
            word = "invalid" if code == ErrorCode.INVALID_PARAMS else "deny"
        else:
            word = outcome
        refused = outcome in ("deny", "ask-denied", "rejected")
        if refused and isinstance(data.get("rule_ids"), list):
            # The refusing stage says which rules decided (the policy's own deny included).
            rule_ids = tuple(str(r) for r in data["rule_ids"])
            reasons = tuple(str(r) for r in data.get("reasons") or ()) or ((ctx.error_message,)
                                                                          if ctx.error_message else ())
        elif decision is not None and not (refused and decision.action not in ("deny", "ask")):
            rule_ids, reasons = decision.rule_ids, decision.reasons
        else:
            rule_ids = ()
            reasons = (ctx.error_message,) if ctx.error_message else ()
        policy = ctx.gateway.policy.current
        params = ctx.params
        target = ctx.target or (params.get("name") if isinstance(params.get("name"), str) else "")
        return new_event(
            method=ctx.method, decision=word, outcome=outcome, ts=ctx.started_wall,
            session_id=session.id, client=session.client_name, client_version=session.client_version,
            agent_id=session.agent, process_name=session.process_name, peer=session.peer,
            server_name=ctx.server, tool_name=target or None, request_id=ctx.id,
            mode=decision.mode if decision is not None else policy.mode,
            enforced_action=decision.enforced_action if decision is not None else None,
            policy_revision=decision.revision if decision is not None else policy.revision,
            rule_ids=rule_ids, reasons=reasons,
            redacted_keys=decision.redacted_keys if decision is not None else (),
            dlp=ctx.notes.get("dlp"), notes=ctx.notes, params=params, response=response,
            duration_ms=(time.perf_counter() - ctx.started) * 1000, upstream_ms=ctx.upstream_ms,
            error_message=error_message, bytes_in=ctx.bytes_in, bytes_out=ctx.bytes_out,
            withhold_arguments=decision is None and outcome != "ok" and ctx.method in _POLICED,
            rules=self._rule_infos(policy) if rule_ids else None,
            decision_id=ctx.notes.get("decision_id") if isinstance(ctx.notes.get("decision_id"), str) else None,
        )

    def _rule_infos(self, policy: Any) -> dict[str, RuleInfo]:
        if policy is not self._rules_for:
            rules = (*policy.all_rules, *policy.response_rules)
            self._rules = {r.id: RuleInfo(r.action, r.layer, tuple(r.compliance), tuple(r.owasp)) for r in rules}
            self._rules_for = policy
        return self._rules

    def _loud(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_loud >= 5.0:
            self._last_loud = now
            log.error("%s", message)


def new_event(
    method: Any, decision: Any, outcome: Any, ts: Any, session_id: Any, client: Any, client_version: Any,
    agent_id: Any, process_name: Any, peer: Any, server_name: Any, tool_name: Any, request_id: Any, mode: Any,
    enforced_action: Any, policy_revision: Any, rule_ids: Any, reasons: Any, redacted_keys: Any, dlp: Any,
    notes: Any, params: Any, response: Any, duration_ms: Any, upstream_ms: Any, error_message: Any, bytes_in: Any,
    bytes_out: Any, withhold_arguments: Any, rules: Any, decision_id: Any,
) -> Event:
    """`Event(...)` with every field, named here and passed on by position, in `Event`'s field order
    (tests/ledger/test_event_fields.py holds the two together): a class called with keywords from compiled
    code builds a dict of them and unpacks it again (~1.2 us a row, 4x the positional call), and each
    request makes a row. Every parameter is `Any`: compiled, a declared `str` would be checked, and some
    fields carry what a client sent (its clientInfo), which `Event` keeps as it came."""
    return Event(method, decision, outcome, ts, session_id, client, client_version, agent_id, process_name, peer,
                 server_name, tool_name, request_id, mode, enforced_action, policy_revision, rule_ids, reasons,
                 redacted_keys, dlp, notes, params, response, duration_ms, upstream_ms, error_message, bytes_in,
                 bytes_out, withhold_arguments, rules, decision_id)


def _tool_error(response: Mapping[str, Any]) -> str | None:
    """The text of a result marked `isError` (a failure the upstream reports as a result), else None."""
    result = response.get("result")
    if not isinstance(result, dict) or result.get("isError") is not True:
        return None
    content = result.get("content")
    texts = [str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text"] \
        if isinstance(content, list) else []
    return ("; ".join(t for t in texts if t) or "the tool reported an error")[:2000]


def _home(settings: Any) -> Path:
    home = getattr(settings, "home", None)
    if home is not None:
        return Path(home)
    env = os.environ.get("MCPWALL_HOME")
    return Path(env).expanduser() if env else Path.home() / ".mcpwall"


def ledger_from(config: Mapping[str, Any], settings: Any = None) -> Ledger | None:
    """The ledger the policy asks for, unless `ledger: {enabled: false}`; None in unit tests
    without a home or URL.

    The URL comes from `--ledger` (settings.extras["ledger_url"]), else `ledger.url`; a relative
    path in policy.yaml is relative to the home directory.
    """
    section = config.get("ledger") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("ledger: must be a mapping")
    if section.get("enabled", True) is False:
        return None
    extras = getattr(settings, "extras", None) or {}
    url = extras.get("ledger_url") or None
    if url is None and section.get("url") is not None:
        url = str(section["url"])
        home = _home(settings)
        location = parse_url(home, url)
        if location.path is not None and not location.path.is_absolute():
            url = str(home / location.path)
    options = LedgerOptions.from_section(section)  # checked even when nothing is opened (simulate)
    if settings is None and url is None:
        return None
    return open_ledger(_home(settings), url, options=options)


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> AuditStage | None:
    """The ledger stage, over the ledger `build_components` opened (`ledger_from`), if any."""
    ledger = components.ledger if components is not None else ledger_from(config, settings)
    return AuditStage(ledger) if ledger is not None else None


__all__ = ["GUARDED", "LEDGER_RULE", "AuditStage", "build", "ledger_from"]
