"""Normalising argument values before rules see them.

An attacker controls argument text, so a rule written for `/etc` or for a host
must also see through the spellings that reach the same file or host. For each
string we compute:

- **variants**: every spelling we can derive (NUL-truncated, percent-decoded up
  to three times, `file://` URL to path, `~`/`$HOME` expanded, `.`/`..`/`//`
  collapsed, Windows paths normalised, URL hosts lower-cased with userinfo,
  trailing dots and default ports removed and numeric IP forms such as
  `0x7f.1` or `2130706433` turned into dotted quads). Rules that restrict
  (deny, ask, warn, redact, rewrite) match if *any* variant matches.
- **canonical**: the single most-resolved spelling (decoded, collapsed,
  symlinks resolved by the caller). Rules that permit (allow) and
  `argConstraints` look only at this one, so `/workspace/../etc/shadow` can
  never satisfy an allow rule written for `/workspace/`.

Everything here is pure; the symlink step needs the file system and lives in
`_facts.py`. docs/POLICY.md lists what is normalised.
"""

from __future__ import annotations

import contextlib
import ntpath
import posixpath
import re
import socket
import struct
from functools import lru_cache
from urllib.parse import unquote, urlsplit

_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_WIN_RE = re.compile(r"^(?:[a-zA-Z]:[\\/]|\\\\)")
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}


def _decode_all(value: str) -> list[str]:
    out: list[str] = []
    current = value
    for _ in range(3):
        if "%" not in current:
            break
        decoded = unquote(current)
        if decoded == current:
            break
        out.append(decoded)
        current = decoded
    return out


def canonical_ip(host: str) -> str | None:
    """Dotted-quad form of the IPv4 spellings `inet_aton` accepts, or of a mapped IPv6."""
    if not host:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            packed = socket.inet_pton(socket.AF_INET6, host.split("%", 1)[0])
        except OSError:
            return None
        if packed[:12] == b"\x00" * 10 + b"\xff\xff":
            return socket.inet_ntoa(packed[12:])
        return socket.inet_ntop(socket.AF_INET6, packed)
    if not host[0].isdigit():
        return None
    try:
        packed = socket.inet_aton(host)
    except OSError:
        return None
    return socket.inet_ntoa(struct.pack("!I", struct.unpack("!I", packed)[0]))


def canonical_host(host: str) -> str:
    """Lower-cased host without a trailing dot, numeric IPs in dotted form."""
    host = host.strip().lower().rstrip(".")
    ip = canonical_ip(host)
    if ip is not None:
        return ip
    if "xn--" in host:
        with contextlib.suppress(UnicodeError):
            host = host.encode("ascii").decode("idna")
    return host


def _normalize_url(value: str) -> str | None:
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme == "file":
        return None
    try:
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        host, port = parts.netloc.rpartition("@")[2].lower(), None
    host = canonical_host(unquote(host))
    if ":" in host:
        host = f"[{host}]"
    netloc = host
    if port is not None and str(port) != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    path = unquote(parts.path)
    if path:
        path = _collapse_posix(path)
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{path}{query}"


def _collapse_posix(path: str) -> str:
    if not path:
        return path
    trailing = path.endswith("/") and len(path) > 1
    collapsed = posixpath.normpath(path)
    if collapsed.startswith("//"):
        collapsed = "/" + collapsed.lstrip("/")
    if trailing and not collapsed.endswith("/"):
        collapsed += "/"
    return collapsed


def _file_url_path(value: str) -> str | None:
    if value[:5].lower() != "file:":
        return None
    rest = value[5:]
    if rest.startswith("//"):
        rest = rest[2:]
        host, sep, path = rest.partition("/")
        if host and host.lower() != "localhost":
            return None
        rest = sep + path
    return unquote(rest) or None


def _expand_home(value: str, home: str | None) -> str | None:
    if not home:
        return None
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    for var in ("$HOME", "${HOME}"):
        if value == var or value.startswith(var + "/"):
            return home + value[len(var):]
    return None


def _looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.startswith(("~", "."))


#: A value without any of these characters has exactly one spelling.
_SPECIAL = re.compile(r"[/\\%~$:.\x00]")


def forms(value: str, home: str | None = None) -> tuple[tuple[str, ...], str]:
    """All spellings of `value` (raw first, no duplicates) and its canonical one."""
    if _SPECIAL.search(value) is None:
        return (value,), value
    return _forms(value, home)


@lru_cache(maxsize=32768)
def _forms(value: str, home: str | None) -> tuple[tuple[str, ...], str]:
    seen: dict[str, None] = {value: None}
    canonical = value
    pending = [value]
    if "\x00" in value:
        truncated = value.split("\x00", 1)[0]
        pending.append(truncated)
        canonical = truncated
    for item in list(pending):
        for decoded in _decode_all(item):
            pending.append(decoded)
            canonical = decoded
    for item in list(pending):
        file_path = _file_url_path(item)
        if file_path is not None:
            pending.append(file_path)
            canonical = file_path
    for item in list(pending):
        expanded = _expand_home(item, home)
        if expanded is not None:
            pending.append(expanded)
            if item == canonical:
                canonical = expanded
    for item in list(pending):
        if _URL_RE.match(item):
            url = _normalize_url(item)
            if url is not None:
                pending.append(url)
                if item == canonical:
                    canonical = url
        elif _WIN_RE.match(item) or ("\\" in item and "/" not in item):
            win = ntpath.normpath(item)
            pending.append(win)
            pending.append(win.replace("\\", "/"))
            if item == canonical:
                canonical = win
        elif _looks_like_path(item):
            collapsed = _collapse_posix(item)
            pending.append(collapsed)
            if item == canonical:
                canonical = collapsed
    for item in pending:
        seen.setdefault(item, None)
    return tuple(seen), canonical


def url_host(value: str) -> str | None:
    """The canonical host of a URL-looking string, else None."""
    if not _URL_RE.match(value):
        return None
    try:
        host = urlsplit(value).hostname
    except ValueError:
        return None
    return canonical_host(unquote(host)) if host else None


__all__ = ["canonical_host", "canonical_ip", "forms", "url_host"]
