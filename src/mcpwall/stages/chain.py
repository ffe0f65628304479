"""Attack-chain and toxic-flow tracking (after policy, on tools/call).

`on_request` classifies the call, advances the session's kill chain and, for
an outbound call (network, message send, write outside the workspace),
checks whether the session already holds both private data and untrusted
content. `on_complete` observes what the call brought in: a sensitive read,
a result DLP redacted (`ctx.notes["dlp"]`), fetched content, instructions
aimed at the agent in the result, findings of the poisoning stage.
See `mcpwall.security.chains` for the model.

policy.yaml::

    stages:
      chain:
        enabled: true
        killChain: true          # block a session whose kill chain reached exfiltration_confirmed
        toxicFlow: true
        action: deny             # deny | ask | warn, for a toxic flow
        workspace: [/workspace]  # writes outside these roots are outbound
        untrustedServers: []     # every result from these is untrusted content
        trustedServers: []       # results from these are never untrusted
        privateServers: []       # every successful read from these is private data
        privateToSink: ask       # deny | ask | warn | off: data sent to a destination the session never
                                 # named, after a private read (issue 25)
        decaySeconds: 300
        sourceTtlSeconds: 3600

`ctx.notes["chain"]` records the state, the event, the sources and the flow.

Whose history a call joins (`flow_key`): its MCP session's, for a client of the handshake era;
for a 2026-07-28 client, which has no session, that of its principal and agent (the named token's
identity, else X-Agent-Id), whatever endpoint it calls and whatever `clientInfo` or trace context
it sends (the `traceparent` in `_meta` is recorded in the note, never a key). With a shared state
store (`--state redis://...`) the histories live there, so replicas share them (`_chain_store`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import re2

from mcpwall._re2 import search_set
from mcpwall.pipeline import Holder, Reject, RequestContext, Session, Stage
from mcpwall.policy import Decision
from mcpwall.protocol import ErrorCode, Message
from mcpwall.protocol.modern import MODERN_VERSIONS
from mcpwall.security._chain_store import SharedChains
from mcpwall.security._classify import CallFacts
from mcpwall.security._json import Flat, strings
from mcpwall.security.chains import (
    FINAL,
    INJECTION,
    LARGE_READ_BYTES,
    ChainTracker,
    describe_flow,
    kill_chain_event,
)
from mcpwall.shared import RedisStateStore
from mcpwall.stages._components import Components
from mcpwall.stages._configs import ChainConfig
from mcpwall.stages._kit import (
    arguments,
    audit_mode,
    call_facts,
    enforce,
    flat,
    matches,
    parse,
    stage_block,
)

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView

log = logging.getLogger("mcpwall.chain")

_SIZE_KEYS = frozenset({"size", "length", "bytes", "max_bytes", "maxbytes", "limit", "max_length", "count"})
_INJECTION = re2.compile(INJECTION.pattern)
#: whether a text holds it at all, keeping the GIL (google-re2's search releases it: see search_set)
_INJECTION_IN = search_set([INJECTION.pattern])
_SCAN_LIMIT = 65_536
#: tracked histories past which the stage forgets those of gone clients (`_prune`)
PRUNE_AT = 2000
#: how a 2026-07-28 client's history is named: by its principal and agent, not a session (`session_flow`)
MODERN_FLOW = "modern:"


def _size_hint(args: Mapping[str, Any]) -> int:
    best = 0
    for key, value in args.items():
        if key.lower() in _SIZE_KEYS and isinstance(value, int | float) and not isinstance(value, bool):
            best = max(best, int(value))
    return best


def injection_in(result: Any, flat: Flat | None = None) -> str | None:
    """Instructions aimed at the agent in a tool result (first match), or None; `flat`: the result's
    strings, when the caller has them (`_json.flatten`)."""
    scanned = 0
    for _, key, text in strings(result) if flat is None else flat:
        if key in ("type", "mimeType", "uri") or len(text) < 12:
            continue
        chunk = text[:_SCAN_LIMIT - scanned]
        m = _INJECTION.search(chunk) if _INJECTION_IN(chunk.encode("utf-8", "surrogatepass")) else None
        if m is not None:
            return str(m.group(0))[:120]
        scanned += len(chunk)
        if scanned >= _SCAN_LIMIT:
            break
    return None


class ChainStage(Stage):
    name = "chain"

    def __init__(self, config: ChainConfig | None = None, workspace: list[str] | None = None,
                 approvals: Holder | None = None) -> None:
        self.config = config or ChainConfig()
        #: the approval service that holds an `ask` (`Components.approvals`); None: asks are denied
        self.approvals = approvals
        self.workspace = list(self.config.workspace or workspace or ["/workspace"])
        self.tracker = ChainTracker(decay_s=self.config.decaySeconds, source_ttl_s=self.config.sourceTtlSeconds)
        self._pending: dict[int, CallFacts] = {}
        self._evidence: dict[int, str | None] = {}
        self.kill_chain_blocks = 0
        self.toxic_flows = 0
        self.sources = {"private": 0, "untrusted": 0}
        #: the histories in the replicas' shared store, when there is one (bound to the gateway's)
        self.shared: SharedChains | None = None
        #: how many tracked histories make the next call prune them (`_prune`)
        self._prune_at = PRUNE_AT

    def bind(self, gateway: GatewayView) -> None:
        if isinstance(gateway.state, RedisStateStore):
            # Replicas share the histories, and the wall clock (a monotonic one is per process).
            self.tracker.clock = time.time
            self.shared = SharedChains(gateway.state, self.tracker)
        if not self.config.workspace:
            # the servers' declared roots are workspace too
            for upstream in gateway.servers.values():
                self.workspace.extend(r for r in (upstream.spec.roots or []) if r not in self.workspace)

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method != "tools/call":
            return None
        args = arguments(ctx)
        facts = call_facts(ctx)
        self._pending[id(ctx)] = facts
        sid, label = flow_key(ctx), f"{ctx.server}/{ctx.target}"
        if self.shared is not None:
            self.shared.load(sid)
        event = kill_chain_event(facts, _size_hint(args))
        state, alert = self.tracker.advance(sid, event, label)
        if event and self.shared is not None:
            self.shared.save(sid)
        note: dict[str, Any] = {"state": state}
        if event:
            note["event"] = event
        trace = _traceparent(ctx)
        if trace is not None:
            note["traceparent"] = trace
        ctx.notes["chain"] = note
        if alert and self.config.killChain:
            self.kill_chain_blocks += 1
            reason = f"[mcpwall.attack-chain] attack chain reached {FINAL}: {self.tracker.chain_text(sid)}"
            note["alert"] = reason
            log.warning("%s (session %s)", reason, sid[:8])
            verdict = enforce(ctx, "chain", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
                "reasons": [reason], "rule_ids": ["mcpwall.attack-chain"], "state": state}))
            if verdict is not None:
                return verdict
        sink = facts.outbound(self.workspace)
        if sink is None:
            return None
        flow = self.tracker.toxic(sid) if self.config.toxicFlow else None
        if flow is not None:
            self.toxic_flows += 1
            reason = "[mcpwall.toxic-flow] " + describe_flow(flow[0], flow[1], sink, label)
            note["toxic_flow"] = reason
            log.warning("%s (session %s)", reason, sid[:8])
            return await self._act(ctx, reason)
        private = self.tracker.private_sources(sid) if self.config.privateToSink != "off" else ()
        if not private or not _carries_data(facts, flat(ctx, args)):
            return None
        unnamed = self.tracker.unnamed(sid, _destinations(facts, flat(ctx, args)))
        if not unnamed:
            return None
        # A sink each call alone would pass: data sent, after a private read, to a destination no earlier call
        # of the session named (one that a fetched page or a message put there, issue 25).
        src = "; ".join(step.describe() for step in private[-3:])
        reason = (f"[mcpwall.private-to-sink] data sent to {', '.join(unnamed[:3])}, which no earlier call of this "
                  f"session named, after private data was read [{src}]")
        note["private_to_sink"] = reason
        log.warning("%s (session %s)", reason, sid[:8])
        return await self._act(ctx, reason, self.config.privateToSink, "mcpwall.private-to-sink")

    async def _act(self, ctx: RequestContext, reason: str, action: str | None = None,
                   rule_id: str = "mcpwall.toxic-flow") -> Reject | None:
        action = action or self.config.action
        data = {"reasons": [reason], "rule_ids": [rule_id]}
        if action == "warn":
            return None
        if action == "ask" and not audit_mode(ctx):
            approvals = self.approvals
            if approvals is None:
                return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: this call needs approval and no approval "
                              "channel is running; " + reason, {**data, "approval": "unavailable"},
                              outcome="ask-denied")
            policy = ctx.gateway.policy.current
            decision = Decision(action="ask", reasons=(reason,), rule_ids=(rule_id,), mode=policy.mode,
                                enforced_action="ask", revision=policy.revision,
                                timeout_ms=ctx.timeout_ms or policy.default_timeout_ms)
            verdict: Reject | None = await approvals.hold(ctx, decision)
            return verdict
        return enforce(ctx, "chain", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, data))

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        # Scan what the upstream sent before later stages (DLP, poisoning) rewrite it.
        facts = self._pending.get(id(ctx))
        result = response.get("result")
        if facts is not None and isinstance(result, dict):
            self._evidence[id(ctx)] = injection_in(result, flat(ctx, result))
        return response

    def on_complete(self, ctx: RequestContext) -> None:
        facts = self._pending.pop(id(ctx), None)
        evidence = self._evidence.pop(id(ctx), None)
        if facts is None or ctx.outcome != "ok" or ctx.server is None:
            return
        sid, label = flow_key(ctx), f"{ctx.server}/{ctx.target}"
        if self.shared is not None:
            self.shared.load(sid)
        self.tracker.name(sid, _destinations(facts, flat(ctx, arguments(ctx))))
        server = ctx.server
        private = facts.private_source
        dlp = ctx.notes.get("dlp")
        if isinstance(dlp, dict) and dlp.get("redactions"):
            private = f"{dlp['redactions']} secret(s) redacted ({', '.join(sorted(dlp.get('types', {})))})"
        if private is None and self.config.privateServers and matches(self.config.privateServers, server) \
                and not (facts.writes or facts.sends):
            private = f"read from private server {server}"
        if private is not None:
            self.tracker.observe(sid, "private", label, private)
            self.sources["private"] += 1
        untrusted = None
        if not (self.config.trustedServers and matches(self.config.trustedServers, server)):
            poisoning = ctx.notes.get("poisoning")
            if evidence is not None:
                untrusted = f"instructions aimed at the agent: {evidence!r}"
            elif poisoning:
                untrusted = "the poisoning scan flagged the result"
            elif self.config.untrustedServers and matches(self.config.untrustedServers, server):
                untrusted = f"result from untrusted server {server}"
            else:
                untrusted = facts.untrusted_source
        if untrusted is not None:
            self.tracker.observe(sid, "untrusted", label, untrusted)
            self.sources["untrusted"] += 1
        if facts.reads and isinstance(ctx.response, dict):
            size = ctx.bytes_out or sum(len(t) for _, _, t in flat(ctx, ctx.response.get("result")))
            if size > LARGE_READ_BYTES:
                self.tracker.advance(sid, "LARGE_FILE_READ", label)
        if self.shared is not None:
            self.shared.save(sid)
        self._prune(ctx)

    def _prune(self, ctx: RequestContext) -> None:
        if len(self._pending) > 10_000:
            self._pending.clear()
            self._evidence.clear()
        if self.tracker.count() > self._prune_at:
            # A closed legacy session's history goes (its id never comes back). A 2026-07-28 client's, keyed
            # by its principal and agent (`flow_key`), outlives the session the gateway keeps for it (closed
            # when idle, or for the principal's cap, and opened again at its next call): it stays until no
            # call joined it for the sources' lifetime, when nothing in it would count any more.
            live = {session_flow(s) for s in ctx.gateway.sessions.values()}
            left = self.tracker.expire(live, MODERN_FLOW, self.tracker.source_ttl_s)
            # next time at twice what is left: a gateway with more live histories than 2,000 does not walk
            # them all after every call
            self._prune_at = max(PRUNE_AT, 2 * left)

    def status(self) -> dict[str, Any]:
        return {"kill_chain_blocks": self.kill_chain_blocks, "toxic_flows": self.toxic_flows,
                "sources": dict(self.sources), "sessions": self.tracker.states()}


def flow_key(ctx: RequestContext) -> str:
    """The history a call joins: its session's (handshake era), or its principal's and agent's
    (2026-07-28: no session, and `clientInfo` is the client's to say)."""
    return session_flow(ctx.session)


def session_flow(s: Session) -> str:
    """The history of the calls of session `s` (see `flow_key`), named the first time it is asked and
    kept on the session: a client that changes eras within one session (its version set by a 2026-07-28
    request, or by an `initialize`, after calls of the other era) keeps its history, and a 2026-07-28
    client's name is built and hashed once (each call's stages look it up several times)."""
    flow = s.flow
    if not flow:
        flow = s.flow = f"{MODERN_FLOW}{s.principal}:{s.agent}" if s.protocol_version in MODERN_VERSIONS else s.id
    return flow


def _traceparent(ctx: RequestContext) -> str | None:
    meta = ctx.params.get("_meta")
    value = meta.get("traceparent") if isinstance(meta, dict) else None
    return value[:64] if isinstance(value, str) else None


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,63}")


def _destinations(facts: CallFacts, args: Flat) -> list[str]:
    """The hosts and e-mail addresses a call names (its URLs' hosts, host arguments, addresses);
    `args`: the arguments' strings."""
    out = [h for h in facts.hosts if h]
    for _, _, text in args:
        if "@" in text and len(text) <= 4096:
            out.extend(m.lower() for m in _EMAIL.findall(text))
    return list(dict.fromkeys(out))


def _carries_data(facts: CallFacts, args: Flat) -> bool:
    """Whether an outbound call sends something beyond its destination: a message, a body, a query string
    (`args`: the arguments' strings)."""
    if facts.sends:
        return True
    return any("?" in u and "=" in u.partition("?")[2] for u in facts.urls) or len(args) > len(facts.urls) + 1


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> ChainStage | None:
    cfg = parse(ChainConfig, stage_block(config, "chain"), "stages.chain")
    if not cfg.enabled:
        return None
    return ChainStage(cfg, approvals=components.approvals if components is not None else None)


__all__ = ["ChainConfig", "ChainStage", "build", "injection_in"]
