"""`POST /{server}/explain`: a dry run of the policy with the full rule trace.

Body: a JSON-RPC `tools/call` message, or `{"tool": ..., "args": {...}}` (also
`name`/`arguments`, `description`, `method`, `client`, `agent`, `rate`: the
requests of the last minute, default 1). Nothing is sent upstream. The tool's
description comes from the server's catalog when the body does not give one;
the client and agent from the headers the plain route reads (`X-Mcpwall-Client`,
`X-Agent-Id`) when the body does not name them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcpwall.policy import Call, Context, evaluate, prepare
from mcpwall.proxy._gateway import Gateway


def explain(gateway: Gateway, server: str, body: Any, agent: str = "", client: str = "") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValueError("explain needs a JSON object")
    if "method" in body and isinstance(body.get("params"), dict):
        method = str(body["method"])
        params = body["params"]
        name = params.get("name") or params.get("uri") or ""
        args = params.get("arguments") if method != "resources/read" else params
    else:
        method = str(body.get("method", "tools/call"))
        name = body.get("tool") or body.get("name") or ""
        args = body.get("args", body.get("arguments", {}))
    if not isinstance(name, str) or not name:
        raise ValueError("explain needs a tool name ('tool' or params.name)")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError("arguments must be an object")
    description = body.get("description")
    upstream = gateway.servers.get(server)
    if description is None and upstream is not None:
        description = (upstream.catalog.tools.get(name) or {}).get("description", "")
    call = Call(method=method, name=name, arguments=args, server=server if server != "_" else "",
                description=str(description or ""), client=str(body.get("client", client)),
                agent=str(body.get("agent", agent)))
    rate = body.get("rate", 1)  # requests in the last minute, this one included (as `simulate --rate`)
    if not isinstance(rate, int) or isinstance(rate, bool) or rate < 0:
        raise ValueError("rate must be a non-negative integer")
    decision = evaluate(gateway.policy.current, prepare(call),
                        Context(now=datetime.now().astimezone(), requests_last_minute=rate), trace=True)
    return {"server": server, "tool": name, **decision.as_dict(with_trace=True)}


__all__ = ["explain"]
