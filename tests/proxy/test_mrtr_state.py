"""The sealed requestState of multi round-trip requests (protocol/mrtr.py), unit by unit.

Strategy: seal claims under a key and unseal them as the gateway does for a retry: the same
principal, key and time get the claims back; every other principal, key, time, and every
character changed get an InvalidState naming the check that failed, with the SDK's wire reason.
The integration tests (tests/proxy/test_mrtr.py) show the same refusals on the wire.
"""

from __future__ import annotations

import pytest

from mcpwall.protocol import ErrorCode
from mcpwall.protocol.mrtr import Claims, InvalidState, call_digest, retry_parts, seal, unseal

KEY = b"k" * 32
NOW = 1_800_000_000_000
CLAIMS = Claims("hold-1", 2, NOW + 1000, call_digest("tools/call", {"name": "t", "arguments": {"a": 1}}))


def test_a_state_unseals_for_its_principal_before_it_expires() -> None:
    state = seal(KEY, CLAIMS, "alice")
    assert unseal(KEY, state, "alice", NOW, 7) == CLAIMS
    assert unseal(KEY, state, "alice", NOW + 999, 7) == CLAIMS


@pytest.mark.parametrize("principal", ["bob", "", "alice ", "Alice", "alice\x00", "\udcff"])
def test_another_principal_is_refused(principal: str) -> None:
    with pytest.raises(InvalidState) as refused:
        unseal(KEY, seal(KEY, CLAIMS, "alice"), principal, NOW, 7)
    assert refused.value.detail == "principal"
    answer = refused.value.to_message()
    assert answer["id"] == 7
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
    assert answer["error"]["data"]["reason"] == "invalid_request_state"


def test_an_expired_state_and_another_key_are_refused() -> None:
    state = seal(KEY, CLAIMS, "alice")
    with pytest.raises(InvalidState, match="Expired") as late:
        unseal(KEY, state, "alice", NOW + 1000, 7)
    assert late.value.detail == "expired"
    with pytest.raises(InvalidState) as foreign:
        unseal(b"other" * 8, state, "alice", NOW, 7)
    assert foreign.value.detail == "signature"


def test_every_changed_character_is_refused() -> None:
    state = seal(KEY, CLAIMS, "alice")
    for i, c in enumerate(state):
        for other in sorted({"A", "b", ".", "_", "-"} - {c}):
            edited = state[:i] + other + state[i + 1:]
            with pytest.raises(InvalidState) as refused:
                unseal(KEY, edited, "alice", NOW, 7)
            assert refused.value.detail in ("signature", "malformed"), edited


@pytest.mark.parametrize("token", [None, 3, "", "a", "a.b.c", "..", "x" * 5000, ["a.b"]])
def test_what_is_not_a_state_is_refused(token: object) -> None:
    with pytest.raises(InvalidState):
        unseal(KEY, token, "alice", NOW, 7)


def test_the_digest_is_the_calls_method_name_and_arguments_whatever_their_key_order() -> None:
    one = call_digest("tools/call", {"name": "t", "arguments": {"a": 1, "b": [1, 2]}, "_meta": {"x": 1}})
    assert one == call_digest("tools/call", {"arguments": {"b": [1, 2], "a": 1}, "name": "t"})
    assert one != call_digest("tools/call", {"name": "t", "arguments": {"a": 1, "b": [2, 1]}})
    assert one != call_digest("prompts/get", {"name": "t", "arguments": {"a": 1, "b": [1, 2]}})
    assert call_digest("resources/read", {"uri": "a://x"}) != call_digest("resources/read", {"uri": "a://y"})


def test_retry_parts_takes_the_round_members_out() -> None:
    rest, responses, state = retry_parts({"name": "t", "inputResponses": {"k": {}}, "requestState": "s"})
    assert (rest, responses, state) == ({"name": "t"}, {"k": {}}, "s")
