"""What a server sends is read even when a string holds a lone UTF-16 surrogate.

Strategy: `loads_from_server` against orjson and the standard library. A lone surrogate escape is
valid JSON (RFC 8259 8.2) that orjson refuses; it is read with each lone surrogate removed, in
every place and spelling (high or low, alone, doubled, reversed, at either end, in a key), while a
proper pair stays the character it encodes and everything else orjson refuses is still refused
(checked with a lone surrogate in the same message, so the fallback is the reader that refuses).
A property test compares it with orjson where orjson reads, and with the standard library's
reading minus the lone surrogates where it does not. What still cannot be read fails its call
when it looks like an answer (`unreadable_answer`: the id first or, as the TypeScript SDK writes
it, last), never when it names a method. The gateway's side (answers that were dropped until
their call's timeout) is tests/proxy/test_robustness.py and test_half_characters.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.protocol import loads_from_server, unreadable_answer

LONE = re.compile("[\ud800-\udfff]")


@pytest.mark.parametrize(("raw", "value"), [
    (r'"x\ud800"', "x"),
    (r'"\udc00x"', "x"),
    (r'"a\ud83d b"', "a b"),
    (r'"\ud800\ud800"', ""),
    (r'"\udfff\ud800"', ""),
    (r'"\ud800\u0041"', "A"),
    (r'"\ud83d\ude00 and \ud83d"', "\U0001f600 and "),
    (r'{"k\udbff": ["v\udc00", {"\ud800": 1}]}', {"k": ["v", {"": 1}]}),
    (r'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "cut \ud83d"}]}}',
     {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "cut "}]}}),
])
def test_a_lone_surrogate_is_removed_wherever_it_is(raw: str, value: Any) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    assert loads_from_server(raw) == value
    assert loads_from_server(raw.encode()) == value
    assert orjson.loads(orjson.dumps(loads_from_server(raw))) == value  # and it can be sent on


@pytest.mark.parametrize("raw", [
    r'["\ud800", NaN]',
    r'["\ud800", Infinity]',
    r'["\ud800", -Infinity]',
    r'["\ud800", 18446744073709551616]',
    r'["\ud800", -9223372036854775809]',
    r'["\ud800"] trailing',
    r'["\ud800", ]',
    r'["\ud800", "\x"]',
    '["\\ud800", ' + "[" * 5000 + "]" * 5000 + "]",
    r'{"a\ud800": 1',
])
def test_what_orjson_refuses_for_another_reason_is_still_refused(raw: str) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        loads_from_server(raw)


def test_what_orjson_reads_is_read_as_orjson_reads_it() -> None:
    for raw in ('{"a": [1, 2.5, null, true, "\\ud83d\\ude00"]}', "18446744073709551615", '"plain"'):
        assert loads_from_server(raw) == orjson.loads(raw)
    with pytest.raises(orjson.JSONDecodeError):
        loads_from_server(b"{not json")


def _expected(value: Any) -> Any:
    """The standard library's reading, minus what is still a lone surrogate once pairs are joined."""
    if isinstance(value, str):
        return LONE.sub("", value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return {_expected(k): _expected(v) for k, v in value.items()}
    return value


TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_any_message_a_server_can_write_is_read(value: Any) -> None:
    raw = json.dumps(value)  # ASCII, every lone surrogate escaped, as JSON.stringify writes it
    assert loads_from_server(raw) == _expected(json.loads(raw))


@pytest.mark.parametrize(("raw", "rid"), [
    (b'{"jsonrpc": "2.0", "id": 7, "result": {"ratio": NaN}}', 7),
    (b'{"result": {"ratio": Infinity}, "jsonrpc": "2.0", "id": "call-7"}', "call-7"),
    (b'{"id": 8, "result": {"text": "caf\xe9"}}', 8),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": {"x": NaN}}', None),
    (b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": NaN}}', None),
    (b'{"jsonrpc": "2.0", "result": {"ratio": NaN}}', None),
    (b'{"jsonrpc": "2.0", "id": {"nested": 1}, "result": NaN}', None),
    (b"not json at all", None),
])
def test_what_still_cannot_be_read_fails_its_call_when_it_is_an_answer(raw: bytes, rid: object) -> None:
    with pytest.raises(orjson.JSONDecodeError) as problem:
        loads_from_server(raw)
    answer = unreadable_answer(raw, problem.value, "srv")
    if rid is None:
        assert answer is None
        return
    assert answer is not None
    assert answer["id"] == rid
    assert answer["error"]["code"] == -32000
    assert answer["error"]["data"] == {"server": "srv", "reason": "transport"}
    assert "not JSON mcpwall can read" in answer["error"]["message"]
