"""Network sinks: where a call sends, and what it sends there (`sinks`, `touches.hosts`).

A URL argument, `curl`/`wget`/`http` and their body options, sockets (`nc`, `socat`, `/dev/tcp`),
remote copies (`scp`, `rsync`), DNS look-ups: each gives the host it reaches and a sink
`<kind>[+what] <destination>` (`probe` for `nc -z` on one port, `tls` for `openssl s_client` to 443), where `+what` says the call sends something it did not type out:
`+exec` a shell substitution, `+file` a local file, `+pii` personal data or credentials in a query
string, `+encoded` an encoded blob. DNS-shaped names (`<hex>.attacker.example`) are sinks of
their own: the look-up is the exfiltration.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
from itertools import pairwise
from typing import Final
from urllib.parse import parse_qsl

from mcpwall.policy._calls_args import FILES, HOSTS, SINKS, WRITES, Fact
from mcpwall.policy._calls_files import home

#: Programs that fetch or send over the network, and how (their operands are hosts and URLs, not files).
HTTP: Final = frozenset(
    {"curl", "wget", "http", "https", "xh", "aria2c", "lwp-request", "invoke-webrequest", "iwr",
     "invoke-restmethod", "irm", "fetch"}
)
SOCKET: Final = frozenset({"nc", "ncat", "netcat", "telnet", "socat", "openssl"})
REMOTE: Final = frozenset({"ssh", "scp", "sftp", "rsync", "ftp", "tftp", "smbclient"})
LOOKUP: Final = frozenset({"ping", "ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "whois", "drill"})
NETWORK_PROGRAMS: Final = HTTP | SOCKET | REMOTE | LOOKUP
#: What is sent by `curl -d` and the like (body options take a value; `-F` too).
_CURL_BODY = frozenset(
    {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "-F", "--form",
     "--form-string", "--json", "-T", "--upload-file"}
)
_CURL_VALUE = frozenset(
    {"-H", "--header", "-X", "--request", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-e",
     "--referer", "-b", "--cookie", "-c", "--cookie-jar", "-x", "--proxy", "-w", "--write-out", "-m",
     "--max-time", "--connect-timeout", "-K", "--config", "-E", "--cert", "--key", "--resolve", "--url", "-O",
     "--output-document", "--method", "-P", "-t", "--timeout", "--tries", "-U"}
)
_WGET_BODY = ("--post-data", "--post-file", "--body-data", "--body-file")
_UPLOAD_OPTS = ("-T", "--upload-file", "--post-file", "--body-file")
SUBSTITUTION: Final = re.compile(r"\$\(|`|\$\{?[A-Za-z_][A-Za-z0-9_]*|<\(")
URL: Final = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://[^\s]+$")
BARE_URL: Final = re.compile(r"(?i)^(?:[a-z0-9-]+\.)+[a-z]{2,63}(?::\d{1,5})?(?:[/?#][^\s]*)?$")
_USER_HOST = re.compile(r"^(?:[^@\s/:]+@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,63}|\d{1,3}(?:\.\d{1,3}){3}):")
_IPV4_PORT = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?")
DEV_TCP: Final = re.compile(r"/dev/(?:tcp|udp)/([^/\s]+)/(\d+)")
EMAIL: Final = re.compile(r"^[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,63})$")
#: Query parameters that carry credentials or loot wherever they go (`?password=`, `?token=`, `?env=`).
_SECRET_PARAMS: Final = frozenset(
    {"pass", "passwd", "password", "pwd", "token", "secret", "apikey", "api_key", "access_token", "ssn", "cvv",
     "cvc", "creds", "credentials", "cookie", "cookies", "session", "sid", "history", "env", "environ", "dump",
     "loot", "exfil", "leak", "steal", "stolen", "privatekey", "private_key", "seed", "mnemonic"}
)
#: Query parameters that carry personal data: sent to a host's root (`crr3.com?name=George`), not to an API path
#: (`/maps/api/geocode/json?address=...`), they are data leaving rather than a question asked.
_PII_PARAMS: Final = frozenset(
    {"name", "fullname", "full_name", "firstname", "first_name", "lastname", "last_name", "surname", "email",
     "mail", "phone", "mobile", "tel", "address", "addr", "street", "zip", "dob", "birthday", "birthdate", "card",
     "cc", "ccn", "iban", "account", "acct", "user", "username", "login", "key", "content", "contents", "file",
     "files", "data", "payload", "info", "pii", "location", "lat", "lon", "gps", "msg", "message", "text"}
)
_ENCODED_VALUE = re.compile(r"[A-Za-z0-9+/=_-]+")
#: Query parameters by which public APIs take their own key (`?api_key=DEMO_KEY` to api.nasa.gov, `?key=` to
#: googleapis.com, `?appid=` to OpenWeatherMap): sent to an API path, the key is presented, not loot. What the
#: value is stays judged: a known token or random material is a secret going out (`secrets_out`), to its issuer
#: alone (`_calls_presented`), and a substitution or a variable is data computed (`query+exec`).
_KEYLIKE: Final = re.compile(r"[A-Za-z0-9_.~-]{1,256}")
_API_KEY_PARAMS: Final = frozenset(
    {"key", "apikey", "api_key", "api-key", "appid", "app_id", "access_token", "token", "client_id", "auth"})


def destination(word: str) -> str | None:
    """A URL (as written) or a bare host-ish destination of a network program's operand, else None."""
    if URL.match(word):
        return word
    m = _USER_HOST.match(word)
    if m is not None:
        return m.group(1)
    if "@" in word and not word.startswith("@"):
        host = word.rpartition("@")[2]
        if "." in host:
            return host
    if BARE_URL.match(word) or _IPV4_PORT.fullmatch(word):
        return word
    return None


def url_host(url: str) -> str:
    """The host of a URL or bare `host[:port]/path`, lower-cased, without userinfo and port."""
    rest = url.split("://", 1)[1] if "://" in url else url
    rest = re.split(r"[/?#\\]", rest, maxsplit=1)[0].rpartition("@")[2]
    if rest.startswith("["):
        return rest[1:].partition("]")[0].lower()
    return rest.rpartition(":")[0].lower() if rest.count(":") == 1 else rest.lower().rstrip(".")


_LONG_LABEL = re.compile(r"[A-Za-z0-9_-]{32,}")
_HEX_LABEL = re.compile(r"[0-9a-fA-F]{16,}")
_B32_LABEL = re.compile(r"[a-zA-Z2-7]{20,}=*")
_B64_LABEL = re.compile(r"[A-Za-z0-9+_-]{20,}={0,2}")


def _coded(label: str) -> bool:
    """A label that is encoded data: hex, base32 or (mixed-case) base64, with digits among its letters."""
    digits = sum(c.isdigit() for c in label)
    if digits < 2 or not any(c.isalpha() for c in label):
        return False
    if _HEX_LABEL.fullmatch(label) or (_B32_LABEL.fullmatch(label) and digits >= 3):
        return True
    return (
        _B64_LABEL.fullmatch(label) is not None
        and any(c.isupper() for c in label)
        and any(c.islower() for c in label)
    )


def dns_shaped(host: str) -> bool:
    """A name that carries data to its DNS server (`<hex>.attacker.example`, `$(whoami).x.com`):
    a substitution in it, a label of 32 characters or more, or an encoded-looking label of 16 or more
    beneath a registered name."""
    if "$(" in host or "`" in host or "${" in host:
        return True
    labels = host.split(".")
    if len(labels) < 3:
        return False
    for label in labels[:-2]:
        if (
            _LONG_LABEL.fullmatch(label)
            and not label.startswith("xn--")
            and sum(c.isdigit() for c in label) >= 4
        ):
            return True  # a long label of data, not of words (`my-very-long-bucket-name-for-assets`)
        if _coded(label):
            return True
    return False


#: A URL's userinfo (no password), and a userinfo spelled as a host name: a trusted name before the `@`.
_SPOOF = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://([^/?#@:\s]+)@")
_HOSTLIKE = re.compile(r"(?i)(?:www\.)?(?:[a-z0-9-]+\.)+(?:com|org|net|io|dev|app|ai|co|gov|edu|cloud|[a-z]{2})")
#: Names of this machine: a request to one that sends nothing computed is the user's own service.
_LOOPBACK = re.compile(r"localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0|[\w.-]+\.localhost")


def url_facts(url: str, kind: str, out: list[Fact], carried: str = "") -> None:
    """Facts of a URL reached by `kind` (url, fetch, post...): its host, and what its query string carries.

    A command's fetch or post to this machine (`curl localhost:3000/health`, `curl -d @payload.json
    localhost:3000`) is the sink `local`, unless it sends what a command computes (`+exec`): a developer's own
    service is not a destination data leaves to, and a file sent there meets the file rules."""
    host = url_host(url)
    if kind in ("fetch", "post") and carried in ("", "+file") and _LOOPBACK.fullmatch(host):
        # A file posted to this machine (`curl -d @payload.json localhost:3000`) is a fixture sent to the
        # developer's own server: the file rules judge the file (`-d @~/.ssh/id_rsa` is refused by them).
        kind, carried = "local", ""
    if host:
        out.append((HOSTS, host))
        if dns_shaped(host):
            out.append((SINKS, f"dns {host}"))
    out.append((SINKS, f"{kind}{carried} {url}"))
    if "@" in url and (m := _SPOOF.match(url)) is not None and _HOSTLIKE.fullmatch(m.group(1)):
        out.append((SINKS, f"spoof {url}"))  # `https://github.com@evil.example/`: the host is after the `@`
    _, _, query = url.partition("?")
    if not query:
        return
    for name, value in parse_qsl(query.partition("#")[0], keep_blank_values=True):
        low = name.lower().strip()
        if SUBSTITUTION.search(value) or SUBSTITUTION.search(name):
            out.append((SINKS, f"query+exec {url}"))
        elif low in _API_KEY_PARAMS and not _root(url) and _KEYLIKE.fullmatch(value) is not None and not (
                len(value) >= 24 and _carries_data(value)):
            continue  # the API's own key, in a key's shape; data spelled into it is still data (below)
        elif value and (low in _SECRET_PARAMS or (low in _PII_PARAMS and _root(url))):
            out.append((SINKS, f"query+pii {url}"))
        elif len(value) >= 24 and _ENCODED_VALUE.fullmatch(value) and len(set(value)) >= 12 and _carries_data(value):
            out.append((SINKS, f"query+encoded {url}"))


_HEX: Final = re.compile(r"[0-9a-fA-F]+")


def _carries_data(value: str) -> bool:
    """Whether an encoded-looking query value is data sent rather than an id: it decodes (base64, base64url or
    hex) to text or to compressed data, or it is longer than ids are (128 characters). A YouTube playlist, a
    Drive file id, a signature or a cursor decodes to no text (`list=PL590L5WQmH8fJ54F369BLDSqIwcs-TCfs`)."""
    if len(value) >= 128:
        return True
    compact = value.rstrip("=")
    decoded: list[bytes] = []
    if len(compact) % 2 == 0 and _HEX.fullmatch(compact):
        decoded.append(bytes.fromhex(compact))
    with contextlib.suppress(binascii.Error, ValueError):
        decoded.append(base64.b64decode(compact + "=" * (-len(compact) % 4),
                                        altchars=b"-_" if "-" in compact or "_" in compact else None))
    for raw in decoded:
        if raw[:2] == b"\x1f\x8b" or raw[:4] == b"PK\x03\x04":
            return True
        printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
        if len(raw) >= 12 and printable >= 0.85 * len(raw):
            return True
    return False


def _root(url: str) -> bool:
    """Whether a URL's query is sent to its host's root (no path, or `/`)."""
    rest = url.split("://", 1)[1] if "://" in url else url
    path = re.split(r"[?#]", rest, maxsplit=1)[0].partition("/")[2]
    return path in ("", "index.html", "index.php")


def _carried(value: str) -> str:
    """What a body option's value sends: a local file, a shell substitution, the environment, or data."""
    if value.startswith("@") or "=@" in value or value.startswith("<"):
        return "+file"
    if SUBSTITUTION.search(value):
        return "+exec"
    return ""


def http_command(program: str, args: list[str], out: list[Fact]) -> None:
    """`curl`, `wget`, `http` and the like: the URLs they reach, with what their body options send."""
    urls: list[str] = []
    carried: list[str] = []
    method_post = False
    i = 0
    while i < len(args):
        word = args[i]
        # short options keep their case (`-d` is not `-D`, `-F` not `-f`), long ones are folded
        low = word.lower() if word.startswith("--") else word
        opt, eq, attached = low.partition("=")
        if low in _CURL_BODY or (opt in _CURL_BODY and eq) or opt in _WGET_BODY:
            value = attached if eq else (args[i + 1] if i + 1 < len(args) else "")
            if not eq:
                i += 1
            carried.append(_carried(value) or ("+file" if opt in _UPLOAD_OPTS else ""))
            if value.startswith("@"):
                out.append((FILES, home(value[1:])))
            elif "=@" in value:
                out.append((FILES, home(value.partition("=@")[2].partition(";")[0])))
            elif opt in _UPLOAD_OPTS:
                out.append((FILES, home(value)))
        elif low in ("-X", "--request", "--method") and i + 1 < len(args):
            method_post = args[i + 1].upper() in ("POST", "PUT", "PATCH")
            i += 1
        elif low in ("-o", "--output", "-O", "--output-document") and i + 1 < len(args):
            target = args[i + 1]
            if target not in ("-", "/dev/null"):
                out.append((WRITES, home(target)))
                out.append((FILES, home(target)))
            i += 1
        elif program in ("http", "https", "xh") and not word.startswith("-") and re.match(r"^[\w-]+(:=|=|@)", word):
            carried.append(_carried(word.partition("=")[2]) or ("+file" if "@" in word[:40] else ""))
        elif low in _CURL_VALUE and not eq:
            i += 1
        elif not word.startswith("-"):
            dest = destination(word)
            if dest is not None:
                urls.append(dest)
        i += 1
    kind = "post" if carried or method_post else "fetch"
    what = "+exec" if "+exec" in carried else ("+file" if "+file" in carried else "")
    for url in urls:
        if SUBSTITUTION.search(url):
            what = "+exec"
        url_facts(url, kind, out, what)


def socket_command(program: str, args: list[str], out: list[Fact]) -> None:
    """`nc`, `socat`, `openssl s_client`: the host and port they connect to, or the port they listen on."""
    if program == "openssl" and (not args or args[0] != "s_client"):
        return
    listen = any(a.startswith("-") and not a.startswith("--") and "l" in a for a in args) or any(
        "listen" in a.lower() for a in args
    )
    operands = [a for a in args if not a.startswith("-")]
    if program == "socat":
        for a in operands:
            m = re.match(r"(?i)(?:tcp|udp|tcp4|tcp6|udp4|ssl|openssl)[^:]*:([^:,]+):(\d+)", a)
            if m:
                out.append((HOSTS, m.group(1).lower()))
                out.append((SINKS, f"socket {m.group(1).lower()}:{m.group(2)}"))
            elif re.match(r"(?i)(?:tcp|udp)[46]?-listen:", a):
                out.append((SINKS, f"listen {a.partition(':')[2].partition(',')[0]}"))
        return
    if listen:
        port = next((a for a in operands if a.isdigit()), "")
        port = port or next((a[2:] for a in args if a.startswith("-") and a[-4:].isdigit()), "")
        out.append((SINKS, f"listen {port or '?'}"))
        return
    if program == "openssl":
        # `openssl s_client -connect host:443`: a TLS handshake by hand (a certificate's dates, a cipher); on
        # another port or `-quiet` (a shell's pipe), a socket
        target = next((b for a, b in pairwise(args) if a == "-connect"), "")
        host, _, port = target.rpartition(":") if ":" in target else (target, "", "")
        if host:
            out.append((HOSTS, host.lower()))
            kind = "tls" if port == "443" and "-quiet" not in args else "socket"
            out.append((SINKS, f"{kind} {host.lower()}:{port or '?'}"))
        return
    host = next((a for a in operands if not a.isdigit()), "")
    port = next((a for a in operands if a.isdigit()), "")
    if host:
        out.append((HOSTS, host.lower()))
        probe = port and any(
            a.startswith("-") and not a.startswith("--") and "z" in a for a in args)
        # `nc -zv db 5432`: is the port open? Nothing is sent (a range of ports is a scan, and a socket)
        out.append((SINKS, f"{'probe' if probe else 'socket'} {host.lower()}:{port or '?'}"))


def remote_command(program: str, args: list[str], out: list[Fact]) -> None:
    """`ssh`, `scp`, `rsync`: the hosts they reach, and the local files a copy uploads."""
    operands = [a for a in args if not a.startswith("-")]
    remote = [(i, destination(a)) for i, a in enumerate(operands)]
    hosts = [d for _, d in remote if d is not None]
    for host in hosts:
        out.append((HOSTS, url_host(host)))
    if program in ("scp", "rsync", "sftp", "ftp", "smbclient") and hosts:
        local = [a for a, (_, d) in zip(operands, remote, strict=True) if d is None]
        uploads = remote[-1][1] is not None and bool(local)
        if program in ("ftp", "sftp") and "\n" in "".join(local):
            # a session's script on its input (`ftp h <<< $'user x\nput /etc/passwd'`): the files it puts
            local = _put_files(local)
            uploads = bool(local)
        for path in local:
            out.append((FILES, home(path)))
        # what a copy uploads is judged by the file rules (`scp ~/.ssh/id_rsa`); a project's files to a
        # host the user names (`scp dist.tgz deploy@web:/srv`) are an upload asked about, not refused
        out.append((SINKS, f"{'upload' if uploads else 'remote'} {url_host(hosts[-1])}"))
    elif hosts:
        out.append((SINKS, f"remote {url_host(hosts[0])}"))


def _put_files(scripts: list[str]) -> list[str]:
    """The local files an ftp or sftp session's script sends (`put F`, `mput F`, `append F`)."""
    out: list[str] = []
    for script in scripts:
        for line in script.splitlines():
            words = line.split()
            if len(words) > 1 and words[0].lower() in ("put", "mput", "append", "send"):
                out.append(words[1])
    return out


def lookup_command(args: list[str], out: list[Fact]) -> None:
    """`dig`, `nslookup`, `ping`: the names they look up, a DNS sink when a name carries data."""
    for a in args:
        if a.startswith("-") or a.startswith("@") or a.isdigit():
            continue
        host = url_host(a)
        if "." in host or "$(" in host:
            out.append((HOSTS, host))
            if dns_shaped(host):
                out.append((SINKS, f"dns{'+exec' if SUBSTITUTION.search(host) else ''} {host}"))


__all__ = [
    "BARE_URL",
    "DEV_TCP",
    "EMAIL",
    "HTTP",
    "LOOKUP",
    "NETWORK_PROGRAMS",
    "REMOTE",
    "SOCKET",
    "SUBSTITUTION",
    "URL",
    "destination",
    "dns_shaped",
    "http_command",
    "lookup_command",
    "remote_command",
    "socket_command",
    "url_facts",
    "url_host",
]
