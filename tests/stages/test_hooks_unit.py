"""Stage hooks called directly on fixture messages, without a gateway (issue 23, item 6).

Strategy: each stage is made by its own factory from a policy block, as the pipeline makes it;
its hook is called with a `tests.harness.context` request whose gateway view is a
`tests.harness.StageView`: the real policy store of a policy text, and nothing else (no
servers, no upstream processes, no HTTP). What is asserted is what a client or the ledger
would see: the JSON-RPC code and data of a refusal, the arguments the server would get, the
masked result, the notes left for the ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcpwall.protocol import ErrorCode
from mcpwall.proxy import Session
from mcpwall.stages import policy as policy_mod
from mcpwall.stages import protocol as protocol_mod
from mcpwall.stages import ratelimit as ratelimit_mod
from mcpwall.stages import selfguard as selfguard_mod
from mcpwall.stages.dlp import build as build_dlp
from tests.harness import context, stage_settings, stage_view

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

POLICY = """\
version: "1"
mode: enforce
defaultAction: allow
rules:
  - id: no-env-dump
    description: Environment dumps are denied
    tools: [get-env]
    action: deny
  - id: redact-secret
    description: Secrets never reach a server
    target: argName
    match: exact
    values: [secret]
    action: redact
"""
AUDIT = POLICY.replace("mode: enforce", "mode: audit")
AWS_ID = "AKIAQX4PZ7T2LMNB3KQR"


def result(text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}


def initialized() -> Session:
    return Session(kind="stdio", initialized=True, protocol_version="2025-06-18", principal="agent", peer="stdio")


# ---------------------------------------------------------------------- policy


async def test_the_policy_stage_denies_a_call_a_deny_rule_names_with_its_rule_id(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", POLICY)
    stage = policy_mod.build({})
    ctx = context(view, server="ev", target="get-env")
    verdict = await stage.on_request(ctx)
    assert verdict is not None
    assert verdict.code == ErrorCode.BLOCKED
    assert verdict.message == "Blocked by mcpwall: [no-env-dump] Environment dumps are denied"
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["no-env-dump"]
    assert verdict.data["revision"] == view.policy.current.revision
    assert ctx.decision is not None
    assert ctx.decision.action == "deny"
    assert stage.status()["decisions"] == {"deny": 1}


async def test_the_policy_stage_allows_another_call_and_redacts_the_arguments_a_rule_names(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", POLICY)
    stage = policy_mod.build({})
    ctx = context(view, server="ev", target="echo", arguments={"message": "hi", "secret": "hunter2"})
    assert await stage.on_request(ctx) is None
    assert ctx.decision is not None
    assert ctx.decision.action == "redact"
    assert ctx.params["arguments"] == {"message": "hi"}  # what the server gets
    plain = context(view, server="ev", target="echo", arguments={"message": "hi"})
    assert await stage.on_request(plain) is None
    assert plain.decision is not None
    assert plain.decision.action == "allow"
    assert plain.params["arguments"] == {"message": "hi"}
    for done in (ctx, plain):
        done.outcome = "ok"
        stage.on_complete(done)
    assert stage.status()["decisions"] == {"redact": 1, "allow": 1}


async def test_in_audit_mode_the_policy_stage_records_the_deny_and_lets_the_call_run(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", AUDIT)
    ctx = context(view, server="ev", target="get-env")
    assert await policy_mod.build({}).on_request(ctx) is None
    assert ctx.decision is not None
    assert (ctx.decision.action, ctx.decision.mode, ctx.decision.rule_ids) == ("allow", "audit", ("no-env-dump",))
    assert ctx.decision.enforced_action == "deny"  # what enforce mode would have done, for the ledger


# ---------------------------------------------------------------------- dlp


async def test_dlp_masks_a_secret_in_a_result_and_notes_where_without_the_secret(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", POLICY)
    stage = build_dlp({})
    assert stage is not None
    ctx = context(view, server="fs", target="read_file")
    out = await stage.on_response(ctx, result(f"aws_access_key_id = {AWS_ID}"))
    assert out["result"]["content"][0]["text"] == "aws_access_key_id = [REDACTED-aws-access-key]"
    assert AWS_ID not in str(out)
    assert ctx.notes["dlp"]["redactions"] == 1
    assert [m["path"] for m in ctx.notes["dlp"]["masked"]] == ["result.content[0].text"]
    assert AWS_ID not in str(ctx.notes)  # the ledger row never gets it
    clean = result("nothing to see")
    assert await stage.on_response(context(view), clean) is clean


# ---------------------------------------------------------------------- rate limit


async def test_the_rate_limit_rejects_the_request_over_the_limit_and_counts_per_principal(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", POLICY)
    stage = ratelimit_mod.build({"stages": {"ratelimit": {"requestsPerMinute": 2}}})
    agent = initialized()
    verdicts = [await stage.on_request(context(view, session=agent)) for _ in range(3)]
    assert verdicts[:2] == [None, None]
    over = verdicts[2]
    assert over is not None
    assert over.code == ErrorCode.RATE_LIMITED
    assert over.message == "Rate limit exceeded: 2 requests per minute"
    assert (over.http_status, over.outcome) == (429, "rate_limited")
    other = Session(kind="stdio", initialized=True, principal="someone-else", peer="stdio")
    assert await stage.on_request(context(view, session=other)) is None
    assert stage.status()["limited"] == 1


# ---------------------------------------------------------------------- protocol


async def test_the_protocol_stage_rejects_arguments_that_are_not_an_object(tmp_path: Path) -> None:
    view = stage_view(tmp_path / "home", POLICY)
    stage = protocol_mod.build({})
    bad = context(view, session=initialized(), params={"name": "read_file", "arguments": ["/etc/passwd"]})
    verdict = await stage.on_request(bad)
    assert verdict is not None
    assert verdict.code == ErrorCode.INVALID_PARAMS
    assert verdict.message == "tools/call: 'arguments' must be an object"
    assert (verdict.http_status, verdict.outcome) == (400, "rejected")
    assert await stage.on_request(context(view, session=initialized(), arguments={"path": "/w/a"})) is None
    before_init = await stage.on_request(context(view, session=Session(kind="stdio"), arguments={"path": "/w/a"}))
    assert before_init is not None
    assert before_init.code == ErrorCode.INVALID_REQUEST
    assert stage.status()["invalid"] == 2


# ---------------------------------------------------------------------- self-protection


@pytest.mark.parametrize("policy", [POLICY, AUDIT])
async def test_selfguard_refuses_a_write_to_the_policy_file_in_either_mode(tmp_path: Path, policy: str) -> None:
    home = tmp_path / "home"
    view = stage_view(home, policy)
    stage = selfguard_mod.build({}, stage_settings(home))
    assert stage is not None
    target = home / "policy.yaml"
    ctx = context(view, target="write_file", params={"name": "write_file",
                                                     "arguments": {"path": str(target), "content": "mode: audit\n"}})
    verdict = await stage.on_request(ctx)
    assert verdict is not None
    assert verdict.code == ErrorCode.BLOCKED
    assert verdict.data is not None
    assert verdict.data["rule_ids"] == ["mcpwall.self-protection"]
    assert verdict.data["mode"] == "enforce"  # audit mode does not switch it off
    assert ctx.notes["self_protection"]["protected"] == str(target.resolve())
    assert target.read_text() == policy  # the hook decides; nothing was written
    elsewhere = {"path": str(tmp_path / "work" / "notes.md"), "content": "x"}
    assert await stage.on_request(context(view, target="write_file",
                                          params={"name": "write_file", "arguments": elsewhere})) is None
    assert stage.status()["refused"] == 1
