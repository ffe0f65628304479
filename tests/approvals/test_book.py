"""The approval book's binding rules, tested directly on an in-memory and a real ledger state store.

Strategy: `ApprovalBook` is pure bookkeeping over a StateStore with an injectable clock, so
each rule is one small scenario: the hash ignores key order and `_meta`, an approval is
consumed once, is void for another call or another policy revision, cannot be given after
its expiry; grants match only the same server, tool, agent, argument names and rules, and
stop when revoked or expired. The same scenario runs on the ledger's SQLite state table,
which is what the gateway and the standalone dashboard share. Arguments shown to a person
have the policy's redactions applied and secrets masked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpwall.approvals import (
    ApprovalBook,
    ApprovalError,
    ApprovalNotFound,
    CallView,
    call_hash,
    safe_arguments,
)
from mcpwall.ledger import open_ledger
from mcpwall.state import MemoryStateStore, StateStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "ledger"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    if request.param == "memory":
        yield MemoryStateStore()
        return
    ledger = open_ledger(tmp_path)
    try:
        yield ledger
    finally:
        ledger.close()


def _call(message: str = "hi", agent: str = "a1", **extra: object) -> CallView:
    return CallView(server="ev", method="tools/call", target="echo", arguments={"message": message, **extra},
                    session="s1", client="cli", agent=agent)


def _ask(book: ApprovalBook, call: CallView, revision: str = "r1") -> dict[str, object]:
    return book.create(call, rule_ids=["ask-echo"], reasons=["needs a person"], revision=revision, timeout_ms=30_000)


def test_the_call_hash_ignores_key_order_and_meta_but_not_values_or_the_tool() -> None:
    a = call_hash("ev", "tools/call", "echo", {"a": 1, "b": {"x": [1, 2]}})
    assert a == call_hash("ev", "tools/call", "echo", {"b": {"x": [1, 2]}, "a": 1, "_meta": {"progressToken": 7}})
    assert a != call_hash("ev", "tools/call", "echo", {"a": 1, "b": {"x": [2, 1]}})
    assert a != call_hash("ev", "tools/call", "echo2", {"a": 1, "b": {"x": [1, 2]}})
    assert a != call_hash("ev2", "tools/call", "echo", {"a": 1, "b": {"x": [1, 2]}})


def test_an_approval_releases_its_own_call_once(store: StateStore) -> None:
    book = ApprovalBook(store, Clock())
    call = _call()
    record = _ask(book, call)
    assert [r["id"] for r in book.pending()] == [record["id"]]
    book.approve(str(record["id"]), via="api")
    assert book.pending() == []
    outcome, final = book.settle(str(record["id"]), call, "r1")
    assert outcome == "approved"
    assert final["used_at"] is not None
    again, _ = book.settle(str(record["id"]), call, "r1")
    assert again == "invalid"
    with pytest.raises(ApprovalError, match="already approved"):
        book.approve(str(record["id"]), via="api")


def test_an_approval_is_void_for_other_arguments_and_for_another_policy_revision(store: StateStore) -> None:
    book = ApprovalBook(store, Clock())
    record = _ask(book, _call("safe"))
    book.approve(str(record["id"]), via="api")
    outcome, final = book.settle(str(record["id"]), _call("rm -rf /"), "r1")
    assert (outcome, final["reason"]) == ("invalid", "the approval was made for a different call")
    outcome, final = book.settle(str(record["id"]), _call("safe"), "r2")
    assert (outcome, final["reason"]) == ("invalid", "the policy changed while the call was held")
    # The checks did not consume it: the right call under the right policy still runs.
    assert book.settle(str(record["id"]), _call("safe"), "r1")[0] == "approved"


def test_an_approver_who_names_the_hash_they_saw_cannot_release_another_call(store: StateStore) -> None:
    book = ApprovalBook(store, Clock())
    seen = _ask(book, _call("shown to the approver"))
    other = _ask(book, _call("something else"))
    with pytest.raises(ApprovalError, match="different call"):
        book.approve(str(other["id"]), via="dashboard", expected_hash=str(seen["call_hash"]))
    assert book.get(str(other["id"]))["status"] == "pending"  # type: ignore[index]


def test_no_answer_is_taken_after_the_expiry_and_the_holder_records_the_timeout(store: StateStore) -> None:
    clock = Clock()
    book = ApprovalBook(store, clock)
    record = _ask(book, _call())
    clock.now += 31
    assert book.pending() == []
    with pytest.raises(ApprovalError, match="expired"):
        book.approve(str(record["id"]), via="api")
    outcome, final = book.settle(str(record["id"]), _call(), "r1")
    assert (outcome, final["status"]) == ("expired", "expired")
    with pytest.raises(ApprovalNotFound):
        book.deny("nope", via="api")


def test_a_grant_covers_only_the_same_server_tool_agent_argument_names_and_rules(store: StateStore) -> None:
    clock = Clock()
    book = ApprovalBook(store, clock)
    record = _ask(book, _call("first"))
    approved = book.approve(str(record["id"]), via="api", similar_minutes=10)
    grant_id = approved["grant_id"]
    assert book.use_grant(_call("other value"), ["ask-echo"])["id"] == grant_id  # type: ignore[index]
    assert book.use_grant(_call("x", agent="someone-else"), ["ask-echo"]) is None
    assert book.use_grant(_call("x", extra_key="y"), ["ask-echo"]) is None
    assert book.use_grant(_call("x"), ["ask-echo", "another-rule"]) is None
    other_tool = CallView(server="ev", method="tools/call", target="get-env", arguments={"message": "x"}, agent="a1")
    assert book.use_grant(other_tool, ["ask-echo"]) is None
    [grant] = book.grants()
    assert grant["uses"] == 1
    clock.now += 601
    assert book.use_grant(_call("later"), ["ask-echo"]) is None
    assert book.grants() == []


def test_a_revoked_grant_stops_at_once(store: StateStore) -> None:
    book = ApprovalBook(store, Clock())
    record = _ask(book, _call())
    grant_id = str(book.approve(str(record["id"]), via="api", similar_minutes=60)["grant_id"])
    book.revoke(grant_id)
    assert book.use_grant(_call("again"), ["ask-echo"]) is None
    assert book.grants(active_only=False)[0]["revoked_at"] is not None
    with pytest.raises(ApprovalNotFound):
        book.revoke("g-unknown")
    with pytest.raises(ApprovalError, match="between 1 and"):
        book.approve(str(_ask(book, _call())["id"]), via="api", similar_minutes=100_000)


def test_arguments_shown_to_a_person_are_redacted_and_secrets_masked() -> None:
    args = {"path": "/tmp/x", "password": "hunter2hunter2", "note": "key AKIAIOSFODNN7EXAMPLE here",
            "nested": {"token": "ghp_" + "a" * 36}}
    shown = safe_arguments(args, ["password"])
    assert "password" not in shown
    assert shown["path"] == "/tmp/x"
    assert "AKIAIOSFODNN7EXAMPLE" not in str(shown)
    assert "ghp_" + "a" * 36 not in str(shown)
    huge = safe_arguments({"blob": "x" * 200_000})
    assert huge["truncated"] is True


def test_a_call_whose_holding_gateway_was_killed_cannot_be_approved(store: StateStore) -> None:
    """Approving it answered 200 "approved" although nothing would ever run the call."""
    import socket
    import subprocess
    import sys

    book = ApprovalBook(store, Clock())
    record = _ask(book, _call())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store.put_state("approvals", str(record["id"]), {**record, "replica": f"{socket.gethostname()}:{gone.stdout.strip()}"})
    with pytest.raises(ApprovalError, match="has stopped"):
        book.approve(str(record["id"]), via="api")
    alive = _ask(book, _call("other"))
    assert book.approve(str(alive["id"]), via="api")["status"] == "approved"  # its holder is this process
