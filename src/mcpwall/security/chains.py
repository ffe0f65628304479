"""Attack chains and toxic flows: what a session did, step by step, and when the next step is one too many.

**Kill chain** (mcp-seatbelt's state machine, per MCP session): each call is
classified into at most one event (READ_SENSITIVE, SHELL_EXEC, WRITE_SSH,
NETWORK_CALL, LARGE_FILE_READ, WRITE_SYSTEM, EXEC_PROCESS) that moves the
session through idle -> reconnaissance | execution -> persistence ->
exfiltration_attempt -> exfiltration_confirmed. Every state but the last
decays back to idle five minutes after it was entered; the last is final, and
the session's calls are blocked from then on.

**Toxic flow** (source to sink, beyond seatbelt): a session that has read
private data (a sensitive file, a result DLP had to redact, a private-data
tool) and has received untrusted content (a fetched page, a result with
instructions aimed at the agent, a result from a server marked untrusted)
must not then make an outbound call (network request, message send, write
outside the workspace): any of the untrusted content may be steering it to
send the private data away. The verdict names the whole chain.

State is keyed by the MCP session id; the clock only drives decay.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcpwall.security._classify import CallFacts

DECAY_S = 300.0
LARGE_READ_BYTES = 1_000_000

#: state -> event -> next state (seatbelt's machine)
TRANSITIONS: dict[str, dict[str, str]] = {
    "idle": {"READ_SENSITIVE": "reconnaissance", "SHELL_EXEC": "execution", "NETWORK_CALL": "exfiltration_attempt"},
    "reconnaissance": {"WRITE_SSH": "persistence", "NETWORK_CALL": "exfiltration_attempt",
                       "READ_SENSITIVE": "reconnaissance"},
    "execution": {"WRITE_SYSTEM": "persistence", "NETWORK_CALL": "exfiltration_attempt"},
    "persistence": {"NETWORK_CALL": "exfiltration_attempt", "EXEC_PROCESS": "execution"},
    "exfiltration_attempt": {"LARGE_FILE_READ": "exfiltration_confirmed"},
    "exfiltration_confirmed": {},
}
FINAL = "exfiltration_confirmed"


def kill_chain_event(facts: CallFacts, args_size_hint: int | None = None) -> str | None:
    """The one event a call raises, in seatbelt's order of precedence."""
    ws = facts.words
    if facts.reads and (facts.sensitive or facts.system) and not facts.writes:
        return "READ_SENSITIVE"
    if facts.shell:
        return "SHELL_EXEC"
    targets = [p for _, p in facts.sensitive] + facts.paths
    if facts.writes and any(".ssh" in p or "authorized_keys" in p for p in targets):
        return "WRITE_SSH"
    if facts.network or (facts.urls and not facts.reads):
        return "NETWORK_CALL"
    if facts.reads and (args_size_hint or 0) > LARGE_READ_BYTES:
        return "LARGE_FILE_READ"
    if facts.writes and facts.system:
        return "WRITE_SYSTEM"
    if ws & {"exec", "spawn", "fork", "process"}:
        return "EXEC_PROCESS"
    return None


@dataclass(frozen=True, slots=True)
class Step:
    """One thing a session did that matters to a chain: what, with which tool, when."""

    kind: str
    tool: str
    detail: str
    at: float

    def describe(self) -> str:
        return f"{self.tool}: {self.detail}"


#: Instruction-like text aimed at the agent (RE2-compatible: the chain stage runs it with RE2).
INJECTION = re.compile(
    r"(?i)(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|above|earlier|"
    r"preceding|original|system)\s+(?:instructions|prompts?|directions|rules|guidelines|context)"
    r"|\bnew\s+instructions\s*:|\byou\s+(?:are\s+now|must\s+now|have\s+been\s+instructed)\b"
    r"|<\s*/?\s*(?:important|system|instructions?|admin)\s*>|\[/?inst\]|###\s*(?:system|instruction)"
    r"|\bdo\s+not\s+(?:tell|inform|mention|reveal|alert|notify)\s+(?:\w+\s+){0,3}(?:user|human|operator)"
    r"|\b(?:send|post|upload|forward|exfiltrate|leak|transmit)\s+(?:\w+\s+){0,6}(?:to|at)\s+(?:https?://|\S+@\S+\.\w+)"
    r"|\b(?:read|cat|open|print|include)\s+(?:\w+\s+){0,3}(?:~/\.ssh|id_rsa|\.env\b|\.aws/credentials|/etc/shadow)"
    r"|\bbefore\s+(?:using|calling|answering)\b[^.\n]{0,80}\b(?:read|call|run|send)\b")


def injection_evidence(text: str) -> str | None:
    """The first instruction-like phrase aimed at the agent in a tool result, or None."""
    m = INJECTION.search(text)
    return m.group(0)[:120] if m else None


@dataclass
class SessionChain:
    """One session's kill-chain state and toxic-flow sources."""

    state: str = "idle"
    entered: float = 0.0
    history: list[Step] = field(default_factory=list)
    private: list[Step] = field(default_factory=list)
    untrusted: list[Step] = field(default_factory=list)
    #: Destinations (hosts, e-mail addresses) the session's calls named in their arguments (at most 256).
    named: set[str] = field(default_factory=set)
    #: when a call last joined this history (the tracker's clock): `ChainTracker.expire` forgets by it
    seen: float = 0.0

    def current(self, now: float, decay: float) -> str:
        if self.state not in ("idle", FINAL) and now - self.entered >= decay:
            self.state = "idle"
            self.history.append(Step("decay", "-", "5 minutes without progress: back to idle", now))
        return self.state


class ChainTracker:
    """Per-session kill chains and toxic-flow sources, bounded in sessions."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, decay_s: float = DECAY_S,
                 source_ttl_s: float = 3600.0, max_sessions: int = 20_000) -> None:
        self.clock = clock
        self.decay_s = decay_s
        self.source_ttl_s = source_ttl_s
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, SessionChain] = OrderedDict()

    def session(self, sid: str) -> SessionChain:
        chain = self._sessions.get(sid)
        if chain is None:
            chain = self._sessions[sid] = SessionChain()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(sid)
        chain.seen = self.clock()
        return chain

    def forget(self, sid: str) -> None:
        self._sessions.pop(sid, None)

    def adopt(self, sid: str, chain: SessionChain) -> None:
        """Take `sid`'s chain as another replica left it (`_chain_store`)."""
        self._sessions[sid] = chain
        self._sessions.move_to_end(sid)
        chain.seen = self.clock()

    def sessions(self) -> list[str]:
        return list(self._sessions)

    def expire(self, live: set[str], lasting: str, idle_s: float) -> int:
        """Forget the histories not in `live`: at once, or, for those whose name starts with `lasting`
        (a client's that outlives its sessions), once no call joined them for `idle_s`. How many remain."""
        horizon = self.clock() - idle_s
        for sid, chain in list(self._sessions.items()):
            if sid not in live and (not sid.startswith(lasting) or chain.seen < horizon):
                del self._sessions[sid]
        return len(self._sessions)

    def count(self) -> int:
        """How many sessions are tracked (asked after every call: no list of them built)."""
        return len(self._sessions)

    def states(self) -> dict[str, int]:
        out: dict[str, int] = {}
        now = self.clock()
        for chain in self._sessions.values():
            state = chain.current(now, self.decay_s)
            out[state] = out.get(state, 0) + 1
        return out

    # -------------------------------------------------------------- kill chain

    def advance(self, sid: str, event: str | None, tool: str) -> tuple[str, bool]:
        """Feed one event; returns (state, alert). Alert: the session is (now) in the final state."""
        chain = self.session(sid)
        now = self.clock()
        state = chain.current(now, self.decay_s)
        if state == FINAL:
            return state, True
        if event is None:
            return state, False
        nxt = TRANSITIONS[state].get(event)
        if nxt is None:
            return state, False
        chain.history.append(Step(event, tool, f"{state} -> {nxt}", now))
        del chain.history[:-20]
        chain.state, chain.entered = nxt, now
        return nxt, nxt == FINAL

    def chain_text(self, sid: str) -> str:
        chain = self.session(sid)
        return " ; ".join(f"{s.kind} by {s.describe()}" for s in chain.history[-8:]) or "(no steps)"

    # -------------------------------------------------------------- toxic flow

    def observe(self, sid: str, kind: str, tool: str, detail: str) -> None:
        """Record a source: kind is "private" or "untrusted"."""
        chain = self.session(sid)
        steps = chain.private if kind == "private" else chain.untrusted
        steps.append(Step(kind, tool, detail, self.clock()))
        del steps[:-10]

    def private_sources(self, sid: str) -> Sequence[Step]:
        """The private-data sources of a session still in force."""
        chain = self._sessions.get(sid)
        if chain is None or not chain.private:
            return ()
        horizon = self.clock() - self.source_ttl_s
        chain.private[:] = [s for s in chain.private if s.at >= horizon]
        return chain.private

    def unnamed(self, sid: str, destinations: Sequence[str]) -> list[str]:
        """The destinations no earlier call of the session named."""
        chain = self._sessions.get(sid)
        return list(destinations) if chain is None else [d for d in destinations if d not in chain.named]

    def name(self, sid: str, destinations: Sequence[str]) -> None:
        """Remember the destinations a call that ran named (at most 256 a session)."""
        chain = self.session(sid)
        if len(chain.named) < 256:
            chain.named.update(destinations)

    def toxic(self, sid: str) -> tuple[Sequence[Step], Sequence[Step]] | None:
        """(private, untrusted) sources still in force, when the session has both; else None."""
        chain = self._sessions.get(sid)
        if chain is None or not chain.private or not chain.untrusted:
            return None
        horizon = self.clock() - self.source_ttl_s
        chain.private[:] = [s for s in chain.private if s.at >= horizon]
        chain.untrusted[:] = [s for s in chain.untrusted if s.at >= horizon]
        if not chain.private or not chain.untrusted:
            return None
        return chain.private, chain.untrusted


def describe_flow(private: Sequence[Step], untrusted: Sequence[Step], sink: str, tool: str) -> str:
    """The whole chain in one sentence, for the verdict and the ledger."""
    src = "; ".join(s.describe() for s in private[-3:])
    unt = "; ".join(s.describe() for s in untrusted[-3:])
    return f"toxic flow: private data [{src}] + untrusted content [{unt}] -> outbound {tool} ({sink})"


__all__ = [
    "DECAY_S",
    "FINAL",
    "INJECTION",
    "LARGE_READ_BYTES",
    "TRANSITIONS",
    "ChainTracker",
    "SessionChain",
    "Step",
    "describe_flow",
    "injection_evidence",
    "kill_chain_event",
]
