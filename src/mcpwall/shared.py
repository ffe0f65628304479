"""State shared by several gateway replicas, in Redis (SPEC 7).

One gateway keeps its rate windows in memory and its durable state (pins,
honeytokens, approvals) in its ledger. Replicas behind one load balancer
must agree on both, or each enforces the whole rate limit on its own and a
pin accepted on one is unknown to the next. With a Redis URL (`--state
redis://HOST:PORT/DB`, or `$MCPWALL_STATE_URL`, the place for a URL with a
password: a command line is readable by every user):

- `RedisStateStore` is the gateway's `StateStore`: a hash per namespace,
  values as JSON text (`<prefix>:state:<namespace>`).
- `SharedRate` counts requests per client in one-second keys
  (`<prefix>:rate:<client>:<unix second>`, expiring after 61 s); a request
  adds one and reads the last 60 in one round trip.

Redis going away does not stop the gateway: the rate limit falls back to
the replica's own window (logged, counted in `/health`), and state reads and
writes raise `StateUnavailable`, so the stage that needed them fails closed.
After a failure Redis is tried again only after `RETRY_S`.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import urlsplit

import orjson

from mcpwall.errors import ConfigError, InternalError
from mcpwall.protocol import json_text

log = logging.getLogger("mcpwall.shared")

STATE_URL_ENV = "MCPWALL_STATE_URL"
PREFIX = "mcpwall"
#: Redis round trips give up after this long, and after a failure Redis is left alone for
#: RETRY_S: a stalled Redis costs one timeout every few seconds, not one per call (the state
#: store's calls block the event loop while they wait).
TIMEOUT_S = 0.5
RETRY_S = 5.0


class StateUnavailable(InternalError, RuntimeError):
    """The shared state store cannot be reached."""


def state_url(flag: str | None) -> str | None:
    """The Redis URL from `--state`, else `$MCPWALL_STATE_URL`; a password only from the environment."""
    url: str | None
    if flag:
        if urlsplit(flag).password:
            raise ConfigError(f"--state: a URL with a password is readable by every user on the command line; "
                              f"put it in ${STATE_URL_ENV} instead")
        url = flag
    else:
        url = os.environ.get(STATE_URL_ENV, "").strip() or None
    if url is not None and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
        raise ConfigError(f"shared state URL {_safe(url)!r}: use redis://HOST:PORT/DB, rediss://... or unix://PATH")
    return url


def _safe(url: str) -> str:
    parts = urlsplit(url)
    if not parts.password:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


class RedisStateStore:
    """The `StateStore` of replicas that share a Redis."""

    def __init__(self, url: str, prefix: str = PREFIX) -> None:
        import redis

        self.url = _safe(url)
        self._prefix = prefix
        self._redis = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        self._error = redis.RedisError
        self._retry_at = 0.0
        self._last_error = ""

    def _key(self, namespace: str) -> str:
        return f"{self._prefix}:state:{namespace}"

    def _do(self, op: str, *args: Any) -> Any:
        if time.monotonic() < self._retry_at:
            raise StateUnavailable(f"shared state at {self.url} unavailable: {self._last_error}")
        try:
            return getattr(self._redis, op)(*args)
        except self._error as exc:
            self._retry_at, self._last_error = time.monotonic() + RETRY_S, str(exc)
            raise StateUnavailable(f"shared state at {self.url} unavailable: {exc}") from exc

    def get_state(self, namespace: str, key: str) -> dict[str, Any] | None:
        raw = self._do("hget", self._key(namespace), key)
        return orjson.loads(raw) if raw is not None else None

    def all_state(self, namespace: str) -> dict[str, dict[str, Any]]:
        raw = self._do("hgetall", self._key(namespace))
        return {k.decode(): orjson.loads(v) for k, v in raw.items()}

    def put_state(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        self._do("hset", self._key(namespace), key, json_text(value, default=str))

    def delete_state(self, namespace: str, key: str) -> None:
        self._do("hdel", self._key(namespace), key)

    def ping(self) -> bool:
        try:
            return bool(self._redis.ping())
        except self._error:
            return False


class SharedRate:
    """Requests per client over the last minute, counted across replicas."""

    def __init__(self, url: str, prefix: str = PREFIX, clock: Any = time.time) -> None:
        from redis import RedisError
        from redis import asyncio as aioredis

        self.url = _safe(url)
        self._prefix = prefix
        self._clock = clock
        self._redis = aioredis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        self._error = RedisError
        self.errors = 0
        self._last_complaint = 0.0
        self._retry_at = 0.0

    def _keys(self, client: str, now: int) -> list[str]:
        return [f"{self._prefix}:rate:{client}:{s}" for s in range(now - 59, now + 1)]

    async def hit(self, client: str) -> tuple[int, int] | None:
        """(requests in the last minute including this one, the second it was counted in);
        None when Redis cannot be reached (the caller counts locally instead)."""
        if time.monotonic() < self._retry_at:
            return None
        now = int(self._clock())
        keys = self._keys(client, now)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.incr(keys[-1])
                pipe.expire(keys[-1], 61)
                pipe.mget(keys)
                _, _, counts = await pipe.execute()
        except (self._error, OSError) as exc:
            self._unavailable(exc)
            return None
        return sum(int(c) for c in counts if c is not None), now

    async def undo(self, client: str, second: int) -> None:
        """Forget one hit: a refused request does not use up the window."""
        try:
            await self._redis.decr(f"{self._prefix}:rate:{client}:{second}")
        except (self._error, OSError) as exc:
            self._unavailable(exc)

    def _unavailable(self, exc: BaseException) -> None:
        self.errors += 1
        now = time.monotonic()
        self._retry_at = now + RETRY_S
        if now - self._last_complaint >= 10.0:
            self._last_complaint = now
            log.error("shared rate limit: Redis at %s unavailable (%s); counting on this replica only", self.url,
                      exc)


__all__ = ["RETRY_S", "STATE_URL_ENV", "RedisStateStore", "SharedRate", "StateUnavailable", "state_url"]
