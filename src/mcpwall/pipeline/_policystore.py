"""The live policy: loaded once, swapped atomically on file change or SIGHUP.

A reload that fails (bad YAML, bad regex, a corp override) is logged with
its one-line error and the previous policy stays in force. Decisions always
see a complete compiled policy: the swap is a single attribute assignment.

A change that an agent could have made is not loaded without a person (issue
22): the policy stage reports each tools/call it allowed (`call_started`) and
its end (`call_ended`); a change of any policy file seen while such a call is
in flight, or within `GRACE_S` after it ended (a write lands before its
answer, and the watcher polls), is *held*: logged loudly, told to the
`hold_listeners` (the ledger), shown in `status()["held_reload"]`, and kept
until `load_now()` (`mcpwall policy reload`, through the admin API with the
gateway's token) or a program's own `reload()`. SIGHUP (`sighup()`) is a change
seen: it reloads when nothing could have written the file and never releases
a hold, since an agent with a shell can send a signal as easily as a person.

A call's end at the gateway is not its end at the server: a server told to
cancel (or timed out) may still run it, a stalled Node event loop seconds or
minutes later. The `writers` probes (the self-protection stage asks each
upstream for a tools/call it gave up on and the server has not answered, see
`UpstreamServer.unanswered_call`) hold a change until that call is answered, its
server has exited, or (HTTP) its timeout and a margin have passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from mcpwall.errors import PolicyError
from mcpwall.policy import CompiledPolicy, compile_policy, load_policy, load_template

log = logging.getLogger("mcpwall.policy")
#: How long after an allowed call ended a policy change is still held: its write landed before its
#: answer, and the watcher polls once a second.
GRACE_S = 2.0


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
        #: called with the held-reload record when a change is held (the ledger row)
        self.hold_listeners: list[Any] = []
        #: the change waiting for a person, or None
        self.held: dict[str, Any] | None = None
        self._inflight: dict[int, Any] = {}
        self._grace_until = 0.0
        self._grace_call = ""
        #: callables naming a call that may still write although it ended at the gateway, or None
        self.writers: list[Any] = []

    def _load(self) -> CompiledPolicy:
        if self.path is None and self.candidate is not None and self.candidate.exists():
            compiled = compile_policy(load_policy(self.candidate))
            self.path, self.candidate = self.candidate, None
            log.info("policy file %s appeared: it replaces the built-in policy", self.path)
            return compiled
        if self.path is None:
            return compile_policy(load_template(self.template))
        return compile_policy(load_policy(self.path))

    def _stat(self) -> dict[str, tuple[int, int, int, int]]:
        files = list(self.current.source.files) if self.current is not None else []
        if self.path is not None:
            files.append(str(self.path))
        elif self.candidate is not None:
            files.append(str(self.candidate))
        out = {}
        for f in files:
            with contextlib.suppress(OSError):
                st = os.stat(f)
                # ctime and inode too: `touch -r` puts an mtime back, nothing puts a ctime back
                out[f] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        return out

    # ------------------------------------------------------------------ allowed calls in flight

    def call_started(self, key: int, call: Any) -> None:
        """A tools/call the policy allowed is on its way to its server (it could write a policy file).

        `call`: its RequestContext (named in a hold by its `server` and `target`)."""
        self._inflight[key] = call

    def call_ended(self, key: int, forwarded: bool) -> None:
        """That call ended; `forwarded`: it reached its server (a later stage did not refuse it)."""
        call = self._inflight.pop(key, None)
        if call is not None and forwarded:
            self._grace_until = time.monotonic() + GRACE_S
            self._grace_call = _label(call)

    def writer_in_flight(self) -> str | None:
        """The allowed call that could have written a policy file just now, if any."""
        for call in self._inflight.values():
            return f"{_label(call)} (in flight)"
        if time.monotonic() < self._grace_until:
            return f"{self._grace_call} (ended less than {GRACE_S:g} s before)"
        for probe in self.writers:
            try:
                found = probe()
            except Exception:  # a probe that fails cannot vouch that nothing writes
                found = "a call the gateway could not account for"
            if found:
                return str(found)
        return None

    def _changed_files(self) -> list[str]:
        now = self._stat()
        return sorted(f for f in {*now, *self._mtimes} if now.get(f) != self._mtimes.get(f))

    def _hold(self, files: list[str], call: str, source: str) -> None:
        first = self.held is None
        if first:
            self.held = {"files": files, "call": call, "source": source, "since": time.time(),
                         "revision": self.current.revision}
        else:
            assert self.held is not None
            self.held["files"] = sorted({*self.held["files"], *files})
        self._mtimes = self._stat()
        log.error("POLICY RELOAD HELD: %s changed (%s) while %s could have written it; revision %s stays in "
                  "force until a person runs `mcpwall policy reload`", ", ".join(files) or "the policy file",
                  source, call, self.current.revision)
        record = dict(self.held)
        for listener in self.hold_listeners:
            with contextlib.suppress(Exception):
                listener(record)

    def seen_change(self, source: str = "file change") -> bool:
        """A change was seen (the watcher, SIGHUP): load it, unless an agent could have made it.

        True if the new policy is in force. Held (False) while a hold is in place or an allowed call
        could have written the file; a person releases it with `load_now`.
        """
        files = self._changed_files()
        if self.held is not None:
            if files:
                self._hold(files, self.held["call"], source)
            else:
                log.error("policy reload refused (%s): a reload is held since %s changed while %s could have "
                          "written it; run `mcpwall policy reload`", source, ", ".join(self.held["files"]),
                          self.held["call"])
            return False
        call = self.writer_in_flight()
        if call is not None and files:
            self._hold(files, call, source)
            return False
        return self._reload_now()

    def sighup(self) -> None:
        """SIGHUP: a change seen. Anyone with a shell can send it, so it never releases a hold."""
        self.seen_change("SIGHUP")

    def load_now(self, by: str = "a person") -> bool:
        """Load the policy files as they are now, releasing a held reload (`mcpwall policy reload`)."""
        held = self.held
        log.warning("policy reload requested by %s%s", by,
                    f" (releases the reload held since {', '.join(held['files'])} changed)" if held else "")
        return self.reload()

    def reload(self) -> bool:
        """Re-read the policy now, releasing any held reload (a person's or the program's own act);
        True if the new one is in force."""
        self.held = None
        return self._reload_now()

    def _reload_now(self) -> bool:
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
        """Poll the policy file (and its extends/corp files) for changes; SIGHUP is a change seen.

        SIGHUP is bound to `sighup`, not `reload`: a signal (which an agent with a shell can send)
        never loads a change an allowed call could have made, nor releases a held reload.
        """
        hup = getattr(signal, "SIGHUP", None)  # none on Windows
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            if hup is not None:
                asyncio.get_running_loop().add_signal_handler(hup, self.sighup)
        if (self.path is None and self.candidate is None) or self._watch_task is not None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                if self.changed():
                    self.seen_change("file change")

        self._watch_task = asyncio.create_task(loop())

    def stop(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None

    def status(self) -> dict[str, Any]:
        c = self.current
        return {"path": str(self.path) if self.path else f"<builtin:{self.template}>", "revision": c.revision,
                "mode": c.mode, "rules": len(c.all_rules), "reloads": self.reloads,
                "loaded_at": self.loaded_at, "last_error": self.last_error, "held_reload": self.held}


def _label(call: Any) -> str:
    return f"{getattr(call, 'server', None)}/{getattr(call, 'target', call)}"


__all__ = ["GRACE_S", "PolicyStore"]
