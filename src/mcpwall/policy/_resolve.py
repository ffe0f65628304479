"""Host names as this machine resolves them, for the network rules.

A rule written for `127.0.0.0/8` or `169.254.169.254` is written for an
address, but a URL names a host: the machine's own name (`socket.gethostname()`,
mapped to 127.0.x.x in /etc/hosts), any name in /etc/hosts, or a public DNS
name that points at a private address all reach what the rule denies.
`prepare` (`_facts.py`) therefore resolves each host a URL or host argument
names, as the built-in HTTP tools do (`getaddrinfo`), and adds the spelling
with the address in the host's place for every address that is not public
(loopback, private, link-local and so the metadata addresses, carrier-grade
NAT, unspecified, reserved, multicast; an IPv4-mapped IPv6 address counts as
its IPv4 address). Only restrictive rules see that spelling; an allow rule
sees the name as written.

Resolution is I/O, so it is kept off the hot path:

- answers are cached (`HostResolver.ttl`, 60 s); an expired answer is still
  used while one lookup refreshes it in the background;
- a name not seen before is looked up in a daemon thread, and the call waits
  for it at most `HostResolver.wait` (100 ms). A lookup that takes longer
  (a hanging resolver) leaves the name **unknown** for that call: it is
  matched as written, as before name resolution existed (fail-open for that
  one name, because failing closed would deny every URL whenever DNS is
  slow), and the answer, when it comes, is cached for the calls after it;
- once a lookup has outlasted the wait, new names are not waited for during
  the next `SLOW_BACKOFF` seconds (5 s; they are still looked up in the
  background), so a hanging resolver costs one wait per interval, not one
  per call; a name already being looked up is not waited for again;
- at most `MAX_PENDING` lookups run at once; beyond that a new name is
  unknown without waiting.

What this does not see: a name whose answer changes between this lookup and
the server's own (DNS rebinding with a short TTL) and names resolved by the
server in another network namespace. The built-in HTTP tools connect to the
address they checked, so rebinding does not reach them.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable

#: Lookups in flight at once; a new name beyond this is left unknown.
MAX_PENDING = 16
#: Seconds during which new names are not waited for after one lookup outlasted the wait.
SLOW_BACKOFF = 5.0
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
#: Names never looked up: the rules are written for them as they are.
_LITERAL = frozenset({"", "localhost"})


def non_public(address: str) -> str | None:
    """The address in the form rules are written for (IPv4 dotted, IPv6 compressed) if it is not public."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            ip = inner
    if ip.is_loopback or ip.is_link_local or ip.is_private or ip.is_multicast or ip.is_reserved \
            or ip.is_unspecified or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT) or not ip.is_global:
        return str(ip)
    return None


def system_lookup(host: str) -> list[str]:
    """Every address `getaddrinfo` gives for `host` (/etc/hosts, DNS, mDNS: what nsswitch says)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class HostResolver:
    """`resolver(host)`: the non-public addresses `host` resolves to, () when none, None when not known yet."""

    def __init__(self, *, ttl: float = 60.0, wait: float = 0.1, size: int = 8192,
                 lookup: Callable[[str], list[str]] = system_lookup) -> None:
        self.ttl = ttl
        self.wait = wait
        self._size = size
        self._lookup = lookup
        self._cache: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        #: Until when new names are not waited for (monotonic), after a lookup outlasted `wait`.
        self._slow_until = 0.0

    def __call__(self, host: str) -> tuple[str, ...] | None:
        hit = self._cache.get(host)
        if hit is not None:
            if time.monotonic() - hit[0] >= self.ttl:
                self._start(host)  # refreshed in the background; the last answer holds meanwhile
            return hit[1]
        if host in _LITERAL or len(host) > 253:
            return ()
        event = self._start(host)
        if event is None:  # already being looked up (its first call waited), or too many lookups at once
            return None
        if time.monotonic() >= self._slow_until:
            if not event.wait(self.wait):
                # Not waited for again for SLOW_BACKOFF seconds: a hanging resolver costs one
                # `wait` per interval, not one per call.
                self._slow_until = time.monotonic() + SLOW_BACKOFF
                return None
        elif not event.is_set():
            return None
        hit = self._cache.get(host)
        return None if hit is None else hit[1]

    def _start(self, host: str) -> threading.Event | None:
        """Start looking `host` up; the new lookup's event, or None if one runs already or too many do."""
        with self._lock:
            if host in self._pending or len(self._pending) >= MAX_PENDING:
                return None
            event = self._pending[host] = threading.Event()
        threading.Thread(target=self._resolve, args=(host, event), name="mcpwall-resolve", daemon=True).start()
        return event

    def _resolve(self, host: str, event: threading.Event) -> None:
        try:
            addresses = self._lookup(host)
        except (OSError, UnicodeError, ValueError):  # unknown name, bad label: nothing to add
            addresses = []
        local = tuple(dict.fromkeys(a for a in map(non_public, addresses) if a is not None))
        with self._lock:
            if len(self._cache) >= self._size:
                self._cache.clear()
            self._cache[host] = (time.monotonic(), local)
            self._pending.pop(host, None)
        event.set()


__all__ = ["MAX_PENDING", "SLOW_BACKOFF", "HostResolver", "non_public", "system_lookup"]
