"""The parts the stages share, built once, in order, before the stages.

The app builder (`mcpwall.proxy.build`) calls `build_components` with the
policy's sections and the gateway's settings, then hands the result to every
stage's `build(config, settings, components)` and to the `Gateway`, which
reads the durable state, the taps, the tool filters and the catalog
listeners from it. Nothing assigns these onto the gateway: a stage that
provides one of them (the ledger, the approval service...) has its part
built here from its own policy block, by a function of its module.

Order: the ledger first (it is also the durable state when there is one,
unless `--state redis://` names a shared store), then the approval service
over that state, the webhook sender, the metrics registry, the honeytoken
registry and, when policy.yaml's `telemetry:` or the OTEL_* variables ask for
traces, the tracer (`mcpwall.telemetry`; otherwise never imported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpwall.security.honeytokens import Registry
from mcpwall.state import MemoryStateStore, StateStore

if TYPE_CHECKING:
    from mcpwall.approvals import Approvals
    from mcpwall.ledger import Ledger
    from mcpwall.metrics import GatewayMetrics
    from mcpwall.notify import Notifier
    from mcpwall.pipeline import RequestContext, Tap, ToolFilter, UpstreamView
    from mcpwall.telemetry._tracing import Tracing


@dataclass(eq=False)
class Components:
    """One gateway's shared parts. Built by `build_components`; tests may build one bare."""

    #: durable state of stages (pins, honeytokens, approvals): the ledger, a shared Redis, or memory.
    #: Replaceable until the gateway starts (a test's own store); read through, never cached.
    state: StateStore = field(default_factory=MemoryStateStore)
    ledger: Ledger | None = None
    approvals: Approvals | None = None
    notifier: Notifier | None = None
    metrics: GatewayMetrics | None = None
    honeytokens: Registry = field(default_factory=Registry)
    #: observers of every message in and out of every session (capture, elicited approvals)
    taps: list[Tap] = field(default_factory=list)
    #: filters on listed tools, prompts and resources (rbac, poisoning, pins)
    tool_filters: list[ToolFilter] = field(default_factory=list)
    #: told of every finished tools/call when no ledger records it (the dashboard's in-memory feed)
    call_listeners: list[Callable[[RequestContext], None]] = field(default_factory=list)
    #: called when an upstream's catalog changed (pins re-check the server's definitions)
    catalog_listeners: list[Callable[[UpstreamView], object]] = field(default_factory=list)
    #: the tracer when traces are on: the gateway then runs the traced pipeline (proxy/_traced.py)
    tracing: Tracing | None = None


def build_components(config: Mapping[str, Any], settings: Any = None,
                     state: StateStore | None = None) -> Components:
    """The parts the policy's sections ask for; `state` is a shared store that takes precedence."""
    from mcpwall.stages.audit import ledger_from
    from mcpwall.stages.metrics import metrics_from
    from mcpwall.stages.notify import approvals_from, notifier_from
    from mcpwall.telemetry import tracing_from

    ledger = ledger_from(config, settings)
    store: StateStore = state if state is not None else ledger if ledger is not None else MemoryStateStore()
    return Components(state=store, ledger=ledger, approvals=approvals_from(config, settings),
                      notifier=notifier_from(config), metrics=metrics_from(config),
                      tracing=tracing_from(config.get("telemetry")))


__all__ = ["Components", "build_components"]
