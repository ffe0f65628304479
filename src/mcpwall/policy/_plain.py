"""Policy files read without pydantic, for a one-shot command (`simulate`, issue 29 item 5).

Importing pydantic and building the models of `_model.py` costs about 90 ms of CPU, most of a
`mcpwall simulate` of one call, which scripts and parity harnesses start thousands of times.
`document(data)` reads a parsed YAML mapping into frozen dataclasses with the models' names,
fields, defaults, `model_dump` and `model_copy`, when the mapping is one the models take as it
stands: every value already of its field's type (no coercion: `"500"` for a number, `1` for a
flag), inside its bounds, no unknown key, each validator of the models satisfied. For anything
else it answers None and the caller validates with the models, so an error reads exactly as it
always did and a value the models would coerce is coerced by them. An inline `corp:` mapping is
left to the models too. tests/policy/test_plain.py holds the two to the same fields and answers.

Only callers that ask for it (`load_policy(..., plain=True)`) get these; the gateway keeps the
models.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

Check = Callable[[Any], Any]


class _Refused(Exception):
    """The data is not certainly valid as it stands: the models decide."""


def _text(min_length: int = 0) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not str or len(value) < min_length:
            raise _Refused
        return value
    return check


def _one_of(*allowed: str) -> Check:
    names = frozenset(allowed)

    def check(value: Any) -> Any:
        if type(value) is not str or value not in names:
            raise _Refused
        return value
    return check


def _whole(low: int | None = None, high: int | None = None) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
            raise _Refused
        return value
    return check


def _flag(value: Any) -> Any:
    if type(value) is not bool:
        raise _Refused
    return value


def _texts(min_length: int = 0, *, non_empty: bool = False, each: Check | None = None) -> Check:
    """A list of strings; `non_empty`: none of them blank (the models' `_non_empty_strings`)."""
    def check(value: Any) -> Any:
        if type(value) is not list or len(value) < min_length:
            raise _Refused
        for item in value:
            if type(item) is not str or (non_empty and not item.strip()):
                raise _Refused
            if each is not None:
                each(item)
        return list(value)
    return check


def _mapping(values: Check | None = None) -> Check:
    """dict[str, Any], or dict[str, <values>]."""
    def check(value: Any) -> Any:
        if type(value) is not dict or not all(type(key) is str for key in value):
            raise _Refused
        return dict(value) if values is None else {key: values(item) for key, item in value.items()}
    return check


def _optional(check: Check) -> Check:
    return lambda value: None if value is None else check(value)


def _either(*checks: Check) -> Check:
    def check(value: Any) -> Any:
        for one in checks:
            try:
                return one(value)
            except _Refused:
                continue
        raise _Refused
    return check


def _one(kind: type[_Plain]) -> Check:
    return kind.of


def _many(kind: type[_Plain]) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not list:
            raise _Refused
        return [kind.of(item) for item in value]
    return check


def _dump(value: Any, exclude_none: bool) -> Any:
    if isinstance(value, _Plain):
        return value.model_dump(exclude_none=exclude_none)
    if type(value) is list:
        return [_dump(item, exclude_none) for item in value]
    if type(value) is dict:
        return {k: _dump(item, exclude_none) for k, item in value.items()}
    return value


class _Plain:
    """What the policy's code asks of a model: its fields as attributes, `model_dump`, `model_copy`."""

    #: field name -> the check of a value given for it (the dataclass's fields give the defaults)
    CHECKS: ClassVar[dict[str, Check]] = {}

    @classmethod
    def of(cls, data: Any) -> Any:
        if type(data) is not dict or not data.keys() <= cls.CHECKS.keys():
            raise _Refused  # not a mapping, or an unknown key
        given = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # every subclass is a dataclass
            if f.name in data:
                given[f.name] = cls.CHECKS[f.name](data[f.name])
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _Refused  # a required field left out
        made = cls(**given)
        made.check()
        return made

    def check(self) -> None:
        """The model's validators over the whole object; raises _Refused."""

    def model_dump(self, *, exclude_none: bool = False) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None or not exclude_none:
                out[f.name] = _dump(value, exclude_none)
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


# The literals of `_model.py` (a test keeps them equal).
TARGETS = ("command", "file", "network", "env", "process", "tool", "server", "resource", "prompt", "argName",
           "argValue", "response", "secrets_out", "sinks", "touches.files", "touches.writes", "touches.programs",
           "touches.hosts", "touches.env")
MATCH_TYPES = ("exact", "pattern", "contains")
RULE_ACTIONS = ("allow", "deny", "block", "warn", "redact", "ask", "rewrite", "preprocess", "postprocess")
MODES = ("audit", "enforce")
DEFAULT_ACTIONS = ("allow", "deny", "block", "warn", "ask")
CONSTRAINT_KINDS = ("equals", "startsWith", "regex", "in", "notIn")
FRAMEWORKS = ("soc2", "hipaa", "gdpr", "pci-dss", "iso27001", "nist")
WEBHOOK_FORMATS = ("slack", "discord", "json")
WEBHOOK_EVENTS = ("deny", "warn", "redact", "ask", "allow", "honeytoken", "rug_pull", "attack_chain", "toxic_flow")
TRANSPORTS = ("stdio", "streamable-http", "http", "sse")
ERAS = ("auto", "legacy", "modern")
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_TIMEOUT = _optional(_whole(100, 300_000))
_HOUR = _optional(_whole(0, 23))


def _day(name: str) -> None:
    if name.lower() not in DAY_NAMES:
        raise _Refused


@dataclass(frozen=True, slots=True)
class ArgConstraint(_Plain):
    argName: str
    constraint: str
    values: list[str]
    CHECKS: ClassVar[dict[str, Check]] = {"argName": _text(1), "constraint": _one_of(*CONSTRAINT_KINDS),
                                          "values": _texts(1, non_empty=True)}


@dataclass(frozen=True, slots=True)
class TimeWindow(_Plain):
    days: list[str] | None = None
    startHour: int | None = None
    endHour: int | None = None
    timezone: str | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"days": _optional(_texts(each=_day)), "startHour": _HOUR,
                                          "endHour": _HOUR, "timezone": _optional(_text())}


@dataclass(frozen=True, slots=True)
class ContextCondition(_Plain):
    clientIn: list[str] | None = None
    agentIn: list[str] | None = None
    maxRequestsPerMinute: int | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"clientIn": _optional(_texts()), "agentIn": _optional(_texts()),
                                          "maxRequestsPerMinute": _optional(_whole(1))}


@dataclass(frozen=True, slots=True)
class Compliance(_Plain):
    framework: str
    controls: list[str]
    remediation: str | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"framework": _one_of(*FRAMEWORKS), "controls": _texts(1, non_empty=True),
                                          "remediation": _optional(_text())}


@dataclass(frozen=True, slots=True)
class Rewrite(_Plain):
    arguments: dict[str, Any] | None = None
    result: str | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"arguments": _optional(_mapping()), "result": _optional(_text())}


_NAMES = _optional(_texts())


@dataclass(frozen=True, slots=True)
class Rule(_Plain):
    id: str
    action: str
    description: str = ""
    target: str | None = None
    match: str = "pattern"
    values: list[str] = field(default_factory=list)
    argConstraints: list[ArgConstraint] | None = None
    timeWindow: TimeWindow | None = None
    contextCondition: ContextCondition | None = None
    timeoutMs: int | None = None
    compliance: list[Compliance] | None = None
    servers: list[str] | None = None
    tools: list[str] | None = None
    methods: list[str] | None = None
    clients: list[str] | None = None
    agents: list[str] | None = None
    rewrite: Rewrite | None = None
    hook: str | None = None
    owasp: list[str] | None = None
    enabled: bool = True
    #: the order of the model's fields, for `model_dump` (a dataclass puts the required ones first)
    ORDER: ClassVar[tuple[str, ...]] = (
        "id", "description", "target", "match", "values", "action", "argConstraints", "timeWindow",
        "contextCondition", "timeoutMs", "compliance", "servers", "tools", "methods", "clients", "agents",
        "rewrite", "hook", "owasp", "enabled")
    CHECKS: ClassVar[dict[str, Check]] = {
        "id": _text(1), "description": _text(), "target": _optional(_one_of(*TARGETS)),
        "match": _one_of(*MATCH_TYPES), "values": _texts(non_empty=True), "action": _one_of(*RULE_ACTIONS),
        "argConstraints": _optional(_many(ArgConstraint)), "timeWindow": _optional(_one(TimeWindow)),
        "contextCondition": _optional(_one(ContextCondition)), "timeoutMs": _TIMEOUT,
        "compliance": _optional(_many(Compliance)), "servers": _NAMES, "tools": _NAMES, "methods": _NAMES,
        "clients": _NAMES, "agents": _NAMES, "rewrite": _optional(_one(Rewrite)), "hook": _optional(_text()),
        "owasp": _NAMES, "enabled": _flag}

    def check(self) -> None:
        if self.values and self.target is None:
            raise _Refused
        if self.action == "rewrite" and self.rewrite is None:
            raise _Refused
        if self.action in ("preprocess", "postprocess") and not self.hook:
            raise _Refused

    def model_dump(self, *, exclude_none: bool = False) -> dict[str, Any]:
        dumped = _Plain.model_dump(self, exclude_none=exclude_none)
        return {name: dumped[name] for name in self.ORDER if name in dumped}


@dataclass(frozen=True, slots=True)
class Allowlist(_Plain):
    tools: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    envVars: list[str] = field(default_factory=list)
    CHECKS: ClassVar[dict[str, Check]] = {"tools": _texts(), "paths": _texts(), "hosts": _texts(), "envVars": _texts()}


@dataclass(frozen=True, slots=True)
class Webhook(_Plain):
    url: str
    events: list[str]
    format: str = "json"
    headers: dict[str, str] | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"url": _text(1), "events": _texts(each=_one_of(*WEBHOOK_EVENTS)),
                                          "format": _one_of(*WEBHOOK_FORMATS),
                                          "headers": _optional(_mapping(_text()))}


@dataclass(frozen=True, slots=True)
class Notifications(_Plain):
    webhooks: list[Webhook] | None = None
    CHECKS: ClassVar[dict[str, Check]] = {"webhooks": _optional(_many(Webhook))}


@dataclass(frozen=True, slots=True)
class SandboxSpec(_Plain):
    read: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    network: bool = False
    CHECKS: ClassVar[dict[str, Check]] = {"read": _texts(), "write": _texts(), "network": _flag}


@dataclass(frozen=True, slots=True)
class ServerSpec(_Plain):
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    transport: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeoutMs: int | None = None
    sandbox: SandboxSpec | None = None
    roots: list[str] | None = None
    disabled: bool = False
    era: str = "auto"
    CHECKS: ClassVar[dict[str, Check]] = {
        "command": _optional(_text()), "args": _texts(), "env": _mapping(_text()), "cwd": _optional(_text()),
        "url": _optional(_text()), "transport": _optional(_one_of(*TRANSPORTS)), "headers": _mapping(_text()),
        "timeoutMs": _TIMEOUT, "sandbox": _optional(_one(SandboxSpec)), "roots": _optional(_texts()),
        "disabled": _flag, "era": _one_of(*ERAS)}

    def check(self) -> None:
        if bool(self.command) == bool(self.url):
            raise _Refused


def _version(value: Any) -> Any:
    return _text()(str(value) if isinstance(value, int | float) else value)


def _extends(value: Any) -> Any:
    return _texts()([value] if isinstance(value, str) else value)


_SECTION = _optional(_mapping())
_SWITCHABLE_SECTION = _optional(_either(_mapping(), _flag))


@dataclass(frozen=True, slots=True)
class PolicyFile(_Plain):
    version: str | None = None
    mode: str | None = None
    defaultAction: str | None = None
    defaultTimeoutMs: int | None = None
    rules: list[Rule] = field(default_factory=list)
    allowlist: Allowlist | None = None
    allowSampling: bool | None = None
    extends: list[str] | None = None
    notifications: Notifications | None = None
    servers: dict[str, ServerSpec] | None = None
    #: a path; an inline corp mapping is read by the models
    corp: str | None = None
    dlp: dict[str, Any] | bool | None = None
    honeytokens: dict[str, Any] | bool | None = None
    ledger: dict[str, Any] | None = None
    rbac: dict[str, Any] | None = None
    stages: dict[str, Any] | None = None
    telemetry: dict[str, Any] | bool | None = None
    auth: dict[str, Any] | None = None
    CHECKS: ClassVar[dict[str, Check]] = {
        "version": _optional(_version), "mode": _optional(_one_of(*MODES)),
        "defaultAction": _optional(_one_of(*DEFAULT_ACTIONS)), "defaultTimeoutMs": _TIMEOUT,
        "rules": _many(Rule), "allowlist": _optional(_one(Allowlist)), "allowSampling": _optional(_flag),
        "extends": _optional(_extends), "notifications": _optional(_one(Notifications)),
        "servers": _optional(_mapping(_one(ServerSpec))), "corp": _optional(_text()),
        "dlp": _SWITCHABLE_SECTION, "honeytokens": _SWITCHABLE_SECTION, "ledger": _SECTION, "rbac": _SECTION,
        "stages": _SECTION, "telemetry": _SWITCHABLE_SECTION, "auth": _SECTION}


def document(data: dict[str, Any]) -> Any:
    """`data` as a PolicyFile of this module, or None when the models must read it (see above)."""
    try:
        return PolicyFile.of(data)
    except _Refused:
        return None


def is_plain(value: object) -> bool:
    """Whether `value` was read by this module (so what is built from it should be too)."""
    return isinstance(value, _Plain)


__all__ = ["Allowlist", "Notifications", "PolicyFile", "Rule", "ServerSpec", "document", "is_plain"]
