"""An upstream's circuit breaker: closed, open after N consecutive failures, half-open probe after a pause."""

from __future__ import annotations

import time
from collections.abc import Callable

BREAKER_THRESHOLD = 5
BREAKER_OPEN_S = 30.0
#: A half-open probe not settled within the longest request timeout (300 s) is presumed lost.
PROBE_LEASE_S = 310.0


class CircuitBreaker:
    """Closed -> open after N consecutive failures -> half-open probe after a pause."""

    def __init__(self, threshold: int = BREAKER_THRESHOLD, open_seconds: float = BREAKER_OPEN_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = threshold
        self.open_seconds = open_seconds
        self._clock = clock
        self.failures = 0
        self.opened_at: float | None = None
        #: when the half-open probe was let through (None: no probe out)
        self._probing: float | None = None

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self.opened_at >= self.open_seconds else "open"

    @property
    def probing(self) -> bool:
        return self._probing is not None

    def allow(self) -> bool:
        """Whether a request may go to the server now; in half-open state, the one probe takes it.

        A probe that never reaches the server (a later stage refused it, the client cancelled it)
        must be given back with `release`, else the circuit would stay open for good. As a
        backstop, a probe not settled within the longest request timeout is presumed lost.
        """
        state = self.state
        if state == "closed":
            return True
        if state == "half-open" and (self._probing is None or self._clock() - self._probing > PROBE_LEASE_S):
            self._probing = self._clock()
            return True
        return False

    def release(self) -> None:
        """The probe ended without a verdict on the server: let the next request probe."""
        self._probing = None

    def success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self._probing = None

    def failure(self) -> None:
        self.failures += 1
        if self._probing is not None or self.failures >= self.threshold:
            self.opened_at = self._clock()
        self._probing = None


__all__ = ["BREAKER_OPEN_S", "BREAKER_THRESHOLD", "PROBE_LEASE_S", "CircuitBreaker"]
