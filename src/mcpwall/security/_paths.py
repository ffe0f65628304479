"""Which paths are sensitive, and which argument values are paths at all.

Shared by path safety (schema stage), the attack-chain and toxic-flow tracker
(a read of one of these is "private data") and the judge. Paths are matched in
every spelling the policy engine derives (`mcpwall.policy.forms`: decoded,
collapsed, `~` expanded), so `%2Fetc%2Fshadow` and `~/.ssh/../.ssh/id_rsa` are
seen for what they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from mcpwall.policy import forms
from mcpwall.security._prefilter import Prefilter

#: (label, pattern) for files that hold credentials or private data, wherever they are.
SECRET_FILES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((label, re.compile(p, re.IGNORECASE)) for label, p in (
    ("ssh keys", r"(?:^|[/\\])\.ssh(?:[/\\]|$)"),
    ("ssh private key", r"(?:^|[/\\])id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$"),
    ("cloud credentials", r"(?:^|[/\\])\.(?:aws|azure|gcloud|oci)(?:[/\\]|$)|(?:^|[/\\])\.config[/\\]gcloud(?:[/\\]|$)"),
    ("gnupg keyring", r"(?:^|[/\\])\.gnupg(?:[/\\]|$)"),
    ("kubernetes config", r"(?:^|[/\\])\.kube[/\\]config$"),
    ("docker credentials", r"(?:^|[/\\])\.docker[/\\]config\.json$"),
    ("netrc", r"(?:^|[/\\])[._]netrc$"),
    ("git credentials", r"(?:^|[/\\])\.git-credentials$"),
    ("package registry token", r"(?:^|[/\\])\.(?:npmrc|pypirc|gem[/\\]credentials|cargo[/\\]credentials(?:\.toml)?)$"),
    ("dotenv file", r"(?:^|[/\\])\.env(?:\.(?:local|dev|development|prod|production|staging|test|secret|secrets))?$"),
    ("private key file", r"\.(?:pem|key|p12|pfx|jks|keystore|kdbx|ppk)$"),
    ("credentials file", r"(?:^|[/\\])(?:credentials|secrets?|service[-_]account)(?:\.(?:json|ya?ml|toml|ini|txt|env))?$"),
    ("vault token", r"(?:^|[/\\])\.vault-token$"),
    ("shell history", r"(?:^|[/\\])\.(?:bash|zsh|sh|python|psql|mysql)_history$"),
    ("password store", r"(?:^|[/\\])\.password-store(?:[/\\]|$)|Library[/\\]Keychains"),
    ("terraform state", r"(?:^|[/\\])terraform\.tfstate(?:\.backup)?$"),
    ("wallet", r"(?:^|[/\\])wallet\.dat$"),
    ("system password database", r"^/etc/(?:shadow|gshadow|master\.passwd|sudoers(?:\.d)?|security/opasswd)(?:/|$)"),
    ("system account list", r"^/etc/passwd$"),
    ("tls private keys", r"^/etc/ssl/private(?:/|$)"),
    ("service account secrets", r"^/(?:var/)?run/secrets(?:/|$)"),
    ("process environment", r"^/proc/(?:self|\d+|thread-self)/(?:environ|cmdline|mem|maps|fd)(?:/|$)"),
    ("root home", r"^/root(?:/|$)"),
    ("windows credential store", r"(?:^|\\)(?:config\\SAM|config\\SYSTEM|Microsoft\\Credentials|Microsoft\\Protect)"),
))

#: System locations no agent tool should touch (seatbelt's /etc/, /root/, C:\Windows and kin).
SYSTEM_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((label, re.compile(p, re.IGNORECASE)) for label, p in (
    ("system configuration", r"^/(?:private/)?etc(?:/|$)"),
    ("root home", r"^/root(?:/|$)"),
    ("kernel interface", r"^/(?:proc|sys)(?:/|$)"),
    ("device", r"^/dev/(?!(?:null|zero|stdin|stdout|stderr|tty|u?random|fd/[0-2])$)"),
    ("boot files", r"^/boot(?:/|$)"),
    ("windows system", r"^[a-z]:[\\/](?:windows|programdata)(?:[\\/]|$)|^%(?:systemroot|windir|programdata)%"),
    ("macos system", r"^/(?:System|Library/Keychains)(?:/|$)"),
))

#: Argument names whose values are paths.
PATH_KEYS = frozenset({
    "path", "paths", "file", "files", "filename", "filepath", "file_path", "filePath", "dir", "dirname",
    "directory", "folder", "source", "destination", "dest", "dst", "src", "target", "cwd", "root", "location",
    "uri", "from", "to", "output", "input", "old_path", "new_path", "oldPath", "newPath", "workdir",
    "working_directory", "workingDirectory", "repo_path", "repoPath", "notebook_path", "image_path",
})
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_WIN = re.compile(r"^[a-zA-Z]:[\\/]|^\\\\")


def looks_like_path(key: str, value: str) -> bool:
    """Is this argument value a file-system path (rather than prose, a URL or an identifier)?"""
    if not value or len(value) > 4096 or "\n" in value:
        return False
    if _URL.match(value):
        return value[:7].lower() == "file://"
    if key in PATH_KEYS or key.lower() in PATH_KEYS:
        return True
    if value.startswith(("/", "~", "./", "../", "..\\", ".\\", "$HOME", "%")) or _WIN.match(value):
        return " " not in value.strip() or value.startswith("/")
    return ("/" in value or "\\" in value) and " " not in value


_HOME = os.path.expanduser("~")


def spellings(value: str, home: str | None = None) -> tuple[str, ...]:
    """Every spelling of a path the policy engine derives, forward-slashed variants included."""
    variants, _ = forms(value, home or _HOME)
    return variants


#: one RE2 pass per spelling says which of the built-in lists' patterns can match (most: none)
_SCREENS = {id(SECRET_FILES): Prefilter([rx for _, rx in SECRET_FILES]),
            id(SYSTEM_PREFIXES): Prefilter([rx for _, rx in SYSTEM_PREFIXES])}


def sensitive(value: str, home: str | None = None, patterns: Iterable[tuple[str, re.Pattern[str]]] = SECRET_FILES
              ) -> str | None:
    """The label of the first sensitive pattern any spelling of `value` matches, else None."""
    screen = _SCREENS.get(id(patterns))
    for spelling in spellings(value, home):
        may = screen.screen(spelling) if screen is not None else None
        if may is not None and not may:
            continue
        for label, pattern in patterns:
            if (may is None or pattern in may) and pattern.search(spelling):
                return label
    return None


def system_path(value: str, home: str | None = None) -> str | None:
    return sensitive(value, home, SYSTEM_PREFIXES)


__all__ = ["PATH_KEYS", "SECRET_FILES", "SYSTEM_PREFIXES", "looks_like_path", "sensitive", "spellings",
           "system_path"]
