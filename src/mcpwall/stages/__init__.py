"""The pipeline's stages, in one ordered list (SPEC 4).

Request side, in order: authentication, rate limit, forensic capture,
honeytoken tripwire, protocol validation, circuit breaker, policy, attack
chain / toxic flow, schema and path validation, RBAC, threat intel, then
upstream dispatch. Response side (the same list's `on_response` hooks, in
order): capture, DLP, honeytoken injection, list filtering, response rules.
Observers (`on_complete`): ledger, metrics, notifications.

`STAGE_ORDER` is the one place that order is written down. Each entry names a
module and a factory `build(config, settings) -> Stage | None` (None: the
stage is switched off by the policy). A module that is not installed yet is
skipped, so later stages plug in by adding their module.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage, blocked
from mcpwall.stages.auth import AuthStage
from mcpwall.stages.circuit import CircuitStage
from mcpwall.stages.listfilter import ListFilterStage
from mcpwall.stages.policy import PolicyStage
from mcpwall.stages.protocol import ProtocolStage
from mcpwall.stages.ratelimit import DEFAULT_PER_MINUTE, RateLimitStage
from mcpwall.stages.response_rules import ResponseRulesStage

#: (name, module) in pipeline order; "auth" is supplied by the caller.
STAGE_ORDER: tuple[tuple[str, str], ...] = (
    ("auth", ""),
    ("ratelimit", "mcpwall.stages.ratelimit"),
    ("capture", "mcpwall.stages.capture"),
    ("honeytoken_tripwire", "mcpwall.stages.honeytokens"),
    ("protocol", "mcpwall.stages.protocol"),
    ("circuit", "mcpwall.stages.circuit"),
    ("selfguard", "mcpwall.stages.selfguard"),
    ("policy", "mcpwall.stages.policy"),
    ("chain", "mcpwall.stages.chain"),
    ("schema", "mcpwall.stages.schema"),
    ("pins", "mcpwall.stages.pins"),
    ("poisoning", "mcpwall.stages.poisoning"),
    ("rbac", "mcpwall.stages.rbac"),
    ("threatintel", "mcpwall.stages.threatintel"),
    ("judge", "mcpwall.stages.judge"),
    ("dlp", "mcpwall.stages.dlp"),
    ("honeytoken_inject", "mcpwall.stages.honeytokens_inject"),
    ("listfilter", "mcpwall.stages.listfilter"),
    ("response_rules", "mcpwall.stages.response_rules"),
    ("audit", "mcpwall.stages.audit"),
    ("metrics", "mcpwall.stages.metrics"),
    ("notify", "mcpwall.stages.notify"),
)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def default_stages(auth: AuthStage | None = None, config: Mapping[str, Any] | None = None,
                   settings: Any = None) -> list[Stage]:
    """The pipeline, in order. `config` is the policy (its stage sections); `settings` the gateway's."""
    cfg = dict(config or {})
    stages: list[Stage] = []
    for name, module in STAGE_ORDER:
        if name == "auth":
            stages.append(auth or AuthStage(insecure_no_auth=True))
            continue
        if not _installed(module):
            continue
        build = getattr(importlib.import_module(module), "build", None)
        if build is None:
            continue
        stage = build(cfg, settings)
        if stage is not None:
            stages.append(stage)
    return stages


__all__ = [
    "DEFAULT_PER_MINUTE",
    "STAGE_ORDER",
    "AuthStage",
    "CircuitStage",
    "ListFilterStage",
    "PolicyStage",
    "ProtocolStage",
    "RateLimitStage",
    "Reject",
    "RequestContext",
    "ResponseRulesStage",
    "Stage",
    "blocked",
    "default_stages",
]
