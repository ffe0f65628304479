"""Telling secrets from names, and keeping them out of everything we print.

Configs carry credentials: `env` values, `headers`, tokens in arguments
(`--api-key sk-...`) and in URLs (`https://user:pass@host`, `?token=`).
Reports name the key that holds a secret and never its value. Three layers
make sure of it:

1. renderers show env and header *keys* only;
2. command lines and URLs pass through `redact_args` / `redact_url`;
3. every rendered text passes through a `Scrubber` built from every secret
   value the scan saw, so a value that leaks through some other field (a
   server name, an error message) is masked anyway.

Key names are split into words (`GITHUB_TOKEN`, `apiKey`, `x-api-key`) so
that `GITHUB_TOKEN` is recognised where seatbelt's `\\bTOKEN\\b` missed it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

MASK = "***"

_SECRET_WORDS = frozenset({
    "token", "tokens", "secret", "secrets", "key", "keys", "apikey", "password", "passwd", "passphrase",
    "pass", "auth", "authorization", "credential", "credentials", "private", "cookie", "bearer", "pat",
    "signature", "sig", "dsn", "jwt", "session", "sessionid", "accesskey", "secretkey", "privatekey",
    "clientsecret",
})
#: Whole names that are not secrets although a word matches (PATH contains no word, but e.g. KEY_PATH does).
_NOT_SECRET = frozenset({"keyboard", "keymap", "keys_path", "key_path", "key_file_path", "public_key",
                         "publickey", "token_url", "auth_url", "authority", "author"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

#: Token formats of the common providers, and generic high-entropy strings.
_TOKEN_PATTERNS = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|sk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}|rk_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}"
    r"|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)
_HIGH_ENTROPY = re.compile(r"^[A-Za-z0-9+/_=.-]{32,}$")

#: One reference to a secret kept elsewhere: `${VAR}`, `${env:VAR}`, `${input:id}`, `$VAR`, PowerShell's
#: `$env:VAR`, `%VAR%`, `{env:VAR}` (opencode) and `{{VAR}}` (templates).
_REF = (r"(?:\$\{[^}]*\}|\$env:[A-Za-z_][A-Za-z0-9_]*|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%"
        r"|\{env:[^}]+\}|\{\{[^}]*\}\})")
#: Values that refer to a secret kept elsewhere, not secrets themselves: one or more references (`${U}:${P}`),
#: maybe quoted, maybe after an auth scheme (`Bearer ${env:T}`) or a name (`session=${env:S}`, a cookie).
_REFERENCE = re.compile(
    rf"^\s*(['\"]?)(?:(?:Bearer|Basic|token)\s+|[A-Za-z_][\w.-]*=)?{_REF}(?:[:;,]?\s*{_REF})*\1\s*$", re.I)
_PLACEHOLDER = re.compile(r"^\s*(?:<[^>]*>|\[[^\]]*\]|your[_ -].*|x{3,}|\*{3,}|changeme|placeholder|todo|none|null"
                          r"|true|false|yes|no|on|off|\d{1,6})\s*$", re.I)


def words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


def is_secret_name(name: str) -> bool:
    """True for key names that hold credentials: GITHUB_TOKEN, apiKey, x-api-key, DB_PASSWORD..."""
    lowered = name.lower()
    if lowered in _NOT_SECRET:
        return False
    ws = words(name)
    if any(w in _SECRET_WORDS for w in ws):
        return not any("_".join(ws[i:i + 2]) in _NOT_SECRET for i in range(len(ws)))
    compact = re.sub(r"[^a-z0-9]", "", lowered)
    return compact.endswith(("apikey", "token", "secret", "password", "accesskey", "privatekey"))


def is_reference(value: str) -> bool:
    """`${VAR}`, `$VAR`, `%VAR%`, `{env:VAR}`, `${input:id}`: the secret lives elsewhere.

    That is the practice every client documents, so it is never flagged as a secret in a config
    (`inline-secret`, `secret-in-args`), in a URL's user info or query either.
    """
    return bool(_REFERENCE.match(value))


def looks_like_token(value: str) -> bool:
    """A string that is a credential by its form, whatever key holds it."""
    if _TOKEN_PATTERNS.search(value):
        return True
    v = value.strip()
    if v.lower().startswith(("bearer ", "basic ", "token ")):
        rest = v.split(None, 1)[1] if " " in v else ""
        return bool(rest) and not is_reference(rest)
    if _HIGH_ENTROPY.match(v) and not v.startswith(("/", "./", "http")):
        classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
        return classes >= 3 or bool(re.fullmatch(r"[0-9a-f]{32,}", v))
    return False


def is_inline_secret(key: str, value: str) -> bool:
    """A credential written into the config itself (not a reference, not a placeholder)."""
    if not isinstance(value, str) or not value.strip() or is_reference(value):
        return False
    if looks_like_token(value):
        return True
    return is_secret_name(key) and not _PLACEHOLDER.match(value)


_FLAG = re.compile(r"^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)(=(.*))?$", re.S)


def secret_args(args: Iterable[str]) -> list[int]:
    """Indexes of arguments that hold a secret: after `--token`, in `--api-key=...`, or token-shaped."""
    out: list[int] = []
    args = list(args)
    for i, arg in enumerate(args):
        words = _words(arg) if not arg.startswith("-") else [arg]
        if len(words) > 1:
            # One argument holding a command line (`sh -c "srv --token X"`): its own words count.
            if secret_args(words):
                out.append(i)
            continue
        m = _FLAG.match(arg)
        if m and m.group(2) is not None:
            if is_secret_name(m.group(1).lstrip("-")) and m.group(3) and not is_reference(m.group(3)):
                out.append(i)
                continue
        elif m and is_secret_name(m.group(1).lstrip("-")) and i + 1 < len(args):
            nxt = args[i + 1]
            if not nxt.startswith("-") and not is_reference(nxt) and i + 1 not in out:
                out.append(i + 1)
            continue
        if i in out:
            continue
        if looks_like_token(arg) or _url_has_secret(arg) or _env_assignment_secret(arg):
            out.append(i)
    return sorted(set(out))


def _env_assignment_secret(arg: str) -> bool:
    """`GITHUB_TOKEN=ghp_...` passed as an argument (docker -e, env)."""
    name, sep, value = arg.partition("=")
    return bool(sep) and bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)) and is_inline_secret(name, value)


def _url_has_secret(value: str) -> bool:
    return "://" in value and redact_url(value) != value


def _words(command: str) -> list[str]:
    """The words of a command line; never the same one text back when it has any whitespace
    (shlex splits on ASCII blanks only: `srv\u00a0--token X` is split by `str.split` instead)."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: read it as plain words
        return command.split()
    return command.split() if len(words) == 1 and len(command.split()) > 1 else words


def inner_secrets(arg: str) -> list[str]:
    """The secret words of one argument holding a command line (and their values after `=`)."""
    words = _words(arg)
    out = []
    for i in secret_args(words):
        out.append(words[i])
        if "=" in words[i]:
            out.append(words[i].split("=", 1)[1])
    return out


def redact_arg(arg: str) -> str:
    words = _words(arg) if not arg.startswith("-") else [arg]  # `--password=a b c` is one value
    if len(words) > 1:
        hidden = set(secret_args(words))
        return " ".join(redact_arg(w) if j in hidden else w for j, w in enumerate(words))
    m = _FLAG.match(arg)
    if m and m.group(2) is not None and is_secret_name(m.group(1).lstrip("-")):
        return f"{m.group(1)}={MASK}"
    name, sep, value = arg.partition("=")
    if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and is_inline_secret(name, value):
        return f"{name}={MASK}"
    if "://" in arg:
        redacted = redact_url(arg)
        if redacted != arg:
            return redacted
    return MASK


def redact_args(args: Iterable[str]) -> list[str]:
    args = list(args)
    hidden = set(secret_args(args))
    return [redact_arg(a) if i in hidden else a for i, a in enumerate(args)]


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^?#]*)@")


def url_password(url: str) -> str | None:
    """The password (or token-shaped user) of a URL's user info, read up to the last '@' before the query.

    Read by hand rather than with urlsplit: `https://u:pa/ss@host` splits the user info at the '/'.
    """
    m = _USERINFO.match(url)
    if not m or is_reference(m.group(2)):  # `${env:USER}:${env:PASS}@`: both live elsewhere
        return None
    user, colon, password = m.group(2).partition(":")
    if colon and password:
        return None if is_reference(password) else password
    return user if looks_like_token(user) else None


def redact_url(url: str) -> str:
    """The URL without a password in its user info and without secret query values."""
    password = url_password(url)
    if password:
        m = _USERINFO.match(url)
        assert m is not None
        user = m.group(2).partition(":")[0] if m.group(2) != password else MASK
        url = f"{m.group(1)}{user}:{MASK}@{url[m.end():]}" if user != MASK else f"{m.group(1)}{MASK}@{url[m.end():]}"
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK if looks_like_token(url) else url
    netloc = parts.netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)

        def hidden(k: str, v: str) -> bool:
            return (is_secret_name(k) or looks_like_token(v)) and not is_reference(v)

        if any(hidden(k, v) for k, v in pairs):
            query = urlencode([(k, MASK if hidden(k, v) else v) for k, v in pairs], safe="*", quote_via=quote)
    path = parts.path
    if _TOKEN_PATTERNS.search(path):
        path = _TOKEN_PATTERNS.sub(MASK, path)
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


#: What may stand next to a value inside a name, an id or a path (`srv-secret-env`, `inline-secret`,
#: `/opt/secret/bin`): a word-like value touching one of these is part of that name, not the value.
_NAME_CHARS = r"[\w.\-/]"


class Scrubber:
    """Masks every known secret value in a text: the last line of defence of every renderer.

    A value shaped like a credential (`looks_like_token`) is masked wherever it occurs: no name
    holds one by chance. A word-like value (`secret`, `hunter22`) is masked only where it stands
    as a value, not inside a longer name, rule id or path: masking it everywhere turned the
    server `srv-secret-env-names` into `srv-***-env-names` (issue 29).
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        keep = sorted({v for v in values if isinstance(v, str) and len(v.strip()) >= 5}, key=len, reverse=True)
        alternatives = [re.escape(v) if looks_like_token(v) else f"(?<!{_NAME_CHARS}){re.escape(v)}(?!{_NAME_CHARS})"
                        for v in keep]
        self._pattern = re.compile("|".join(alternatives)) if alternatives else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(MASK, text)


__all__ = [
    "MASK",
    "Scrubber",
    "inner_secrets",
    "is_inline_secret",
    "is_reference",
    "is_secret_name",
    "looks_like_token",
    "redact_arg",
    "redact_args",
    "redact_url",
    "secret_args",
    "url_password",
    "words",
]
