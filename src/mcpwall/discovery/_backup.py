"""Backups of the client configs `init` rewrites, and restoring them (`uninstall`).

Before a file is rewritten its exact bytes are copied to
`<home>/init/backups/` (directory 0700, files 0600: configs hold secrets) and
recorded in `<home>/init/manifest.json` with the SHA-256 of the file before
and after. Re-running `init` on a file adds a link to its chain. `uninstall`
restores the first backup (the file as it was before mcpwall) byte for byte,
and refuses when the file changed since mcpwall last wrote it, or changed
between two `init` runs, unless forced: restoring would lose those edits.
The manifest also lists the named client tokens init created
(`_clienttokens.py`); `uninstall` deletes each one once every file of its
client is restored (a refused file still uses it), so the gateway stops
accepting it.

Writes go to the file a symlink points at (dotfile managers link configs),
through a temporary file and `os.replace`, keeping the file's mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcpwall.errors import MCPWallError

MANIFEST_VERSION = 1


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def init_dir(home: Path) -> Path:
    return home / "init"


def manifest_path(home: Path) -> Path:
    return init_dir(home) / "manifest.json"


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace the file (the target of a symlink, if it is one) with `data` in one step."""
    real = Path(os.path.realpath(path))
    tmp = real.with_name(f".{real.name}.mcpwall-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def file_mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


@dataclass
class Manifest:
    """What init changed: file path -> chain of {backup, before, after, time, servers}, and the
    named tokens it created: identity -> {client, sha256}."""

    home: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, home: Path) -> Manifest:
        path = manifest_path(home)
        if not path.exists():
            return cls(home)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MCPWallError(f"{path}: unreadable init manifest ({exc}); restore from {init_dir(home)} by hand") from exc
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            raise MCPWallError(f"{path}: unknown manifest version")
        tokens = data.get("tokens")
        return cls(home, dict(data.get("files") or {}), dict(tokens) if isinstance(tokens, dict) else {})

    def save(self) -> None:
        directory = init_dir(self.home)
        directory.mkdir(parents=True, exist_ok=True)
        os.chmod(directory, 0o700)
        if not self.files and not self.tokens:
            with contextlib.suppress(OSError):
                manifest_path(self.home).unlink()
            return
        data: dict[str, Any] = {"version": MANIFEST_VERSION, "files": self.files}
        if self.tokens:
            data["tokens"] = self.tokens
        write_atomic(manifest_path(self.home), (json.dumps(data, indent=2) + "\n").encode(), 0o600)

    def record(self, path: Path, client: str, before: bytes, after: bytes, servers: list[str]) -> None:
        """Keep a copy of `before` and link it into the file's chain."""
        backups = init_dir(self.home) / "backups"
        backups.mkdir(parents=True, exist_ok=True)
        os.chmod(init_dir(self.home), 0o700)
        os.chmod(backups, 0o700)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = backups / f"{stamp}-{sha256(str(path).encode())[:8]}-{path.name}"
        write_atomic(backup, before, 0o600)
        entry = self.files.setdefault(str(path), {"client": client, "real": os.path.realpath(path),
                                                  "mode": file_mode(path), "chain": []})
        entry["chain"].append({"backup": str(backup), "before": sha256(before), "after": sha256(after),
                               "time": stamp, "servers": servers})


@dataclass
class Restore:
    """What uninstall did (or would do) with one file."""

    path: str
    client: str
    action: str  # restored | refused | missing-backup | would-restore | revoked | would-revoke | kept
    reason: str = ""


def _check_chain(path: Path, entry: dict[str, Any]) -> tuple[bytes | None, str]:
    """(original bytes, "") when the file can be restored safely, else (original or None, reason)."""
    chain = entry.get("chain") or []
    if not chain:
        return None, "no backup recorded"
    try:
        original = Path(chain[0]["backup"]).read_bytes()
    except OSError as exc:
        return None, f"backup {chain[0]['backup']} unreadable: {exc.strerror}"
    if sha256(original) != chain[0]["before"]:
        return None, f"backup {chain[0]['backup']} does not match its recorded checksum"
    for prev, cur in itertools.pairwise(chain):
        if cur["before"] != prev["after"]:
            return original, "the file was edited between two `mcpwall init` runs; restoring would lose those edits"
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        return original, "the file was deleted since `mcpwall init`"
    except OSError as exc:
        return original, f"cannot read the file: {exc.strerror}"
    if sha256(current) != chain[-1]["after"]:
        return original, "the file changed since `mcpwall init` rewrote it; restoring would lose those edits"
    return original, ""


def uninstall(home: Path, *, force: bool = False, dry_run: bool = False) -> list[Restore]:
    """Restore every file init rewrote; refuse (per file) those changed since, unless `force`."""
    manifest = Manifest.load(home)
    out: list[Restore] = []
    for path_str, entry in list(manifest.files.items()):
        path = Path(path_str)
        original, reason = _check_chain(path, entry)
        client = str(entry.get("client", ""))
        if original is None:
            out.append(Restore(path_str, client, "missing-backup", reason))
            continue
        if reason and not force:
            out.append(Restore(path_str, client, "refused", reason))
            continue
        if dry_run:
            out.append(Restore(path_str, client, "would-restore", reason))
            continue
        target = Path(entry.get("real") or path_str)
        if not target.parent.exists():
            target = path
        write_atomic(target, original, entry.get("mode") or file_mode(target))
        for link in entry.get("chain", []):
            with contextlib.suppress(OSError):
                Path(link["backup"]).unlink()
        del manifest.files[path_str]
        out.append(Restore(path_str, client, "restored", reason))
    out += _revoke_tokens(manifest, dry_run=dry_run)
    if not dry_run:
        manifest.save()
    return out


def _revoke_tokens(manifest: Manifest, *, dry_run: bool) -> list[Restore]:
    """Delete the named tokens init created whose client no longer has a rewritten file."""
    out: list[Restore] = []
    in_use = {str(entry.get("client", "")) for entry in manifest.files.values()}
    for identity, info in list(manifest.tokens.items()):
        client = str(info.get("client", ""))
        path = manifest.home / "run" / "tokens" / f"{identity}.token"
        if client in in_use:
            continue  # a file init rewrote (and could not restore) still hands it to its client
        if dry_run:
            out.append(Restore(str(path), client, "would-revoke"))
            continue
        try:
            current = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            current = None
        except OSError as exc:
            out.append(Restore(str(path), client, "kept", f"cannot read it: {exc.strerror}"))
            continue
        if current is not None and sha256(current.encode()) != info.get("sha256"):
            out.append(Restore(str(path), client, "kept", "replaced since init created it; delete it by hand"))
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            out.append(Restore(str(path), client, "revoked"))
        del manifest.tokens[identity]
    return out


__all__ = ["Manifest", "Restore", "file_mode", "init_dir", "manifest_path", "sha256", "uninstall", "write_atomic"]
