"""Legacy HTTP+SSE upstreams (MCP 2024-11-05): a GET event stream plus POSTs.

The stream's first `endpoint` event names the URL to POST messages to; every
response and server message then arrives on the stream. Responses are not tied
to a POST here, so `related` is always None.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from urllib.parse import urljoin

import httpx
import orjson

from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    ErrorCode,
    Message,
    error,
    loads_from_server,
    unreadable_answer,
)
from mcpwall.transports._sse import events
from mcpwall.transports.base import OnClosed, OnMessage, TransportClosed, TransportError

log = logging.getLogger("mcpwall.upstream")


class SseTransport:
    def __init__(self, url: str, headers: Mapping[str, str] | None = None, name: str = "",
                 timeout: float = 300.0, auth: httpx.Auth | None = None) -> None:
        #: OAuth (mcpwall.oauth): the owner's or the service grant only, as the one SSE stream is one
        #: session of one credential; a per-principal grant needs streamable HTTP
        self.auth = auth
        self.url = url
        self.name = name
        self.description = f"sse: {url}"
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._endpoint: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=self._timeout), auth=self.auth)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._stream(on_message, on_closed, ready))
        try:
            await asyncio.wait_for(ready, 30.0)
        except TimeoutError as exc:
            await self.close()
            raise TransportError(f"{self.url}: no endpoint event within 30 s") from exc

    async def _stream(self, on_message: OnMessage, on_closed: OnClosed, ready: asyncio.Future[None]) -> None:
        assert self._client is not None
        reason: BaseException | None = None
        try:
            async with self._client.stream("GET", self.url, headers={"Accept": "text/event-stream",
                                                                       **self._headers}) as response:
                if response.status_code == 401:
                    raise TransportError(f"upstream {self.name!r} requires authorization: run "
                                         f"`mcpwall login {self.name}` (the SSE endpoint answered 401)")
                if response.status_code != 200:
                    raise TransportError(f"SSE endpoint answered HTTP {response.status_code}")
                async for ev in events(response.aiter_lines(), MAX_MESSAGE_BYTES):
                    if ev.event == "endpoint":
                        self._endpoint = urljoin(self.url, ev.data.strip())
                        if not ready.done():
                            ready.set_result(None)
                    elif ev.event == "message" and ev.data.strip():
                        try:
                            msg = loads_from_server(ev.data)
                        except orjson.JSONDecodeError as exc:
                            log.warning("[%s] ignored a non-JSON SSE event", self.name)
                            answer = unreadable_answer(ev.data.encode("utf-8", "surrogatepass"), exc, self.name)
                            if answer is not None:
                                on_message(answer, None)
                            continue
                        if isinstance(msg, dict):
                            on_message(msg, None)
            reason = TransportError("SSE stream ended")
        except (httpx.HTTPError, ValueError, TransportError) as exc:  # LoginRequired is a TransportError
            reason = exc if isinstance(exc, TransportError) else TransportError(f"SSE stream failed: {exc}")
        finally:
            if not ready.done():
                ready.set_exception(reason or TransportError("SSE stream ended"))
            if not self._closed:
                self._closed = True
                on_closed(reason)

    async def send(self, message: Message) -> None:
        if self._closed or self._client is None or self._endpoint is None:
            raise TransportClosed(f"{self.name}: connection closed")
        try:
            response = await self._client.post(self._endpoint, content=orjson.dumps(message),
                                               headers={"Content-Type": "application/json", **self._headers},
                                               extensions={"mcpwall_principal": None})
        except httpx.HTTPError as exc:
            raise TransportClosed(f"{self.name}: POST failed: {exc}") from exc
        if response.status_code >= 400:
            log.warning("[%s] POST answered HTTP %s", self.name, response.status_code)
            if "id" in message and "method" in message:
                raise TransportError(f"upstream answered HTTP {response.status_code}")

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._client is not None:
            await self._client.aclose()


class HttpJsonRpcTransport:
    """Plain HTTP JSON-RPC: one POST per message, the answer in the body."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, name: str = "",
                 timeout: float = 300.0) -> None:
        self.url = url
        self.name = name
        self.description = f"http: {url}"
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._on_message: OnMessage | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        self._on_message = on_message
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=self._timeout))

    async def send(self, message: Message) -> None:
        if self._client is None:
            raise TransportClosed(f"{self.name}: connection closed")
        task = asyncio.create_task(self._post(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, message: Message) -> None:
        assert self._client is not None
        assert self._on_message is not None
        rid = message.get("id") if "method" in message else None
        try:
            response = await self._client.post(self.url, content=orjson.dumps(message),
                                               headers={"Content-Type": "application/json", **self._headers})
            if response.status_code == 202 or not response.content.strip():
                return
            body = loads_from_server(response.content)
        except (httpx.HTTPError, orjson.JSONDecodeError) as exc:
            if rid is not None:
                self._on_message(error(rid, ErrorCode.UPSTREAM_ERROR, f"upstream request failed: {exc}",
                                       {"server": self.name, "reason": "transport"}), rid)
            return
        if isinstance(body, dict):
            self._on_message(body, rid)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()


__all__ = ["HttpJsonRpcTransport", "SseTransport"]
