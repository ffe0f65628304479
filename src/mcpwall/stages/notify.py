"""The notify stage: the gateway's human side - webhooks, approvals and the dashboard.

- The approval service (which the policy stage's `ask` waits on) and the
  webhook sender are built before the stages from this module's blocks
  (`approvals_from`, `notifier_from`: `stages/_components.py`); `bind`
  listens to the approvals. The dashboard (`stages.notify.dashboard`) is a
  service the app builder adds after the gateway (`mcpwall.dashboard`).
- `on_complete` (an observer, last in the pipeline) turns a finished request
  into webhook events (`mcpwall.notify.events_for`) and queues them; it
  never waits for a delivery. A gateway without a ledger also hands tool
  calls to the dashboard's in-memory feed here.
- An ask that starts waiting is announced at once (webhook event "ask",
  dashboard live update) through the approval service's listeners.

policy.yaml::

    notifications:
      webhooks:
        - {url: https://hooks.slack.com/services/..., format: slack, events: [deny, ask, honeytoken]}
    stages:
      notify: {enabled: true, attempts: 4, backoffMs: 500, maxBackoffMs: 30000, timeoutMs: 5000, queueSize: 1000,
               dashboard: true}
      approvals: {enabled: true, viaElicitation: false, progressIntervalMs: 1000}

`approvals.enabled: false` leaves no approval channel (every ask is denied);
`viaElicitation: true` also asks the calling client's user through MCP
elicitation - off by default, since that client is the agent's own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from mcpwall.approvals import Approvals
from mcpwall.notify import Notifier, SenderOptions, ask_event, events_for
from mcpwall.pipeline import RequestContext, Stage
from mcpwall.stages._components import Components
from mcpwall.stages._configs import StageConfig
from mcpwall.stages._kit import parse, stage_block

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView

log = logging.getLogger("mcpwall.notify")

_LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})
MAX_SEEN_PINS = 10_000


class NotifyConfig(StageConfig):
    #: false: no webhook is sent (approvals and the dashboard stay)
    enabled: bool = True
    attempts: int = Field(default=4, ge=1, le=20)
    backoffMs: int = Field(default=500, ge=1, le=600_000)
    maxBackoffMs: int = Field(default=30_000, ge=1, le=3_600_000)
    timeoutMs: int = Field(default=5000, ge=100, le=120_000)
    queueSize: int = Field(default=1000, ge=1, le=1_000_000)
    dashboard: bool = True


class ApprovalsConfig(StageConfig):
    enabled: bool = True
    viaElicitation: bool = False
    progressIntervalMs: int = Field(default=1000, ge=50, le=60_000)


class NotifyStage(Stage):
    name = "notify"

    def __init__(self, config: NotifyConfig | None = None, approvals: Approvals | None = None,
                 notifier: Notifier | None = None, settings: Any = None,
                 call_listeners: list[Callable[[RequestContext], None]] | None = None) -> None:
        self.config = config or NotifyConfig()
        #: the gateway's approval service and webhook sender (`build_components`: `approvals_from`,
        #: `notifier_from`); this stage announces asks through them and stops the sender
        self.approvals = approvals
        self.notifier = notifier if notifier is not None else _notifier(self.config)
        self.settings = settings
        self.gateway: GatewayView | None = None
        #: told of every finished tools/call when no ledger records it (the dashboard's feed)
        self.call_listeners = call_listeners if call_listeners is not None else []
        self._seen_pins: set[str] = set()
        self._wanted_for: Any = None
        self._wanted_set: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ wiring

    def bind(self, gateway: GatewayView) -> None:
        self.gateway = gateway
        if self.approvals is not None:
            self.approvals.listeners.append(self._on_approval)

    def _dashboard_url(self) -> str | None:
        settings = self.settings
        if settings is None or not getattr(settings, "port", None) or not self.config.dashboard:
            return None
        host = str(getattr(settings, "host", "127.0.0.1"))
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{settings.port}/ui/approvals"

    def _webhooks(self) -> list[Any]:
        gateway = self.gateway
        if gateway is None:
            return []
        return list(gateway.policy.current.source.notifications.webhooks or ())

    def _on_approval(self, kind: str, record: dict[str, Any]) -> None:
        if kind != "pending":
            return
        webhooks = self._webhooks()
        if webhooks and self.config.enabled:
            self.notifier.publish(webhooks, [ask_event(record, self._dashboard_url(), getattr(self.settings, "home", None))])

    # ------------------------------------------------------------------ hooks

    def on_complete(self, ctx: RequestContext) -> None:
        gateway = ctx.gateway
        if ctx.method == "tools/call" and self.call_listeners and gateway.ledger is None:
            for listener in self.call_listeners:
                listener(ctx)
        webhooks = self._webhooks()
        if ctx.method in _LISTS:
            self._forget_settled_pins(ctx)
        if not webhooks or not self.config.enabled:
            return
        if len(self._seen_pins) > MAX_SEEN_PINS:
            self._seen_pins.clear()
        wanted = self._wanted(webhooks)
        if wanted:
            self.notifier.publish(webhooks, events_for(ctx, self._seen_pins, wanted))

    def _wanted(self, webhooks: list[Any]) -> frozenset[str]:
        """Every event some webhook listens for, cached per policy object (a reload swaps it whole;
        holding the reference keeps a new policy from being mistaken for the old one)."""
        policy = self.gateway.policy.current if self.gateway is not None else None
        if policy is None or policy is not self._wanted_for:
            self._wanted_for = policy
            self._wanted_set = frozenset(e for w in webhooks for e in w.events)
        return self._wanted_set

    def _forget_settled_pins(self, ctx: RequestContext) -> None:
        """A pin no longer pending (accepted, or back as it was) may be announced again when it next changes."""
        pins = ctx.notes.get("pins")
        pending = pins.get("pending") if isinstance(pins, dict) else None
        still = {str(k) for k in pending} if isinstance(pending, list) else set()
        self._seen_pins &= still

    async def stop(self) -> None:
        await self.notifier.close()

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"webhooks": self.notifier.stats()}
        if self.approvals is not None:
            out["approvals"] = self.approvals.status()
        return out


def _notifier(c: NotifyConfig) -> Notifier:
    return Notifier(SenderOptions(attempts=c.attempts, backoff_s=c.backoffMs / 1000, max_backoff_s=c.maxBackoffMs / 1000,
                                  timeout_s=c.timeoutMs / 1000, queue_size=c.queueSize))


def notifier_from(config: Mapping[str, Any]) -> Notifier:
    """The webhook sender `stages.notify` describes (built even with webhooks off: asks use it)."""
    return _notifier(parse(NotifyConfig, stage_block(config, "notify"), "stages.notify"))


def approvals_from(config: Mapping[str, Any], settings: Any = None) -> Approvals | None:
    """The approval service `stages.approvals` describes; None when it is switched off."""
    a = parse(ApprovalsConfig, stage_block(config, "approvals"), "stages.approvals")
    if not a.enabled:
        return None
    approvals = Approvals(via_elicitation=a.viaElicitation, progress_interval_s=a.progressIntervalMs / 1000)
    approvals.home = getattr(settings, "home", None)
    return approvals


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> NotifyStage:
    """Always built: without webhooks it still carries the approvals and the dashboard."""
    notify = parse(NotifyConfig, stage_block(config, "notify"), "stages.notify")
    if components is None:
        return NotifyStage(notify, approvals_from(config, settings), None, settings)
    return NotifyStage(notify, components.approvals, components.notifier, settings, components.call_listeners)


__all__ = ["MAX_SEEN_PINS", "ApprovalsConfig", "NotifyConfig", "NotifyStage", "approvals_from", "build",
           "notifier_from"]
