"""Durable gateway state that must survive a restart: honeytokens, tool pins, approvals.

Stages keep such state in `gateway.state`, a `StateStore`. The ledger
implements it on its own database (so the state shares the ledger's
durability and backend); without a ledger an in-memory store is used.
Values are JSON-serialisable dicts; namespaces keep stages apart.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol


class StateStore(Protocol):
    """Namespaced key -> JSON object storage."""

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The value stored under `key`, or None."""

    def all_state(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Every key and value in a namespace."""

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Create or replace `key`; durable when this returns (for durable stores)."""

    def delete_state(self, namespace: str, key: str) -> None:
        """Remove `key` if present."""


class MemoryStateStore:
    """A StateStore that lives as long as the process."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, dict[str, Any]]] = {}

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        value = self._data.get(namespace, {}).get(key)
        return copy.deepcopy(value) if value is not None else None

    def all_state(self, namespace: str) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self._data.get(namespace, {}))

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        self._data.setdefault(namespace, {})[key] = copy.deepcopy(value)

    def delete_state(self, namespace: str, key: str) -> None:
        self._data.get(namespace, {}).pop(key, None)


__all__ = ["MemoryStateStore", "StateStore"]
