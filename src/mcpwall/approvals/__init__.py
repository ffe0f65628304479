"""Human approval for `ask` decisions (SPEC 3): hold the call until a person answers.

    approvals = approvals_from(config)    # built before the stages (Components.approvals)
    approvals.bind(gateway)               # by the gateway it belongs to
    verdict = await approvals.hold(ctx, decision)   # the policy, chain and poisoning stages
    approvals.approve("3f9a1c0b2d4e", via="api", similar_minutes=15)
    approvals.deny("3f9a1c0b2d4e", via="cli", reason="not on a Friday")

The records live in the gateway's state store (`ApprovalBook`), so the HTTP
API, the dashboard (embedded or standalone), `mcpwall approve`/`deny` and
other gateway replicas all answer the same asks. See docs/DASHBOARD.md.
"""

from __future__ import annotations

from mcpwall.approvals._book import (
    GRANTS,
    MAX_SIMILAR_MINUTES,
    NAMESPACE,
    STATUSES,
    ApprovalBook,
    ApprovalError,
    ApprovalNotFound,
    CallView,
    call_hash,
    mask_secrets,
    safe_arguments,
)
from mcpwall.approvals._elicit import Elicitor, elicitation_params, parse_answer
from mcpwall.approvals._service import POLL_S, Approvals, Listener, call_view

__all__ = [
    "GRANTS",
    "MAX_SIMILAR_MINUTES",
    "NAMESPACE",
    "POLL_S",
    "STATUSES",
    "ApprovalBook",
    "ApprovalError",
    "ApprovalNotFound",
    "Approvals",
    "CallView",
    "Elicitor",
    "Listener",
    "call_hash",
    "call_view",
    "elicitation_params",
    "mask_secrets",
    "parse_answer",
    "safe_arguments",
]
