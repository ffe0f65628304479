"""Secrets generated on first start (the gateway token, the ledger key): published once, and whole.

Several mcpwall processes often start together on a fresh home: a desktop client launches every
`mcpwall wrap` it is configured with at once. Each writes its candidate to a private temporary file
and hard-links it into place, so the file either appears with its whole content or the link fails
because another process won; every process then reads the one file. (Creating the file with O_EXCL
and writing it after left a moment in which the others read it empty; writing a shared temporary
name and renaming it let the last process replace a secret the first was already using.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

#: link() fails with these where the file system has no hard links (some FUSE and FAT mounts)
_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


def create_once(path: Path, value: str) -> bool:
    """Publish `value` (and a newline) as `path`, mode 0600, unless `path` exists; True if this call did."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            return _create_in_place(path, value)
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _create_in_place(path: Path, value: str) -> bool:
    """Without hard links: O_EXCL, then write (a reader may briefly see the file empty)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(value + "\n")
    return True


__all__ = ["create_once"]
