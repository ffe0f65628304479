"""`mcpwall mcp`: the gateway's own controls as typed MCP tools (stdio).

An agent the user trusts with administration (not the agents the gateway
guards) gets: status, servers, timeline, simulate, policy get, rule
add/remove (live), approvals list/approve/deny, verify-audit and pins. Each
tool is one call to the gateway's authenticated HTTP API (`_client.py`);
the answer is the gateway's JSON, returned raw in the text content so that
`json.loads` on it always works. Failures are tool errors carrying
`{"error": ..., "status": ...}`, with the token scrubbed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from mcpwall import __version__
from mcpwall.admin._client import AdminCallError, GatewayClient

Action = Literal["allow", "deny", "block", "warn", "redact", "ask"]
Target = Literal["command", "file", "network", "env", "process", "tool", "server", "resource", "prompt",
                 "argName", "argValue", "response"]
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _ok(value: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(value, ensure_ascii=False))])


def _fail(exc: AdminCallError) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps({"error": str(exc),
                                                                             "status": exc.status}))],
                          is_error=True)


async def _run(call: Callable[[], Awaitable[Any]]) -> CallToolResult:
    try:
        return _ok(await call())
    except AdminCallError as exc:
        return _fail(exc)


def create_server(client: GatewayClient) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "mcpwall-admin", version=__version__,
        instructions="Controls of an mcpwall gateway: status, ledger timeline, policy simulation and live "
                     "rules, approvals, audit verification and tool pins. Results are JSON.")

    @server.tool(name="mcpwall_status", description="Gateway health: servers, sessions, policy revision, stages.",
                 annotations=_READ, structured_output=False)
    async def status() -> CallToolResult:
        return await _run(client.status)

    @server.tool(name="mcpwall_servers", description="Upstream servers: state, transport, tools, risk, circuit.",
                 annotations=_READ, structured_output=False)
    async def servers() -> CallToolResult:
        return await _run(client.servers)

    @server.tool(name="mcpwall_timeline",
                 description="Ledger rows, newest first. Filters take shell globs; decision is a comma list "
                             "(allow,deny,...); since/until take ISO times or 10m/2h/7d; pass next_cursor "
                             "back as cursor for the next page.",
                 annotations=_READ, structured_output=False)
    async def timeline(server: str | None = None, tool: str | None = None, decision: str | None = None,
                       process: str | None = None, session: str | None = None, since: str | None = None,
                       until: str | None = None, cursor: str | None = None, limit: int = 50) -> CallToolResult:
        return await _run(lambda: client.timeline(server=server, tool=tool, decision=decision, process=process,
                                                  session=session, since=since, until=until, cursor=cursor,
                                                  limit=limit))

    @server.tool(name="mcpwall_simulate",
                 description="Dry-run the policy for a tool call (nothing is sent upstream); returns the "
                             "decision, reasons, rule ids and the rule trace.",
                 annotations=_READ, structured_output=False)
    async def simulate(tool: str, server: str | None = None, arguments: dict[str, Any] | None = None,
                       description: str | None = None, client_name: str | None = None,
                       agent: str | None = None) -> CallToolResult:
        body: dict[str, Any] = {"tool": tool, "args": arguments or {}}
        for key, value in (("description", description), ("client", client_name), ("agent", agent)):
            if value is not None:
                body[key] = value
        return await _run(lambda: client.simulate(server or "_", body))

    @server.tool(name="mcpwall_policy_get", description="The policy in force: rules, live rules, revision, mode.",
                 annotations=_READ, structured_output=False)
    async def policy_get() -> CallToolResult:
        return await _run(client.policy)

    @server.tool(name="mcpwall_rule_add",
                 description="Add a rule to the running gateway at once (kept until the gateway restarts; "
                             "policy.yaml is not changed). Deny still beats allow.",
                 annotations=_WRITE, structured_output=False)
    async def rule_add(id: str, action: Action, description: str = "", tools: list[str] | None = None,
                       servers: list[str] | None = None, methods: list[str] | None = None,
                       target: Target | None = None, match: Literal["exact", "pattern", "contains"] = "pattern",
                       values: list[str] | None = None, agents: list[str] | None = None,
                       clients: list[str] | None = None,
                       arg_constraints: list[dict[str, Any]] | None = None) -> CallToolResult:
        rule: dict[str, Any] = {"id": id, "action": action, "description": description, "match": match}
        for key, value in (("tools", tools), ("servers", servers), ("methods", methods), ("target", target),
                           ("values", values), ("agents", agents), ("clients", clients),
                           ("argConstraints", arg_constraints)):
            if value is not None:
                rule[key] = value
        return await _run(lambda: client.add_rule(rule))

    @server.tool(name="mcpwall_rule_remove", description="Remove a rule added with mcpwall_rule_add.",
                 annotations=_WRITE, structured_output=False)
    async def rule_remove(id: str) -> CallToolResult:
        return await _run(lambda: client.remove_rule(id))

    @server.tool(name="mcpwall_approvals_list", description="Calls held by an `ask` rule, waiting for a person.",
                 annotations=_READ, structured_output=False)
    async def approvals_list() -> CallToolResult:
        return await _run(client.approvals)

    @server.tool(name="mcpwall_approve",
                 description="Release one held call (bound to its exact arguments). similar_minutes also "
                             "allows identical calls for that many minutes.",
                 annotations=_WRITE, structured_output=False)
    async def approve(id: str, similar_minutes: int | None = None) -> CallToolResult:
        return await _run(lambda: client.approve(id, similar_minutes))

    @server.tool(name="mcpwall_deny", description="Refuse one held call.", annotations=_WRITE,
                 structured_output=False)
    async def deny(id: str, reason: str | None = None) -> CallToolResult:
        return await _run(lambda: client.deny(id, reason))

    @server.tool(name="mcpwall_verify_audit",
                 description="Check the ledger's HMAC chain: rows deleted, inserted or edited are reported.",
                 annotations=_READ, structured_output=False)
    async def verify_audit() -> CallToolResult:
        return await _run(client.verify_audit)

    @server.tool(name="mcpwall_pins", description="Tool-definition pins and their state (changed = rug pull).",
                 annotations=_READ, structured_output=False)
    async def pins(server: str | None = None) -> CallToolResult:
        return await _run(lambda: client.pins(server))

    return server


__all__ = ["create_server"]
