"""Refusals at the door: the ledger row of a tools/call refused before the pipeline.

No token, an unknown server or session, a bad envelope, a message over the
size bound: SPEC 5 still wants a row for every tools/call the gateway sees,
and these are the ones an attacker probing the gateway sends. They pass only
the pipeline's completion (ledger, metrics, dashboard), never a stage's
checks or an upstream, and one peer's rows are bounded per minute.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.pipeline import Session
from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    TOO_LARGE,
    ErrorCode,
    Message,
    ProtocolError,
    error,
    oversized_id,
    request_id,
)
from mcpwall.protocol.naming import split
from mcpwall.proxy._budget import MinuteBudget
from mcpwall.stages import RequestContext

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

log = logging.getLogger("mcpwall.gateway")

#: Calls refused at the door (no token, unknown server...) one peer may add to the ledger a minute.
DOOR_ROWS_PER_MINUTE = 120
#: In the edges of a message too long to parse: a tools/call (its method named there), and its tool.
_TOP_CALL = re.compile(rb'"method"\s*:\s*"tools/call"')
_CALL_NAME = re.compile(rb'"params"\s*:\s*\{\s*"name"\s*:\s*"([^"\\]{1,200})"')


class Refusals:
    """One gateway's refused-at-the-door calls (`Gateway.refused`, `refused_raw`, `refused_oversized`)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        #: calls refused at the door recorded per peer (see _door_budget)
        self._door = MinuteBudget(DOOR_ROWS_PER_MINUTE)
        self._door_warned = 0.0

    async def refused(self, msg: Any, code: int, message: str, *, session: Session | None = None,
                      server: str | None = None, **fields: Any) -> None:
        """Record the tools/call requests in `msg` (a message or a batch) that were refused before
        they could enter the pipeline: no token, an unknown server or session, a bad envelope.

        SPEC 5: every tools/call the gateway sees has its ledger row, and these are the ones an
        attacker probing the gateway sends. They pass only the pipeline's completion (ledger,
        metrics, dashboard), as `rejected`, never a stage's checks or an upstream. A server name
        that is not configured goes into the row's notes, not its server (nor a metrics label).
        """
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict) or m.get("method") != "tools/call":
                continue
            if session is None and not self._door_budget(str(fields.get("peer", ""))):
                continue
            params = m.get("params") if isinstance(m.get("params"), dict) else {}
            assert params is not None
            rid = request_id(m)
            name = params.get("name")
            target = name[:200] if isinstance(name, str) else ""
            where = server
            qualified = split(target) if where is None and (session is None or session.server is None) else None
            if qualified is not None:
                where, target = qualified
            ctx = RequestContext(self.gw, session or Session(kind="plain", **fields), m, "tools/call",
                                 rid if rid is not None else "", params,
                                 server=where if where in self.gw.servers else None, target=target)
            if where is not None and where not in self.gw.servers:
                ctx.notes["unknown_server"] = where[:200]
            ctx.outcome = "rejected"
            ctx.error_message = message
            ctx.response = error(rid, code, message)
            await self.gw.pipeline.complete(ctx)

    def _door_budget(self, peer: str) -> bool:
        """Whether one more call refused at the door may be recorded for `peer` this minute.

        Anyone who can reach the port can be refused: beyond DOOR_ROWS_PER_MINUTE a peer's refused
        calls are only counted (`/health` calls.unrecorded), so it cannot fill the ledger's disk.
        """
        if self._door.take(peer):
            return True
        now = time.monotonic()
        self.gw.calls["unrecorded"] += 1
        if now - self._door_warned > 10.0:
            self._door_warned = now
            log.warning("peer %s: over %d refused calls a minute; the rest are counted, not recorded",
                        peer or "(unknown)", DOOR_ROWS_PER_MINUTE)
        return False

    async def refused_raw(self, raw: bytes, exc: ProtocolError, *, session: Session | None = None,
                          server: str | None = None, **fields: Any) -> None:
        """`refused` for a body `parse` could not take (a batch...), when it holds a tools/call."""
        if len(raw) > MAX_MESSAGE_BYTES:
            await self.refused_oversized(raw[:256], raw[-256:], session=session, server=server, **fields)
            return
        if b"tools/call" not in raw:
            return
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        await self.refused(value, exc.code, exc.message, session=session, server=server, **fields)

    async def refused_oversized(self, head: bytes, tail: bytes, *, session: Session | None = None,
                                server: str | None = None, **fields: Any) -> Message:
        """The answer to a message over the size bound, of which only its edges were kept (-32600
        under its id when they tell it); a tools/call (its method named at either edge) gets its
        row, with its tool name when the edges tell it (`refused`)."""
        answer = error(oversized_id(head, tail), ErrorCode.INVALID_REQUEST, TOO_LARGE)
        if _TOP_CALL.search(head) or _TOP_CALL.search(tail):
            named = _CALL_NAME.search(head)
            params = {"name": named.group(1).decode("utf-8", "replace")} if named else {}
            stub = {"jsonrpc": "2.0", "id": answer["id"], "method": "tools/call", "params": params}
            await self.refused(stub, ErrorCode.INVALID_REQUEST, TOO_LARGE, session=session, server=server, **fields)
        return answer


__all__ = ["DOOR_ROWS_PER_MINUTE", "Refusals"]
