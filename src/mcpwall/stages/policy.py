"""The policy stage: decide tools/call, resources/read|subscribe and prompts/get.

deny -> BLOCKED (-32001) with the reasons and rule ids in `error.data`; the
upstream never sees the call. ask -> held until a person answers (through
the approval service, when it is running), denied otherwise.
redact -> the named argument keys are removed before forwarding. rewrite ->
arguments replaced by the rule's template. warn -> logged, allowed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Holder, Reject, RequestContext, Stage
from mcpwall.policy import Call, Context, Decision, evaluate, findings, local_now, prepare, redact_arguments
from mcpwall.protocol import ErrorCode
from mcpwall.security.hooks import run_hooks
from mcpwall.stages._components import Components

log = logging.getLogger("mcpwall.policy")

POLICED = frozenset({"tools/call", "resources/read", "resources/subscribe", "prompts/get"})
#: Outcomes of a call that never reached its server.
_NOT_FORWARDED = frozenset({"deny", "ask-denied", "rejected"})
_TEMPLATE = re.compile(r"\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}")


def call_for(ctx: RequestContext) -> Call:
    """The policy's view of a request."""
    params = ctx.params
    session = ctx.session
    description = ""
    method = ctx.method
    if method == "completion/complete":
        # decided as the prompt (or resource) whose arguments it completes, without arguments
        ref = params.get("ref")
        method = "prompts/get" if isinstance(ref, dict) and ref.get("type") == "ref/prompt" else "resources/read"
        arguments: Any = {} if method == "prompts/get" else {"uri": ctx.target}
    elif method in ("tools/call", "resources/read", "resources/subscribe"):
        arguments = params.get("arguments") if method == "tools/call" else params
    else:
        arguments = params.get("arguments")
    if ctx.server is not None and ctx.method == "tools/call":
        upstream = ctx.gateway.servers.get(ctx.server)
        if upstream is not None:
            tool = upstream.catalog.tools.get(ctx.target)
            if tool is not None and isinstance(tool.get("description"), str):
                description = tool["description"]
    # As `Call(...)`, without the NamedTuple's `__new__` (an interpreted frame; `_facts` builds its tuples so)
    return tuple.__new__(Call, (method, ctx.target, arguments if isinstance(arguments, dict) else {},
                                ctx.server or "", description, session.client_name, session.agent, session.id,
                                None))


def render(template: Any, arguments: dict[str, Any]) -> Any:
    """Substitute `{{args.NAME}}` in a rewrite template (strings at any depth)."""
    if isinstance(template, str):
        whole = _TEMPLATE.fullmatch(template.strip())
        if whole:
            return arguments.get(whole.group(1))
        return _TEMPLATE.sub(lambda m: str(arguments.get(m.group(1), "")), template)
    if isinstance(template, dict):
        return {k: render(v, arguments) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, arguments) for v in template]
    return template


def _error_data(decision: Decision) -> dict[str, Any]:
    return {"reasons": list(decision.reasons), "rule_ids": list(decision.rule_ids),
            "revision": decision.revision, "mode": decision.mode}


class PolicyStage(Stage):
    name = "policy"

    def __init__(self, approvals: Holder | None = None) -> None:
        self.counts: dict[str, int] = {}
        #: the approval service that holds an `ask` (`Components.approvals`); None: asks are denied
        self.approvals = approvals

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        completion = ctx.method == "completion/complete"
        if not completion and ctx.method not in POLICED:
            return None
        policy = ctx.gateway.policy.current
        call = call_for(ctx)
        facts = prepare(call)
        decision = evaluate(policy, facts, tuple.__new__(Context, (local_now(),
                                                                   ctx.notes.get("requests_last_minute", 1))))
        if completion and decision.action != "deny":
            # Completing a prompt's or resource template's arguments asks its server about it: refused when
            # the prompt or resource is denied, nothing else (one partial value; no call to hold or change).
            return None
        ctx.decision = decision
        ctx.timeout_ms = decision.timeout_ms
        self.counts[decision.action] = self.counts.get(decision.action, 0) + 1
        found = findings(policy, facts, decision) if decision.action != "allow" or decision.warned else []
        if found:
            # what a rule on the call's facts matched, and in which argument (ledger notes, error data)
            ctx.notes["findings"] = found
        if decision.action == "deny":
            data = _error_data(decision)
            if found:
                data["findings"] = found
            return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + "; ".join(decision.reasons), data)
        if decision.action == "ask":
            verdict = await self._ask(ctx, decision)
            if verdict is not None:
                return verdict
        if decision.warned or decision.action == "warn":
            log.warning("warn %s/%s: %s", ctx.server, ctx.target, "; ".join(decision.reasons))
        params = ctx.params
        args = params.get("arguments") if isinstance(params.get("arguments"), dict) else None
        if decision.redacted_keys:
            if ctx.method in ("tools/call", "prompts/get") and args is not None:
                params = {**params, "arguments": redact_arguments(args, decision.redacted_keys)}
            else:
                params = redact_arguments(params, decision.redacted_keys)
            log.warning("redacted %s from %s/%s", ", ".join(decision.redacted_keys), ctx.server, ctx.target)
        if decision.rewrite and "arguments" in decision.rewrite and ctx.method in ("tools/call", "prompts/get"):
            given = params.get("arguments")
            current: dict[str, Any] = given if isinstance(given, dict) else {}
            rendered = render(decision.rewrite["arguments"], dict(current))
            params = {**params, "arguments": {**current, **rendered}}
        pre = [h for phase, h in decision.hooks if phase == "preprocess"]
        if pre and isinstance(params.get("arguments"), dict):
            params = {**params, "arguments": run_hooks(pre, params["arguments"])}
        if (decision.rewrite or pre) and params.get("arguments") != ctx.params.get("arguments"):
            # The call the server would get is not the one decided on: decide it again, so that a
            # rewrite or a hook (which a profile may add) can never carry past a deny rule what the
            # rules would deny (a corp's above all: SPEC 3, a profile never loosens a corp deny).
            rewritten = params.get("arguments")
            again = evaluate(policy, prepare(call._replace(arguments=rewritten if isinstance(rewritten, dict) else {})),
                             Context(now=local_now(), requests_last_minute=ctx.notes.get("requests_last_minute", 1)))
            if again.action == "deny":
                reasons = [f"the call as rewritten by {', '.join(decision.rule_ids) or 'the policy'}: {r}"
                           for r in again.reasons]
                self.counts["deny"] = self.counts.get("deny", 0) + 1
                return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + "; ".join(reasons),
                              {**_error_data(again), "reasons": reasons})
            if again.action == "ask" and decision.action != "ask":
                ctx.params = params  # what a person must approve is the call as rewritten
                verdict = await self._ask(ctx, again)
                if verdict is not None:
                    return verdict
            if again.redacted_keys and isinstance(rewritten, dict):
                params = {**params, "arguments": redact_arguments(rewritten, again.redacted_keys)}
        ctx.params = params
        if ctx.method == "tools/call":
            # In flight until on_complete: a policy file changed meanwhile waits for a person (issue 22).
            started = getattr(ctx.gateway.policy, "call_started", None)
            if started is not None:
                started(id(ctx), ctx)
        return None

    def on_complete(self, ctx: RequestContext) -> None:
        if ctx.method == "tools/call":
            ended = getattr(ctx.gateway.policy, "call_ended", None)
            if ended is not None:
                ended(id(ctx), ctx.outcome not in _NOT_FORWARDED)

    async def _ask(self, ctx: RequestContext, decision: Decision) -> Reject | None:
        """Hold the call for a person; None lets it run."""
        approvals = self.approvals
        if approvals is None:
            return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: this call needs approval and no approval "
                          "channel is running", {**_error_data(decision), "approval": "unavailable"},
                          outcome="ask-denied")
        verdict: Reject | None = await approvals.hold(ctx, decision)
        return verdict

    def status(self) -> dict[str, Any]:
        return {"decisions": dict(self.counts)}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> PolicyStage:
    return PolicyStage(components.approvals if components is not None else None)


__all__ = ["POLICED", "PolicyStage", "build", "call_for", "render"]
