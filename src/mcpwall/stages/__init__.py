"""The pipeline's stages, in one ordered list (SPEC 4).

Each hook runs over the stages that have it, in this one order
(`tests/stages/test_order_documented.py` checks these lines and the diagram
in docs/ARCHITECTURE.md against the classes):

- request (`on_request`): ratelimit, honeytoken_tripwire, protocol, circuit,
  selfguard, policy, chain, schema, pins, poisoning, rbac, threatintel,
  judge, dlp, audit; then the dispatch to the upstream (or a local answer).
- response (`on_response`): chain, pins, poisoning, dlp, honeytoken_inject,
  listfilter, response_rules.
- complete (`on_complete`, observers): circuit, selfguard, policy, chain,
  audit, metrics, notify.
- server message (`on_server_message`, a server's message to a client
  outside an answer the response hooks read): dlp.
- client answer (`on_client_answer`, a client's answer to a server's
  request): honeytoken_tripwire, dlp.

`capture` (a tap on every message) sits in the list for its lifecycle and
status and has no pipeline hook. Authentication is not a stage: the
frontends' door check (`AuthStage.admit`) runs before a message exists, and
the gateway carries it as a service.

`STAGE_ORDER` is the one place that order is written down. Each entry names a
module and a factory `build(config, settings, components) -> Stage | None`
(None: the stage is switched off by the policy); `components` are the parts
the stages share, built before them (`_components.py`). A module that is not installed yet is
skipped, so later stages plug in by adding their module.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage, blocked
from mcpwall.stages._components import Components, build_components
from mcpwall.stages.auth import AuthStage
from mcpwall.stages.circuit import CircuitStage
from mcpwall.stages.listfilter import ListFilterStage
from mcpwall.stages.policy import PolicyStage
from mcpwall.stages.protocol import ProtocolStage
from mcpwall.stages.ratelimit import DEFAULT_PER_MINUTE, RateLimitStage
from mcpwall.stages.response_rules import ResponseRulesStage

#: (name, module) in pipeline order.
STAGE_ORDER: tuple[tuple[str, str], ...] = (
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


def default_stages(config: Mapping[str, Any] | None = None, settings: Any = None,
                   components: Components | None = None) -> list[Stage]:
    """The pipeline, in order. `config` is the policy (its stage sections); `settings` the gateway's;
    `components` the parts the stages share (built from the same sections when not given)."""
    cfg = dict(config or {})
    parts = components if components is not None else build_components(cfg, settings)
    stages: list[Stage] = []
    for _name, module in STAGE_ORDER:
        if not _installed(module):
            continue
        build = getattr(importlib.import_module(module), "build", None)
        if build is None:
            continue
        stage = build(cfg, settings, parts)
        if stage is not None:
            stages.append(stage)
    return stages


__all__ = [
    "DEFAULT_PER_MINUTE",
    "STAGE_ORDER",
    "AuthStage",
    "CircuitStage",
    "Components",
    "ListFilterStage",
    "PolicyStage",
    "ProtocolStage",
    "RateLimitStage",
    "Reject",
    "RequestContext",
    "ResponseRulesStage",
    "Stage",
    "blocked",
    "build_components",
    "default_stages",
]
