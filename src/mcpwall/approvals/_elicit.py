"""Asking the client's user to approve a held call through MCP elicitation.

Off by default: the client that made the call is the agent's own client, so
letting it answer means the agent's side may approve its own call. The
policy turns it on with `stages: {approvals: {viaElicitation: true}}`.

The gateway has no API for requests of its own to a client, so the request
goes out on the held call's stream (`ctx.emit`, else the session's channel)
under an id of ours, registered in `session.server_requests` with no
upstream (the gateway then drops the client's answer quietly), and the
answer is read off the gateway's message taps.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import RequestContext
from mcpwall.protocol import Message, notification

if TYPE_CHECKING:
    from mcpwall.pipeline import Session

APPROVE_FIELD = "approve"
REASON_FIELD = "reason"


def elicitation_params(record: dict[str, Any], protocol_version: str = "") -> dict[str, Any]:
    """A form elicitation: one yes/no field and an optional reason (`mode` from 2025-11-25 on)."""
    message = (f"mcpwall: the agent wants to call {record.get('server')}/{record.get('tool')} "
               f"(approval {record.get('id')}). Rules: {', '.join(record.get('rule_ids') or []) or '-'}. "
               f"Reasons: {'; '.join(record.get('reasons') or []) or '-'}. Allow this one call?")
    params: dict[str, Any] = {"message": message[:2000], "requestedSchema": {
        "type": "object",
        "properties": {
            APPROVE_FIELD: {"type": "boolean", "title": "Allow this call", "default": False},
            REASON_FIELD: {"type": "string", "title": "Reason (optional)"},
        },
        "required": [APPROVE_FIELD],
    }}
    if protocol_version >= "2025-11-25":
        params["mode"] = "form"
    return params


def parse_answer(msg: Message) -> tuple[bool, str | None] | None:
    """(approved, reason) from an elicitation result; None when the client could not ask."""
    if "error" in msg:
        return None
    result = msg.get("result")
    if not isinstance(result, dict):
        return None
    action = result.get("action")
    content = result.get("content") if isinstance(result.get("content"), dict) else {}
    assert content is not None
    reason = content.get(REASON_FIELD) if isinstance(content.get(REASON_FIELD), str) else None
    if action == "accept":
        return content.get(APPROVE_FIELD) is True, reason
    if action in ("decline", "cancel"):
        return False, reason or f"the user chose {action} in the client"
    return None


class Elicitor:
    """Sends elicitation requests and matches the client's answers (seen through a gateway tap)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], asyncio.Future[Message]] = {}

    def tap(self, session: Session, direction: str, msg: Message) -> None:
        if direction != "in" or "method" in msg or ("result" not in msg and "error" not in msg):
            return
        rid = msg.get("id")
        future = self._waiting.get((session.id, rid)) if isinstance(rid, str) else None
        if future is not None and not future.done():
            future.set_result(msg)

    async def ask(self, ctx: RequestContext, record: dict[str, Any]) -> tuple[bool, str | None] | None:
        from mcpwall.pipeline import ServerRequest

        session = ctx.session
        rid = f"mcpwall-approval-{secrets.token_hex(6)}"
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        key = (session.id, rid)
        self._waiting[key] = future
        # No upstream owns this request: the gateway will drop the answer after our tap saw it.
        session.server_requests[rid] = ServerRequest("", rid, "elicitation/create")
        request = {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": elicitation_params(record, session.protocol_version)}
        try:
            delivered = False
            if ctx.emit is not None:
                with contextlib.suppress(Exception):
                    await ctx.emit(request)
                    delivered = True
            if not delivered and not await session.push(request):
                return None
            return parse_answer(await future)
        except asyncio.CancelledError:
            # The hold ended (answered elsewhere, timed out): withdraw the question.
            withdraw = notification("notifications/cancelled",
                                    {"requestId": rid, "reason": "answered elsewhere or timed out"})
            with contextlib.suppress(Exception):
                if ctx.emit is not None:
                    await ctx.emit(withdraw)
                else:
                    await session.push(withdraw)
            raise
        finally:
            self._waiting.pop(key, None)
            session.server_requests.pop(rid, None)


__all__ = ["APPROVE_FIELD", "REASON_FIELD", "Elicitor", "elicitation_params", "parse_answer"]
