"""Per-client rate limit: a sliding one-minute window in one-second buckets.

The client is who the gateway authenticated (`Session.principal`: a named
token's identity, or the gateway token) plus its peer address (an IP; a
framed-relay process by pid). Names a client gives itself (X-Agent-Id,
X-Mcpwall-Client, clientInfo) and new sessions do not open new windows, or
renaming would lift the limit: agents that need windows of their own get
named tokens (`<home>/run/tokens/<identity>.token`). The count also feeds the
policy's `contextCondition.maxRequestsPerMinute`.
Default: 6,000 requests a minute per client (mcp-seatbelt's 100 blocks any
real agent session); 0 disables the limit. Replicas given a Redis URL count
together (`mcpwall.shared.SharedRate`), falling back to their own window
while Redis is away.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.shared import SharedRate
from mcpwall.stages._components import Components

DEFAULT_PER_MINUTE = 6000


class _Window:
    __slots__ = ("buckets", "second", "total")

    def __init__(self, now: int) -> None:
        self.buckets = [0] * 60
        self.second = now
        self.total = 0

    def hit(self, now: int) -> int:
        gap = now - self.second
        if gap >= 60:
            self.buckets = [0] * 60
            self.total = 0
        else:
            for s in range(self.second + 1, now + 1):
                slot = s % 60
                self.total -= self.buckets[slot]
                self.buckets[slot] = 0
        self.second = max(self.second, now)
        self.buckets[now % 60] += 1
        self.total += 1
        return self.total

    def undo(self) -> None:
        """Forget the last hit: a refused request does not use up the window."""
        self.buckets[self.second % 60] -= 1
        self.total -= 1


class RateLimitStage(Stage):
    name = "ratelimit"

    def __init__(self, per_minute: int = DEFAULT_PER_MINUTE, clock: Callable[[], float] = time.monotonic,
                 shared: SharedRate | None = None) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._windows: dict[str, _Window] = {}
        self.limited = 0
        #: replicas sharing a Redis count together (mcpwall.shared); None: this process alone
        self.shared = shared

    def key(self, ctx: RequestContext) -> str:
        s = ctx.session
        return f"{s.principal}@{s.peer}"

    def _window(self, key: str, now: int) -> _Window:
        window = self._windows.get(key)
        if window is None:
            if len(self._windows) > 100_000:
                self._windows.clear()
            window = self._windows[key] = _Window(now)
        return window

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        key = self.key(ctx)
        counted = await self.shared.hit(key) if self.shared is not None else None
        if counted is not None:
            n, second = counted
        else:
            now = int(self._clock())
            window = self._window(key, now)
            n = window.hit(now)
        ctx.notes["requests_last_minute"] = n
        if self.per_minute and n > self.per_minute:
            if counted is not None and self.shared is not None:
                await self.shared.undo(key, second)
            else:
                window.undo()
            self.limited += 1
            return Reject(ErrorCode.RATE_LIMITED, f"Rate limit exceeded: {self.per_minute} requests per minute",
                          {"limit": self.per_minute, "window_s": 60}, http_status=429, outcome="rate_limited")
        return None

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"per_minute": self.per_minute, "limited": self.limited, "clients": len(self._windows)}
        if self.shared is not None:
            out["shared"] = {"url": self.shared.url, "errors": self.shared.errors}
        return out


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> RateLimitStage:
    """`stages: {ratelimit: {requestsPerMinute: N}}` in policy.yaml; 0 switches it off."""
    section = (config.get("stages") or {}).get("ratelimit") or {}
    url = (getattr(settings, "extras", None) or {}).get("state_url")
    return RateLimitStage(int(section.get("requestsPerMinute", DEFAULT_PER_MINUTE)),
                          shared=SharedRate(url) if url else None)


__all__ = ["DEFAULT_PER_MINUTE", "RateLimitStage", "build"]
