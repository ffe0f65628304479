"""The modern request's cheap readings answer exactly as the full checks do (issue 24).

Every 2026-07-28 call passes `envelope` and `mismatch`, so both read the usual request in one
pass (issue 24: a modern call may cost no more than a legacy one). Strategy: the one-pass
reading is compared with the full checks over a grid of envelopes (every key missing, of the
wrong type, unsupported, unhashable) and of `Mcp-Name` headers against body names (sentinels,
sentinels that decode to something else, control characters, non-ASCII, tabs), so a shortcut
that admits what the checks refuse, or refuses with another answer, fails here. The HTTP
refusals themselves are in test_modern_http.py.
"""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest

from mcpwall.protocol import ErrorCode, Message, ProtocolError
from mcpwall.protocol.modern import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    Envelope,
    _envelope_checks,
    checked_envelope,
    decode_header_value,
    envelope,
    envelope_of,
    log_filter,
)
from mcpwall.proxy._mcp_headers import _safe, mismatch

pytestmark = pytest.mark.timeout(60)

_ABSENT = object()
VERSIONS = [_ABSENT, "2026-07-28", "2025-11-25", "2026-07-28 ", 20260728, None, ["2026-07-28"], {}]
CAPS = [_ABSENT, {}, {"elicitation": {}}, [], None, "all"]
LEVELS = [_ABSENT, None, "info", "emergency", "INFO", "verbose", [], {}, 3]
INFOS = [_ABSENT, {"name": "bench", "version": "1"}, {"name": 5}, {}, "bench", None, {"name": "x" * 300}]


def _meta(version: Any, caps: Any, level: Any, info: Any) -> dict[str, Any]:
    given = {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: caps, LOG_LEVEL_META_KEY: level,
             CLIENT_INFO_META_KEY: info}
    return {k: v for k, v in given.items() if v is not _ABSENT}


def _answer(check: Any, *args: Any) -> Envelope | tuple[int, str, Any]:
    try:
        found: Envelope = check(*args)
    except ProtocolError as exc:
        return exc.code, exc.message, exc.data
    return found


def test_the_one_pass_envelope_answers_as_every_check_in_turn() -> None:
    cases = 0
    for version, caps, level, info in itertools.product(VERSIONS, CAPS, LEVELS, INFOS):
        meta = _meta(version, caps, level, info)
        fast = _answer(envelope, 7, {"name": "t", "_meta": meta})
        assert fast == _answer(_envelope_checks, 7, meta), meta
        cases += 1
    assert cases == len(VERSIONS) * len(CAPS) * len(LEVELS) * len(INFOS)
    assert _answer(envelope, 7, {"_meta": "no"}) == _answer(_envelope_checks, 7, "no")


def test_an_unhashable_log_level_is_invalid_params_not_a_crash() -> None:
    meta = _meta("2026-07-28", {}, [], _ABSENT)
    with pytest.raises(ProtocolError) as caught:
        envelope(1, {"_meta": meta})
    assert caught.value.code == ErrorCode.INVALID_PARAMS


def test_a_remembered_envelope_is_only_that_of_the_very_same_meta() -> None:
    first = {"_meta": _meta("2026-07-28", {}, "info", {"name": "a", "version": "1"})}
    assert checked_envelope(1, first).log_level == "info"
    assert envelope_of(1, first).client_name == "a"
    equal_but_other = {"_meta": _meta("2026-07-28", {}, "info", {"name": "a", "version": "1"})}
    first["_meta"][LOG_LEVEL_META_KEY] = "bogus"  # the remembered one changed after its check
    assert envelope_of(1, equal_but_other).log_level == "info"
    unsupported = {"_meta": _meta("2025-11-25", {}, _ABSENT, _ABSENT)}
    with pytest.raises(ProtocolError) as caught:
        envelope_of(1, unsupported)
    assert caught.value.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION


def _sentinel(text: str) -> str:
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


NAMES = ["everything__echo", "a b", " lead", "tab\there", "café", "bell\x07", "del\x7f", "", "=?base64?",
         _sentinel("everything__echo"), _sentinel("other__tool"), "=?base64?ZXZlcnl0aGluZ19fZWNobw?="]
SENT = [*NAMES, _sentinel("café"), _sentinel(" lead"), _sentinel("=?base64?"), "=?base64?!!?=", "EVERYTHING__ECHO"]


def _expected(sent: str, value: str) -> str | None:
    """The name rule as written: safe characters, then the decoded header equal to the body's."""
    if not _safe(sent):
        return "mcp-name header carries invalid characters"
    if decode_header_value(sent) != value:
        return "mcp-name header does not match the request body's 'name' parameter"
    return None


@pytest.mark.parametrize("modern", [True, False])
def test_the_name_header_shortcut_refuses_exactly_what_the_rule_refuses(modern: bool) -> None:
    refused = 0
    for sent, value in itertools.product(SENT, NAMES):
        meta = _meta("2026-07-28", {}, _ABSENT, _ABSENT) if modern else {}
        msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": value, "_meta": meta}}
        headers = {"mcp-method": "tools/call", "mcp-name": sent}
        if modern:
            headers["mcp-protocol-version"] = "2026-07-28"
        raw = [(k.encode(), v.encode("latin-1", "replace")) for k, v in headers.items()]
        why = mismatch(raw, headers, msg, modern=modern, schema_of=lambda _name: None)
        assert why == _expected(sent, value), (sent, value)
        refused += why is not None
    assert refused > len(SENT) * (len(NAMES) - 1) // 2  # most pairs disagree: the grid is not all passes


@pytest.mark.anyio
@pytest.mark.parametrize(("level", "passed"), [
    (None, []), ("bogus", []), ("warning", ["warning", "error", "emergency"]),
    ("debug", ["debug", "warning", "error", "emergency"]), ("emergency", ["emergency"]),
])
async def test_log_lines_pass_only_at_the_level_asked_for_and_progress_always(level: str | None,
                                                                              passed: list[str]) -> None:
    got: list[Message] = []

    async def emit(msg: Message) -> None:
        got.append(msg)

    filtered = log_filter(emit, level)
    said: list[Any] = ["debug", "warning", "error", "emergency", "bogus", [], None, 3]
    for value in said:
        await filtered({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": value}})
    await filtered({"jsonrpc": "2.0", "method": "notifications/message"})
    await filtered({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
    assert [m["params"].get("level") for m in got if m["method"] == "notifications/message"] == passed
    assert got[-1]["method"] == "notifications/progress"
