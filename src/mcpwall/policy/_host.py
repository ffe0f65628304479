"""Host names and IP addresses in the one spelling rules are written for.

Clients do not connect to the text of a host but to what their URL parser
makes of it. WHATWG URL (Node's `fetch`, most TypeScript MCP servers) and
`httpx`/`idna` (Python servers) both map a host through IDNA/UTS-46 first:
fullwidth letters and digits become ASCII, and `。` (U+3002), `．` (U+FF0E)
and `｡` (U+FF61) become label dots. Then a host whose last label is a number
is an IPv4 address in any of the `inet_aton` spellings (`2130706433`,
`0x7f.1`, `0177.0.0.1`, `127.1`). `canonical_host` undoes all of that, so
`http://１２７。0。0。1/` is seen as `127.0.0.1` by the rules.

`host_value` does the same for argument values that are a bare host (a
`host` argument of a database or socket tool), recognised by their key.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import unicodedata
from functools import lru_cache

try:  # a dependency of httpx, so always installed with mcpwall; NFKC is the fallback
    import idna as _idna
except ImportError:  # pragma: no cover
    _idna = None  # type: ignore[assignment]

#: Label separators under UTS-46 that NFKC alone does not turn into `.`.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
#: Code points UTS-46 maps to nothing (soft hyphen, zero-width and joiner characters, variation selectors).
_IGNORED = re.compile("[\u00ad\u034f\u180b-\u180f\u200b-\u200d\u2060\ufe00-\ufe0f\ufeff]")


def canonical_ip(host: str) -> str | None:
    """Dotted-quad form of the IPv4 spellings `inet_aton` accepts, or of a mapped IPv6."""
    if not host:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            packed = socket.inet_pton(socket.AF_INET6, host.split("%", 1)[0])
        except (OSError, ValueError):  # ValueError: an embedded NUL
            return None
        if packed[:12] == b"\x00" * 10 + b"\xff\xff":
            return socket.inet_ntoa(packed[12:])
        return socket.inet_ntop(socket.AF_INET6, packed)
    if not host[0].isdigit() or not host.isascii():
        return None
    try:
        packed = socket.inet_aton(host)
    except (OSError, ValueError):
        return None
    return socket.inet_ntoa(struct.pack("!I", struct.unpack("!I", packed)[0]))


def _uts46(host: str) -> str:
    """Map a non-ASCII host the way IDNA/UTS-46 (non-transitional) does, or as close as NFKC gets."""
    host = _IGNORED.sub("", host)
    mapped = None
    if _idna is not None:
        with contextlib.suppress(Exception):  # idna raises several types for disallowed code points
            mapped = _idna.uts46_remap(host, std3_rules=False, transitional=False)
    if mapped is None:
        mapped = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", host).casefold())
    return mapped.translate(_DOTS)


@lru_cache(maxsize=8192)
def canonical_host(host: str) -> str:
    """Lower-cased, UTS-46-mapped host without a trailing dot, numeric IPs in dotted form."""
    host = host.strip()
    if not host.isascii():
        host = _uts46(host)
    host = host.lower().rstrip(".")
    ip = canonical_ip(host)
    if ip is not None:
        return ip
    if "xn--" in host:
        with contextlib.suppress(UnicodeError):
            host = host.encode("ascii").decode("idna")
    return _ALIASES.get(host) or ("localhost" if host.endswith(".localhost") else host)


#: Names that reach the same place as a name the rules are written for, without DNS: every
#: `*.localhost` is loopback (RFC 6761, and curl and browsers resolve it so), `ip6-localhost`
#: and `localhost.localdomain` (and Red Hat's `localhost4`/`localhost6` names) are in the
#: /etc/hosts distributions ship, `metadata` is Google Cloud's short name for its metadata server.
#: Other names are resolved in `prepare` (`_resolve.py`).
_ALIASES = {"ip6-localhost": "localhost", "ip6-loopback": "localhost", "localhost.localdomain": "localhost",
            "localhost4": "localhost", "localhost4.localdomain4": "localhost", "localhost6": "localhost",
            "localhost6.localdomain6": "localhost", "metadata": "metadata.google.internal"}


#: Argument keys whose values name a host (the last word of the key, or the whole key).
_HOST_WORDS = frozenset({"host", "hostname", "hosts", "hostnames", "hostaddr", "ip", "ips", "ipaddr",
                         "ipaddress", "addr", "address", "domain", "server", "remote", "peer"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_host_keys: dict[str, bool] = {}


def is_host_key(key: str) -> bool:
    """Whether an argument key names a host (`host`, `hostName`, `redis_host`, `serverIp`)."""
    known = _host_keys.get(key)
    if known is None:
        words = [w.lower() for w in _WORD.findall(key)]
        known = bool(words) and (words[-1] in _HOST_WORDS or "".join(words[-2:]) in _HOST_WORDS
                                 or "".join(words) in _HOST_WORDS)
        if len(_host_keys) >= 4096:
            _host_keys.clear()
        _host_keys[key] = known
    return known


#: A bare host, optionally with a port: no path, userinfo, query or whitespace.
_BARE_HOST = re.compile(r"(\[[^\]\s/@]+\]|[^\s/\\@?#\[\]]+?)(?::(\d{1,5}))?")


def host_value(text: str) -> tuple[str, ...]:
    """Canonical spellings of a bare `host[:port]` value (with the port first, then without), or ().

    Only for values of host-like keys: elsewhere `10.2` is a version, not `10.0.0.2`.
    """
    stripped = text.strip()
    m = _BARE_HOST.fullmatch(stripped)
    if m is None:
        return ()
    host, port = m.group(1), m.group(2)
    if ":" in host and not host.startswith("["):  # a bare IPv6 address has no port part
        host, port = stripped, None
    canonical = canonical_host(host)
    if port is None:
        return (canonical,)
    return (f"[{canonical}]:{port}" if ":" in canonical else f"{canonical}:{port}", canonical)


__all__ = ["canonical_host", "canonical_ip", "host_value", "is_host_key"]
