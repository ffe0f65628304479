"""RBAC: which agent may call which tool, decided by a casbin model and policy.

The subject is the session's agent: the `x-agent-id` header, the identity of
the bearer token that authenticated the session, or `--agent` of `wrap` and
`proxy --stdio`. A session without one is `client:<clientInfo name>` when the
client named itself, else `unknown_agent`. Objects are what the client sees:
`server__tool` (also prompts), checked as the bare tool name too (a policy
written for one server's names), and a resource's URI. Actions: `execute`
for every tool and prompt call, and also `read` for tools the server
annotates `readOnlyHint: true` (annotations are pinned, so a server cannot
flip them unnoticed), prompts and resources.

The same decision filters the lists: a client sees in tools/list exactly
the tools it may call (`Components.tool_filters`), and a call to any other is
denied (-32001). RBAC is off when policy.yaml has no `rbac:` section, and
fails closed when it has one that cannot be loaded: every call is denied and
every list is empty until the files are fixed (a later bad edit keeps the
last good enforcer, as a bad policy.yaml keeps the old policy).

    rbac:
      model: rbac_model.conf     # relative to policy.yaml's folder (or the home)
      policy: rbac_policy.csv
      defaultSubject: unknown_agent
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode
from mcpwall.protocol.naming import qualify
from mcpwall.stages._components import Components

log = logging.getLogger("mcpwall.rbac")

MODEL_FILE = "rbac_model.conf"
POLICY_FILE = "rbac_policy.csv"
DEFAULT_SUBJECT = "unknown_agent"
_CHECKED = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource",
            "resources/subscribe": "resource"}
_FILTER_KINDS = {"tools": "tool", "prompts": "prompt", "resources": "resource"}


def _load(model: Path, policy: Path) -> Any:
    import casbin

    for path in (model, policy):
        if not path.is_file():
            raise ConfigError(f"rbac: {path} does not exist (run `mcpwall rbac-init`)")
    try:
        enforcer = casbin.Enforcer(str(model), str(policy))
        enforcer.enforce("mcpwall-selftest", "selftest", "execute")  # a broken matcher fails here, not later
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"rbac: cannot load {model} / {policy}: {exc.__class__.__name__}: {exc}") from exc
    return enforcer


class RbacStage(Stage):
    name = "rbac"

    def __init__(self, model: Path, policy: Path, default_subject: str = DEFAULT_SUBJECT,
                 reload_interval_s: float = 1.0) -> None:
        self.model = model
        self.policy = policy
        self.default_subject = default_subject
        self.reload_interval_s = reload_interval_s
        self.enforcer: Any = None
        self.error: str | None = None
        self._cache: dict[tuple[str, str, str], bool] = {}
        self._mtimes: tuple[float, float] | None = None
        self._checked_at = 0.0
        self.counts = {"denied": 0, "hidden": 0, "reloads": 0}
        self._reload(initial=True)

    # ------------------------------------------------------------------ loading

    def _stat(self) -> tuple[float, float] | None:
        try:
            return os.stat(self.model).st_mtime, os.stat(self.policy).st_mtime
        except OSError:
            return None

    def _reload(self, initial: bool = False) -> None:
        mtimes = self._stat()
        try:
            enforcer = _load(self.model, self.policy)
        except ConfigError as exc:
            if initial or self.enforcer is None:
                self.error = str(exc)
                log.error("RBAC is configured but broken, denying everything: %s", exc)
            else:
                log.error("RBAC files changed but do not load, keeping the last good ones: %s", exc)
            self._mtimes = mtimes
            return
        self.enforcer, self.error, self._mtimes = enforcer, None, mtimes
        self._cache.clear()
        if not initial:
            self.counts["reloads"] += 1
            log.info("RBAC reloaded from %s", self.policy)

    def _fresh(self) -> None:
        now = time.monotonic()
        if now - self._checked_at < self.reload_interval_s:
            return
        self._checked_at = now
        if self._stat() != self._mtimes:
            self._reload()

    # ------------------------------------------------------------------ deciding

    def subject(self, session: Any) -> str:
        if session.agent:
            return str(session.agent)
        if session.client_name:
            return f"client:{session.client_name}"
        return self.default_subject

    def _enforce(self, subject: str, obj: str, act: str) -> bool:
        key = (subject, obj, act)
        cached = self._cache.get(key)
        if cached is None:
            try:
                cached = bool(self.enforcer.enforce(subject, obj, act))
            except Exception as exc:  # a policy casbin cannot evaluate denies (fail closed)
                log.error("RBAC enforce(%r, %r, %r) failed: %s", subject, obj, act, exc)
                cached = False
            if len(self._cache) > 65536:
                self._cache.clear()
            self._cache[key] = cached
        return cached

    def allowed(self, subject: str, server: str, kind: str, name: str, item: Mapping[str, Any] | None) -> bool:
        """May `subject` use this tool, prompt or resource? False whenever RBAC is broken."""
        self._fresh()
        if self.enforcer is None:
            return False
        if kind == "resource":
            return self._enforce(subject, name, "read")
        acts = ["execute"]
        annotations = (item or {}).get("annotations")
        if kind == "prompt" or (isinstance(annotations, dict) and annotations.get("readOnlyHint") is True):
            acts.append("read")
        objects = (qualify(server, name), name)
        return any(self._enforce(subject, obj, act) for obj in objects for act in acts)

    def bind(self, gateway: Any) -> None:
        return None

    def _visible(self, ctx: RequestContext, key: str, server: str, name: str, item: Any) -> bool:
        kind = _FILTER_KINDS.get(key)
        if kind is None:
            return True
        shown = self.allowed(self.subject(ctx.session), server, kind, name, item if isinstance(item, dict) else None)
        if not shown:
            self.counts["hidden"] += 1
        return shown

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        kind = _CHECKED.get(ctx.method)
        if ctx.method == "completion/complete":
            ref = ctx.params.get("ref")
            kind = "prompt" if isinstance(ref, dict) and ref.get("type") == "ref/prompt" else "resource"
        if kind is None or ctx.server is None:
            return None
        subject = self.subject(ctx.session)
        item = _catalog_item(ctx, kind)
        if self.allowed(subject, ctx.server, kind, ctx.target, item):
            return None
        self.counts["denied"] += 1
        shown = ctx.target if kind == "resource" else qualify(ctx.server, ctx.target)
        reason = (f"RBAC is configured but broken: {self.error}" if self.enforcer is None
                  else f"RBAC: {subject!r} may not use {kind} {shown!r}")
        ctx.notes["rbac"] = {"subject": subject, "object": shown, "allowed": False}
        return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: {reason}",
                      {"reasons": [reason], "rule_ids": ["rbac"], "subject": subject})

    def status(self) -> dict[str, Any]:
        return {**self.counts, "loaded": self.enforcer is not None, "error": self.error,
                "model": str(self.model), "policy": str(self.policy)}


def _catalog_item(ctx: RequestContext, kind: str) -> dict[str, Any] | None:
    upstream = ctx.gateway.servers.get(ctx.server or "")
    if upstream is None or kind != "tool":
        return None
    item = upstream.catalog.tools.get(ctx.target)
    return item if isinstance(item, dict) else None


def _base_dir(settings: Any) -> Path:
    if settings is not None:
        policy_path = getattr(settings, "policy_path", None)
        if policy_path is not None:
            return Path(policy_path).expanduser().resolve().parent
        home = getattr(settings, "home", None)
        if home is not None:
            return Path(home).expanduser()
    return Path.cwd()


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> RbacStage | None:
    """On when policy.yaml has an `rbac:` section (`rbac: true` for the default file names)."""
    section = config.get("rbac")
    if section is None or section is False:
        return None
    if section is True:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError("rbac: expected true or a mapping with model/policy paths")
    if section.get("enabled") is False:
        return None
    unknown = set(section) - {"enabled", "model", "policy", "defaultSubject"}
    if unknown:
        raise ConfigError(f"rbac: unknown key(s) {', '.join(sorted(unknown))}")
    base = _base_dir(settings)
    model = base / Path(str(section.get("model", MODEL_FILE))).expanduser()
    policy = base / Path(str(section.get("policy", POLICY_FILE))).expanduser()
    stage = RbacStage(model, policy, str(section.get("defaultSubject") or DEFAULT_SUBJECT))
    if components is not None:
        components.tool_filters.append(stage._visible)  # lists show only what the caller may call
    return stage


__all__ = ["DEFAULT_SUBJECT", "MODEL_FILE", "POLICY_FILE", "RbacStage", "build"]
