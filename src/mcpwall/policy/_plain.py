"""Policy files read without pydantic, for a one-shot command (`simulate`, issue 29 item 5).

Importing pydantic and building the models of `_model.py` costs about 90 ms of CPU, most of a
`mcpwall simulate` of one call, which scripts and parity harnesses start thousands of times.
`document(data)` reads a parsed YAML mapping into frozen objects with the models' names,
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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

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


#: the default of a field that has none (the model requires it)
REQUIRED: Any = object()


class _Plain:
    """What the policy's code asks of a model: its fields as attributes, `model_dump`, `model_copy`.

    Not a dataclass: building the twelve as frozen dataclasses took 6 ms, a twentieth of a simulate. The
    objects are frozen all the same, compare by their fields and list them in the model's order."""

    #: (name, default, check of a given value) of each field, in the model's order; a default that is
    #: a type (list, dict) is called for each object, as the model's `default_factory`
    FIELDS: ClassVar[tuple[tuple[str, Any, Check], ...]] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable lists inside, as in the models

    def __init__(self, **given: Any) -> None:
        for name, default, _ in self.FIELDS:
            value = given.pop(name, default)
            if value is REQUIRED:
                raise TypeError(f"{type(self).__name__} needs {name!r}")
            object.__setattr__(self, name, value() if isinstance(value, type) else value)
        if given:
            raise TypeError(f"{type(self).__name__} has no field {sorted(given)[0]!r}")

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any: ...

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name, _, _ in self.FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n, _, _ in self.FIELDS)})"

    @classmethod
    def of(cls, data: Any) -> Any:
        """An object from a parsed mapping; raises _Refused unless the model would take it as it is."""
        if type(data) is not dict:
            raise _Refused
        given = {}
        for name, default, check in cls.FIELDS:
            if name in data:
                given[name] = check(data[name])
            elif default is REQUIRED:
                raise _Refused  # a required field left out
        if len(given) != len(data):
            raise _Refused  # an unknown key
        made = cls(**given)
        made.check()
        return made

    def check(self) -> None:
        """The model's validators over the whole object; raises _Refused."""

    def model_dump(self, *, exclude_none: bool = False) -> dict[str, Any]:
        out = {}
        for name, _, _ in self.FIELDS:
            value = getattr(self, name)
            if value is not None or not exclude_none:
                out[name] = _dump(value, exclude_none)
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        return type(self)(**{**{name: getattr(self, name) for name, _, _ in self.FIELDS}, **(update or {})})


# The literals of `_model.py` (a test keeps them equal).
TARGETS = ("command", "file", "network", "env", "process", "tool", "server", "resource", "prompt", "argName",
           "argValue", "response", "runnable", "secrets_out", "sinks", "touches.files", "touches.writes", "touches.programs",
           "touches.hosts", "touches.env", "injected")
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


class ArgConstraint(_Plain):
    FIELDS = (("argName", REQUIRED, _text(1)), ("constraint", REQUIRED, _one_of(*CONSTRAINT_KINDS)),
              ("values", REQUIRED, _texts(1, non_empty=True)))


class TimeWindow(_Plain):
    FIELDS = (("days", None, _optional(_texts(each=_day))), ("startHour", None, _HOUR), ("endHour", None, _HOUR),
              ("timezone", None, _optional(_text())))


class ContextCondition(_Plain):
    FIELDS = (("clientIn", None, _optional(_texts())), ("agentIn", None, _optional(_texts())),
              ("maxRequestsPerMinute", None, _optional(_whole(1))))


class Compliance(_Plain):
    FIELDS = (("framework", REQUIRED, _one_of(*FRAMEWORKS)), ("controls", REQUIRED, _texts(1, non_empty=True)),
              ("remediation", None, _optional(_text())))


class Rewrite(_Plain):
    FIELDS = (("arguments", None, _optional(_mapping())), ("result", None, _optional(_text())))


_NAMES = _optional(_texts())


class Rule(_Plain):
    FIELDS = (
        ("id", REQUIRED, _text(1)), ("description", "", _text()), ("target", None, _optional(_one_of(*TARGETS))),
        ("match", "pattern", _one_of(*MATCH_TYPES)), ("values", list, _texts(non_empty=True)),
        ("action", REQUIRED, _one_of(*RULE_ACTIONS)), ("argConstraints", None, _optional(_many(ArgConstraint))),
        ("timeWindow", None, _optional(_one(TimeWindow))),
        ("contextCondition", None, _optional(_one(ContextCondition))), ("timeoutMs", None, _TIMEOUT),
        ("compliance", None, _optional(_many(Compliance))), ("servers", None, _NAMES), ("tools", None, _NAMES),
        ("methods", None, _NAMES), ("clients", None, _NAMES), ("agents", None, _NAMES),
        ("rewrite", None, _optional(_one(Rewrite))), ("hook", None, _optional(_text())), ("owasp", None, _NAMES),
        ("enabled", True, _flag))

    def check(self) -> None:
        if self.values and self.target is None:
            raise _Refused
        if self.action == "rewrite" and self.rewrite is None:
            raise _Refused
        if self.action in ("preprocess", "postprocess") and not self.hook:
            raise _Refused


class Allowlist(_Plain):
    FIELDS = (("tools", list, _texts()), ("paths", list, _texts()), ("hosts", list, _texts()),
              ("envVars", list, _texts()))


class Webhook(_Plain):
    FIELDS = (("url", REQUIRED, _text(1)), ("events", REQUIRED, _texts(each=_one_of(*WEBHOOK_EVENTS))),
              ("format", "json", _one_of(*WEBHOOK_FORMATS)), ("headers", None, _optional(_mapping(_text()))))


class Notifications(_Plain):
    FIELDS = (("webhooks", None, _optional(_many(Webhook))),)


class SandboxSpec(_Plain):
    FIELDS = (("read", list, _texts()), ("write", list, _texts()), ("network", False, _flag))


class ServerSpec(_Plain):
    FIELDS = (
        ("command", None, _optional(_text())), ("args", list, _texts()), ("env", dict, _mapping(_text())),
        ("cwd", None, _optional(_text())), ("url", None, _optional(_text())),
        ("transport", None, _optional(_one_of(*TRANSPORTS))), ("headers", dict, _mapping(_text())),
        ("timeoutMs", None, _TIMEOUT), ("sandbox", None, _optional(_one(SandboxSpec))),
        ("roots", None, _optional(_texts())), ("disabled", False, _flag), ("era", "auto", _one_of(*ERAS)))

    def check(self) -> None:
        if bool(self.command) == bool(self.url):
            raise _Refused


def _version(value: Any) -> Any:
    return _text()(str(value) if isinstance(value, int | float) else value)


def _extends(value: Any) -> Any:
    return _texts()([value] if isinstance(value, str) else value)


_SECTION = _optional(_mapping())
_SWITCHABLE_SECTION = _optional(_either(_mapping(), _flag))


class PolicyFile(_Plain):
    FIELDS = (
        ("version", None, _optional(_version)), ("mode", None, _optional(_one_of(*MODES))),
        ("defaultAction", None, _optional(_one_of(*DEFAULT_ACTIONS))), ("defaultTimeoutMs", None, _TIMEOUT),
        ("rules", list, _many(Rule)), ("allowlist", None, _optional(_one(Allowlist))),
        ("allowSampling", None, _optional(_flag)), ("extends", None, _optional(_extends)),
        ("notifications", None, _optional(_one(Notifications))),
        ("servers", None, _optional(_mapping(_one(ServerSpec)))),
        ("corp", None, _optional(_text())),  # a path: an inline corp mapping is read by the models
        ("dlp", None, _SWITCHABLE_SECTION), ("honeytokens", None, _SWITCHABLE_SECTION), ("ledger", None, _SECTION),
        ("rbac", None, _SECTION), ("stages", None, _SECTION), ("telemetry", None, _SWITCHABLE_SECTION),
        ("auth", None, _SECTION))


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
