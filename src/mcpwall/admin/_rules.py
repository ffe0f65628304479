"""Rules added and removed at run time (the admin API), on top of policy.yaml.

A live rule is validated with the same model as a rule in the file, placed
first among the profile's rules (origin `<admin-api>`), and the policy is
recompiled and swapped whole, so the next decision sees it. Deny still beats
allow and a corp deny still beats everything: a live rule adds to the
policy, it does not bypass the engine's precedence.

Live rules are kept in memory and re-applied whenever the file reloads;
they end with the gateway process. policy.yaml stays the one durable
configuration: to keep a rule, write it there.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from mcpwall.errors import ConfigError, PolicyError
from mcpwall.policy import CompiledPolicy, Rule, compile_policy
from mcpwall.policy._loader import Origin, PlacedRule

if TYPE_CHECKING:
    from mcpwall.proxy import PolicyStore

log = logging.getLogger("mcpwall.admin")

ORIGIN = "<admin-api>"


class RuleConflict(ConfigError):
    """The rule id exists already, or names no live rule."""


class LiveRules:
    """The live rules of one gateway and the overlay that keeps them in force."""

    def __init__(self, store: PolicyStore) -> None:
        self.store = store
        self.rules: dict[str, tuple[Rule, float]] = {}
        self._applied: CompiledPolicy | None = None
        self._base: CompiledPolicy = store.current
        self._lock = threading.Lock()
        store.listeners.append(self._on_policy)

    def add(self, data: Any) -> dict[str, Any]:
        """Validate and apply one rule; returns what was added and the new revision."""
        if not isinstance(data, dict):
            raise ConfigError("a rule is a JSON object")
        try:
            rule = Rule.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "rule"
            raise ConfigError(f"invalid rule: {where}: {first['msg']}") from exc
        with self._lock:
            existing = {p.rule.id for p in (*self._base.source.rules, *self._base.source.corp_rules)}
            if rule.id in existing or rule.id in self.rules:
                raise RuleConflict(f"a rule with id {rule.id!r} exists already")
            self.rules[rule.id] = (rule, time.time())
            try:
                self._apply()
            except PolicyError:
                del self.rules[rule.id]
                raise
        log.warning("live rule added through the admin API: %s (%s)", rule.id, rule.action)
        return {"added": rule.model_dump(exclude_none=True), "revision": self.store.current.revision}

    def remove(self, rule_id: str) -> dict[str, Any]:
        with self._lock:
            if rule_id not in self.rules:
                origin = "policy.yaml" if any(p.rule.id == rule_id for p in self._base.source.rules) else None
                hint = f"; it comes from {origin}: edit the file" if origin else ""
                raise RuleConflict(f"no live rule with id {rule_id!r}{hint}")
            del self.rules[rule_id]
            self._apply()
        log.warning("live rule removed through the admin API: %s", rule_id)
        return {"removed": rule_id, "revision": self.store.current.revision}

    def describe(self) -> list[dict[str, Any]]:
        return [{**rule.model_dump(exclude_none=True), "origin": ORIGIN, "added_at": at}
                for rule, at in self.rules.values()]

    def _apply(self) -> None:
        base = self._base
        placed = tuple(PlacedRule(rule, Origin(ORIGIN, None)) for rule, _ in self.rules.values())
        resolved = dataclasses.replace(base.source, rules=(*placed, *base.source.rules))
        compiled = compile_policy(resolved) if placed else base
        self._applied = compiled
        self.store.set(compiled)

    def _on_policy(self, compiled: CompiledPolicy) -> None:
        """After a file reload the live rules go on top of the new file."""
        if compiled is self._applied:
            return
        self._base = compiled
        if self.rules:
            try:
                self._apply()
            except PolicyError as exc:
                log.error("live rules no longer compile against the reloaded policy; dropped: %s", exc)
                self.rules.clear()
                self._applied = None


__all__ = ["ORIGIN", "LiveRules", "RuleConflict"]
