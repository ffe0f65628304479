"""What a call's spans say: names and attributes after the MCP and GenAI semantic conventions.

Pure functions of a `RequestContext`, with no OpenTelemetry in them, so that
what a trace shows is read (and tested) beside the ledger's view of the same
call. The conventions (OpenTelemetry semconv for MCP, status Development):

- span name `{mcp.method.name} {target}`, the target being the tool's or the
  prompt's name when there is one (never a resource URI: too many names);
- `mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`,
  `mcp.session.id` (a streamable-HTTP session's `Mcp-Session-Id`; stdio and
  the plain route have none), `mcp.resource.uri`;
- `gen_ai.operation.name` `execute_tool` and `gen_ai.tool.name` for a
  `tools/call`, `gen_ai.prompt.name` for a `prompts/get`: the name the
  upstream server knows (without the `server__` prefix of `/mcp`);
- `error.type` and `rpc.response.status_code` (the JSON-RPC error code) when
  the answer is an error.

And ours, under `mcpwall.`: the upstream `mcpwall.server.name`, the ledger's
`mcpwall.decision` and `mcpwall.outcome`, `mcpwall.rule_ids`, the policy's
`mcpwall.policy.revision` and `mcpwall.policy.mode`, and
`mcpwall.enforced_action` where audit mode let through what enforce mode
would not have.
"""

from __future__ import annotations

from typing import Any

from mcpwall.metrics import decision_word, tool_error
from mcpwall.pipeline import RequestContext

#: methods whose `name` is a low-cardinality target for the span name
_NAMED = frozenset({"tools/call", "prompts/get"})
_RESOURCE = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
#: how each kind of session reaches the gateway (network.transport, network.protocol.name)
_TRANSPORT = {"http": ("tcp", "http"), "plain": ("tcp", "http"), "stdio": ("pipe", None)}


def target(ctx: RequestContext) -> str:
    """The tool or prompt a call names, as its server knows it ("" for other methods)."""
    if ctx.method not in _NAMED:
        return ""
    if ctx.target:
        return ctx.target
    name = ctx.params.get("name")
    return name if isinstance(name, str) else ""


def span_name(ctx: RequestContext) -> str:
    name = target(ctx)
    return f"{ctx.method} {name}" if name else ctx.method


def call_attributes(ctx: RequestContext) -> dict[str, Any]:
    """What is known of a call when it enters the pipeline (its route is resolved)."""
    session = ctx.session
    attrs: dict[str, Any] = {"mcp.method.name": ctx.method, "jsonrpc.request.id": str(ctx.id)}
    if session.kind == "http":
        attrs["mcp.session.id"] = session.id
    if session.protocol_version:
        attrs["mcp.protocol.version"] = session.protocol_version
    transport, protocol = _TRANSPORT.get(session.kind, (None, None))
    if transport is not None:
        attrs["network.transport"] = transport
    if protocol is not None:
        attrs["network.protocol.name"] = protocol
    name = target(ctx)
    if ctx.method == "tools/call":
        attrs["gen_ai.operation.name"] = "execute_tool"
        if name:
            attrs["gen_ai.tool.name"] = name
    elif ctx.method == "prompts/get" and name:
        attrs["gen_ai.prompt.name"] = name
    elif ctx.method in _RESOURCE and ctx.target:
        attrs["mcp.resource.uri"] = ctx.target
    if ctx.server is not None:
        attrs["mcpwall.server.name"] = ctx.server
    if session.client_name:
        attrs["mcpwall.client.name"] = session.client_name
    if session.agent:
        attrs["mcpwall.agent.id"] = session.agent
    return attrs


def rule_ids(ctx: RequestContext) -> tuple[str, ...]:
    """The rules that decided a finished call: the refusing stage's (policy, selfguard, schema...)
    when one refused it, else the policy decision's."""
    err = _error(ctx)
    data = err.get("data") if err is not None else None
    if ctx.outcome in ("deny", "ask-denied", "rejected") and isinstance(data, dict):
        given = data.get("rule_ids")
        if isinstance(given, list):
            return tuple(str(r) for r in given)
    return ctx.decision.rule_ids if ctx.decision is not None else ()


def end_attributes(ctx: RequestContext) -> tuple[dict[str, Any], str | None]:
    """What a call's span says once it ended, and the error text to set its status with (None: ok)."""
    attrs: dict[str, Any] = {"mcpwall.decision": decision_word(ctx), "mcpwall.outcome": ctx.outcome}
    rules = rule_ids(ctx)
    if rules:
        attrs["mcpwall.rule_ids"] = rules
    decision = ctx.decision
    if decision is not None:
        attrs["mcpwall.policy.revision"] = decision.revision
        attrs["mcpwall.policy.mode"] = decision.mode
        if decision.enforced_action != decision.action:
            attrs["mcpwall.enforced_action"] = decision.enforced_action
    err = _error(ctx)
    if err is not None:
        code = str(err.get("code"))
        attrs["error.type"] = attrs["rpc.response.status_code"] = code
        message = err.get("message")
        return attrs, message if isinstance(message, str) else code
    if ctx.response is None:
        attrs["error.type"] = ctx.outcome if ctx.outcome != "pending" else "failed"
        return attrs, ctx.error_message or attrs["error.type"]
    if tool_error(ctx.response):
        attrs["error.type"] = "tool_error"
        return attrs, "the tool reported an error"
    return attrs, None


def _error(ctx: RequestContext) -> dict[str, Any] | None:
    response = ctx.response
    err = response.get("error") if response is not None else None
    return err if isinstance(err, dict) else None


__all__ = ["call_attributes", "end_attributes", "rule_ids", "span_name", "target"]
