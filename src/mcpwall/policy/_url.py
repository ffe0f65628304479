"""URLs as the clients that fetch them parse them.

Two parsers matter, and they disagree:

- **WHATWG URL** (Node's `new URL()`, so `fetch`/undici and most TypeScript
  MCP servers). For the special schemes (http, https, ws, wss, ftp, file) it
  strips leading and trailing C0 controls and spaces, removes tabs and
  newlines anywhere, treats `\\` as `/`, and accepts any number of slashes
  after the scheme (`http:host`, `http:///host`, `http:\\\\host`). So
  `http://169.254.169.254\\@api.example.com/` goes to 169.254.169.254.
- **RFC 3986 / `urllib.parse`** (`httpx` and the reference Python servers),
  for which the same URL goes to api.example.com.

`url_forms` returns the normalised URL under each parser. Restrictive rules
see both. The canonical spelling (what allow rules and argConstraints see) is
the WHATWG one, except when the two parsers name *different* hosts: then no
normalised spelling is safe to allow, and the canonical stays the raw text.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote, urlsplit

from mcpwall.policy._host import canonical_host, canonical_ip

SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}
#: What WHATWG strips from both ends of a URL (C0 controls and space).
C0_SPACE = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = re.compile("[\t\n\r]")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_URL_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
#: Characters WHATWG refuses in a host (after percent-decoding); the URL then fails to parse.
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20#/:<>?@\[\\\]^|%\x7f]")
_PORT = re.compile(r"[0-9]{0,10}")


def _clean(value: str) -> str:
    value = value.strip(C0_SPACE)
    return _TAB_NEWLINE.sub("", value) if "\t" in value or "\n" in value or "\r" in value else value


def collapse_posix(path: str) -> str:
    """`.`/`..`/`//` collapsed, keeping a trailing slash."""
    if not path:
        return path
    trailing = path.endswith("/") and len(path) > 1
    collapsed = posixpath.normpath(path)
    if collapsed.startswith("//"):
        collapsed = "/" + collapsed.lstrip("/")
    if trailing and not collapsed.endswith("/"):
        collapsed += "/"
    return collapsed


def _assemble(scheme: str, host: str, port: str | None, path: str, query: str | None) -> str:
    if ":" in host:
        host = f"[{host}]"
    netloc = host
    if port and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    path = unquote(path)
    if path:
        path = collapse_posix(path)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def whatwg(value: str) -> tuple[str, str] | None:
    """(normalised URL, host) of a special-scheme URL as WHATWG parses it, else None (also if it fails)."""
    text = _clean(value)
    m = _SCHEME.match(text)
    if m is None:
        return None
    scheme = m.group(1).lower()
    if scheme not in SPECIAL_SCHEMES or scheme == "file":
        return None
    rest = text[m.end():].replace("\\", "/")
    rest = rest.lstrip("/")
    end = len(rest)
    for sep in "/?#":
        i = rest.find(sep)
        if i != -1 and i < end:
            end = i
    authority, tail = rest[:end], rest[end:]
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1:
            return None
        host, after = hostport[:close + 1], hostport[close + 1:]
        if after and not after.startswith(":"):
            return None
        port = after[1:] if after else None
    else:
        host, _, port_text = hostport.partition(":")
        port = port_text if ":" in hostport else None
    if port is not None:
        if not _PORT.fullmatch(port) or (port and int(port) > 65535):
            return None
        port = str(int(port)) if port else None
    if host.startswith("["):
        ip = canonical_ip(host)
        if ip is None:
            return None
        host = ip
    else:
        host = canonical_host(unquote(host))
        if not host or _FORBIDDEN_HOST.search(host):
            return None
        last = host.rpartition(".")[2]
        if last and (last.isdigit() or last[:2] == "0x") and canonical_ip(host) is None:
            return None  # ends in a number but is no IPv4 address: WHATWG refuses the URL
    path, _, query = tail.partition("#")[0].partition("?")
    return _assemble(scheme, host, port, path, query or None), host


def rfc3986(value: str) -> tuple[str, str] | None:
    """(normalised URL, host) of a `scheme://` URL as `urllib.parse` (httpx) parses it, else None.

    Leading C0 controls and spaces are stripped, as `urlsplit` and WHATWG both do.
    """
    if not _URL_RE.match(value):
        value = _clean(value)
        if not _URL_RE.match(value):
            return None
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
    return _assemble(scheme, host, None if port is None else str(port), parts.path, parts.query), host


def url_forms(value: str) -> tuple[list[str], str | None]:
    """Every parser's normalised spelling of a URL, and the one allow rules may see (None: keep the raw text)."""
    out: list[str] = []
    if ":" not in value:
        return out, None
    py = rfc3986(value)
    web = whatwg(value)
    if py is not None:
        out.append(py[0])
    if web is not None and web[0] not in out:
        out.append(web[0])
    if web is None:
        return out, py[0] if py is not None else None
    if py is not None and py[1] and py[1] != web[1]:
        return out, None
    return out, web[0]


def url_hosts(value: str) -> tuple[str, ...]:
    """The hosts a URL-looking string reaches under either parser (empty if it is no URL)."""
    hosts: list[str] = []
    for parsed in (rfc3986(value), whatwg(value)):
        if parsed is not None and parsed[1] and parsed[1] not in hosts:
            hosts.append(parsed[1])
    return tuple(hosts)


#: Hosts of a `file:` URL that are this machine (Python's `urlopen` serves them; Node refuses).
def _local_host(host: str) -> bool:
    if not host or host.lower().rstrip(".") == "localhost":
        return True
    ip = canonical_ip(canonical_host(unquote(host)))
    return ip is not None and (ip.startswith("127.") or ip in ("::1", "0.0.0.0"))


def file_url_path(value: str) -> tuple[str, bool] | None:
    """(path, on this machine) of a `file:` URL, else None.

    A remote host (`file://server/etc/x`) still yields its path, so restrictive
    rules see it, but it must never be the canonical spelling an allow rule sees.
    """
    text = _clean(value) if value[:1] in C0_SPACE else value
    if text[:5].lower() != "file:":
        return None
    rest = text[5:]
    if "\\" in rest:
        rest = rest.replace("\\", "/")
    local = True
    if rest.startswith("//"):
        rest = rest[2:]
        host, sep, path = rest.partition("/")
        local = _local_host(host)
        rest = sep + path
    path = unquote(rest)
    return (path, local) if path else None


__all__ = ["C0_SPACE", "DEFAULT_PORTS", "SPECIAL_SCHEMES", "collapse_posix", "file_url_path", "url_forms",
           "url_hosts", "whatwg"]
