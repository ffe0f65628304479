"""Upstream OAuth tokens at rest: the OS keyring where one is usable, else an encrypted file.

A grant is kept per (server, principal): `mcpwall login SERVER --principal alice` stores alice's,
and only alice's requests carry it. Two principals are special: `OWNER` ("", the gateway token's
principal: the person whose machine it is, and the gateway's own requests such as the handshake)
and `SERVICE` ("*", a client-credentials grant shared by everyone).

Where the secrets go:
- the OS keyring (`keyring`), service `mcpwall:<home id>`, when its backend is a real one (not
  `fail` or `null`: a headless Linux box usually has none);
- else `<home>/run/upstream-tokens.enc` (0600), Fernet-encrypted (AES-128-CBC + HMAC-SHA256,
  from `cryptography`), whose key lives *outside* the home: `$MCPWALL_KEY_DIR`, else
  `$XDG_CONFIG_HOME/mcpwall/keys` (`~/.config/mcpwall/keys`), one key per home. An agent that
  can read the home (its backups, a synced folder) reads ciphertext only.

Beside them, `<home>/run/upstream-auth.json` lists what is held without any secret (server,
principal, kind, expiry, scope, issuer): `mcpwall status` and the dashboard read it.

Errors: `TokenStoreError` (a key or store that cannot be read or written); callers in the
gateway turn it into a failed upstream request, never into a request sent without its token.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcpwall._keydir import KEY_DIR_ENV, key_dir
from mcpwall.errors import MCPWallError

OWNER = ""
SERVICE = "*"
#: keyring backends that store nothing
_NO_KEYRING = ("keyring.backends.fail", "keyring.backends.null", "keyring.backends.chainer")


class TokenStoreError(MCPWallError):
    """The upstream token store (keyring, encrypted file or its key) cannot be used."""


@dataclass
class Grant:
    """What the gateway holds for one (server, principal): the tokens and how to renew them."""

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    #: epoch seconds, None when the server gave no lifetime
    expires_at: float | None = None
    scope: str | None = None
    #: "user" (authorization code or device code), "service" (client credentials) or "static" (a
    #: credential `init` found in a client config: sent as it was, never renewed)
    kind: str = "user"
    issuer: str | None = None
    token_endpoint: str | None = None
    #: the RFC 8707 resource the token was requested for
    resource: str | None = None
    client: dict[str, Any] = field(default_factory=dict)
    #: further headers sent with the token (a static credential's X-Api-Key...)
    headers: dict[str, str] = field(default_factory=dict)
    #: the scopes a login must ask for, set when the server answered a call `insufficient_scope`
    #: (MCP step-up: what the grant had and what the server asked for); a new login clears it
    step_up: str | None = None

    def expires_within(self, seconds: float, now: float | None = None) -> bool:
        return self.expires_at is not None and (now if now is not None else time.time()) + seconds >= self.expires_at

    def summary(self) -> dict[str, Any]:
        """The parts that are no secret (for the index, status and the dashboard)."""
        return {"kind": self.kind, "expires_at": self.expires_at, "scope": self.scope, "issuer": self.issuer,
                "refreshable": bool(self.refresh_token) or self.kind == "service",
                **({"step_up": self.step_up} if self.step_up else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grant:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if not isinstance(known.get("access_token"), str):
            raise TokenStoreError("a stored upstream grant has no access token")
        return cls(**known)


def home_id(home: Path) -> str:
    return hashlib.sha256(str(Path(home).expanduser().resolve()).encode()).hexdigest()[:16]


def _entry(server: str, principal: str) -> str:
    return f"{server}\x1f{principal}"


class _FileVault:
    """One Fernet-encrypted JSON object of entries, rewritten whole under a lock."""

    def __init__(self, home: Path) -> None:
        self.path = home / "run" / "upstream-tokens.enc"
        self.key_path = key_dir() / f"{home_id(home)}.key"
        self.description = f"encrypted file {self.path} (key in {self.key_path.parent})"

    def _fernet(self, create: bool) -> Any:
        from cryptography.fernet import Fernet

        try:
            key = self.key_path.read_bytes().strip()
        except FileNotFoundError:
            if not create:
                return None
            self.key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(Fernet.generate_key())
            key = self.key_path.read_bytes().strip()
        except OSError as exc:
            raise TokenStoreError(f"cannot read the token key {self.key_path}: {exc}") from exc
        if self.key_path.stat().st_mode & 0o077:
            raise TokenStoreError(f"the token key {self.key_path} is readable by others; run: chmod 600 "
                                  f"{self.key_path}")
        try:
            return Fernet(key)
        except ValueError as exc:
            raise TokenStoreError(f"the token key {self.key_path} is not a Fernet key") from exc

    def load(self) -> dict[str, str]:
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TokenStoreError(f"cannot read {self.path}: {exc}") from exc
        fernet = self._fernet(create=False)
        if fernet is None:
            raise TokenStoreError(f"{self.path} exists but its key {self.key_path} is gone: run mcpwall login again")
        from cryptography.fernet import InvalidToken

        try:
            data = json.loads(fernet.decrypt(blob))
        except (InvalidToken, ValueError) as exc:
            raise TokenStoreError(f"{self.path} does not decrypt with {self.key_path}") from exc
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def save(self, entries: dict[str, str]) -> None:
        fernet = self._fernet(create=True)
        _write_private(self.path, fernet.encrypt(json.dumps(entries).encode()))

    def get(self, name: str) -> str | None:
        return self.load().get(name)

    def set(self, name: str, value: str | None) -> None:
        entries = self.load()
        if value is None:
            entries.pop(name, None)
        else:
            entries[name] = value
        self.save(entries)


class _KeyringVault:
    def __init__(self, home: Path, backend: Any) -> None:
        self.service = f"mcpwall:{home_id(home)}"
        self.backend = backend
        self.description = f"OS keyring ({type(backend).__module__}.{type(backend).__name__})"

    def get(self, name: str) -> str | None:
        try:
            value = self.backend.get_password(self.service, name)
        except Exception as exc:  # keyring backends raise their own families
            raise TokenStoreError(f"the OS keyring refused a read: {exc}") from exc
        return value if isinstance(value, str) else None

    def set(self, name: str, value: str | None) -> None:
        try:
            if value is None:
                with contextlib.suppress(Exception):
                    self.backend.delete_password(self.service, name)
            else:
                self.backend.set_password(self.service, name, value)
        except Exception as exc:
            raise TokenStoreError(f"the OS keyring refused a write: {exc}") from exc


def usable_keyring() -> Any:
    """The keyring backend when it really stores secrets, else None (`MCPWALL_KEYRING=off` skips it)."""
    if os.environ.get("MCPWALL_KEYRING", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    try:
        import keyring
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    return None if type(backend).__module__.startswith(_NO_KEYRING) else backend


class TokenStore:
    """The grants of one gateway home, read and written by `mcpwall login` and the gateway."""

    def __init__(self, home: Path, *, keyring_backend: Any = "auto") -> None:
        self.home = Path(home)
        backend = usable_keyring() if keyring_backend == "auto" else keyring_backend
        self._vault: _FileVault | _KeyringVault = (_KeyringVault(self.home, backend) if backend is not None
                                                   else _FileVault(self.home))
        self.index_path = self.home / "run" / "upstream-auth.json"
        self._lock_path = self.home / "run" / ".upstream-auth.lock"
        self._cache: dict[str, tuple[tuple[int, int, int], Grant | None]] = {}
        self._index: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    @property
    def description(self) -> str:
        return self._vault.description

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self._lock_path.parent, 0o700)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _stamp(self) -> tuple[int, int, int]:
        """The index file's identity: each write replaces it (a new inode), so a change is never missed
        within one tick of the clock."""
        try:
            st = self.index_path.stat()
        except FileNotFoundError:
            return (0, 0, 0)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def get(self, server: str, principal: str) -> Grant | None:
        """The grant for exactly this principal (no fallback here: see `UpstreamAuth`)."""
        name = _entry(server, principal)
        stamp = self._stamp()
        cached = self._cache.get(name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        raw = self._vault.get(name)
        grant = Grant.from_dict(json.loads(raw)) if raw else None
        self._cache[name] = (stamp, grant)
        return grant

    def put(self, server: str, principal: str, grant: Grant) -> None:
        with self._locked():
            self._vault.set(_entry(server, principal), json.dumps(asdict(grant)))
            index = json.loads(json.dumps(self.index()))  # a copy: the cached one is shared
            index.setdefault(server, {})[principal] = grant.summary()
            self._write_index(index)
        self._cache.pop(_entry(server, principal), None)

    def delete(self, server: str, principal: str) -> bool:
        with self._locked():
            index = json.loads(json.dumps(self.index()))
            held = principal in index.get(server, {})
            self._vault.set(_entry(server, principal), None)
            index.get(server, {}).pop(principal, None)
            if not index.get(server):
                index.pop(server, None)
            self._write_index(index)
        self._cache.pop(_entry(server, principal), None)
        return held

    def index(self) -> dict[str, dict[str, dict[str, Any]]]:
        """server -> principal -> summary, no secrets. Read again only when the file changed (the gateway
        asks on every upstream request: one stat then)."""
        stamp = self._stamp()
        if self._index is not None and self._index[0] == stamp:
            return self._index[1]
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            data = {}
        index = data if isinstance(data, dict) else {}
        self._index = (stamp, index)
        return index

    def _write_index(self, index: dict[str, Any]) -> None:
        _write_private(self.index_path, json.dumps(index, indent=2, sort_keys=True).encode())
        self._index = None


def _write_private(path: Path, data: bytes) -> None:
    """Replace `path` atomically with a 0600 file holding `data`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def authorization_state(summary: dict[str, Any] | None, now: float | None = None) -> str:
    """A grant's state as `status` shows it: "none", "authorized until T", "login required", or "login
    needed for scope S" (the server asked for more than the grant holds)."""
    if summary is None:
        return "none"
    if summary.get("step_up"):
        return f"login needed for scope {summary['step_up']}"
    expires = summary.get("expires_at")
    now = time.time() if now is None else now
    if isinstance(expires, int | float) and expires <= now and not summary.get("refreshable"):
        return "login required"
    if isinstance(expires, int | float):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))
        return f"authorized until {stamp}" + (" (refreshed when due)" if summary.get("refreshable") else "")
    return "authorized"


def server_authorization(held: dict[str, dict[str, Any]] | None, last_error: str | None = None,
                         now: float | None = None) -> dict[str, Any]:
    """One upstream's authorization as `status` and the dashboard show it: the state of the grant the
    gateway's own requests use (service, else owner), and each principal's."""
    held = held or {}
    own = held.get(SERVICE) or held.get(OWNER)
    state = authorization_state(own, now)
    if last_error and "requires authorization" in last_error:
        state = "login required"
    return {"state": state, "principals": {p: authorization_state(s, now) for p, s in sorted(held.items())
                                           if p not in (OWNER, SERVICE)},
            **({"step_up": own["step_up"]} if own and own.get("step_up") else {})}


__all__ = ["KEY_DIR_ENV", "OWNER", "SERVICE", "Grant", "TokenStore", "TokenStoreError", "authorization_state", "key_dir", "server_authorization"]
