"""The frontend's reading of a request's header lines (`_asgi.folded`) against the line-by-line one."""

from __future__ import annotations

import random

import pytest

from mcpwall.proxy._asgi import folded


def _reference(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


def test_names_lower_cased_values_kept_and_a_name_twice_keeps_its_last_value() -> None:
    raw = [(b"Host", b"a"), (b"MCP-Name", b"Tool \xe9"), (b"mcp-name", b"Other"), (b"X-Agent-Id", b"")]
    assert folded(raw) == {"host": "a", "mcp-name": "Other", "x-agent-id": ""}
    assert folded([]) == {}


@pytest.mark.parametrize("raw", [
    [(b"x-agent-id", b"me\nmcp-name: other_tool")],  # a value carrying the separator and a header line
    [(b"mcp-name\nx-agent-id", b"a")],  # a name carrying it
    [(b"mcp-name", b"a\n"), (b"mcp-method", b"tools/call")],
    [(b"\n", b"\n")],
])
def test_a_line_holding_the_separator_injects_no_header(raw: list[tuple[bytes, bytes]]) -> None:
    got = folded(raw)
    assert got == _reference(raw)
    assert len(got) == len(raw)


def test_agrees_with_the_line_by_line_reading_on_random_lines() -> None:
    rng = random.Random(24)
    alphabet = b"aZ-_:\n\r\t \x00\xe9\xff\xc4Mm"
    for _ in range(2000):
        raw = [(bytes(rng.choices(alphabet, k=rng.randrange(0, 6))), bytes(rng.choices(alphabet, k=rng.randrange(0, 6))))
               for _ in range(rng.randrange(0, 5))]
        assert folded(raw) == _reference(raw), raw
