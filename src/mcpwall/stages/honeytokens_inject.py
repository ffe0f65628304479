"""Honeytoken injection: plant decoy credentials in tool results (response side, after DLP).

Each session sees one set of decoys per server (generated on first use and
re-shown afterwards, so the registry grows per session, not per response).
They are added as an extra text item of the result, so the server's own
content (which may be JSON) is left intact. The tripwire stage
(`mcpwall.stages.honeytokens`) blocks any later request that carries one.
Configuration: the `honeytokens:` block, see that module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import RequestContext, Stage
from mcpwall.protocol import Message
from mcpwall.security.honeytokens import Registry, render
from mcpwall.stages._components import Components
from mcpwall.stages._kit import matches
from mcpwall.stages.honeytokens import HoneytokenConfig, config_of

if TYPE_CHECKING:
    from mcpwall.pipeline import GatewayView


class HoneytokenInjector(Stage):
    name = "honeytoken_inject"

    def __init__(self, config: HoneytokenConfig | None = None, registry: Registry | None = None) -> None:
        self.config = config or HoneytokenConfig(enabled=True)
        self.registry = registry if registry is not None else Registry()
        self.responses = 0
        self._gateway: GatewayView | None = None

    def bind(self, gateway: GatewayView) -> None:
        self._gateway = gateway

    async def start(self) -> None:
        if self._gateway is not None and not self.registry.loaded:
            self.registry.load(self._gateway.state)

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        if ctx.method != "tools/call" or ctx.server is None:
            return response
        body = response.get("result")
        if not isinstance(body, dict) or body.get("isError") is True:
            return response
        content = body.get("content")
        if not isinstance(content, list) or not any(isinstance(c, dict) and c.get("type") == "text" for c in content):
            return response
        if not matches(self.config.tools, ctx.target) or not matches(self.config.servers, ctx.server):
            return response
        decoys = self.registry.decoys_for(ctx.session.id, ctx.server, ctx.target, self.config.types)
        self.responses += 1
        ctx.notes["honeytoken_planted"] = {"types": [d.type for d in decoys],
                                           "parts": sum(len(d.parts) for d in decoys)}
        planted = {"type": "text", "text": render(decoys)}
        return {**response, "result": {**body, "content": [*content, planted]}}

    def status(self) -> dict[str, Any]:
        return {"responses_planted": self.responses, "decoy_parts_planted": self.registry.planted,
                "types": list(self.config.types)}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> HoneytokenInjector | None:
    cfg = config_of(config)
    if not cfg.enabled:
        return None
    return HoneytokenInjector(cfg, components.honeytokens if components is not None else None)


__all__ = ["HoneytokenInjector", "build"]
