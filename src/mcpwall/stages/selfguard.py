"""The self-protection stage: no call may name the gateway's own files (issue 22, SPEC 9).

Runs just before `policy`, on every server, for tools/call and prompts/get
arguments and for the URI of resources/read|subscribe (and completion/complete):
a call whose arguments name a path of the `ProtectedSet` (see
`mcpwall.security.selfguard`) is refused with -32001 and rule id
`mcpwall.self-protection`, whatever the profile, the corp layer or the
allowlist say, and in audit mode too: an agent that could write `mode: audit`
would otherwise switch the firewall off with its first call. A tools/call that
can move, delete or replace what it names (`mutates`) may not name an ancestor
of a protected path either.

The set is built when the gateway is bound and again on every policy reload
(the `extends` chain may change); the directories a relative path may be
resolved in are computed per server at start (its `cwd`, the directories in
its arguments, its configured roots). A held policy reload is recorded in the
ledger as a `policy/reload` protocol event with this rule id.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpwall._protected import protected_set
from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.security.selfguard import RULE_ID, Finding, ServerEnv, mutates, server_env, server_programs
from mcpwall.stages._components import Components

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView

_ARGUMENTS = frozenset({"tools/call", "prompts/get"})
_PARAMS = frozenset({"resources/read", "resources/subscribe", "completion/complete"})


def server_dirs(spec: Any) -> tuple[str, ...]:
    """Where the upstream resolves a relative path: its cwd, the directories it was given, its roots.

    The directories are read as the server reads its own argv: a relative one against its cwd
    (`server-filesystem sub` run in /project allows /project/sub), `~` with the server's own
    $HOME (its `env`) as well as the gateway's."""
    out: list[str] = []
    cwd = getattr(spec, "cwd", None)
    here = os.path.abspath(os.path.expanduser(cwd)) if cwd else os.getcwd()
    out.append(here)
    env = getattr(spec, "env", None) or {}
    homes = [h for h in (env.get("HOME"), os.path.expanduser("~")) if isinstance(h, str) and h]
    for arg in [*(getattr(spec, "args", None) or ()), *(getattr(spec, "roots", None) or ())]:
        text = str(arg)
        if text.startswith("file://"):
            text = text[7:]
        if text == "~" or text.startswith("~/"):
            forms = [h + text[1:] for h in homes]
        elif text and not text.startswith("-"):
            forms = [os.path.join(here, text)]  # an absolute one stays as it is
        else:
            forms = []
        out.extend(os.path.normpath(f) for f in forms if os.path.isdir(f))
    out.append(os.getcwd())  # ProtectedSet.check adds it anyway: here it costs nothing per call
    return tuple(dict.fromkeys(out))


def _read_only(ctx: RequestContext) -> bool:
    """A tool its server marks read-only (annotations are pinned): it cannot move what a path names."""
    up = ctx.gateway.servers.get(ctx.server or "")
    tool = up.catalog.tools.get(str(ctx.params.get("name") or "")) if up is not None else None
    annotations = tool.get("annotations") if isinstance(tool, dict) else None
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


def refusal(finding: Finding, revision: str) -> Reject:
    reason = finding.reason
    return Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason,
                  {"reasons": [reason], "rule_ids": [RULE_ID], "revision": revision, "mode": "enforce",
                   "self_protection": True})


class SelfGuardStage(Stage):
    name = "selfguard"

    def __init__(self, home: Path, config: Mapping[str, Any], settings: Any = None) -> None:
        self.home = home
        self.settings = settings
        self.config = dict(config)
        self.guard = protected_set(home, (), self.config, settings)
        self.dirs: dict[str, tuple[str, ...]] = {}
        #: each server's own environment (its `env`): its `~` and `$VAR`s are not the gateway's
        self.envs: dict[str, ServerEnv] = {}
        self.refused = 0
        self.gateway: GatewayView | None = None

    def bind(self, gateway: GatewayView) -> None:
        self.gateway = gateway
        store = gateway.policy
        self._rebuild(store.current)
        store.listeners.append(self._rebuild)
        if hasattr(store, "hold_listeners"):
            store.hold_listeners.append(self._held)
        if hasattr(store, "writers"):
            store.writers.append(self._unanswered)

    def _unanswered(self) -> str | None:
        """A tools/call some server may still run after the gateway stopped waiting for it."""
        for up in (self.gateway.servers.values() if self.gateway is not None else ()):
            probe = getattr(up, "unanswered_call", None)
            found = probe() if probe is not None else None
            if found:
                return str(found)
        return None

    def _rebuild(self, compiled: Any) -> None:
        source = compiled.source
        programs = [p for name, up in (self.gateway.servers.items() if self.gateway is not None else ())
                    for p in server_programs(name, getattr(up.spec, "command", None), getattr(up.spec, "args", None) or (),
                                             getattr(up.spec, "env", None), getattr(up.spec, "cwd", None))]
        self.guard = protected_set(self.home, source.files, dict(source.sections) or self.config, self.settings,
                                   programs)
        self._learn_servers()

    async def start(self) -> None:
        self._learn_servers()

    def _learn_servers(self) -> None:
        if self.gateway is not None:
            servers = self.gateway.servers.items()
            self.dirs = {name: server_dirs(up.spec) for name, up in servers}
            self.envs = {name: server_env(getattr(up.spec, "env", None)) for name, up in servers}

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        method = ctx.method
        if method in _ARGUMENTS:
            value: Any = ctx.params.get("arguments")
        elif method in _PARAMS:
            value = ctx.params
        else:
            return None
        if not value:
            return None
        dirs = self.dirs.get(ctx.server or "")
        if dirs is None:
            dirs = self.dirs[ctx.server or ""] = server_dirs(getattr(ctx.gateway.servers.get(ctx.server or ""),
                                                                     "spec", None))
        mutating = method == "tools/call" and mutates(str(ctx.params.get("name") or ""), value)
        finding = self.guard.check(value, dirs, mutating=mutating, env=self.envs.get(ctx.server or "", ()))
        if finding is None:
            if method == "tools/call" and not _read_only(ctx):
                self.guard.forget()  # what it changes, checks made before it cannot know
            return None
        self.refused += 1
        ctx.notes["self_protection"] = {"argument": finding.where, "protected": finding.resolved}
        return refusal(finding, ctx.gateway.policy.current.revision)

    def on_complete(self, ctx: RequestContext) -> None:
        if ctx.method == "tools/call" and not _read_only(ctx):
            self.guard.forget()  # ... nor checks made while it ran

    def _held(self, record: Mapping[str, Any]) -> None:
        ledger = getattr(self.gateway, "ledger", None)
        if ledger is None:
            return
        from mcpwall.ledger import Event

        reason = (f"policy reload held: {', '.join(record.get('files') or ())} changed while "
                  f"{record.get('call')} could have written it; run `mcpwall policy reload`")
        ledger.submit(Event(method="policy/reload", decision="held", outcome="held", ts=time.time(),
                            tool_name=", ".join(record.get("files") or ())[:500] or None,
                            policy_revision=str(record.get("revision") or ""), rule_ids=(RULE_ID,),
                            reasons=(reason,), mode="enforce"))

    def status(self) -> dict[str, Any]:
        return {"refused": self.refused, "protected_dirs": len(self.guard.dirs),
                "protected_files": len(self.guard.files)}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> SelfGuardStage | None:
    """On in every gateway (there is no option to switch it off); None without a home (unit tests)."""
    home = getattr(settings, "home", None)
    if home is None:
        return None
    return SelfGuardStage(Path(home), config, settings)


__all__ = ["SelfGuardStage", "build", "protected_set", "refusal", "server_dirs"]
