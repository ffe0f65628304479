"""What the defence stages share: reading their policy.yaml block, and acting per mode.

Each stage validates its own block with a pydantic model (unknown keys are
refused, so a typo is an error at startup rather than a switch that silently
does nothing) and raises `ConfigError` naming the block.

Audit mode records and never blocks: a stage that would deny returns no
verdict, and `ctx.notes[stage]` says what enforce mode would have done
(`enforced_action`), as the policy engine's decisions do.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Reject, RequestContext
from mcpwall.security._classify import CallFacts, classify
from mcpwall.security._json import Flat, flatten

M = TypeVar("M", bound=BaseModel)


def stage_block(config: Mapping[str, Any], name: str) -> Any:
    """`stages: {<name>: ...}` from the policy's raw sections, or None."""
    stages = config.get("stages") or {}
    return stages.get(name) if isinstance(stages, Mapping) else None


def parse(model: type[M], raw: Any, where: str) -> M:
    """Validate a block (`true`/`false` mean `{enabled: ...}`), or refuse it with one clear line."""
    if raw is None:
        raw = {}
    elif isinstance(raw, bool):
        raw = {"enabled": raw}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"policy {where}: expected a mapping or true/false, got {type(raw).__name__}")
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or where}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"policy {where}: {problems}") from exc


def audit_mode(ctx: RequestContext) -> bool:
    policy = getattr(ctx.gateway, "policy", None)
    current = getattr(policy, "current", None)
    return getattr(current, "mode", "enforce") == "audit"


def enforce(ctx: RequestContext, stage: str, verdict: Reject, *, always: bool = False) -> Reject | None:
    """The verdict in enforce mode (or when `always`); in audit mode a note and no verdict."""
    if always or not audit_mode(ctx):
        return verdict
    note = ctx.notes.setdefault(stage, {})
    if isinstance(note, dict):
        note["enforced_action"] = "deny"
        note["enforced_reason"] = verdict.message
    return None


def matches(patterns: Sequence[str] | None, *names: str) -> bool:
    """No patterns: everything; else any name matches any glob."""
    if not patterns:
        return True
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names if n)


def arguments(ctx: RequestContext) -> dict[str, Any]:
    args = ctx.params.get("arguments")
    return args if isinstance(args, dict) else {}


def flat(ctx: RequestContext, value: Any) -> Flat:
    """Every string of one of the message's values (its arguments, its result) with its path, flattened
    once per message for the stages that read them (classify, the schema's path checks, threat intel,
    the judge, the chain stage). Keyed by the object itself, which the memo holds: a stage that replaces
    the value (the policy's or DLP's masking builds new objects, the poisoning scan a cleaned result)
    makes the next reader flatten what it now sees, as it did when each stage walked the value."""
    memo = ctx.shared.get("flat")
    if memo is None:
        memo = ctx.shared["flat"] = {}
    hit = memo.get(id(value))
    if hit is not None and hit[0] is value:
        found: Flat = hit[1]
        return found
    out = flatten(value)
    memo[id(value)] = (value, out)
    return out


def call_facts(ctx: RequestContext) -> CallFacts:
    """What the call's tool name and arguments say it does, derived once per message (the chain
    stage and the judge both need them)."""
    facts = ctx.shared.get("call_facts")
    if not isinstance(facts, CallFacts):
        args = arguments(ctx)
        facts = ctx.shared["call_facts"] = classify(ctx.target, args, flat=flat(ctx, args))
    return facts


def tool_description(ctx: RequestContext) -> str:
    if ctx.server is None:
        return ""
    upstream = ctx.gateway.servers.get(ctx.server)
    tool = upstream.catalog.tools.get(ctx.target) if upstream is not None else None
    desc = tool.get("description") if isinstance(tool, dict) else None
    return desc if isinstance(desc, str) else ""


__all__ = ["arguments", "audit_mode", "call_facts", "enforce", "flat", "matches", "parse",
           "stage_block", "tool_description"]
