"""Response rules: `target: response` rules and postprocess hooks on tool results.

deny withholds the result (BLOCKED, the content is not sent); redact masks the
matching text; rewrite replaces the content; postprocess hooks transform it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import RequestContext, Stage
from mcpwall.policy import Context, evaluate_response, local_now, prepare, redact_text
from mcpwall.protocol import ErrorCode, Message, error
from mcpwall.security.hooks import _map_strings, run_hooks
from mcpwall.stages._components import Components
from mcpwall.stages.policy import call_for, render

log = logging.getLogger("mcpwall.policy")


class ResponseRulesStage(Stage):
    name = "response_rules"

    def __init__(self) -> None:
        self.withheld = 0
        self.masked = 0

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        if ctx.method != "tools/call" or not isinstance(response.get("result"), dict):
            return response
        body = response["result"]
        post = [h for phase, h in ctx.decision.hooks if phase == "postprocess"] if ctx.decision else []
        if post:
            body = run_hooks(post, body)
        arguments = ctx.params.get("arguments") if isinstance(ctx.params.get("arguments"), dict) else {}
        assert arguments is not None
        asked = ctx.decision.rewrite if ctx.decision is not None and ctx.decision.rewrite else None
        if asked is not None and "result" in asked:
            # A request-side rewrite rule that replaces the result (SPEC 3: rewrite arguments or results).
            body = _rewritten(asked["result"], arguments)
        policy = ctx.gateway.policy.current
        if policy.response_rules:
            base = call_for(ctx)
            facts = prepare(type(base)(method=base.method, name=base.name, arguments={}, server=base.server,
                                       description=base.description, client=base.client, agent=base.agent,
                                       session=base.session, result=body))
            decision = evaluate_response(policy, facts, Context(
                now=local_now(), requests_last_minute=ctx.notes.get("requests_last_minute", 1)))
            if decision.rule_ids:
                ctx.notes["response_decision"] = decision.as_dict()
            if decision.action == "deny":
                self.withheld += 1
                ctx.outcome = "deny"
                return error(ctx.id, ErrorCode.BLOCKED, "Blocked by mcpwall: the response was withheld; "
                             + "; ".join(decision.reasons), {"reasons": list(decision.reasons),
                                                             "rule_ids": list(decision.rule_ids), "phase": "response"})
            if decision.action == "redact":
                rules = [r for r in policy.response_rules if r.id in decision.redacted_keys]
                body = _map_strings(body, lambda s: redact_text(rules, s))
                self.masked += 1
            elif decision.action == "rewrite" and decision.rewrite and "result" in decision.rewrite:
                body = _rewritten(decision.rewrite["result"], arguments)
            elif decision.warned:
                log.warning("response warn %s/%s: %s", ctx.server, ctx.target, "; ".join(decision.reasons))
        if body is response["result"]:
            return response
        return {**response, "result": body}

    def status(self) -> dict[str, Any]:
        return {"withheld": self.withheld, "masked": self.masked}


def _rewritten(template: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """A result template with `{{args.NAME}}` filled in: a text, or a whole result object."""
    filled = render(template, arguments)
    if isinstance(filled, dict) and isinstance(filled.get("content"), list):
        return filled
    return {"content": [{"type": "text", "text": filled if isinstance(filled, str) else str(filled)}]}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> ResponseRulesStage:
    return ResponseRulesStage()


__all__ = ["ResponseRulesStage", "build"]
