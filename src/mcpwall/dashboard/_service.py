"""The dashboard inside a running gateway: a service the app builder adds (`mcpwall.proxy.SERVICES`).

Built after the gateway, since it shows the gateway (`GatewayConsole`), and
only when the notify stage is in the pipeline with `stages.notify.dashboard`
on (the default). It listens to the approval service for live updates, and
to every finished tools/call for its in-memory feed when no ledger records
them (`Components.call_listeners`). The HTTP frontend serves it under `/ui`
and `/api/` (`Gateway.ui_app`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpwall.dashboard._app import Dashboard, create_app
from mcpwall.dashboard._console import GatewayConsole
from mcpwall.stages import AuthStage

if TYPE_CHECKING:
    from mcpwall.proxy import Gateway


class DashboardService:
    """The gateway's dashboard app, opened and closed with the gateway."""

    name = "dashboard"

    def __init__(self, gateway: Gateway) -> None:
        auth = gateway.service("auth")
        self.app: Dashboard = create_app(GatewayConsole(gateway), auth if isinstance(auth, AuthStage)
                                         else AuthStage(insecure_no_auth=True))
        parts = gateway.components
        if parts.approvals is not None:
            parts.approvals.listeners.append(self.app.feed.approval_changed)
        if parts.ledger is None:
            parts.call_listeners.append(self.app.feed.record)  # the feed is the only record then

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await self.app.close()

    def status(self) -> dict[str, Any]:
        return {}


def dashboard_service(settings: Any, gateway: Gateway) -> DashboardService | None:
    """A `mcpwall.proxy.SERVICES` entry: the dashboard, when the notify stage runs with `dashboard: true`."""
    notify = gateway.pipeline.find("notify")
    config = getattr(notify, "config", None)
    if notify is None or not getattr(config, "dashboard", False):
        return None
    return DashboardService(gateway)


def register() -> None:
    """Add the dashboard to `mcpwall.proxy.SERVICES` (idempotent)."""
    from mcpwall.proxy import SERVICES

    if dashboard_service not in SERVICES:
        SERVICES.append(dashboard_service)


__all__ = ["DashboardService", "dashboard_service", "register"]
