"""The gateway's bearer token: from the environment, a file, or generated once.

Never from the command line: argv is readable by every user on the machine.
A generated token is written to `<home>/run/gateway.token` with mode 0600
(directory 0700) and reused on later starts. Named tokens
(`<home>/run/tokens/<identity>.token`) stand for agents; a running gateway
follows that folder (`NamedTokenWatch`).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from pathlib import Path

from mcpwall._secretfile import create_once
from mcpwall.errors import ConfigError

TOKEN_ENV = "MCPWALL_TOKEN"
log = logging.getLogger("mcpwall.auth")


def token_path(home: Path) -> Path:
    return home / "run" / "gateway.token"


def write_secret(path: Path, value: str) -> None:
    """Create a file readable only by this user, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    os.replace(tmp, path)


def read_secret(path: Path) -> str:
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"cannot read token file {path}: {exc}") from exc
    if not value:
        raise ConfigError(f"token file {path} is empty")
    mode = path.stat().st_mode & 0o077
    if mode:
        raise ConfigError(f"token file {path} is readable by others (mode {oct(path.stat().st_mode & 0o777)}); "
                          f"run: chmod 600 {path}")
    return value


_IDENTITY = re.compile(r"^[A-Za-z0-9_.:-]+$")


def load_named_tokens(home: Path) -> dict[str, str]:
    """Tokens that stand for an agent identity: `<home>/run/tokens/<identity>.token` (mode 0600).

    A request with such a token is that agent (RBAC, policy `agents:`), whatever
    `x-agent-id` header it sends.
    """
    folder = home / "run" / "tokens"
    out: dict[str, str] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.token")):
        identity = path.stem
        if not _IDENTITY.match(identity):
            raise ConfigError(f"token file {path}: the name must be an identity ([A-Za-z0-9_.:-]+)")
        out[identity] = read_secret(path)
    return out


class NamedTokenWatch:
    """The named tokens of a running gateway, re-read when `<home>/run/tokens/` changes.

    `init` creates a client's token while the gateway may be running, and
    `uninstall` (or the operator, with `rm`) deletes one to revoke it: both
    take effect on the next request, not at the next restart. `poll()` looks
    at the folder at most once per `interval_s` (a scandir and a stat per
    file) and returns the new identity -> token map when anything changed.
    A file that cannot be used (readable by others, a bad name, empty) is left
    out with a warning, so the token it held stops working.
    """

    def __init__(self, home: Path, interval_s: float = 1.0) -> None:
        self.folder = home / "run" / "tokens"
        self.interval_s = interval_s
        self._next = time.monotonic() + interval_s
        self._signature = self._sign()

    def _sign(self) -> tuple[tuple[str, int, int, int, int], ...]:
        try:
            found = []
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".token"):
                        st = entry.stat()
                        found.append((entry.name, st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode))
            return tuple(sorted(found))
        except OSError:
            return ()

    def poll(self) -> dict[str, str] | None:
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + self.interval_s
        signature = self._sign()
        if signature == self._signature:
            return None
        self._signature = signature
        out: dict[str, str] = {}
        for name, *_ in signature:
            path = self.folder / name
            try:
                if not _IDENTITY.match(path.stem):
                    raise ConfigError(f"token file {path}: the name must be an identity ([A-Za-z0-9_.:-]+)")
                out[path.stem] = read_secret(path)
            except ConfigError as exc:
                log.warning("named token not accepted: %s", exc)
        log.info("named tokens reloaded: %s", ", ".join(sorted(out)) or "none")
        return out


def named_token_path(home: Path, identity: str) -> Path:
    """Where the named token of `identity` lives: `<home>/run/tokens/<identity>.token`."""
    if not _IDENTITY.match(identity):
        raise ConfigError(f"not an identity for a named token: {identity!r} (use [A-Za-z0-9_.:-]+)")
    return home / "run" / "tokens" / f"{identity}.token"


def ensure_named_token(home: Path, identity: str) -> tuple[str, bool]:
    """(the named token of `identity`, whether this call created it).

    A token that exists is reused, so running `init` again gives a client the
    token it already has. A new one is random, published whole with mode 0600
    in a 0700 folder (`create_once`), and never equal to the gateway's token:
    a named token stands for an agent, which may call tools and nothing else.
    """
    path = named_token_path(home, identity)
    for folder in (home / "run", path.parent):
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    created = False
    if not path.exists():
        created = create_once(path, secrets.token_urlsafe(32))
    token = read_secret(path)
    gateway = token_path(home)
    if gateway.exists() and read_secret(gateway) == token:
        raise ConfigError(f"{path} holds the gateway's own token; delete it so a token of its own is made")
    return token, created


def load_token(home: Path, token_file: Path | None) -> tuple[str, str]:
    """(token, where it came from). Generates one on first start."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env.strip(), f"${TOKEN_ENV}"
    if token_file is not None:
        return read_secret(token_file), str(token_file)
    path = token_path(home)
    if not path.exists():
        create_once(path, secrets.token_urlsafe(32))  # another gateway may have won: its token is the one read
    return read_secret(path), str(path)


__all__ = ["TOKEN_ENV", "NamedTokenWatch", "ensure_named_token", "load_named_tokens", "load_token", "named_token_path", "read_secret",
           "token_path", "write_secret"]
