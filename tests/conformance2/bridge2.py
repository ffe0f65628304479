"""The test bridge (tests/conformance/bridge.py) for both protocol eras.

Usage: bridge2.py [--spares N] PORT COMMAND [ARGS...]

A handshake-era client gets what bridge.py gives it: every `initialize`
(without the 2026-07-28 envelope) launches COMMAND afresh as that client's session. A 2026-07-28 request has no
`initialize` and no session: it is one POST, so all of them share one child,
launched on the first and opened with `server/discover`, as a desktop client's
one stdio server would be. Their
ids are renamed on the way in (the suite's scenarios all count from 1) and
back on the way out. The answer is JSON with the HTTP status the 2026-07-28
transport gives its JSON-RPC error code (400, 404; the SDK's table), or an
SSE stream when notifications came before the response. A
`subscriptions/listen` is an SSE stream from the start: each notification the
child tags with that request's `subscriptionId` (renamed back) is sent as it
comes, until the child answers the request or the HTTP client goes, when the
child is sent `notifications/cancelled` for it. Nothing else is
rewritten; what the HTTP transport alone can check (headers against the body,
Host and Origin) the stdio command never sees, which is why the bridge's
control path runs the reference server through it with no mcpwall.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

from tests.conformance.bridge import Bridge, ChildSession, Receive, Send, _event, main, read_body

_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def _subscription(message: dict[str, Any]) -> Any:
    params = message.get("params") if "method" in message else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None


class ModernChild(ChildSession):
    """The shared 2026-07-28 child: a notification tagged with a listen stream's subscription id goes to that
    stream, any other one to the newest request that is not a listen stream (bridge.py: the newest request)."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self.listens: set[str] = set()

    def _route(self, message: dict[str, Any]) -> None:
        tagged = _subscription(message)
        if tagged in self.waiting:
            self.waiting[tagged].put_nowait(message)
            return
        if "method" in message and self.listens:
            others = [queue for key, queue in self.waiting.items() if key not in self.listens]
            if others:
                others[-1].put_nowait(message)
            return
        super()._route(message)


class DualEraBridge(Bridge):
    """bridge.py's sessions for the handshake era, one shared child for sessionless 2026-07-28 requests."""

    def __init__(self, argv: list[str], spares: int = 0) -> None:
        super().__init__(argv, spares)
        self._modern: ModernChild | None = None
        self._modern_lock = asyncio.Lock()
        self._ids = itertools.count(1)

    async def _modern_child(self) -> ModernChild:
        async with self._modern_lock:
            if self._modern is None or (self._modern.proc is not None and self._modern.proc.returncode is not None):
                self._modern = ModernChild(self.argv)
                await self._modern.start()
                await self._discover(self._modern)
            return self._modern

    @staticmethod
    async def _discover(child: ChildSession) -> None:
        """`server/discover` first, as a 2026-07-28 client over stdio starts: the connection is then of that era,
        and a later request without the envelope is refused as one (rather than taken for a handshake client's)."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        child.waiting["bridge-discover"] = queue
        await child.write({"jsonrpc": "2.0", "id": "bridge-discover", "method": "server/discover", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "bridge2", "version": "1"}}}})
        try:
            await asyncio.wait_for(queue.get(), 60)
        finally:
            child.waiting.pop("bridge-discover", None)

    async def _post(self, receive: Receive, send: Send, session: ChildSession | None) -> None:
        body = await read_body(receive)
        message = json.loads(body)
        handshake = message.get("method") == "initialize" and not _enveloped(message)
        if session is not None or handshake or "id" not in message:
            await super()._post(_replay(body), send, session)
            return
        if message.get("method") == "subscriptions/listen":
            await self._listen(message, receive, send)
            return
        await self._post_modern(message, send)

    async def _listen(self, message: dict[str, Any], receive: Receive, send: Send) -> None:
        """A listen stream: SSE from the start, each frame as it comes, its subscription id the client's."""
        child = await self._modern_child()
        theirs, ours = message["id"], f"bridge-{next(self._ids)}"
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        child.waiting[ours] = queue
        child.listens.add(ours)
        child.streams += 1

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watcher = asyncio.create_task(gone())
        streaming = False
        try:
            await child.write({**message, "id": ours})
            while True:
                getter = asyncio.create_task(queue.get())
                await asyncio.wait({getter, watcher}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    with contextlib.suppress(OSError, AssertionError):
                        await child.write({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                           "params": {"requestId": ours, "reason": "the HTTP client went"}})
                    return
                out = getter.result()
                if out is None:
                    out = {"jsonrpc": "2.0", "id": ours, "error": {"code": -32603, "message": "the stdio server exited"}}
                final = out.get("id") == ours and "method" not in out
                if final:
                    out = {**out, "id": theirs}
                    if not streaming:  # refused at once (-32601 from a server without it): as any answer
                        await _json_reply(send, out)
                        return
                elif _subscription(out) == ours:
                    params = out["params"]
                    out = {**out, "params": {**params, "_meta": {**params["_meta"], SUBSCRIPTION_ID: theirs}}}
                if not streaming:
                    await send({"type": "http.response.start", "status": 200, "headers": _SSE})
                    streaming = True
                await send({"type": "http.response.body", "body": _event(out), "more_body": True})
                if final:
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            child.streams -= 1
            child.listens.discard(ours)
            child.waiting.pop(ours, None)

    async def _post_modern(self, message: dict[str, Any], send: Send) -> None:
        child = await self._modern_child()
        theirs, ours = message["id"], f"bridge-{next(self._ids)}"
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        child.waiting[ours] = queue
        child.streams += 1
        before: list[dict[str, Any]] = []
        try:
            await child.write({**message, "id": ours})
            while (out := await queue.get()) is not None:
                if out.get("id") == ours and "method" not in out:
                    out = {**out, "id": theirs}
                    break
                before.append(out)
        finally:
            child.streams -= 1
            child.waiting.pop(ours, None)
        if out is None:
            out = {"jsonrpc": "2.0", "id": theirs, "error": {"code": -32603, "message": "the stdio server exited"}}
        if before:
            await send({"type": "http.response.start", "status": 200, "headers": _SSE})
            for item in [*before, out]:
                await send({"type": "http.response.body", "body": _event(item), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await _json_reply(send, out)


async def _json_reply(send: Send, out: dict[str, Any]) -> None:
    """One JSON answer, with the HTTP status the 2026-07-28 transport gives its error code."""
    code = out.get("error", {}).get("code") if isinstance(out.get("error"), dict) else None
    status = ERROR_CODE_HTTP_STATUS.get(code, 200) if isinstance(code, int) else 200
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(out).encode()})


def _enveloped(message: dict[str, Any]) -> bool:
    """Whether a request carries the 2026-07-28 envelope: then even an `initialize` is a modern client's
    (which the server refuses as removed), not a handshake that would open a session."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


def _replay(body: bytes) -> Receive:
    """A receive() that yields the body already read, so bridge.py's POST handling can read it again."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


if __name__ == "__main__":
    main(sys.argv[1:], DualEraBridge)
