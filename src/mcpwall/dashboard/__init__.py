"""The dashboard: a small Starlette app over the ledger, the approval book and the policy.

    dashboard = create_app(GatewayConsole(gateway), auth)    # inside the gateway: DashboardService
    dashboard = create_app(HomeConsole(ledger, policy), auth)  # `mcpwall dashboard --home H`

Pages under `/ui/` (overview with cards, policy and ledger status, chart and
live stream; calls; approvals; per-session timeline; simulate; servers with
their tools and pin changes to accept), the JSON API under `/api/` and
Server-Sent Events at `/api/events`. See docs/DASHBOARD.md.
"""

from __future__ import annotations

from mcpwall.dashboard._api import Api
from mcpwall.dashboard._app import STATIC, Dashboard, create_app
from mcpwall.dashboard._auth import COOKIE, CSRF_HEADER, Guard, Principal, Refusal, SessionStore
from mcpwall.dashboard._console import Console, GatewayConsole, HomeConsole, pin_rows, pin_summary
from mcpwall.dashboard._feed import Feed, MemoryRows, row_from_context
from mcpwall.dashboard._service import DashboardService, dashboard_service, register
from mcpwall.dashboard._stats import Stats, percentile
from mcpwall.dashboard._views import CSP, PAGES

__all__ = [
    "COOKIE",
    "CSP",
    "CSRF_HEADER",
    "PAGES",
    "STATIC",
    "Api",
    "Console",
    "Dashboard",
    "DashboardService",
    "Feed",
    "GatewayConsole",
    "Guard",
    "HomeConsole",
    "MemoryRows",
    "Principal",
    "Refusal",
    "SessionStore",
    "Stats",
    "create_app",
    "dashboard_service",
    "percentile",
    "pin_rows",
    "pin_summary",
    "register",
    "row_from_context",
]
