"""The honeytoken tripwire: a request carrying a planted decoy credential is blocked, with an alert.

Runs early (before protocol validation and policy) on every request's params,
so a decoy cannot slip through on a method the policy does not look at. The
decoys come from the injection stage (`honeytokens_inject`), which plants them
in results; both share the gateway's one `Registry` (`Components.honeytokens`),
backed by `gateway.state` so that detection survives a restart.

policy.yaml::

    honeytokens: true | false | {enabled: true, types: [aws, github, database],
                                 tools: ['read_*'], servers: ['fs'], blockInAudit: true}

Off unless enabled. A decoy has no legitimate use, so the tripwire blocks in
audit mode too unless `blockInAudit: false`. `ctx.notes["honeytoken"]` holds
the alert (type, part, where it was planted, the argument path).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from mcpwall.pipeline import Reject, RequestContext, Session, Stage
from mcpwall.protocol import ErrorCode, Message
from mcpwall.security.honeytokens import Registry
from mcpwall.stages._components import Components
from mcpwall.stages._configs import HoneytokenConfig
from mcpwall.stages._kit import enforce, parse

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView

log = logging.getLogger("mcpwall.honeytokens")

#: Requests never worth scanning (no user data in them).
_SKIP = frozenset({"initialize", "ping", "tools/list", "prompts/list", "resources/list",
                   "resources/templates/list", "logging/setLevel"})


Kind = Literal["aws", "github", "database"]
_ALL_KINDS: tuple[Kind, ...] = ("aws", "github", "database")


def _enforcing(gateway: GatewayView | None) -> bool:
    return gateway is None or gateway.policy.current.mode == "enforce"


def config_of(config: Mapping[str, Any]) -> HoneytokenConfig:
    return parse(HoneytokenConfig, config.get("honeytokens"), "honeytokens")


class HoneytokenTripwire(Stage):
    name = "honeytoken_tripwire"

    def __init__(self, config: HoneytokenConfig | None = None, registry: Registry | None = None) -> None:
        self.config = config or HoneytokenConfig(enabled=True)
        self.registry = registry if registry is not None else Registry()
        self.alerts = 0
        self._gateway: GatewayView | None = None

    def bind(self, gateway: GatewayView) -> None:
        self._gateway = gateway

    async def start(self) -> None:
        if self._gateway is not None and not self.registry.loaded:
            count = self.registry.load(self._gateway.state)
            if count:
                log.info("honeytokens: %d planted decoy part(s) remembered from earlier runs", count)

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        if ctx.method in _SKIP or not ctx.params:
            return None
        hits = self.registry.find(ctx.params)
        if not hits:
            return None
        self.alerts += 1
        hit = hits[0]
        alert = {**hit.alert(), "hits": len(hits), "method": ctx.method, "server": ctx.server,
                 "tool": ctx.target, "session": ctx.session.id, "client": ctx.session.client_name,
                 "agent": ctx.session.agent}
        ctx.notes["honeytoken"] = alert
        reason = (f"[mcpwall.honeytoken] a decoy credential ({hit.part}, planted in a result of "
                  f"{alert['planted_server']}/{alert['planted_tool']}) was used at {hit.path}")
        log.warning("HONEYTOKEN ALERT: %s; session %s client %r agent %r", reason, ctx.session.id[:8],
                    ctx.session.client_name, ctx.session.agent)
        return enforce(ctx, "honeytoken", Reject(ErrorCode.BLOCKED, "Blocked by mcpwall: " + reason, {
            "reasons": [reason], "rule_ids": ["mcpwall.honeytoken"], "honeytoken": {
                k: alert[k] for k in ("type", "part", "path", "planted_server", "planted_tool")}}),
            always=self.config.blockInAudit)

    def on_client_answer(self, session: Session, answer: Message) -> str | None:
        why = self.tripped(answer.get("result", answer.get("error")))
        if why is not None and not self.config.blockInAudit and not _enforcing(self._gateway):
            log.warning("AUDIT MODE: a client's answer to a server let through although %s", why)
            return None  # recorded (the log line), as audit mode does for a call
        return why  # a decoy blocks in audit mode too (blockInAudit, the default)

    def tripped(self, value: Any) -> str | None:
        """Why a client's answer to a server's request must not reach the server: it carries a
        decoy credential (the tripwire's other way in); None when it does not."""
        hits = self.registry.find(value)
        if not hits:
            return None
        self.alerts += 1
        reason = f"[mcpwall.honeytoken] a decoy credential ({hits[0].part}) was sent at {hits[0].path}"
        log.warning("HONEYTOKEN ALERT: %s, in a client's answer to a server's request", reason)
        return reason

    def status(self) -> dict[str, Any]:
        return {"alerts": self.alerts, "known_decoy_parts": len(self.registry), "detected": self.registry.detected}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> HoneytokenTripwire | None:
    cfg = config_of(config)
    if not cfg.enabled:
        return None
    return HoneytokenTripwire(cfg, components.honeytokens if components is not None else None)


__all__ = ["HoneytokenConfig", "HoneytokenTripwire", "build", "config_of"]
