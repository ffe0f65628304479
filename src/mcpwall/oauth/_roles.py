"""Roles from tokens, given to principals in the RBAC enforcer (`rbac:`) and taken back.

A principal's roles are those its latest valid token gives (`auth.issuers[].roles`). They are
added to the casbin enforcer as `g, principal, role` groupings, the ones a later token no longer
gives are removed, and the RBAC stage's decision cache is emptied when they change. When RBAC
loads its files again the enforcer is a new one: the grants start over from the next token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RoleGrants:
    """The roles given so far, per principal, in the current enforcer of the RBAC stage `rbac()` returns."""

    def __init__(self, rbac: Callable[[], Any]) -> None:
        self.rbac = rbac
        self._granted: dict[str, frozenset[str]] = {}
        self._enforcer: Any = None

    def give(self, principal: str, roles: frozenset[str]) -> None:
        stage = self.rbac()
        enforcer = getattr(stage, "enforcer", None)
        if enforcer is None:
            return  # no RBAC, or RBAC broken (it denies everything then)
        if enforcer is not self._enforcer:
            self._enforcer, self._granted = enforcer, {}
        before = self._granted.get(principal, frozenset())
        if before == roles:
            return
        for role in before - roles:
            enforcer.delete_role_for_user(principal, role)
        for role in roles - before:
            enforcer.add_role_for_user(principal, role)
        cache = getattr(stage, "_cache", None)
        if isinstance(cache, dict):
            cache.clear()  # decisions made before the roles changed
        self._granted[principal] = roles


__all__ = ["RoleGrants"]
