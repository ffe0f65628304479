"""Streamable HTTP upstreams (MCP 2025-03-26 and later), over httpx.

Each request is its own POST; the answer is JSON or an SSE stream that may
carry notifications and server-to-client requests before the response. We
know which POST each message arrived on, so `on_message` gets the related
request id and the proxy can route a sampling request or a progress
notification to exactly the session that caused it. (The SDK's client
transport drops that association, which is why this one is ours.)

Resumption: when a POST's SSE stream ends before its response and the server
gave event ids, we reconnect with `GET` + `Last-Event-ID` after the server's
`retry` interval, as the spec describes. The standalone GET stream for
server-initiated messages is opened after `notifications/initialized` and
re-opened the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson

from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    ErrorCode,
    Message,
    RequestId,
    error,
    loads_from_server,
    unreadable_answer,
)
from mcpwall.protocol.modern import standard_headers
from mcpwall.transports._principal import current_principal, login_required
from mcpwall.transports._sse import events
from mcpwall.transports.base import OnClosed, OnMessage, TransportClosed, TransportError

log = logging.getLogger("mcpwall.upstream")

_MAX_RESUME_ATTEMPTS = 3
_DEFAULT_RETRY_MS = 1000


class StreamableHttpTransport:
    """One MCP session with a streamable-HTTP server."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, name: str = "",
                 timeout: float = 300.0, auth: Any = None) -> None:
        self.url = url
        #: the OAuth grants of this server (an httpx.Auth with `key_for(principal)`: mcpwall.oauth's
        #: UpstreamAuth): the token of each request's principal
        self.auth = auth
        #: upstream session ids of principals whose grant is not the one the handshake used (a server
        #: binds a session to the credential that opened it), and the handshake to open them with
        self._principal_sessions: dict[str, str] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._initialize: Message | None = None
        self.name = name
        self.description = f"streamable-http: {url}"
        self._headers = dict(headers or {})
        self._client: httpx.AsyncClient | None = None
        self._timeout = timeout
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._on_message: OnMessage | None = None
        self._on_closed: OnClosed | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._get_task: asyncio.Task[None] | None = None
        self._closed = False
        #: a tool's inputSchema by name (the upstream's catalog), for the `Mcp-Param-*` it designates
        self.schema_of: Callable[[str], Any] | None = None

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        self._on_message = on_message
        self._on_closed = on_closed
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=self._timeout),
                                         follow_redirects=False, auth=self.auth)

    def _request_headers(self, message: Message | None = None, session_id: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   **self._headers}
        if message is not None:
            # MCP 2026-07-28's standard headers mirror the body, whatever the server's revision.
            params = message.get("params")
            name = params.get("name") if message.get("method") == "tools/call" and isinstance(params, dict) else None
            schema = self.schema_of(name) if self.schema_of is not None and isinstance(name, str) else None
            headers.update(standard_headers(message, schema))
        if session_id or self.session_id:
            headers["Mcp-Session-Id"] = session_id or self.session_id  # type: ignore[assignment]
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def send(self, message: Message) -> None:
        if self._closed or self._client is None:
            raise TransportClosed(f"{self.name}: connection closed")
        if "method" in message and "id" in message:
            task = asyncio.create_task(self._post(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            await self._post(message)
            if message.get("method") == "notifications/initialized" and self._get_task is None:
                self._get_task = asyncio.create_task(self._get_stream())

    def _deliver(self, msg: Any, related: RequestId | None) -> None:
        if isinstance(msg, dict) and self._on_message is not None:
            try:
                self._on_message(msg, related)
            except Exception:
                log.exception("[%s] error handling an upstream message", self.name)

    def _fail(self, request_id: RequestId | None, message: str, status: int | None = None) -> None:
        if request_id is None:
            log.warning("[%s] %s", self.name, message)
            return
        data = {"server": self.name, "reason": "transport", **({"status": status} if status else {})}
        self._deliver(error(request_id, ErrorCode.UPSTREAM_ERROR, message, data), request_id)

    async def _post(self, message: Message) -> None:
        assert self._client is not None
        request_id = message.get("id") if "method" in message else None
        principal = current_principal()
        try:
            session_id = await self._session_for(principal, message)
            async with self._client.stream("POST", self.url, content=orjson.dumps(message),
                                           headers=self._request_headers(message, session_id)) as response:
                if message.get("method") == "initialize":
                    self._initialize = message
                    self.session_id = response.headers.get("mcp-session-id") or self.session_id
                if response.status_code == 202:
                    return
                if response.status_code == 401:
                    await response.aread()
                    self._fail(request_id, login_required(self.name, principal, "the server answered 401"), 401)
                    return
                if response.status_code == 404 and self.session_id:
                    self._fail(request_id, "upstream session expired", 404)
                    self._lost(TransportError("upstream session expired (HTTP 404)"))
                    return
                if response.status_code >= 400:
                    text = (await response.aread())[:500].decode("utf-8", "replace")
                    parsed = _json_error(text)
                    if parsed is not None and request_id is not None:
                        parsed["id"] = request_id
                        self._deliver(parsed, request_id)
                    else:
                        self._fail(request_id, f"upstream HTTP {response.status_code}: {text}",
                                   response.status_code)
                    return
                ctype = response.headers.get("content-type", "")
                if ctype.startswith("text/event-stream"):
                    await self._read_sse(response, request_id)
                else:
                    body = await response.aread()
                    if len(body) > MAX_MESSAGE_BYTES:
                        self._fail(request_id, "upstream response over the size bound")
                        return
                    if body.strip():
                        try:
                            self._deliver(loads_from_server(body), request_id)
                        except orjson.JSONDecodeError:
                            self._fail(request_id, "upstream sent invalid JSON")
        except TransportError as exc:  # mcpwall.oauth.LoginRequired among them
            self._fail(request_id, str(exc), 401 if "requires authorization" in str(exc) else None)
        except httpx.HTTPError as exc:
            self._fail(request_id, f"upstream request failed: {exc.__class__.__name__}: {exc}")

    async def _session_for(self, principal: str | None, message: Message) -> str | None:
        """The upstream session a principal's request goes on: the handshake's, unless the principal's
        grant is another one; then a session of its own, opened with the same handshake."""
        if self.auth is None or not self.auth.active() or not self.session_id or self._initialize is None \
                or principal is None or message.get("method") == "initialize":
            return None
        key = self.auth.key_for(principal)
        if key is None:
            raise TransportError(login_required(self.name, principal))
        if key == self.auth.key_for(None):
            return None
        lock = self._opening.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._principal_sessions:
                self._principal_sessions[key] = await self._open_session(key)
            return self._principal_sessions[key]

    async def _open_session(self, key: str) -> str:
        """initialize + notifications/initialized under the principal's grant; its answer is ours."""
        assert self._client is not None
        assert self._initialize is not None
        opening = {**self._initialize, "id": f"mcpwall-open-{len(self._principal_sessions) + 1}"}
        headers = self._request_headers(opening)
        headers.pop("Mcp-Session-Id", None)
        response = await self._client.post(self.url, content=orjson.dumps(opening), headers=headers)
        session: str | None = response.headers.get("mcp-session-id")
        if response.status_code >= 400 or not session:
            raise TransportError(f"{self.name}: opening an upstream session for principal {key!r} failed "
                                 f"(HTTP {response.status_code})")
        await self._client.post(self.url, content=orjson.dumps({"jsonrpc": "2.0",
                                                                "method": "notifications/initialized"}),
                                headers={**headers, "Mcp-Session-Id": session})
        return session

    async def _read_sse(self, response: httpx.Response, request_id: RequestId | None) -> None:
        last_id: str | None = None
        retry_ms = _DEFAULT_RETRY_MS
        answered = False
        try:
            async for ev in events(response.aiter_lines(), MAX_MESSAGE_BYTES):
                last_id = ev.id or last_id
                retry_ms = ev.retry or retry_ms
                if self._handle_event(ev.data, request_id):
                    answered = True
                    break  # the answer ends this request's stream for us
        except (httpx.HTTPError, ValueError) as exc:
            log.info("[%s] SSE stream for request %r ended: %s", self.name, request_id, exc)
        if not answered and request_id is not None:
            if last_id is not None:
                await self._resume(request_id, last_id, retry_ms)
            else:
                self._fail(request_id, "upstream closed the stream without a response")

    def _handle_event(self, data: str, request_id: RequestId | None) -> bool:
        """Deliver one SSE data payload; True if it answered `request_id`."""
        if not data.strip():
            return False  # priming event
        try:
            msg = loads_from_server(data)
        except orjson.JSONDecodeError as exc:
            answer = unreadable_answer(data.encode("utf-8", "surrogatepass"), exc, self.name)
            if answer is None or answer["id"] != request_id:
                log.warning("[%s] ignored a non-JSON SSE event", self.name)
                return False
            self._deliver(answer, request_id)
            return True
        self._deliver(msg, request_id)
        return isinstance(msg, dict) and "method" not in msg and msg.get("id") == request_id

    async def _resume(self, request_id: RequestId, last_id: str, retry_ms: int) -> None:
        assert self._client is not None
        for _ in range(_MAX_RESUME_ATTEMPTS):
            await asyncio.sleep(retry_ms / 1000)
            headers = {**self._request_headers(), "Last-Event-ID": last_id, "Accept": "text/event-stream"}
            headers.pop("Content-Type", None)
            try:
                async with self._client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        break
                    async for ev in events(response.aiter_lines(), MAX_MESSAGE_BYTES):
                        last_id = ev.id or last_id
                        retry_ms = ev.retry or retry_ms
                        if self._handle_event(ev.data, request_id):
                            # Answered: a server need not end a resumed stream, and holding
                            # it would keep one connection per call.
                            return
            except (httpx.HTTPError, ValueError, TransportError):
                pass
        self._fail(request_id, "upstream stream ended and could not be resumed")

    async def _get_stream(self) -> None:
        """The standalone stream of server-initiated messages."""
        assert self._client is not None
        last_id: str | None = None
        retry_ms = _DEFAULT_RETRY_MS
        failures = 0
        while not self._closed and failures < _MAX_RESUME_ATTEMPTS:
            headers = {**self._request_headers(), "Accept": "text/event-stream"}
            headers.pop("Content-Type", None)
            if last_id:
                headers["Last-Event-ID"] = last_id
            try:
                async with self._client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code == 405:
                        return  # the server offers no standalone stream
                    if response.status_code != 200:
                        failures += 1
                    else:
                        failures = 0
                        async for ev in events(response.aiter_lines(), MAX_MESSAGE_BYTES):
                            last_id = ev.id or last_id
                            retry_ms = ev.retry or retry_ms
                            self._handle_event(ev.data, None)
            except (httpx.HTTPError, ValueError, TransportError):
                failures += 1
            if not self._closed:
                await asyncio.sleep(retry_ms / 1000)

    def _lost(self, reason: BaseException) -> None:
        if not self._closed and self._on_closed is not None:
            self._closed = True
            self._on_closed(reason)

    async def close(self) -> None:
        self._closed = True
        tasks = [*self._tasks, *([self._get_task] if self._get_task else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._client is not None:
            if self.session_id:
                with contextlib.suppress(httpx.HTTPError, TransportError):
                    await self._client.delete(self.url, headers=self._request_headers(), timeout=2.0)
            for key, session in self._principal_sessions.items():
                with contextlib.suppress(httpx.HTTPError, TransportError):
                    await self._client.delete(self.url, headers=self._request_headers(session_id=session),
                                              timeout=2.0, extensions={"mcpwall_principal": key})
            await self._client.aclose()


def _json_error(body: str) -> dict[str, Any] | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return value
    return None


__all__ = ["StreamableHttpTransport"]
