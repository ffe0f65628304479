"""The notify stage: the gateway's human side - webhooks, approvals and the dashboard.

- `bind` gives the gateway its approval service (`gateway.approvals`, which
  the policy stage's `ask` waits on), its webhook sender
  (`gateway.notifier`) and the dashboard app (`gateway.ui_app`, served by
  the HTTP frontend under `/ui` and `/api/`).
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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from mcpwall.approvals import Approvals
from mcpwall.notify import Notifier, SenderOptions, ask_event, events_for
from mcpwall.pipeline import RequestContext, Stage
from mcpwall.stages._kit import StageConfig, parse, stage_block
from mcpwall.stages.auth import AuthStage

if TYPE_CHECKING:
    from mcpwall.dashboard import Dashboard
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

    def __init__(self, config: NotifyConfig | None = None, approvals: ApprovalsConfig | None = None,
                 settings: Any = None) -> None:
        self.config = config or NotifyConfig()
        a = approvals or ApprovalsConfig()
        self.approvals = Approvals(via_elicitation=a.viaElicitation,
                                   progress_interval_s=a.progressIntervalMs / 1000) if a.enabled else None
        c = self.config
        self.notifier = Notifier(SenderOptions(attempts=c.attempts, backoff_s=c.backoffMs / 1000,
                                               max_backoff_s=c.maxBackoffMs / 1000, timeout_s=c.timeoutMs / 1000,
                                               queue_size=c.queueSize))
        self.settings = settings
        if self.approvals is not None:
            self.approvals.home = getattr(settings, "home", None)
        self.gateway: GatewayView | None = None
        self.dashboard: Dashboard | None = None
        self._seen_pins: set[str] = set()
        self._wanted_for: Any = None
        self._wanted_set: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ wiring

    def bind(self, gateway: GatewayView) -> None:
        self.gateway = gateway
        gateway.notifier = self.notifier
        if self.approvals is not None:
            self.approvals.bind(gateway)
            self.approvals.listeners.append(self._on_approval)
        if self.config.dashboard:
            from mcpwall.dashboard import GatewayConsole, create_app

            auth = gateway.pipeline.find("auth")
            if not isinstance(auth, AuthStage):
                auth = AuthStage(insecure_no_auth=True)
            self.dashboard = create_app(GatewayConsole(gateway), auth)
            gateway.ui_app = self.dashboard
            if self.approvals is not None:
                self.approvals.listeners.append(self.dashboard.feed.approval_changed)

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
        if self.dashboard is not None and ctx.method == "tools/call" and getattr(gateway, "ledger", None) is None:
            self.dashboard.feed.record(ctx)
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
        if self.dashboard is not None:
            await self.dashboard.close()
        await self.notifier.close()

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"webhooks": self.notifier.stats()}
        if self.approvals is not None:
            out["approvals"] = self.approvals.status()
        return out


def build(config: Mapping[str, Any], settings: Any = None) -> NotifyStage:
    """Always built: without webhooks it still carries the approvals and the dashboard."""
    notify = parse(NotifyConfig, stage_block(config, "notify"), "stages.notify")
    approvals = parse(ApprovalsConfig, stage_block(config, "approvals"), "stages.approvals")
    return NotifyStage(notify, approvals, settings)


__all__ = ["MAX_SEEN_PINS", "ApprovalsConfig", "NotifyConfig", "NotifyStage", "build"]
