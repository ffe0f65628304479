"""The judge stage: a second opinion on tools/call the policy let through; it only ever tightens.

Heuristics run on every call (microseconds). The remote judge, when
configured, is asked too (`when: always`) or only about calls the heuristics
found something in (`when: suspicious`); if it fails, the heuristics decide.
The outcome is the strictest of the policy's decision, the heuristics and the
model: deny -> -32001 (recorded only, in audit mode); warn -> logged and noted.

policy.yaml::

    stages:
      judge:
        enabled: true
        heuristics: true
        denyScore: 3               # high-severity factor = 3, medium = 2, low = 1
        warnScore: 1
        remote: {provider: anthropic | openai, model: ..., apiKeyEnv: ANTHROPIC_API_KEY,
                 url: ..., timeoutMs: 5000, cacheSize: 100, cacheSeconds: 300, when: always}

`ctx.notes["judge"]` holds the opinions (source, factors, action).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode, json_text
from mcpwall.security.judge import JudgeError, Opinion, RemoteJudge, heuristic, stricter
from mcpwall.stages._components import Components
from mcpwall.stages._configs import JudgeConfig, RemoteConfig
from mcpwall.stages._kit import (
    arguments,
    call_facts,
    enforce,
    flat,
    parse,
    stage_block,
    tool_description,
)

log = logging.getLogger("mcpwall.judge")


class JudgeStage(Stage):
    name = "judge"

    def __init__(self, config: JudgeConfig | None = None, remote: RemoteJudge | None = None) -> None:
        self.config = config or JudgeConfig()
        self.remote = remote
        self.when = self.config.remote.when if self.config.remote is not None else "always"
        self.judged = 0
        self.denied = 0
        self.warned = 0
        self.fallbacks = 0
        self._memo: dict[tuple[str, str, str], Opinion] = {}

    async def stop(self) -> None:
        if self.remote is not None:
            await self.remote.aclose()

    def _heuristic(self, tool: str, args: Any, description: str, ctx: RequestContext) -> Opinion:
        """The heuristics are a pure function of the call: identical calls (agents repeat them)
        are judged once; the memo is bounded."""
        try:
            key = (tool, description, json_text(args, sort_keys=True))
        except TypeError:
            return heuristic(tool, args, description, facts=call_facts(ctx), deny_score=self.config.denyScore,
                             warn_score=self.config.warnScore, flat=flat(ctx, args))
        opinion = self._memo.get(key)
        if opinion is None:
            opinion = heuristic(tool, args, description, facts=call_facts(ctx), deny_score=self.config.denyScore,
                                warn_score=self.config.warnScore, flat=flat(ctx, args))
            if len(self._memo) >= 4096:
                self._memo.clear()
            self._memo[key] = opinion
        return opinion

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method != "tools/call":
            return None
        current = ctx.decision.action if ctx.decision is not None else "allow"
        if current == "deny":
            return None
        self.judged += 1
        args = arguments(ctx)
        description = tool_description(ctx)
        opinions: list[Opinion] = []
        local = self._heuristic(ctx.target, args, description, ctx) if self.config.heuristics else None
        if local is not None:
            opinions.append(local)
        if self.remote is not None and (self.when == "always" or (local is not None and local.factors)):
            try:
                opinions.append(await self.remote.opinion(ctx.target, description, args))
            except JudgeError as exc:
                self.fallbacks += 1
                log.info("%s; the heuristics decide", exc)
                if local is None:
                    opinions.append(heuristic(ctx.target, args, description, deny_score=self.config.denyScore,
                                              warn_score=self.config.warnScore))
                opinions[-1] = Opinion(opinions[-1].action, "heuristic (remote failed)", opinions[-1].factors,
                                       opinions[-1].reasoning, opinions[-1].score)
        action: str = current
        for opinion in opinions:
            action = stricter(action, opinion.action)
        if not opinions or action == current:
            if any(o.factors for o in opinions):
                ctx.notes["judge"] = {"action": action, "opinions": [o.as_dict() for o in opinions]}
            return None
        ctx.notes["judge"] = {"action": action, "opinions": [o.as_dict() for o in opinions]}
        factors = [f for o in opinions for f in o.factors][:6]
        reason = f"[mcpwall.judge] {'; '.join(factors) or opinions[-1].reasoning}"
        if action == "warn":
            self.warned += 1
            log.warning("judge warns on %s/%s: %s", ctx.server, ctx.target, reason)
            return None
        self.denied += 1
        log.warning("judge denies %s/%s: %s", ctx.server, ctx.target, reason)
        return enforce(ctx, "judge", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
            "reasons": [reason], "rule_ids": ["mcpwall.judge"], "judge": ctx.notes["judge"]}))

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judged": self.judged, "denied": self.denied, "warned": self.warned,
                               "heuristics": self.config.heuristics}
        if self.remote is not None:
            out["remote"] = {"provider": self.remote.provider, "model": self.remote.model, "calls": self.remote.calls,
                             "failures": self.remote.failures, "cache_hits": self.remote.cache_hits,
                             "fallbacks": self.fallbacks}
        return out


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> JudgeStage | None:
    cfg = parse(JudgeConfig, stage_block(config, "judge"), "stages.judge")
    if not cfg.enabled:
        return None
    remote = None
    if cfg.remote is not None:
        env = cfg.remote.apiKeyEnv or ("ANTHROPIC_API_KEY" if cfg.remote.provider == "anthropic" else "OPENAI_API_KEY")
        key = os.environ.get(env)
        if not key:
            log.warning("judge: remote %s judge configured but $%s is not set; heuristics only",
                        cfg.remote.provider, env)
        else:
            remote = RemoteJudge(cfg.remote.provider, key, cfg.remote.model, cfg.remote.url,
                                 cfg.remote.timeoutMs / 1000, cfg.remote.cacheSize, cfg.remote.cacheSeconds)
    if not cfg.heuristics and remote is None:
        return None
    return JudgeStage(cfg, remote)


__all__ = ["JudgeConfig", "JudgeStage", "RemoteConfig", "build"]
