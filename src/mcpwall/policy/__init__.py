"""The policy engine: `policy.yaml` in, typed decisions with traces out.

    resolved = load_policy("policy.yaml")      # YAML, extends, corp -> ResolvedPolicy
    compiled = compile_policy(resolved)        # regexes and indexes, once
    facts = prepare(Call(name="read_file", arguments={"path": "/etc/shadow"}))
    decision = evaluate(compiled, facts, Context(now=...))   # pure

`PolicyEngine` bundles these for callers that just want a decision.
"""

# ruff: noqa: E402  (the submodules are imported after `use_compiled` has chosen where from)
from __future__ import annotations

from mcpwall._native import use_compiled as _use_compiled

_use_compiled(__path__, __name__)  # before any submodule: see mcpwall._native

import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mcpwall.policy._compile import CompiledPolicy, CRule, compile_policy
from mcpwall.policy._decision import PRECEDENCE, Action, Decision, RuleTrace
from mcpwall.policy._defaults import TEMPLATES, load_template, template_text
from mcpwall.policy._evaluate import evaluate, evaluate_response, redact_text, visible
from mcpwall.policy._facts import Call, Context, Facts, local_now, prepare
from mcpwall.policy._findings import findings
from mcpwall.policy._loader import ResolvedPolicy, load_policy, parse_policy_text, resolve_document
from mcpwall.policy._normalize import canonical_host, forms
from mcpwall.policy._redact import redact_arguments

if TYPE_CHECKING:
    from mcpwall.policy._model import PolicyFile, Rule, ServerSpec

#: imported on first use (PEP 562): the models bring pydantic, which a plain read does without (issue 29)
_MODELS = ("PolicyFile", "Rule", "ServerSpec")


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        from mcpwall.policy import _model

        return getattr(_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PolicyEngine:
    """A compiled policy plus the convenience of building facts and context."""

    def __init__(self, compiled: CompiledPolicy) -> None:
        self.compiled = compiled

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> PolicyEngine:
        return cls(compile_policy(load_policy(path)))

    @classmethod
    def from_template(cls, name: str = "default") -> PolicyEngine:
        return cls(compile_policy(load_template(name)))

    def decide(self, call: Call, *, now: datetime | None = None, requests_last_minute: int = 0,
               trace: bool = False, resolve_symlinks: bool = True) -> Decision:
        facts = prepare(call, resolve_symlinks=resolve_symlinks)
        ctx = Context(now=now or datetime.now().astimezone(), requests_last_minute=requests_last_minute)
        return evaluate(self.compiled, facts, ctx, trace=trace)


def load_engine(path: str | os.PathLike[str] | None, *, plain: bool = False) -> PolicyEngine:
    """The engine for a policy file, or the built-in default when `path` is None. `plain`: read
    without pydantic where the files are valid as written, for a one-shot command (`_plain`)."""
    resolved = load_template("default", plain=plain) if path is None else load_policy(path, plain=plain)
    return PolicyEngine(compile_policy(resolved))


__all__ = [
    "PRECEDENCE",
    "TEMPLATES",
    "Action",
    "CRule",
    "Call",
    "CompiledPolicy",
    "Context",
    "Decision",
    "Facts",
    "PolicyEngine",
    "PolicyFile",
    "ResolvedPolicy",
    "Rule",
    "RuleTrace",
    "ServerSpec",
    "canonical_host",
    "compile_policy",
    "evaluate",
    "evaluate_response",
    "findings",
    "forms",
    "load_engine",
    "load_policy",
    "load_template",
    "local_now",
    "parse_policy_text",
    "prepare",
    "redact_arguments",
    "redact_text",
    "resolve_document",
    "template_text",
    "visible",
]
