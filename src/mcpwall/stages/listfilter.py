"""List filtering: a tool no call could pass is not listed (nor prompts, resources).

A client that cannot see a denied tool does not plan around it, and does not
leak its description into the model's context. Whether a tool is visible is
decided by `mcpwall.policy.visible` for this session's client and agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcpwall.pipeline import RequestContext, Stage, ToolFilter
from mcpwall.policy import Call, Context, local_now, visible
from mcpwall.protocol import Message
from mcpwall.protocol.naming import resource_owner, split
from mcpwall.stages._components import Components

_KEYS = {"tools/list": ("tools", "tools/call"), "prompts/list": ("prompts", "prompts/get"),
         "resources/list": ("resources", "resources/read")}


class ListFilterStage(Stage):
    name = "listfilter"

    def __init__(self, filters: Sequence[ToolFilter] = ()) -> None:
        self.hidden = 0
        #: the other stages' filters (rbac, poisoning, pins: `Components.tool_filters`), read per list
        self.filters = filters

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        spec = _KEYS.get(ctx.method)
        body = response.get("result")
        if spec is None or not isinstance(body, dict) or not isinstance(body.get(spec[0]), list):
            return response
        key, method = spec
        policy = ctx.gateway.policy.current
        now = Context(now=local_now())
        session = ctx.session
        kept: list[Any] = []
        hidden: list[str] = []
        extra = self.filters
        for item in body[key]:
            if not isinstance(item, dict):
                continue
            shown = item.get("uri") if key == "resources" else item.get("name")
            if not isinstance(shown, str):
                kept.append(item)
                continue
            server, name = (session.server, shown) if session.server or key == "resources" else (split(shown) or
                                                                                                 (None, shown))
            if key == "resources" and session.server is None:
                server = resource_owner(shown, ctx.gateway.servers) or ""
            call = Call(method=method, name=name, server=server or "", client=session.client_name,
                        agent=session.agent, description=str(item.get("description") or "") if key == "tools" else "")
            if visible(policy, call, now) and all(f(ctx, key, server or "", name, item) for f in extra):
                kept.append(item)
            else:
                hidden.append(shown)
        if not hidden:
            return response
        self.hidden += len(hidden)
        ctx.notes["hidden"] = hidden
        return {**response, "result": {**body, key: kept}}

    def status(self) -> dict[str, Any]:
        return {"hidden": self.hidden}


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> ListFilterStage:
    return ListFilterStage(components.tool_filters if components is not None else ())


__all__ = ["ListFilterStage", "build"]
