"""What a server says to a client: one masked exit, and roots the gateway answers itself.

Every message an upstream originates leaves the gateway for a client through
`ServerMessages.send` (notifications and server-to-client requests, on a
request's SSE stream, a GET listen stream or stdout) or `ServerMessages.answer`
(the answer to a client's request). Both rebuild the JSON-RPC envelope from
its known members (a server's extra top-level keys are not relayed) and mask
secrets with the DLP stage, so no kind of server message (a log line,
progress, a resource update, a cancellation's reason, a sampling or
elicitation request, a list or an `initialize` answer) reaches a client's
model unread. Results of the methods the DLP stage scans itself (tools/call,
resources/read, ...) are masked there, with the ledger's notes and
`action: block`; `answer` masks every other method's.

Roots. A server asks `roots/list` to learn where it may work, and
server-filesystem replaces its allowed directories with the answer. An
upstream serves every session, so one client's answer would widen (or narrow)
the server for all of them: the gateway answers `roots/list` itself, from the
server's configured `roots` (an empty list when there are none), never relays
it to a client, and records each answer in the ledger (`protocol_events`,
method `roots/list`). A client's `notifications/roots/list_changed` is dropped
and recorded: nothing a client says changes a server's roots. A client's
`roots` capability is never declared upstream either (the gateway's own
`initialize`, and the capabilities a stateless-era request carries in its
`_meta`, declare roots only for a server with configured roots).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode, Message, RequestId, error, result
from mcpwall.proxy._budget import MinuteBudget
from mcpwall.stages import RequestContext
from mcpwall.stages.dlp import SCANNED

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway
    from mcpwall.proxy._requests import Pending
    from mcpwall.proxy._upstream import UpstreamServer

log = logging.getLogger("mcpwall.gateway")

Emit = Callable[[Message], Awaitable[None]]

#: Ledger rows about roots one upstream (or one client peer) may add a minute; the rest are counted.
ROWS_PER_MINUTE = 60
#: A client's notifications that may reach a (shared) server: progress of a request the server sent it,
#: and a task's status. Others (roots/list_changed, anything unknown) would let one client reconfigure
#: the server for every session.
CLIENT_NOTIFICATIONS = frozenset({"notifications/progress", "notifications/tasks/status"})
#: Where a request of the stateless revision (2026-07-28) carries its client's capabilities.
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
_DROPPED = ("a server's roots come from the gateway's configuration (the server's `roots`), "
            "never from a client; the client's roots/list_changed was not forwarded")


def root_uris(server: str, roots: list[str] | None) -> list[str]:
    """The `file://` URIs of a server's configured `roots` (absolute paths, `~/...`, or file URIs).

    Raises ConfigError for anything else: a relative path would be resolved by the server
    against its own working directory, and another scheme means nothing to a file server.
    """
    out: list[str] = []
    for root in roots or []:
        if "://" in root:
            parts = urlsplit(root)
            if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost") or not parts.path:
                raise ConfigError(f"server {server!r}: root {root!r} is not a file:// URI or an absolute path")
            path = Path(unquote(parts.path))
        else:
            path = Path(root).expanduser()
        if not path.is_absolute():
            raise ConfigError(f"server {server!r}: root {root!r} is not an absolute path")
        out.append(path.as_uri())
    return out


class ServerMessages:
    """The gateway's exit for server messages, and its answer to a server's `roots/list`."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.roots = {name: root_uris(name, s.spec.roots) for name, s in gateway.servers.items()}
        #: rows recorded: roots/list answers, client roots/list_changed dropped; and those only counted
        self.counts = {"roots_answered": 0, "roots_changes_dropped": 0, "unrecorded": 0}
        self._rows = MinuteBudget(ROWS_PER_MINUTE)

    # ------------------------------------------------------------------ masking

    def mask(self, session_id: str, msg: Message) -> Message:
        """A server's notification or request in a clean envelope, its secrets masked (DLP)."""
        out: Message = {"jsonrpc": "2.0"}
        if "id" in msg:
            out["id"] = msg["id"]
        out["method"] = msg["method"]
        if "params" in msg:
            out["params"] = msg["params"]
        pipeline = self.gateway.pipeline
        if "params" not in out or not pipeline.screens_server_messages:
            return out
        params = out["params"]
        if isinstance(params, dict):
            return dict(pipeline.server_message(session_id, out))
        # JSON-RPC allows positional params; they are masked all the same.
        masked = pipeline.server_message(session_id, {**out, "params": {"params": params}})
        return {**out, "params": masked["params"]["params"]}

    async def send(self, session_id: str, session: Session | None, emit: Emit | None, msg: Message, *,
                   rid: RequestId | None = None, params: dict[str, Any] | None = None) -> bool:
        """Deliver one server message to the session `session_id`: masked, then given the gateway's
        own `rid` (its id for a server's request to this session) or `params` members (a progress
        token restored to the client's, a request id mapped to the session's), on `emit` (the SSE
        stream of the request it belongs to) when that works, else outside any request
        (`Session.push`). Returns whether a channel took it."""
        if emit is None and (session is None or session.closed):
            return False
        out = self.mask(session_id, msg)
        if rid is not None:
            out["id"] = rid
        if params:
            base = out.get("params")
            out["params"] = {**(base if isinstance(base, dict) else {}), **params}
        if emit is not None:
            try:
                await emit(out)
                return True
            except Exception:
                pass
        return await session.push(out) if session is not None else False

    def answer(self, ctx: RequestContext, response: Message) -> Message:
        """The answer to a client's request in a clean envelope, masked when the DLP stage did not
        already read it (it scans tools/call, resources/read, prompts/get and completion results):
        lists, an `initialize` answer with the server's instructions, any method a single-server
        session forwards, and upstream errors."""
        key = "result" if "result" in response else "error"
        if key not in response:
            return error(response.get("id"), ErrorCode.UPSTREAM_ERROR, "the server answered with neither a result "
                         "nor an error", {"server": ctx.server, "reason": "invalid answer"})
        out: Message = {"jsonrpc": "2.0", "id": response.get("id"), key: response[key]}
        if ctx.method in SCANNED or "policed" in ctx.notes or not self.gateway.pipeline.screens_server_messages:
            return out
        masked = self.gateway.pipeline.server_message(ctx.session.id, {"method": ctx.method,
                                                                       "params": {"body": out[key]}})
        if masked["params"]["body"] is not out[key]:
            out[key] = masked["params"]["body"]
            ctx.notes.setdefault("dlp", {})["masked_answer"] = key
        return out

    # ------------------------------------------------------------------ roots

    def own_capabilities(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        """A client's request to `server` whose `_meta` declares the client's capabilities (as the
        stateless revision does on every request), with the gateway's declaration instead: the server's
        client is the gateway, and a client's `roots` (or sampling) must not reach it this way either."""
        meta = params["_meta"]
        return {**params, "_meta": {**meta, CLIENT_CAPABILITIES_META: self.gateway.upstream_capabilities(server)}}

    async def answer_roots(self, upstream: UpstreamServer, msg: Message, pending: Pending | None) -> None:
        """A server asked `roots/list`: answered with its configured roots, and recorded."""
        uris = self.roots.get(upstream.name, [])
        answer = result(msg["id"], {"roots": [{"uri": u} for u in uris]})
        await upstream.respond(answer)
        self.counts["roots_answered"] += 1
        log.info("[%s] roots/list answered by the gateway: %s", upstream.name, ", ".join(uris) or "(no roots)")
        # Which client's call the question came during (forensics; it is answered the same either way).
        owner = self.gateway.traffic.only_caller(upstream) if pending is None else None
        during = pending.session_id if pending is not None else owner[0].id if owner and owner[0] else None
        session = Session(kind="upstream", server=upstream.name, peer=f"upstream:{upstream.name}",
                          process_name=upstream.name)
        notes: dict[str, Any] = {"server_request": "answered by the gateway from the server's configured roots",
                                 "roots": uris}
        if during:
            notes["during_session"] = during
        await self._record(session, msg, "roots/list", answer, "ok", None, notes)

    async def client_roots_changed(self, session: Session, msg: Message) -> None:
        """A client said its roots changed: not forwarded (see the module docstring), recorded."""
        self.counts["roots_changes_dropped"] += 1
        log.info("session %s: notifications/roots/list_changed dropped (%s)", session.id[:8],
                 "roots come from the gateway's configuration")
        await self._record(session, msg, "notifications/roots/list_changed", None, "rejected", _DROPPED,
                           {"dropped": "not forwarded to any server"})

    async def _record(self, session: Session, msg: Message, method: str, answer: Message | None, outcome: str,
                      why: str | None, notes: dict[str, Any]) -> None:
        if not self._budget(session.peer or session.id):
            return
        params = msg.get("params")
        rid = msg.get("id")
        ctx = RequestContext(self.gateway, session, msg, method, rid if isinstance(rid, int | str) else "",
                             params if isinstance(params, dict) else {}, server=session.server)
        ctx.outcome = outcome
        ctx.error_message = why
        ctx.response = answer
        ctx.notes.update(notes)
        await self.gateway.pipeline.complete(ctx)

    def _budget(self, key: str) -> bool:
        """Whether one more roots row may be recorded for `key` this minute (a server asking
        `roots/list` in a loop, or a client repeating list_changed, must not fill the ledger)."""
        if self._rows.take(key):
            return True
        self.counts["unrecorded"] += 1
        return False


__all__ = ["CLIENT_CAPABILITIES_META", "CLIENT_NOTIFICATIONS", "ServerMessages", "root_uris"]
