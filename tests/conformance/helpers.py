"""Shared pieces of the conformance runs: paths, the gateway's policy, the suite's pinned version."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: @modelcontextprotocol/conformance, pinned in tests/conformance/package.json (0.1.10: later
#: releases need Node 22, this project's machines have Node 20).
SUITE_VERSION = "0.1.10"
SUITE_BIN = HERE / "node_modules" / ".bin" / "conformance"
PYTHON = sys.executable
REFERENCE_SERVER = HERE / "reference_server.py"
BRIDGE = HERE / "bridge.py"
CLIENT_DRIVER = HERE / "client_driver.py"
MCPWALL = str(Path(sys.executable).parent / "mcpwall")


def gateway_policy() -> str:
    """The policy mcpwall ships (`mcpwall init`'s default template) switched to audit mode.

    Every rule and stage still evaluates and records; audit mode only keeps the
    default-deny from refusing the suite's test tools. Sampling is allowed, as shipped.
    """
    from mcpwall.policy import template_text

    text = template_text("default")
    if "\nmode: enforce\n" not in text or "\nallowSampling: true\n" not in text:
        raise RuntimeError("the shipped default policy changed: revisit tests/conformance/helpers.py")
    return text.replace("\nmode: enforce\n", "\nmode: audit\n", 1)
