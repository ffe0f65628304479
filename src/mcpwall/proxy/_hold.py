"""A modern client's held call (`_mrtr`): the task running it, its open questions, its rounds.

`Holds` (in `_mrtr`) keeps them by call and by id; a `Hold` is what one call
carries between the POSTs of its rounds: the questions asked and the answers
passed, the future its POST waits on, and the notes its ledger row gets.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Emit, Session
from mcpwall.protocol import Message, RequestId
from mcpwall.protocol.mrtr import digest_of

if TYPE_CHECKING:
    from mcpwall.proxy._mrtr import Holds

#: hold ids: this process's random prefix and a counter
_HOLD_IDS = map("{}-{:x}".format, itertools.repeat(secrets.token_hex(4)), itertools.count(1))


@dataclass
class _Asked:
    """One question (a server's, or the gateway's own: an approval), waiting for the client's answer."""

    rid: RequestId
    method: str
    request: Message
    #: hands the answer (or the gateway's refusal), under `rid`, to whoever asked
    respond: Callable[[Message], Awaitable[None]]


@dataclass(eq=False)
class Hold:
    """One modern client's call that may need its input: the task running it, its open questions."""

    holds: Holds
    session: Session
    rid: RequestId
    method: str
    #: the call as `call_body` has it; hashed (`digest`) only when a round is sealed or a retry checked
    body: bytes
    caps: dict[str, Any]
    #: unique in this gateway; it need not be secret, since a requestState carrying it is MACed
    id: str = field(default_factory=lambda: next(_HOLD_IDS))
    asked: dict[str, _Asked] = field(default_factory=dict)
    round: int = 0
    task: asyncio.Task[Message | None] | None = None
    #: the emit of the POST being answered now (progress and log lines go there)
    live: Emit | None = None
    busy: bool = False
    waiting: bool = False
    expiry: asyncio.TimerHandle | None = None
    ctx: Any = None
    notes: dict[str, Any] = field(default_factory=lambda: {"rounds": 0, "asked": [], "answered": [],
                                                           "withheld": [], "ignored": []})
    #: resolved when the call ends or asks something: what `Holds._round` waits on (one future, not a
    #: waiter task and asyncio.wait: every modern call passes here, most never ask anything)
    wake: asyncio.Future[None] | None = None
    _keys: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _digest: str = ""

    @property
    def principal(self) -> str:
        return self.session.principal

    @property
    def digest(self) -> str:
        if not self._digest:
            self._digest = digest_of(self.body)
        return self._digest

    def poke(self) -> None:
        wake = self.wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def relay(self, msg: Message) -> None:
        """What is sent on the call's way: the gateway's own request (an approval asked of the
        client, approvals/_elicit) becomes a question of the round, its withdrawal takes it back;
        progress and log lines go to the POST being answered, or, on stdio, to the client outside
        any request; they are dropped between an HTTP client's rounds."""
        if "id" in msg and isinstance(msg.get("method"), str):
            await self.holds.ask(self, msg, self.holds.to_gateway(self.session, msg["id"]))
            return
        if msg.get("method") == "notifications/cancelled" and isinstance(msg.get("params"), dict):
            rid = msg["params"].get("requestId")
            if any(a.rid == rid for a in self.asked.values()):
                self.asked = {k: a for k, a in self.asked.items() if a.rid != rid}
                return
        if self.live is not None:
            await self.live(msg)
        elif self.session.kind != "http":
            await self.session.push(msg)

    def note(self) -> None:
        """The call's ledger row carries the rounds (its context, once the gateway made it)."""
        if self.ctx is None:
            inflight = self.session.inflight.get(self.rid)
            self.ctx = getattr(inflight, "ctx", None)
            if self.ctx is not None:
                self.ctx.notes["mrtr"] = self.notes


__all__ = ["Hold"]
