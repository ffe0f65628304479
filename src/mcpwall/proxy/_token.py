"""The gateway's bearer token: from the environment, a file, or generated once.

Never from the command line: argv is readable by every user on the machine.
A generated token is written to `<home>/run/gateway.token` with mode 0600
(directory 0700) and reused on later starts.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from mcpwall._secretfile import create_once
from mcpwall.errors import ConfigError

TOKEN_ENV = "MCPWALL_TOKEN"


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


__all__ = ["TOKEN_ENV", "ensure_named_token", "load_named_tokens", "load_token", "named_token_path", "read_secret",
           "token_path", "write_secret"]
