"""Delivering webhook notifications off the call path, with retries and backoff.

`Notifier.publish(events)` is what a finished request costs: for each
webhook of the policy in force, pick the event it listens for and put it on
that destination's queue (`put_nowait`; a full queue drops and counts). One
worker per destination renders the payload (redaction included) and POSTs
it: connection errors, timeouts, 408, 429 and 5xx are retried after
`backoff * 2**n` seconds (429's Retry-After is honoured up to the cap), other
4xx give up at once; after `attempts` tries the notification is dropped and
counted as failed. Calls never wait for any of this.

Webhook URLs often hold a secret (Slack and Discord put the token in the
path), so logs and metrics name a destination by host and a short hash only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcpwall.notify._events import NotificationEvent, pick
from mcpwall.notify._formats import render

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("mcpwall.notify")

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def destination_name(url: str) -> str:
    """`host#hash8`: names a webhook without showing the secret parts of its URL."""
    try:
        host = urlsplit(url).hostname or "?"
    except ValueError:
        host = "?"
    return f"{host}#{hashlib.sha256(url.encode()).hexdigest()[:8]}"


@dataclass
class _Destination:
    name: str
    url: str
    fmt: str
    headers: dict[str, str]
    queue: asyncio.Queue[NotificationEvent]
    worker: asyncio.Task[None] | None = None
    stats: dict[str, Any] = field(default_factory=lambda: {"sent": 0, "failed": 0, "dropped": 0, "retried": 0,
                                                           "last_error": None})


@dataclass(frozen=True)
class SenderOptions:
    attempts: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    timeout_s: float = 5.0
    queue_size: int = 1000


class Notifier:
    """Webhook delivery for one gateway (`Components.notifier`)."""

    def __init__(self, options: SenderOptions | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.options = options or SenderOptions()
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._destinations: dict[tuple[str, str, str], _Destination] = {}
        self._closed = False

    # ------------------------------------------------------------------ the call path

    def publish(self, webhooks: Iterable[Any], events: list[NotificationEvent]) -> int:
        """Queue, for each webhook, the most specific event it listens for. Never blocks; returns queued."""
        if not events or self._closed:
            return 0
        queued = 0
        for webhook in webhooks:
            event = pick(events, list(webhook.events))
            if event is None:
                continue
            dest = self._destination(webhook)
            try:
                dest.queue.put_nowait(event)
                queued += 1
            except asyncio.QueueFull:
                dest.stats["dropped"] += 1
                log.warning("webhook %s: queue full, %s notification dropped", dest.name, event.event)
                continue
            if dest.worker is None or dest.worker.done():
                dest.worker = asyncio.ensure_future(self._work(dest))
        return queued

    def _destination(self, webhook: Any) -> _Destination:
        headers = dict(webhook.headers or {})
        key = (webhook.url, webhook.format, repr(sorted(headers.items())))
        dest = self._destinations.get(key)
        if dest is None:
            dest = _Destination(f"{webhook.format}:{destination_name(webhook.url)}", webhook.url, webhook.format, headers,
                                asyncio.Queue(self.options.queue_size))
            self._destinations[key] = dest
        return dest

    # ------------------------------------------------------------------ delivery

    def _http(self) -> httpx.AsyncClient:
        import httpx  # here, not at import: `simulate` checks stages.notify and sends nothing (issue 29)

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.options.timeout_s, trust_env=False, follow_redirects=False,
                                             transport=self._transport)
        return self._client

    async def _work(self, dest: _Destination) -> None:
        while True:
            event = await dest.queue.get()
            try:
                await self._deliver(dest, event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug in rendering must not stop the worker
                dest.stats["failed"] += 1
                dest.stats["last_error"] = f"{exc.__class__.__name__}: {exc}"
                log.exception("webhook %s: cannot send %s notification", dest.name, event.event)
            finally:
                dest.queue.task_done()

    async def _deliver(self, dest: _Destination, event: NotificationEvent) -> bool:
        import httpx

        body = render(dest.fmt, event)
        headers = {"content-type": "application/json", "user-agent": "mcpwall-webhook", **dest.headers}
        o = self.options
        for attempt in range(1, o.attempts + 1):
            wait: float | None = None
            try:
                response = await self._http().post(dest.url, content=body, headers=headers)
                if response.status_code < 300:
                    dest.stats["sent"] += 1
                    log.info("webhook %s: sent %s notification for %s/%s", dest.name, event.event, event.server,
                             event.tool)
                    return True
                problem = f"HTTP {response.status_code}"
                if response.status_code not in RETRY_STATUS:
                    dest.stats["failed"] += 1
                    dest.stats["last_error"] = problem
                    log.error("webhook %s: %s for %s notification; not retried", dest.name, problem, event.event)
                    return False
                wait = _retry_after(response.headers.get("retry-after"), o.max_backoff_s)
            except httpx.HTTPError as exc:
                problem = f"{exc.__class__.__name__}: {exc}"
            dest.stats["last_error"] = problem
            if attempt == o.attempts:
                break
            dest.stats["retried"] += 1
            delay = wait if wait is not None else min(o.max_backoff_s, o.backoff_s * 2 ** (attempt - 1))
            delay *= 1 + random.random() * 0.1  # jitter, not security
            log.warning("webhook %s: attempt %d/%d failed (%s); retrying in %.2f s", dest.name, attempt,
                        o.attempts, problem, delay)
            await asyncio.sleep(delay)
        dest.stats["failed"] += 1
        log.error("webhook %s: gave up on a %s notification after %d attempts (%s)", dest.name, event.event,
                  o.attempts, dest.stats["last_error"])
        return False

    # ------------------------------------------------------------------ lifecycle and status

    async def drain(self, timeout: float) -> None:
        """Wait (up to `timeout`) until every queued notification was delivered or given up."""
        waits = [d.queue.join() for d in self._destinations.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), timeout)

    async def close(self, grace_s: float = 2.0) -> None:
        """Stop taking notifications, give queued ones `grace_s` to leave, then stop."""
        self._closed = True
        await self.drain(grace_s)
        for dest in self._destinations.values():
            if dest.worker is not None:
                dest.worker.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await dest.worker
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def stats(self) -> dict[str, dict[str, Any]]:
        return {d.name: {**d.stats, "queued": d.queue.qsize(), "format": d.fmt}
                for d in self._destinations.values()}


def _retry_after(value: str | None, cap: float) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, min(cap, float(value)))
    except ValueError:
        return None


__all__ = ["RETRY_STATUS", "Notifier", "SenderOptions", "destination_name"]
