"""The frontend's map of a request's headers (`_door.header_map`): a request whose raw headers equal
the last one's is mapped by a copy of that map (issue 24), and that changes nothing a caller sees.

Strategy: in process, no gateway. Requests alternate between header lists that differ in one value,
in one name's case, in a repeated name; each gets exactly the map a fresh decode gives, and a map a
caller changes does not change the next request's.
"""

from __future__ import annotations

from mcpwall.proxy._door import header_map


def fresh(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


BASE = [(b"host", b"127.0.0.1:9"), (b"authorization", b"Bearer a"), (b"mcp-name", b"everything__echo")]
OTHERS = [
    [(b"host", b"127.0.0.1:9"), (b"authorization", b"Bearer b"), (b"mcp-name", b"everything__echo")],
    [(b"host", b"127.0.0.1:9"), (b"Authorization", b"Bearer a"), (b"mcp-name", b"everything__echo")],
    [*BASE, (b"mcp-name", b"everything__printEnv")],
    BASE[:2],
    [(b"host", b"127.0.0.1:9"), (b"authorization", b"Bearer a"), (b"mcp-name", b"everything__\xe9cho")],
]


def test_each_request_gets_the_map_of_its_own_headers() -> None:
    for other in OTHERS:
        for raw in (BASE, list(BASE), other, list(other), BASE):
            assert header_map(raw) == fresh(raw)


def test_a_map_changed_by_its_caller_does_not_reach_the_next_request() -> None:
    first = header_map(list(BASE))
    first["authorization"] = "Bearer changed"
    del first["mcp-name"]
    assert header_map(list(BASE)) == fresh(BASE)


def test_a_header_list_changed_after_it_was_mapped_is_mapped_anew() -> None:
    raw = list(BASE)
    header_map(raw)
    raw[1] = (b"authorization", b"Bearer other")
    assert header_map(raw)["authorization"] == "Bearer other"


def test_headers_given_as_an_iterator_are_mapped_and_leave_nothing_wrong_behind() -> None:
    assert header_map(iter(BASE)) == fresh(BASE)  # ASGI allows any iterable
    assert header_map([]) == {}
    assert header_map(list(BASE)) == fresh(BASE)
