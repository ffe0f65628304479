"""The shape of `policy.yaml`, validated with pydantic at the edge.

These models accept every mcp-seatbelt `policy.yml` unchanged (same keys, same
domains) and add mcpwall's own keys. They only describe and validate; the
meaning lives in `_compile.py` and `_evaluate.py`. Unknown keys are refused so
that a typo (`argConstraint:`) is an error with a line number, not a rule that
silently never applies.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Target = Literal[
    # mcp-seatbelt's targets
    "command", "file", "network", "env", "process",
    # ours
    "tool", "server", "resource", "prompt", "argName", "argValue", "response",
    # the argument values that may run: argValue without the data a tool keeps or sends (`Facts.inert`)
    "runnable",
    # what the call touches, runs and sends (`_calls.py`, issue 25)
    "secrets_out", "sinks", "touches.files", "touches.writes", "touches.programs", "touches.hosts", "touches.env",
    # shell syntax in an argument that is not a command line (`x.txt; curl ...`, `$(id)`), in every spelling
    "injected",
]
MatchType = Literal["exact", "pattern", "contains"]
RuleAction = Literal[
    "allow", "deny", "block", "warn", "redact", "ask", "rewrite", "preprocess", "postprocess",
]
Mode = Literal["audit", "enforce"]
DefaultAction = Literal["allow", "deny", "block", "warn", "ask"]
ConstraintKind = Literal["equals", "startsWith", "regex", "in", "notIn"]
Framework = Literal["soc2", "hipaa", "gdpr", "pci-dss", "iso27001", "nist"]
WebhookFormat = Literal["slack", "discord", "json"]
WebhookEvent = Literal[
    "deny", "warn", "redact", "ask", "allow", "honeytoken", "rug_pull", "attack_chain", "toxic_flow",
]
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _non_empty_strings(values: list[str], what: str) -> list[str]:
    for v in values:
        if not v.strip():
            raise ValueError(f"{what} must contain only non-empty strings")
    return values


class ArgConstraint(_Strict):
    """A condition every call matched by the rule must meet, or it is denied."""

    argName: str = Field(min_length=1)
    constraint: ConstraintKind
    values: list[str] = Field(min_length=1)

    _check_values = field_validator("values")(lambda cls, v: _non_empty_strings(v, "values"))


class TimeWindow(_Strict):
    """When a rule is in force: day names and an hour range that may wrap past midnight."""

    days: list[str] | None = None
    startHour: int | None = Field(default=None, ge=0, le=23)
    endHour: int | None = Field(default=None, ge=0, le=23)
    #: IANA zone name; default is the gateway's local time, as in seatbelt.
    timezone: str | None = None

    @field_validator("days")
    @classmethod
    def _days(cls, v: list[str] | None) -> list[str] | None:
        for day in v or []:
            if day.lower() not in DAY_NAMES:
                raise ValueError(f"invalid day name {day!r}")
        return v


class ContextCondition(_Strict):
    """Restricts a rule to certain clients, agents or request rates."""

    clientIn: list[str] | None = None
    agentIn: list[str] | None = None
    maxRequestsPerMinute: int | None = Field(default=None, gt=0)


class Compliance(_Strict):
    framework: Framework
    controls: list[str] = Field(min_length=1)
    remediation: str | None = None

    _check_controls = field_validator("controls")(lambda cls, v: _non_empty_strings(v, "controls"))


class Rewrite(_Strict):
    """Replacement templates for a `rewrite` rule (`{{args.NAME}}` is substituted)."""

    arguments: dict[str, Any] | None = None
    result: str | None = None


class Rule(_Strict):
    """One policy rule. Seatbelt's fields first, then ours."""

    id: str = Field(min_length=1)
    description: str = ""
    target: Target | None = None
    match: MatchType = "pattern"
    values: list[str] = Field(default_factory=list)
    action: RuleAction
    argConstraints: list[ArgConstraint] | None = None
    timeWindow: TimeWindow | None = None
    contextCondition: ContextCondition | None = None
    timeoutMs: int | None = Field(default=None, ge=100, le=300_000)
    compliance: list[Compliance] | None = None
    # ours: scope (globs, any of which must match) and extras
    servers: list[str] | None = None
    tools: list[str] | None = None
    methods: list[str] | None = None
    clients: list[str] | None = None
    agents: list[str] | None = None
    rewrite: Rewrite | None = None
    hook: str | None = None
    owasp: list[str] | None = None
    enabled: bool = True

    _check_values = field_validator("values")(lambda cls, v: _non_empty_strings(v, "values"))

    @model_validator(mode="after")
    def _consistent(self) -> Rule:
        if self.values and self.target is None:
            raise ValueError("values given without a target")
        if self.action == "rewrite" and self.rewrite is None:
            raise ValueError("a rewrite rule needs a 'rewrite' mapping (arguments and/or result)")
        if self.action in ("preprocess", "postprocess") and not self.hook:
            raise ValueError(f"a {self.action} rule needs a 'hook' name")
        return self


class Allowlist(_Strict):
    tools: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    envVars: list[str] = Field(default_factory=list)


class Webhook(_Strict):
    url: str = Field(min_length=1)
    events: list[WebhookEvent]
    format: WebhookFormat = "json"
    headers: dict[str, str] | None = None


class Notifications(_Strict):
    webhooks: list[Webhook] | None = None


class SandboxSpec(_Strict):
    """Bubblewrap confinement of a stdio server (see docs/ARCHITECTURE.md)."""

    read: list[str] = Field(default_factory=list)
    write: list[str] = Field(default_factory=list)
    network: bool = False


class ServerSpec(_Strict):
    """An upstream MCP server: a command to spawn, or a URL to reach."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    transport: Literal["stdio", "streamable-http", "http", "sse"] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeoutMs: int | None = Field(default=None, ge=100, le=300_000)
    sandbox: SandboxSpec | None = None
    roots: list[str] | None = None
    disabled: bool = False
    #: the protocol era the gateway speaks to it: `auto` opens with `initialize` and, when the
    #: server refuses it, probes `server/discover` (a modern-only server); `modern` and `legacy` pin one
    era: Literal["auto", "legacy", "modern"] = "auto"

    @model_validator(mode="after")
    def _command_or_url(self) -> ServerSpec:
        if bool(self.command) == bool(self.url):
            raise ValueError("a server needs exactly one of 'command' or 'url'")
        return self


class CorpPolicy(_Strict):
    """A constraining base: its denials cannot be loosened by the profile."""

    mode: Mode = "enforce"
    rules: list[Rule] = Field(default_factory=list)
    allowlist: Allowlist | None = None


class PolicyFile(_Strict):
    """One YAML file as written, before `extends` and `corp` are resolved."""

    version: str | None = None
    mode: Mode | None = None
    defaultAction: DefaultAction | None = None
    defaultTimeoutMs: int | None = Field(default=None, ge=100, le=300_000)
    rules: list[Rule] = Field(default_factory=list)
    allowlist: Allowlist | None = None
    allowSampling: bool | None = None
    extends: list[str] | None = None
    notifications: Notifications | None = None
    servers: dict[str, ServerSpec] | None = None
    corp: str | CorpPolicy | None = None
    # Stage configuration blocks; each stage validates its own block.
    dlp: dict[str, Any] | bool | None = None
    honeytokens: dict[str, Any] | bool | None = None
    ledger: dict[str, Any] | None = None
    rbac: dict[str, Any] | None = None
    stages: dict[str, Any] | None = None
    # OpenTelemetry traces (mcpwall.telemetry validates it; docs/TRACING.md).
    telemetry: dict[str, Any] | bool | None = None
    # OAuth issuers whose tokens the gateway accepts (mcpwall.oauth validates it; docs/AUTH.md).
    auth: dict[str, Any] | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, v: object) -> object:
        return str(v) if isinstance(v, int | float) else v

    @field_validator("extends", mode="before")
    @classmethod
    def _extends_list(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


__all__ = [
    "DAY_NAMES",
    "Allowlist",
    "ArgConstraint",
    "Compliance",
    "ContextCondition",
    "CorpPolicy",
    "DefaultAction",
    "Mode",
    "Notifications",
    "PolicyFile",
    "Rewrite",
    "Rule",
    "RuleAction",
    "SandboxSpec",
    "ServerSpec",
    "Target",
    "TimeWindow",
    "Webhook",
]
