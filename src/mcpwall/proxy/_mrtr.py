"""Multi round-trip requests for modern clients: a server's mid-call question held, asked, answered.

A 2026-07-28 client has no channel for a server's requests: it sends a
`tools/call` (or `prompts/get`, `resources/read`), and a server that needs input
answers it with an `InputRequiredResult`; the client asks its user or model and
retries the same request with `inputResponses` and the echoed `requestState`.
A legacy upstream instead sends `sampling/createMessage` or `elicitation/create`
mid-call and waits (a modern upstream's own InputRequiredResult arrives in the
same form, from `_bridge`). The gateway joins the two:

- `Holds.serve` runs a modern client's call as a background task (the whole
  pipeline, once: policy and its approval, the upstream call, the response
  side, one ledger row) and answers the POST with whichever comes first: the
  call's result, or the upstream's questions as an `InputRequiredResult`.
  `Holds.claim`, called by `_server_traffic` for every server request before
  the legacy routing, takes a question whose call is held (sampling is refused
  before that when `allowSampling` is false). The question leaves DLP-masked,
  keyed as a modern server keyed it (`_bridge.asked_key`), else `mcpwall-N`;
  one the client did not declare the capability for is refused to the server
  as the legacy path refuses it. A `roots/list` is asked of a client that
  declared roots, but the server is answered from its configured roots
  whatever the client says (an upstream is shared; `_server_messages`), and
  one of a client that did not is answered so at once. A stdio server does not
  say which call its question is for: it is the held call's that can be asking,
  the only call in flight to that server apart from held calls of the same
  principal that wait for their retry (blocked on their answers); else nobody's. The gateway's own question on
  the call's way (an `ask` put to the client's user when the policy allows
  `approvals.viaElicitation`) is asked the same way, its answer handed to the
  message taps where the approval service reads it.
- The retry: its `requestState` (protocol/mrtr.py: HMAC under a key this
  process made at start, over the hold, the round, the expiry, the principal's
  tag and a digest of the call) must be this gateway's, unedited, unexpired,
  of the principal now calling, of the current round, and for the same method,
  name and arguments: the call that was decided and, under `ask`, approved; a
  changed call is a new one and is refused here. Then
  `police_input_responses` decides each answer (`allowSampling`, the client
  answer hooks: honeytoken tripwire, DLP's exfiltration check), the upstream
  gets the answer or the gateway's refusal, and the POST waits for the result
  or the next questions. An answer for a key never asked is ignored (mrtr.mdx:
  a server ignores what it does not recognise), so a question left unanswered
  is asked again.
- Bounds: a hold waits `ttl_s` (120 s) for its retry, then the questions are
  refused to the server and the call is cancelled (its ledger row says so);
  a later retry gets "expired". A principal has at most `cap` (64) calls waiting
  for its input; more questions are refused to their servers.

The call's ledger row carries `notes.mrtr`: rounds, the questions, the answers
passed and withheld (with why), keys ignored, expiry. Holds live in this
process (the upstream's pending call does), so the key needs no file: a state
minted before a restart names no hold either.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Emit, Session
from mcpwall.protocol import ErrorCode, Message, RequestId, error
from mcpwall.protocol.modern import CLIENT_CAPABILITIES_META_KEY, finish, is_modern
from mcpwall.protocol.mrtr import (
    CAPABILITY_OF,
    INPUT_REQUIRED_METHODS,
    Claims,
    InvalidState,
    call_body,
    call_digest,
    input_required,
    retry_parts,
    seal,
    unseal,
)
from mcpwall.protocol.naming import split
from mcpwall.proxy._bound import RefusedOrRelayed
from mcpwall.proxy._bridge import asked_key
from mcpwall.proxy._hold import Hold, _Asked
from mcpwall.proxy._input_answers import Policed, police_input_responses

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway
    from mcpwall.proxy._requests import Pending
    from mcpwall.proxy._upstream import UpstreamServer

log = logging.getLogger("mcpwall.mrtr")

#: How long a held call waits for the client's retry.
HOLD_TTL_S = 120.0
#: Calls of one principal that may wait for its input at once.
MAX_WAITING = 64
#: Questions a server sends together (several elicitations at once) join one InputRequiredResult.
_BATCH_S = 0.02
#: the client capabilities a held call's questions need (one of them declared, or nothing can be asked)
_ASKABLE = frozenset(CAPABILITY_OF.values())


def can_be_asked(meta: dict[str, Any]) -> bool:
    """Whether a modern request's `_meta` declares a capability a held call's questions need."""
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY)
    return isinstance(caps, dict) and not _ASKABLE.isdisjoint(caps)


class Holds:
    """One gateway's held calls (`ServerTraffic.mrtr`), by call and by hold id."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self.key = secrets.token_bytes(32)
        self.ttl_s = HOLD_TTL_S
        self.cap = MAX_WAITING
        self._by_call: dict[tuple[str, RequestId | None], Hold] = {}
        self._by_id: dict[str, Hold] = {}
        self.counts = {"held": 0, "rounds": 0, "withheld": 0, "expired": 0, "refused_states": 0}

    @staticmethod
    def applies(msg: Message) -> bool:
        """Whether a request is a modern client's call that may take input rounds."""
        return msg.get("method") in INPUT_REQUIRED_METHODS and is_modern(msg.get("params"))

    def serve(self, session: Session, msg: Message, emit: Emit | None, size: int = 0) -> Awaitable[Message | None]:
        """Answer a modern client's call or retry: the result, or the next InputRequiredResult.
        (What to await, not a coroutine of its own: every modern call passes here, and each level of
        coroutines is paid again at every suspension of the call.)"""
        params = msg["params"]
        if params.get("requestState") is None and params.get("inputResponses") is None:
            # A first call: nothing to take apart. Nothing can be asked of a client that declared none of
            # elicitation, sampling and roots (`ask` would refuse every question), so its call needs no
            # hold, no task of its own and no rounds: it runs as any request, and a question is refused
            # as `ask` refuses it.
            caps = params["_meta"].get(CLIENT_CAPABILITIES_META_KEY)
            if not isinstance(caps, dict) or _ASKABLE.isdisjoint(caps):
                return self.plainly(session, msg, size, emit)
            return self._hold(session, msg, emit, size, caps)
        return self._retry(session, msg, emit)

    def plainly(self, session: Session, msg: Message, size: int, emit: Emit | None,
                checked: bool = False) -> Awaitable[Message | None]:
        """`serve` of a first call (no requestState, no inputResponses) of a client that declared none of
        elicitation, sampling and roots: any request's way, a question refused as `ask` refuses it. (The
        frontend comes here straight for a call like the last one that passed: `_passed`.)"""
        handle = self.gw.handle_checked if checked else self.gw.handle_request  # checked: as `classify` does
        return handle(session, msg, RefusedOrRelayed(self, session, emit), size)  # (emit, bytes_in)

    async def _retry(self, session: Session, msg: Message, emit: Emit | None) -> Message | None:
        """A retry with `inputResponses` and the `requestState` of a round: checked, then resumed."""
        params = msg["params"]
        rest, responses, state = retry_parts(params)
        try:
            hold = self._verify(session, msg, rest, responses, state)
        except InvalidState as exc:
            self.counts["refused_states"] += 1
            log.warning("session %s: retry of %s refused: %s", session.id[:8], msg["method"], exc.detail)
            name = rest.get("name")
            parts = split(name) if session.server is None and isinstance(name, str) else None
            await self.gw.refused(msg, exc.code, exc.message, session=session,
                                  server=session.server or (parts[0] if parts else None))
            return exc.to_message()
        return await self._resume(hold, msg, responses or {}, emit)

    async def _hold(self, session: Session, msg: Message, emit: Emit | None, size: int,
                    caps: dict[str, Any]) -> Message | None:
        """A first call of a client that can be asked: run as a task, held for its rounds."""
        hold = Hold(self, session, msg["id"], msg["method"], call_body(msg["method"], msg["params"]), caps)
        self._by_call[(session.id, hold.rid)] = hold
        self._by_id[hold.id] = hold
        hold.task = asyncio.ensure_future(self.gw.handle_request(session, msg, hold.relay, bytes_in=size))
        hold.task.add_done_callback(lambda _t: self._finished(hold))
        return await self._round(hold, msg["id"], emit)

    def _verify(self, session: Session, msg: Message, rest: dict[str, Any], responses: Any, state: Any) -> Hold:
        rid = msg["id"]
        if state is None:
            raise InvalidState("inputResponses without requestState: the gateway asked nothing of this "
                               "request; echo the requestState of the InputRequiredResult", rid, "missing")
        claims = unseal(self.key, state, session.principal, int(time.time() * 1000), rid)
        hold = self._by_id.get(claims.hold)
        if hold is None or hold.task is None or hold.task.done():
            raise InvalidState("No call is held for this requestState: it finished, expired or was given "
                               "up; call the tool again", rid, "unknown")
        if hold.principal != session.principal:
            raise InvalidState("Invalid requestState: it was issued to another principal", rid, "principal")
        if call_digest(msg["method"], rest) != claims.digest or claims.digest != hold.digest:
            raise InvalidState("This retry's name or arguments differ from the call the requestState belongs "
                               "to (the call that was decided and approved); a changed call is a new call: "
                               "send it without requestState", rid, "call")
        if claims.round != hold.round:
            raise InvalidState("Stale requestState: a later round of this call was issued; echo the last "
                               "one", rid, "stale")
        if hold.busy:
            raise InvalidState("A retry of this call is already being answered", rid, "busy")
        if not isinstance(responses, dict | None):
            raise InvalidState("inputResponses must be an object keyed by the inputRequests keys", rid,
                               "responses")
        return hold

    async def _resume(self, hold: Hold, msg: Message, responses: dict[str, Any], emit: Emit | None) -> Message | None:
        hold.busy = True
        hold.waiting = False
        if hold.expiry is not None:
            hold.expiry.cancel()
        policed = police_input_responses(self.gw, hold.session, {k: a.method for k, a in hold.asked.items()},
                                         responses)
        hold.notes["ignored"].extend(policed.ignored)
        hold.notes["withheld"].extend(policed.withheld)
        self.counts["withheld"] += len(policed.withheld)
        for key, reply in policed.replies.items():
            asked = hold.asked.pop(key)
            if "result" in reply:
                hold.notes["answered"].append({"key": key, "method": asked.method})
            await asked.respond({**reply, "id": asked.rid})
        return await self._round(hold, msg["id"], emit)

    async def _round(self, hold: Hold, rid: RequestId, emit: Emit | None) -> Message | None:
        """Wait for the call's result or its next questions, and answer this POST with it."""
        assert hold.task is not None
        hold.live, hold.busy, hold.waiting = emit, True, False
        try:
            while True:
                if hold.task.done():
                    return self._final(hold, rid)
                if hold.asked:
                    await asyncio.sleep(_BATCH_S)
                    if not hold.task.done():
                        return self._ask(hold, rid)
                    continue
                hold.wake = asyncio.get_running_loop().create_future()
                try:
                    await hold.wake
                finally:
                    hold.wake = None
        except asyncio.CancelledError:
            if not hold.waiting:
                hold.task.cancel()  # the client went away mid-call, as a legacy client cancelling it
            raise
        finally:
            hold.live, hold.busy = None, False

    def _final(self, hold: Hold, rid: RequestId) -> Message | None:
        task = hold.task
        assert task is not None
        if task.cancelled():
            why = "the client did not answer in time" if hold.notes.get("expired") else "the call was cancelled"
            return error(rid, ErrorCode.INTERNAL_ERROR, f"mcpwall: {why}")
        if task.exception() is not None:
            return error(rid, ErrorCode.INTERNAL_ERROR, f"mcpwall: the call failed: {task.exception()}")
        answer = task.result()
        return None if answer is None else {**answer, "id": rid}

    def _ask(self, hold: Hold, rid: RequestId) -> Message:
        hold.round += 1
        self.counts["rounds"] += 1
        self.counts["held"] += hold.round == 1
        hold.notes["rounds"] = hold.round
        expires = int((time.time() + self.ttl_s) * 1000)
        state = seal(self.key, Claims(hold.id, hold.round, expires, hold.digest), hold.principal)
        hold.waiting = True
        hold.expiry = asyncio.get_running_loop().call_later(self.ttl_s, self._expire, hold)
        requests = {k: a.request for k, a in hold.asked.items()}
        return finish(hold.method, input_required(rid, requests, state))

    async def claim(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> bool:
        """Take a server's request (sampling, elicitation) whose call is a held modern client's: it is
        asked in that call's InputRequiredResult. False when it belongs to no held call."""
        hold = self._hold_for(upstream, pending)
        if hold is None or (msg["method"] == "roots/list" and "roots" not in hold.caps):
            return False
        respond: Callable[[Message], Awaitable[None]] = upstream.respond
        if msg["method"] == "roots/list":
            respond = self._configured_roots(upstream, msg, pending)
        await self.ask(hold, msg, respond, upstream.name, key=asked_key(msg["id"]))
        return True

    def _configured_roots(self, upstream: UpstreamServer, msg: Message,
                          pending: Pending | None) -> Callable[[Message], Awaitable[None]]:
        """A server's `roots/list` asked of the client: the client sees the question, but the server is
        answered from its configured roots, as any `roots/list` (the upstream is shared: one client's
        roots must not widen it for all); a refusal goes to the server as it is."""

        async def respond(answer: Message) -> None:
            if "result" in answer:
                await self.gw.messages.answer_roots(upstream, msg, pending)
            else:
                await upstream.respond(answer)

        return respond

    async def ask(self, hold: Hold, msg: Message, respond: Callable[[Message], Awaitable[None]],
                  server: str = "", key: str | None = None) -> None:
        """Make `msg`, a request for the client, a question of the hold's next round (DLP-masked), or
        refuse it through `respond`: a capability the call did not declare, or too many waiting calls."""
        method, rid = msg["method"], msg["id"]
        capability = CAPABILITY_OF.get(method)
        if capability is None or capability not in hold.caps:
            await respond(error(rid, ErrorCode.METHOD_NOT_FOUND, f"mcpwall cannot route {method}: the "
                                "calling client did not declare it"))
            return
        if not hold.asked and not hold.waiting and self._waiting(hold.principal) >= self.cap:
            log.warning("%s refused: %d calls of this client already wait for its input", method, self.cap)
            await respond(error(rid, ErrorCode.BLOCKED, "Blocked by mcpwall: too many calls of this client "
                                "are waiting for its input"))
            return
        if key is None or key in hold.asked or len(key) > 200:
            key = f"mcpwall-{next(hold._keys)}"  # the server's own key (a modern server's), when it has one
        masked = self.gw.messages.mask(hold.session.id, msg) if server else msg
        request: Message = {"method": method}
        if "params" in masked:
            request["params"] = masked["params"]
        hold.asked[key] = _Asked(rid, method, request, respond)
        hold.notes["asked"].append({"key": key, "method": method, "server": server or "(the gateway)"})
        hold.note()
        hold.poke()

    async def _refused_or_relayed(self, session: Session, emit: Emit | None, msg: Message) -> None:
        """The emit of a call whose client can be asked nothing (`_bound.RefusedOrRelayed` binds it to the call):
        the gateway's own questions (an approval asked of the
        client) are refused at once, the rest goes where `Hold.relay` sends it."""
        method = msg.get("method")
        if "id" in msg and isinstance(method, str):
            await self.to_gateway(session, msg["id"])(error(
                msg["id"], ErrorCode.METHOD_NOT_FOUND,
                f"mcpwall cannot route {method}: the calling client did not declare it"))
        elif emit is not None:
            await emit(msg)
        elif session.kind != "http":
            await session.push(msg)

    def to_gateway(self, session: Session, rid: RequestId) -> Callable[[Message], Awaitable[None]]:
        """The way back for the client's answer to the gateway's own question: its message taps,
        where the approval service's elicitor reads it (approvals/_elicit)."""

        async def respond(answer: Message) -> None:
            self.gw.tap(session, "in", {**answer, "id": rid})

        return respond

    def waiting_principal(self, pending: Pending) -> str | None:
        """The principal of `pending`'s call when it is a held call whose questions are out with its
        client (blocked on their answers, so not the one asking now); None otherwise."""
        hold = self._by_call.get((pending.session_id or "", pending.downstream_id)) if self._by_call else None
        return hold.principal if hold is not None and hold.waiting else None

    def _hold_for(self, upstream: UpstreamServer, pending: Pending | None) -> Hold | None:
        if not self._by_call:
            return None
        if pending is not None:
            return self._by_call.get((pending.session_id or "", pending.downstream_id))
        # A stdio upstream does not say whose call a request is. It is the held call's when that call is
        # the only one in flight to this server that can be asking: a held call whose questions are out
        # with its client is blocked on their answers (a handshake-era handler awaits each), so it is not
        # a candidate, but only while it is the same principal's (a misattribution stays within what that
        # principal may see). Several candidates, or a legacy client's call among them: nobody's.
        candidates: set[Hold | None] = set()
        blocked: set[str] = set()
        for p in upstream.pending.values():
            if p.session_id not in self.gw.sessions:
                continue
            held = self.waiting_principal(p)
            if held is not None:
                blocked.add(held)
            else:
                candidates.add(self._by_call.get((p.session_id, p.downstream_id)))
        hold = candidates.pop() if len(candidates) == 1 else None
        return hold if hold is not None and blocked <= {hold.principal} else None

    def _waiting(self, principal: str) -> int:
        return sum(1 for h in self._by_id.values() if h.principal == principal and (h.waiting or h.asked))

    def _expire(self, hold: Hold) -> None:
        """No retry came in time: the questions are refused to the server and the call ends."""
        if hold.busy or hold.task is None or hold.task.done():
            return
        self.counts["expired"] += 1
        hold.notes["expired"] = True
        log.warning("session %s: a held %s expired after %.0f s without the client's retry",
                    hold.session.id[:8], hold.method, self.ttl_s)
        for asked in hold.asked.values():
            self.gw.spawn(asked.respond(error(asked.rid, ErrorCode.INTERNAL_ERROR, "mcpwall: the client did not "
                                              "answer in time")))
        hold.asked.clear()
        hold.task.cancel()

    def _finished(self, hold: Hold) -> None:
        if hold.expiry is not None:
            hold.expiry.cancel()
        self._by_call.pop((hold.session.id, hold.rid), None)
        self._by_id.pop(hold.id, None)
        hold.poke()

    def status(self) -> dict[str, Any]:
        return {**self.counts, "holding": len(self._by_id)}


__all__ = ["HOLD_TTL_S", "MAX_WAITING", "Hold", "Holds", "Policed", "can_be_asked", "police_input_responses"]
