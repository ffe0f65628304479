"""Unit tests of the gateway's own stages, calling each hook on fixture messages.

Strategy: no processes; a recording context built by hand, clocks injected
where time matters (breaker, rate window).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Session
from mcpwall.protocol import ErrorCode
from mcpwall.proxy._breaker import CircuitBreaker
from mcpwall.proxy._pipeline import Pipeline
from mcpwall.stages import AuthStage, ProtocolStage, RateLimitStage, Reject, RequestContext, Stage
from tests.harness import context

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ctx(method: str = "tools/call", session: Session | None = None, **params: Any) -> RequestContext:
    return context(method=method, server=None, target="", session=session or Session(kind="plain", initialized=True),
                   params=params)


def test_the_breaker_opens_after_five_failures_and_half_opens_one_probe() -> None:
    clock = Clock()
    b = CircuitBreaker(clock=clock)
    for _ in range(4):
        b.failure()
    assert b.state == "closed"
    b.failure()
    assert (b.state, b.allow()) == ("open", False)
    clock.now += 30
    assert b.state == "half-open"
    assert b.allow() is True
    assert b.allow() is False  # only one probe at a time
    b.failure()
    assert b.state == "open"
    clock.now += 30
    assert b.allow()
    b.success()
    assert (b.state, b.allow()) == ("closed", True)


async def test_the_rate_window_slides() -> None:
    clock = Clock()
    stage = RateLimitStage(per_minute=3, clock=clock)
    s = Session(kind="plain", client_name="c", peer="p")
    results = []
    for step in (0, 10, 20, 30, 61, 75):
        clock.now = 1000 + step
        results.append(await stage.on_request(ctx(session=s)))
    assert [r is None for r in results] == [True, True, True, False, True, True]
    assert isinstance(results[3], Reject)
    assert results[3].code == ErrorCode.RATE_LIMITED


def test_auth_checks_token_host_and_origin() -> None:
    auth = AuthStage({"tok-123": "", "agent-tok": "ci-bot"})
    ok, ident = auth.admit({"host": "127.0.0.1:9420", "authorization": "Bearer agent-tok"})
    assert (ok, ident) == (None, "ci-bot")
    assert auth.admit({"host": "localhost:1", "authorization": "bearer tok-123"})[0] is None
    assert auth.admit({"host": "127.0.0.1"})[0].http_status == 401  # type: ignore[union-attr]
    assert auth.admit({"host": "attacker.example", "authorization": "Bearer tok-123"})[0].http_status == 403  # type: ignore[union-attr]
    assert auth.admit({"origin": "http://evil.example", "authorization": "Bearer tok-123"})[0].http_status == 403  # type: ignore[union-attr]
    assert auth.admit({"origin": "http://127.0.0.1:5173", "authorization": "Bearer tok-123"})[0] is None
    assert auth.admit({"host": "[::1]:9420", "authorization": "Bearer tok-123"})[0] is None
    assert auth.admit({"host": "localhost:80@evil.com", "authorization": "Bearer tok-123"})[0] is not None
    v6 = AuthStage({"t": ""}, allowed_hosts=["::1", "gw.internal", "gw.example.com:9420", "10.0.0.5:9420"])
    assert v6.admit({"host": "gw.example.com:9420", "authorization": "Bearer t"})[0] is None
    assert v6.admit({"host": "10.0.0.5", "authorization": "Bearer t"})[0] is None
    with pytest.raises(ConfigError):
        AuthStage({"t": ""}, allowed_hosts=["localhost:80@evil.com"])
    assert v6.admit({"host": "[::1]:9420", "authorization": "Bearer t"})[0] is None
    assert v6.admit({"host": "GW.internal:1", "authorization": "Bearer t"})[0] is None
    assert v6.admit({"host": "", "authorization": "Bearer t"})[0] is not None


async def test_protocol_stage_requires_initialize_first_on_sessions() -> None:
    stage = ProtocolStage()
    fresh = Session(kind="http")
    assert (await stage.on_request(ctx(session=fresh))).code == ErrorCode.INVALID_REQUEST  # type: ignore[union-attr]
    assert await stage.on_request(ctx("ping", session=fresh)) is None
    bad = await stage.on_request(ctx(name="t", arguments=["not", "an", "object"]))
    assert bad is not None
    assert bad.code == ErrorCode.INVALID_PARAMS


class Broken(Stage):
    name = "broken"

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        raise RuntimeError("boom")


async def test_a_stage_that_raises_denies_the_request() -> None:
    pipeline = Pipeline([Broken()])
    reached = []

    async def dispatch(c: RequestContext) -> dict[str, Any]:
        reached.append(c)
        return {"jsonrpc": "2.0", "id": 1, "result": {}}

    c = ctx()
    answer = await pipeline.run(c, dispatch)
    assert answer is not None
    assert answer["error"]["code"] == ErrorCode.BLOCKED
    assert not reached
    assert "boom" in c.notes["stage_error"]


class NeedsTheLedger(Stage):
    name = "policy"

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        from mcpwall.ledger import LedgerUnavailable

        raise LedgerUnavailable("cannot connect to the database")  # an `ask` storing its approval


async def test_a_stage_that_cannot_reach_the_ledger_is_refused_as_the_ledger_stage_would() -> None:
    answer = await Pipeline([NeedsTheLedger()]).run(ctx(), lambda c: None)  # type: ignore[arg-type,return-value]
    assert answer is not None
    assert answer["error"]["code"] == ErrorCode.BLOCKED
    assert answer["error"]["message"].startswith("Blocked by mcpwall: ledger unavailable")
    assert answer["error"]["data"]["rule_ids"] == ["mcpwall.ledger"]


@pytest.mark.parametrize(("line", "expected"), [
    (b'{"jsonrpc":"2.0","id":70,"result":{"content":[{"type":"text","text":"' + b"x" * 600 + b'"}]}}', 70),
    (b'{"result":{"content":[{"type":"text","text":"' + b"x" * 600 + b'"}]},"jsonrpc":"2.0","id":"a\\"b"}\n', 'a"b'),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"pad": "' + b"x" * 600 + b'"}}', 7),
    # an "id" inside the payload is not the message's: neither at its start nor its very end
    (b'{"result":{"structuredContent":{"id":5,"rows":"' + b"x" * 600 + b'","id":6}}}', None),
    (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * 600 + b'","id":9}}', None),
    (b'{"jsonrpc":"2.0","id":{"nested":1},"result":"' + b"x" * 600 + b'"}', None),
])
def test_the_id_of_a_message_too_long_to_parse_is_read_from_its_edges(line: bytes, expected: Any) -> None:
    from mcpwall.protocol import oversized_id

    assert oversized_id(line[:256], line[-256:]) == expected
