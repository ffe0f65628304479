"""The tools/calls an upstream may still be running although the gateway stopped waiting for them.

A call the client cancelled or that timed out is not over on the server: a stalled Node event loop
may run it long after (issue 22). Until the server answers it or restarts, a change of the policy
waits for it (`stages/selfguard`, `pipeline/_policystore`): `UpstreamServer.unanswered` remembers
such calls, `given_up` adds one, `still_running` names the first that may still run.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpwall.protocol import RequestId
from mcpwall.proxy._requests import Pending

if TYPE_CHECKING:
    from mcpwall.proxy._upstream import UpstreamServer

#: An HTTP upstream may never answer a call it was told to cancel: after its timeout and this margin it
#: is presumed ended (a stdio one runs until it answers or exits; issue 22, the policy reload hold).
UNANSWERED_MARGIN_S = 60.0
#: Calls given up on but not answered that are remembered one by one; beyond, the server as a whole.
MAX_UNANSWERED = 1024


def given_up(upstream: UpstreamServer, uid: RequestId, entry: Pending, params: dict[str, Any] | None) -> None:
    """Remember a tools/call the gateway stopped waiting for (the client cancelled it, it timed out),
    unless its tool is read-only."""
    name = params.get("name") if isinstance(params, dict) else None
    tool = upstream.catalog.tools.get(name) if isinstance(name, str) else None
    annotations = tool.get("annotations") if isinstance(tool, dict) else None
    if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
        return  # annotations are pinned: a read-only tool cannot write a policy file
    deadline = time.monotonic() + entry.timeout + UNANSWERED_MARGIN_S if upstream.spec.url else None
    if len(upstream.unanswered) >= MAX_UNANSWERED:
        upstream.unanswered.pop(next(iter(upstream.unanswered)))
        uid, deadline = "(more)", None  # never forgotten: one that is may still run
    upstream.unanswered[uid] = (upstream._generation, deadline, f"{upstream.name}/{name}")


def still_running(upstream: UpstreamServer) -> str | None:
    """A tools/call the server may still be running although the gateway no longer waits for it:
    not answered, the server not restarted since, and (HTTP) not past its timeout and margin."""
    if not upstream.unanswered:
        return None
    now = time.monotonic()
    for uid, (generation, deadline, label) in list(upstream.unanswered.items()):
        if generation != upstream._generation or (deadline is not None and now > deadline):
            del upstream.unanswered[uid]
            continue
        return f"{label} (id {uid}, given up on but not answered by the server)"
    return None


__all__ = ["MAX_UNANSWERED", "UNANSWERED_MARGIN_S", "given_up", "still_running"]
