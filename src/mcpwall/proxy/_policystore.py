"""The live policy: loaded once, swapped atomically on file change or SIGHUP.

A reload that fails (bad YAML, bad regex, a corp override) is logged with
its one-line error and the previous policy stays in force. Decisions always
see a complete compiled policy: the swap is a single attribute assignment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from mcpwall.errors import PolicyError
from mcpwall.policy import CompiledPolicy, compile_policy, load_policy, load_template

log = logging.getLogger("mcpwall.policy")


class PolicyStore:
    """Holds the compiled policy a gateway decides with."""

    def __init__(self, path: Path | None, template: str = "default", *, candidate: Path | None = None) -> None:
        self.path = path
        self.template = template
        #: with no policy file yet, the file that takes over from the built-in policy once it
        #: appears (`<home>/policy.yaml`): a user who writes it expects it in force, as on edits
        self.candidate = candidate if path is None else None
        self.current: CompiledPolicy = self._load()
        self.loaded_at = time.time()
        self.reloads = 0
        self.last_error: str | None = None
        self._mtimes = self._stat()
        self._watch_task: asyncio.Task[None] | None = None
        self.listeners: list[Any] = []

    def _load(self) -> CompiledPolicy:
        if self.path is None and self.candidate is not None and self.candidate.exists():
            compiled = compile_policy(load_policy(self.candidate))
            self.path, self.candidate = self.candidate, None
            log.info("policy file %s appeared: it replaces the built-in policy", self.path)
            return compiled
        if self.path is None:
            return compile_policy(load_template(self.template))
        return compile_policy(load_policy(self.path))

    def _stat(self) -> dict[str, float]:
        files = list(self.current.source.files) if self.current is not None else []
        if self.path is not None:
            files.append(str(self.path))
        elif self.candidate is not None:
            files.append(str(self.candidate))
        out = {}
        for f in files:
            with contextlib.suppress(OSError):
                out[f] = os.stat(f).st_mtime
        return out

    def reload(self) -> bool:
        """Re-read the policy; True if the new one is in force."""
        try:
            fresh = self._load()
        except PolicyError as exc:
            self.last_error = str(exc)
            log.error("policy reload refused, keeping revision %s: %s", self.current.revision, exc)
            self._mtimes = self._stat()
            return False
        old = self.current.revision
        self.current = fresh
        self.reloads += 1
        self.loaded_at = time.time()
        self.last_error = None
        self._mtimes = self._stat()
        log.info("policy reloaded: revision %s -> %s (%d rules)", old, fresh.revision, len(fresh.all_rules))
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener(fresh)
        return True

    def set(self, compiled: CompiledPolicy) -> None:
        """Install a policy built in memory (admin API rule changes)."""
        self.current = compiled
        self.reloads += 1
        self.loaded_at = time.time()
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener(compiled)

    def changed(self) -> bool:
        return self._stat() != self._mtimes

    def watch(self, interval: float = 1.0) -> None:
        """Poll the policy file (and its extends/corp files) for changes."""
        if (self.path is None and self.candidate is None) or self._watch_task is not None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                if self.changed():
                    self.reload()

        self._watch_task = asyncio.create_task(loop())

    def stop(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None

    def status(self) -> dict[str, Any]:
        c = self.current
        return {"path": str(self.path) if self.path else f"<builtin:{self.template}>", "revision": c.revision,
                "mode": c.mode, "rules": len(c.all_rules), "reloads": self.reloads,
                "loaded_at": self.loaded_at, "last_error": self.last_error}


__all__ = ["PolicyStore"]
