"""Durable gateway state that must survive a restart: honeytokens, tool pins, approvals.

Stages keep such state in `gateway.state`, a `StateStore`. The ledger
implements it on its own database (so the state shares the ledger's
durability and backend); without a ledger an in-memory store is used.
Values are JSON-serialisable dicts; namespaces keep stages apart.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from mcpwall.protocol import json_text


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
    """A StateStore that lives as long as the process.

    Values are kept as JSON text, as a database would keep them: every read
    is a fresh copy (callers may mutate it), and orjson makes that several
    times cheaper than `copy.deepcopy` on the per-call paths that read state.
    """

    def __init__(self) -> None:
        self._data: dict[str, dict[str, str]] = {}

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        raw = self._data.get(namespace, {}).get(key)
        return orjson.loads(raw) if raw is not None else None

    def all_state(self, namespace: str) -> dict[str, dict[str, Any]]:
        return {k: orjson.loads(v) for k, v in self._data.get(namespace, {}).items()}

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        self._data.setdefault(namespace, {})[key] = json_text(value, default=str)

    def delete_state(self, namespace: str, key: str) -> None:
        self._data.get(namespace, {}).pop(key, None)


__all__ = ["MemoryStateStore", "StateStore"]
