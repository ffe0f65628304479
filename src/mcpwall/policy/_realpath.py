"""`os.path.realpath` with a short-lived cache, resolved one directory at a time.

`prepare` resolves the symlinks of every absolute path an argument names (a rule for `/etc` must
see `/workspace/link-to-etc/passwd`), and the gateway's self-protection does the same for its own
files. Symlinks change rarely and calls repeat often, so answers are kept for `ttl` seconds (2).

`os.path.realpath` is Python in CPython 3.11: it calls `lstat` on every component, `/a/b/c/d.py`
four times, and all the paths of a session expire together, two seconds after they were first
seen. In bench/policy_eval.py's stream (4,000 paths under a few dozen directories) that was 3,600
resolutions at once, 8% of a pass, and a gateway pays the same every two seconds. Here a path is
its parent's real path (cached like any other) plus its last component, whose one `lstat` says
whether it is a link: only then is the path handed to `os.path.realpath`. The components are
walked as `realpath` walks them, left to right, so the answer is its answer (tests/policy/
test_realpath_cache.py compares the two on trees of links, loops, `..` and missing parts); the
last component of `.`, `..` or nothing, a NUL or a very deep path go to `os.path.realpath` whole.

An answer is never older than `ttl`: a path's entry carries the time of the oldest answer it was
built from (its parent's), so it expires with it.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Final

#: Deeper paths are resolved by `os.path.realpath` whole (one directory at a time is a recursion).
_MAX_DEPTH: Final = 64


class CachedRealpath:
    """`os.path.realpath(path)`, each answer kept for `ttl` seconds (at most `size` of them)."""

    def __init__(self, ttl: float = 2.0, size: int = 32768, shared: bool = True) -> None:
        self._ttl = ttl
        self._size = size
        self._cache: dict[str, tuple[float, str]] = {}
        if shared:  # one of the process's long-lived caches (the policy engine's): see forget_all
            _SHARED.append(self)

    def __call__(self, path: str) -> str:
        return self._entry(path, time.monotonic())[1]

    def forget(self) -> None:
        """Drop every answer: a call that may have moved or replaced files has run."""
        self._cache.clear()

    def _entry(self, path: str, now: float) -> tuple[float, str]:
        """(when the oldest answer it relies on was found, the real path)."""
        hit = self._cache.get(path)
        if hit is not None and now - hit[0] < self._ttl:
            return hit
        head, _, name = path.rpartition("/")
        if head and name and name != "." and name != ".." and "\x00" not in path \
                and path.count("/") <= _MAX_DEPTH:
            since, parent = self._entry(head, now)
            real = parent + "/" + name if parent != "/" else "/" + name
            try:
                link = stat.S_ISLNK(os.lstat(real).st_mode)
            except OSError:
                link = False  # missing, or under a file: `realpath` keeps the name as it is
            entry = (since, _realpath(real) if link else real)
        else:
            entry = (now, _realpath(path))
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[path] = entry
        return entry


_SHARED: list[CachedRealpath] = []


def forget_all() -> None:
    """Drop the answers of every shared cache: the gateway let through a call that may have moved
    or replaced files (a directory holding a symlink moved onto a path checked a moment before),
    so a path's real path may no longer be what it was less than `ttl` ago."""
    for cache in _SHARED:
        cache.forget()


def _realpath(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


__all__ = ["CachedRealpath", "forget_all"]
