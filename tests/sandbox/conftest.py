"""Sandbox test fixtures.

Until `mcpwall.transports.transport_for` starts sandboxed servers under bubblewrap itself
(the change proposed with issue 10), the gateway tests here install that behaviour for the
duration of the test. Once the change is in, the fixture sees it and does nothing.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from mcpwall.policy import ServerSpec
from mcpwall.policy._model import SandboxSpec
from mcpwall.transports import transport_for

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _applies_sandbox() -> bool:
    spec = ServerSpec(command="true", sandbox=SandboxSpec())
    return type(transport_for("probe", spec)).__name__ == "SandboxedTransport"


@pytest.fixture
def sandboxing(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _applies_sandbox():
        from mcpwall.proxy import _upstream
        from mcpwall.sandbox import SandboxedTransport

        def with_sandbox(name: str, spec: ServerSpec, wrapper: list[str] | None = None) -> Any:
            if spec.command and spec.sandbox is not None:
                return SandboxedTransport(name, spec, wrapper or [])
            return transport_for(name, spec, wrapper)

        monkeypatch.setattr(_upstream, "transport_for", with_sandbox)
