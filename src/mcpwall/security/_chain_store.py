"""Kill chains and toxic-flow sources kept in a shared state store, for replicas (SPEC 7).

One gateway keeps each flow's `SessionChain` in memory (`ChainTracker`). Replicas behind a
load balancer that does not pin a client to one of them must see one history per client, or a
private read on replica A and an outbound send on replica B are each harmless where they land.
With a shared store (Redis, `--state`) the chain stage loads a flow's chain before it reads it
and writes it back after it changed it (namespace `chain`, key = the flow's key), and the
tracker's clock is the wall clock, which the replicas share. Two replicas changing one flow in
the same instant keep the last write: a source can be lost only to a race of calls of one client
within one round trip, never by anything the client chooses to send.
"""

from __future__ import annotations

from typing import Any

from mcpwall.security.chains import ChainTracker, SessionChain, Step
from mcpwall.state import StateStore

NAMESPACE = "chain"


def _steps(raw: Any) -> list[Step]:
    out = []
    for s in raw if isinstance(raw, list) else []:
        if isinstance(s, list) and len(s) == 4:
            out.append(Step(str(s[0]), str(s[1]), str(s[2]), float(s[3])))
    return out


def chain_to_dict(chain: SessionChain) -> dict[str, Any]:
    return {"state": chain.state, "entered": chain.entered, "named": sorted(chain.named),
            **{k: [[s.kind, s.tool, s.detail, s.at] for s in getattr(chain, k)]
               for k in ("history", "private", "untrusted")}}


def chain_from_dict(raw: dict[str, Any]) -> SessionChain:
    named = raw.get("named")
    return SessionChain(state=str(raw.get("state") or "idle"), entered=float(raw.get("entered") or 0.0),
                        history=_steps(raw.get("history")), private=_steps(raw.get("private")),
                        untrusted=_steps(raw.get("untrusted")),
                        named={str(n) for n in named} if isinstance(named, list) else set())


class SharedChains:
    """Loads and stores a tracker's chains in a shared `StateStore` (StateUnavailable propagates:
    the stage that needed the history fails closed)."""

    def __init__(self, store: StateStore, tracker: ChainTracker) -> None:
        self.store = store
        self.tracker = tracker

    def load(self, key: str) -> None:
        raw = self.store.get_state(NAMESPACE, key)
        if raw is None:
            self.tracker.forget(key)
        else:
            self.tracker.adopt(key, chain_from_dict(raw))

    def save(self, key: str) -> None:
        self.store.put_state(NAMESPACE, key, chain_to_dict(self.tracker.session(key)))


__all__ = ["NAMESPACE", "SharedChains", "chain_from_dict", "chain_to_dict"]
