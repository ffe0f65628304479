"""Running the stage list over one request (see `mcpwall.stages` for the hooks)."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from mcpwall.ledger import LedgerUnavailable
from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode, Message, ProtocolError, error
from mcpwall.proxy._requests import UpstreamError
from mcpwall.shared import StateUnavailable
from mcpwall.stages import Reject, RequestContext, Stage

log = logging.getLogger("mcpwall.pipeline")

Dispatch = Callable[[RequestContext], Awaitable[Message | None]]


def _overrides(stage: Stage, hook: str) -> bool:
    return getattr(type(stage), hook) is not getattr(Stage, hook)


class Pipeline:
    """The ordered stages, with each hook's list precomputed so no-op hooks cost nothing."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)
        self._request = [s for s in self.stages if _overrides(s, "on_request")]
        self._response = [s for s in self.stages if _overrides(s, "on_response")]
        self._complete = [s for s in self.stages if _overrides(s, "on_complete")]
        self._server_message = [s for s in self.stages if _overrides(s, "on_server_message")]
        #: whether any stage reads a server's own messages (else they pass untouched, unwrapped)
        self.screens_server_messages = bool(self._server_message)
        self._client_answer = [s for s in self.stages if _overrides(s, "on_client_answer")]
        self.timings: dict[str, float] = {s.name: 0.0 for s in self.stages}

    def find(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    async def run(self, ctx: RequestContext, dispatch: Dispatch) -> Message | None:
        """Request hooks, dispatch, response hooks. Returns the message to answer with."""
        clock = time.perf_counter
        timings = self.timings
        t0 = clock()
        for stage in self._request:
            try:
                verdict = await stage.on_request(ctx)
            except Exception as exc:
                verdict = self._failed(ctx, stage, exc)
            t1 = clock()  # each stage's end is the next one's start: one clock read per stage
            timings[stage.name] += t1 - t0
            t0 = t1
            if verdict is not None:
                return self._reject(ctx, verdict)
        try:
            response = await dispatch(ctx)
        except UpstreamError as exc:
            ctx.outcome = "timeout" if exc.reason == "timeout" else "failed"
            ctx.error_message = str(exc)
            response = error(ctx.id, exc.code, str(exc), {"server": ctx.server, "reason": exc.reason})
        except ProtocolError as exc:  # e.g. an unknown method on an aggregated session
            ctx.outcome = "rejected"
            ctx.error_message = exc.message
            response = error(ctx.id, exc.code, exc.message, exc.data)
        finally:
            if ctx.server is not None:
                ctx.upstream_ms = (clock() - t0) * 1000
        if response is None:
            if ctx.outcome == "pending":
                ctx.outcome = "cancelled"
            return None
        if ctx.outcome == "pending":
            if "error" in response:
                ctx.outcome = "error"
                err = response["error"]
                ctx.error_message = str(err.get("message")) if isinstance(err, dict) else str(err)
            else:
                ctx.outcome = "ok"
        return await self.respond(ctx, response)

    async def respond(self, ctx: RequestContext, response: Message) -> Message:
        """The response hooks over one answer (a task's result comes back later: `_tasks.py`)."""
        clock = time.perf_counter
        timings = self.timings
        t0 = clock()
        for stage in self._response:
            try:
                response = await stage.on_response(ctx, response)
            except Exception as exc:
                response = self._reject(ctx, self._failed(ctx, stage, exc))
            t1 = clock()
            timings[stage.name] += t1 - t0
            t0 = t1
        ctx.response = response
        return response

    def _failed(self, ctx: RequestContext, stage: Stage, exc: Exception) -> Reject:
        # Fail closed: a broken stage denies, and the ledger says why.
        policy = getattr(getattr(ctx.gateway, "policy", None), "current", None)
        where = {"revision": policy.revision, "mode": policy.mode} if policy is not None else {}
        if isinstance(exc, LedgerUnavailable | StateUnavailable):
            # The stage needed the ledger's or the shared state's storage (an `ask` records its
            # approval there): the same refusal as the ledger stage's own (docs/LEDGER.md).
            log.error("stage %s could not store its state on %s: %s", stage.name, ctx.method, exc)
            reason = f"ledger unavailable: {exc}"
            ctx.notes["stage_error"] = f"{stage.name}: {reason}"
            return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: {reason}",
                          {"reasons": [reason], "rule_ids": ["mcpwall.ledger"], **where})
        log.exception("stage %s failed on %s", stage.name, ctx.method)
        ctx.notes["stage_error"] = f"{stage.name}: {exc.__class__.__name__}: {exc}"
        return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: stage {stage.name!r} failed",
                      {"stage": stage.name, "reasons": [ctx.notes["stage_error"]], **where})

    def _reject(self, ctx: RequestContext, verdict: Reject) -> Message:
        ctx.outcome = verdict.outcome
        ctx.error_message = verdict.message
        ctx.notes.setdefault("http_status", verdict.http_status)
        response = error(ctx.id, verdict.code, verdict.message, verdict.data)
        ctx.response = response
        return response

    def server_message(self, session_id: str, msg: Message) -> Message:
        """A server's message to a client through every stage's `on_server_message`, in order."""
        for stage in self._server_message:
            msg = stage.on_server_message(session_id, msg)
        return msg

    def client_answer(self, session: Session, answer: Message) -> str | None:
        """Why a client's answer must not reach the server: the first stage that refuses it says."""
        for stage in self._client_answer:
            why = stage.on_client_answer(session, answer)
            if why is not None:
                return why
        return None

    async def complete(self, ctx: RequestContext) -> None:
        """Run the observers; an observer may be async (a ledger in strict mode awaits its commit)."""
        for stage in self._complete:
            try:
                outcome = stage.on_complete(ctx)
                if outcome is not None and inspect.isawaitable(outcome):  # most return None: no ABC check
                    await outcome
            except Exception:
                log.exception("stage %s failed in on_complete", stage.name)


__all__ = ["Dispatch", "Pipeline"]
