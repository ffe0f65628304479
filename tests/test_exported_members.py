"""The public surface of each package is its `__all__`, and every name in it exists.

Regression guard in the manner of httpx's tests/test_exported_members.py.
"""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["mcpwall", "mcpwall.errors", "mcpwall.policy", "mcpwall.cli", "mcpwall.discovery", "mcpwall.proxy",
            "mcpwall.stages", "mcpwall.protocol", "mcpwall.transports", "mcpwall.relay", "mcpwall.builtin",
            "mcpwall.admin", "mcpwall.isolation", "mcpwall.sandbox", "mcpwall.ledger", "mcpwall.security.poisoning",
            "mcpwall.approvals", "mcpwall.notify", "mcpwall.dashboard", "mcpwall.metrics",
            "mcpwall.stages.notify", "mcpwall.stages.metrics", "mcpwall.telemetry", "mcpwall.oauth"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    for member in exported:
        assert hasattr(module, member), f"{name}.{member} is listed but missing"
    public = {n for n, v in vars(module).items()
              if not n.startswith("_") and getattr(v, "__module__", name).startswith(name)
              and not isinstance(v, type(importlib))}
    assert public <= exported | {"annotations", "TYPE_CHECKING"}, f"{name} exposes unlisted names: {public - exported}"
