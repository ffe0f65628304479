"""Honeytokens: decoy credentials planted in responses, and the tripwire that sees them come back.

A decoy set is an AWS key pair, a GitHub token and a PostgreSQL URL to a
`.internal` host, generated in the real formats (the GitHub token carries its
CRC32 checksum, the AWS key id uses the base32 alphabet) so that neither a
person nor an agent can tell them from real ones. Nobody legitimate ever holds
them, so any later request that carries one (or a part of one: the key id, the
secret, the password, the decoy host) is an agent acting on planted data:
blocked, and an alert.

Every part is registered in the `StateStore` under namespace "honeytokens",
keyed by its SHA-256 (the ledger implements the store durably, so detection
survives a restart); the registry keeps an in-memory index so the tripwire
costs a few hash lookups per request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from mcpwall.security._json import decodings, strings
from mcpwall.state import StateStore

NAMESPACE = "honeytokens"
TYPES = ("aws", "github", "database")

_B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_AWS_ID = string.ascii_uppercase + "234567"
_B64 = string.ascii_letters + string.digits + "+/"
_ALNUM = string.ascii_letters + string.digits


def _rand(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = _B62[r] + out
    return out.rjust(width, "0")


def github_token() -> str:
    """A `ghp_` token with the checksum GitHub's scanners verify (CRC32 of the body, base62)."""
    body = _rand(_ALNUM, 30)
    return f"ghp_{body}{_base62(zlib.crc32(body.encode()), 6)}"


@dataclass(frozen=True, slots=True)
class Decoy:
    """One decoy credential: what to show, and the parts that give it away when reused."""

    type: str
    text: str
    parts: tuple[tuple[str, str], ...]  # (part name, value)


def generate(kind: str) -> Decoy:
    if kind == "aws":
        key_id = "AKIA" + _rand(_AWS_ID, 16)
        secret = _rand(_B64, 40)
        text = f"aws_access_key_id = {key_id}\naws_secret_access_key = {secret}"
        return Decoy("aws", text, (("aws-access-key", key_id), ("aws-secret-key", secret)))
    if kind == "github":
        token = github_token()
        return Decoy("github", f"GITHUB_TOKEN={token}", (("github-token", token),))
    if kind == "database":
        user = secrets.choice(("svc_backup", "app_rw", "etl_loader", "reporting"))
        password = _rand(_ALNUM, 20)
        host = f"{secrets.choice(('pg', 'db', 'sql'))}-{secrets.token_hex(4)}.{secrets.choice(('prod', 'corp', 'db'))}.internal"
        url = f"postgresql://{user}:{password}@{host}:5432/{secrets.choice(('main', 'billing', 'customers'))}"
        return Decoy("database", f"DATABASE_URL={url}", (("db-url", url), ("db-password", password),
                                                         ("db-host", host)))
    raise ValueError(f"unknown honeytoken type {kind!r}; choose from {', '.join(TYPES)}")


def render(decoys: Iterable[Decoy]) -> str:
    """The decoys as a block an agent would take for a stray credentials file."""
    lines = ["", "# local credentials (do not commit)"]
    lines.extend(d.text for d in decoys)
    return "\n".join(lines) + "\n"


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Hit:
    """A decoy part found in a request."""

    part: str
    type: str
    path: str
    record: dict[str, Any]

    def alert(self) -> dict[str, Any]:
        """The alert for the ledger and notifications (never the decoy value itself)."""
        return {"alert": True, "part": self.part, "type": self.type, "path": self.path,
                "planted_server": self.record.get("server"), "planted_session": self.record.get("session"),
                "planted_tool": self.record.get("tool"), "planted_at": self.record.get("planted_at")}


_CANDIDATE = re.compile(r"[A-Za-z0-9_+/.-]{12,}")
_SPLIT = re.compile(r"[=:@/,;'\"\s]+")


def candidates(text: str, depth: int = 0) -> Iterator[str]:
    """Substrings of `text` that could be a decoy part (whole runs and their pieces), decoded too."""
    for m in _CANDIDATE.finditer(text):
        run = m.group(0)
        yield run
        for piece in _SPLIT.split(run):
            if len(piece) >= 12 and piece != run:
                yield piece
        if "." in run:  # a host followed by punctuation
            yield run.rstrip(".")
    if "://" in text:
        for m in re.finditer(r"[a-z][a-z0-9+.-]*://[^\s\"'<>]+", text):
            url = m.group(0)
            yield url
            yield url.rstrip(".,;)")
            userinfo, _, rest = url.partition("://")[2].partition("@")
            if rest:
                yield userinfo.partition(":")[2]
                yield rest.split("/", 1)[0].rsplit(":", 1)[0]
    if depth == 0:
        for decoded in decodings(text):
            yield from candidates(decoded, 1)


class Registry:
    """Planted decoys: written through to a StateStore, indexed in memory by digest."""

    def __init__(self, store: StateStore | None = None) -> None:
        self.store = store
        self._index: dict[str, dict[str, Any]] = {}
        #: (session, server) -> decoys already planted there (re-shown, not re-generated)
        self._planted: dict[tuple[str, str], tuple[Decoy, ...]] = {}
        self.planted = 0
        self.detected = 0
        self.loaded = False

    def load(self, store: StateStore | None = None) -> int:
        """Read every decoy the store remembers (after a restart)."""
        if store is not None:
            self.store = store
        self.loaded = True
        if self.store is None:
            return 0
        for key, record in self.store.all_state(NAMESPACE).items():
            self._index[key] = record
        return len(self._index)

    def decoys_for(self, session: str, server: str, tool: str, types: Iterable[str]) -> tuple[Decoy, ...]:
        """The decoys to show this session for this server, generating and registering them once."""
        key = (session, server)
        known = self._planted.get(key)
        if known is not None:
            return known
        decoys = tuple(generate(t) for t in types)
        now = time.time()
        for decoy in decoys:
            for part, value in decoy.parts:
                record = {"part": part, "type": decoy.type, "server": server, "session": session,
                          "tool": tool, "planted_at": now}
                h = digest(value)
                self._index[h] = record
                if self.store is not None:
                    self.store.put_state(NAMESPACE, h, record)
        if len(self._planted) > 50_000:
            self._planted.clear()
        self._planted[key] = decoys
        self.planted += sum(len(d.parts) for d in decoys)
        return decoys

    def forget_session(self, session: str) -> None:
        for key in [k for k in self._planted if k[0] == session]:
            del self._planted[key]

    def find(self, value: Any) -> list[Hit]:
        """Every decoy part carried anywhere in `value` (a request's params)."""
        if not self._index:
            return []
        hits: list[Hit] = []
        for path, _, text in strings(value):
            if len(text) < 12:
                continue
            for candidate in candidates(text):
                record = self._index.get(digest(candidate))
                if record is not None:
                    hits.append(Hit(str(record.get("part")), str(record.get("type")), path, record))
                    break
        if hits:
            self.detected += len(hits)
        return hits

    def __len__(self) -> int:
        return len(self._index)


__all__ = ["NAMESPACE", "TYPES", "Decoy", "Hit", "Registry", "candidates", "digest", "generate", "github_token",
           "render"]
