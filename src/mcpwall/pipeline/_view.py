"""What a stage may see of the gateway it runs in, as protocols the gateway satisfies.

Stages sit below the gateway (`mcpwall.proxy`) and never import it: they read
the servers, the sessions and the policy through `GatewayView`, which
`proxy.Gateway` implements, and nothing writes onto it. The parts stages
share (the approval service, the tool filters, the durable state...) are
built before them by the app builder and handed to their `build()`
(`stages/_components.py`); the gateway shows a few of them read only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpwall.pipeline._policystore import PolicyStore
    from mcpwall.pipeline._session import Session
    from mcpwall.pipeline._stage import Reject, RequestContext, Stage
    from mcpwall.policy import Decision, ServerSpec
    from mcpwall.protocol import Message
    from mcpwall.state import StateStore

#: A filter on listed items: (ctx, list key, server, name as the server knows it, item) -> shown.
ToolFilter = Callable[["RequestContext", str, str, str, Any], bool]
#: An observer of every message in and out of a session: (session, "in" | "out", message).
Tap = Callable[["Session", str, "Message"], None]


class Breaker(Protocol):
    """An upstream's circuit breaker, as the circuit stage drives it."""

    failures: int
    open_seconds: float

    @property
    def probing(self) -> bool: ...

    def allow(self) -> bool: ...

    def release(self) -> None: ...


class Catalog(Protocol):
    """What an upstream offers, keyed as the upstream names it."""

    tools: dict[str, dict[str, Any]]
    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    prompts: dict[str, dict[str, Any]]


class UpstreamView(Protocol):
    """One upstream server, as stages read it."""

    name: str
    spec: ServerSpec
    state: str

    @property
    def catalog(self) -> Catalog: ...

    @property
    def breaker(self) -> Breaker: ...

    def wait_ready(self, timeout: float) -> Awaitable[bool]: ...

    def unanswered_call(self) -> str | None: ...

    def status(self) -> dict[str, Any]: ...


class Holder(Protocol):
    """The approval service, as the stages that decide `ask` use it."""

    async def hold(self, ctx: RequestContext, decision: Decision) -> Reject | None: ...


class Pipeline(Protocol):
    @property
    def stages(self) -> list[Stage]: ...

    def find(self, name: str) -> Stage | None: ...


class Options(Protocol):
    ready_timeout_s: float
    allow_client_elicitation_approval: bool


class Service(Protocol):
    """A part with a lifecycle and no pipeline hook (the admin API, a frame listener, isolation):
    started after the stages, stopped before them, its counters in `/health` beside theirs."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def status(self) -> dict[str, Any]: ...


class GatewayView(Protocol):
    """The gateway, as a stage may see it (`RequestContext.gateway`, `Stage.bind`)."""

    @property
    def policy(self) -> PolicyStore: ...

    @property
    def servers(self) -> Mapping[str, UpstreamView]: ...

    @property
    def sessions(self) -> Mapping[str, Session]: ...

    @property
    def pipeline(self) -> Pipeline: ...

    @property
    def options(self) -> Options: ...

    def spawn(self, coro: Awaitable[Any]) -> None: ...

    # The shared parts, read only: stages get them in build() (`stages/_components.py`).
    @property
    def state(self) -> StateStore: ...

    @property
    def ledger(self) -> object | None: ...

    @property
    def taps(self) -> list[Tap]: ...


__all__ = ["Breaker", "Catalog", "GatewayView", "Holder", "Options", "Pipeline", "Service", "Tap", "ToolFilter",
           "UpstreamView"]
