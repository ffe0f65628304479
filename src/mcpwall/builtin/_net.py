"""Where the built-in HTTP tools may connect: the host allowlist and the address check.

A URL passes when its host is allowed by the policy's `allowlist.hosts`
(every public host when the list is empty) and every address the host
resolves to is public. Loopback, private, link-local (169.254.0.0/16, the
cloud metadata address), carrier-grade NAT, multicast, reserved and
unspecified addresses are refused after DNS resolution, so a name that
resolves to 127.0.0.1 or 169.254.169.254 is caught, and so are the numeric
spellings a resolver accepts (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`).

A private address is allowed only when the allowlist names it on purpose,
by an IP or a network that contains it (`127.0.0.1`, `10.0.0.0/8`). A host
name never does, wildcard or not: whoever controls a listed name's DNS could
otherwise point it at 127.0.0.1 or the metadata address (DNS rebinding).
The caller connects to the address checked here, not to a second lookup,
so DNS rebinding between the check and the connection cannot redirect it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcpwall.errors import InternalError
from mcpwall.policy import canonical_host

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]


class URLRefused(InternalError):
    """The URL may not be fetched; the message says why (it is shown to the agent)."""


@dataclass(frozen=True)
class Target:
    """A URL that passed the checks, and the address to connect to."""

    url: str
    scheme: str
    host: str
    port: int
    address: str


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise URLRefused(f"cannot resolve {host!r}: {exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class HostPolicy:
    """The allowlist as the built-in tools apply it."""

    def __init__(self, hosts: Sequence[str] = (), corp_hosts: Sequence[str] = ()) -> None:
        self.hosts = [h.strip() for h in hosts if h.strip()]
        self.corp_hosts = [h.strip() for h in corp_hosts if h.strip()]

    def host_allowed(self, host: str) -> bool:
        return _listed(host, self.hosts, empty=True) and _listed(host, self.corp_hosts, empty=True)

    def private_allowed(self, ip: IP) -> bool:
        """A non-public address is fine only when an IP or network entry contains it."""
        return any(_contains(entry, ip) for entry in self.hosts)


def _listed(host: str, entries: Sequence[str], *, empty: bool) -> bool:
    if not entries:
        return empty
    for entry in entries:
        if entry == "*":
            return True
        if entry.startswith(("*.", ".")):
            suffix = canonical_host(entry.lstrip("*").lstrip("."))
            if host == suffix or host.endswith("." + suffix):
                return True
        elif _network(entry) is not None:
            ip = _ip(host)
            if ip is not None and ip in _network(entry):  # type: ignore[operator]
                return True
        elif canonical_host(entry) == host:
            return True
    return False


def _contains(entry: str, ip: IP) -> bool:
    net = _network(entry)
    return net is not None and (_unmapped(ip) in net or ip in net)


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None


def _ip(text: str) -> IP | None:
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _unmapped(ip: IP) -> IP:
    """The IPv4 address inside an IPv4-mapped, 6to4 or Teredo IPv6 address, else the address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            return inner
    return ip


def public(ip: IP) -> bool:
    """True for an address on the public internet."""
    inner = _unmapped(ip)
    if inner.is_loopback or inner.is_link_local or inner.is_private or inner.is_multicast \
            or inner.is_reserved or inner.is_unspecified:
        return False
    if isinstance(inner, ipaddress.IPv4Address) and inner in ipaddress.ip_network("100.64.0.0/10"):
        return False
    return inner.is_global


async def check_url(url: str, policy: HostPolicy, resolver: Resolver = system_resolver) -> Target:
    """Check a URL for the built-in tools; raises URLRefused with the reason."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise URLRefused(f"invalid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise URLRefused(f"only http and https URLs are fetched, not {scheme or 'a relative URL'}")
    raw_host = parts.hostname or ""
    if not raw_host:
        raise URLRefused("the URL has no host")
    if parts.username or parts.password:
        raise URLRefused("credentials in the URL are refused")
    host = canonical_host(raw_host)
    port = port or (443 if scheme == "https" else 80)
    if not policy.host_allowed(host):
        raise URLRefused(f"host {host!r} is not in the policy's allowlist.hosts")
    literal = _ip(raw_host)
    addresses = [str(literal)] if literal is not None else await resolver(raw_host, port)
    if not addresses:
        raise URLRefused(f"{host!r} resolves to no address")
    for text in addresses:
        ip = _ip(text)
        if ip is None:
            raise URLRefused(f"{host!r} resolved to an unusable address {text!r}")
        if not public(ip) and not policy.private_allowed(ip):
            raise URLRefused(f"{host!r} resolves to {ip}, a private, loopback or link-local address; "
                             "refused unless allowlist.hosts lists that address")
    return Target(url=url, scheme=scheme, host=host, port=port, address=addresses[0].split("%", 1)[0])


__all__ = ["HostPolicy", "Resolver", "Target", "URLRefused", "check_url", "public", "system_resolver"]
