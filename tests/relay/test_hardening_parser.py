"""Hardening matrix, parser and stream rules: what the framed listener does with bad frames.

Strategy: a real gateway (in-process, built as `mcpwall proxy --frame-listen` builds it) with
the real built-in tools server, the npm `everything` server and a deliberately slow server
(tests/proxy/servers/misbehave.py, which logs every call that reaches it). A raw
`FrameClient` sends what a hostile or broken relay could: oversized frames, bad JSON, bad
flags, reused streams, requests on the notification stream, wrong answers to server requests,
stalled bodies. Each case checks the refusal the client sees, that nothing reached an
upstream, and that the gateway keeps serving (the same or another connection).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from mcpwall.relay import CLOSE, END, ERROR, HEADER_SIZE, MAX_FRAME, MORE, NOTIFY_STREAM, SERVER_BIT, encode
from tests.relay.helpers import (
    EVERYTHING,
    FrameClient,
    Framed,
    builtin,
    framed_gateway,
    is_refusal,
    misbehave,
    payload,
    text_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def gw(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Framed]:
    tmp = tmp_path_factory.mktemp("parser")
    markers = tmp / "markers"
    markers.mkdir()
    servers = {"local": builtin(), "ev": EVERYTHING, "slow": misbehave("slow", markers)}
    async with framed_gateway(tmp, servers, body_timeout=1.0) as framed:
        framed.markers = markers  # type: ignore[attr-defined]
        yield framed


@pytest.fixture
async def client(gw: Framed) -> AsyncIterator[FrameClient]:
    c = await FrameClient.open(gw.socket)
    await c.initialize()
    yield c
    await c.close()


def _calls(gw: Framed) -> str:
    log: Path = gw.markers / "calls.log"  # type: ignore[attr-defined]
    return log.read_text() if log.exists() else ""


async def _alive(c: FrameClient) -> None:
    answer = await c.request("ping")
    assert answer["result"] == {}


async def test_a_frame_over_one_mebibyte_closes_that_connection_and_no_other(gw: Framed,
                                                                              client: FrameClient) -> None:
    bystander = await FrameClient.open(gw.socket, "bystander")
    await bystander.initialize()
    await client.raw(struct.pack(">I", MAX_FRAME + 1) + b"MCPW")
    frame = await client.next_frame()
    assert frame is not None
    assert frame.flags & CLOSE
    assert "exceeds" in payload(frame)["error"]["message"]
    assert await client.next_frame() is None  # closed
    await _alive(bystander)
    await bystander.close()


async def test_bytes_that_are_not_frames_close_the_connection(gw: Framed) -> None:
    c = await FrameClient.open(gw.socket, process=None)
    await c.raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    frame = await c.next_frame()
    assert frame is not None
    assert frame.flags & CLOSE
    assert await c.next_frame() is None
    await c.close()


async def test_invalid_json_is_answered_on_its_stream_and_the_connection_goes_on(client: FrameClient) -> None:
    stream = client.next_stream()
    await client.send(stream, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    frame = await client.frame_on(stream)
    assert frame.flags == ERROR | END
    assert payload(frame)["error"]["code"] == -32700
    await client.send(NOTIFY_STREAM, b"[1, 2")  # on the notification stream too
    frame = await client.frame_on(NOTIFY_STREAM)
    assert is_refusal(frame)
    await _alive(client)


@pytest.mark.parametrize(("stream_kind", "flags"), [
    ("request", 0x0100),      # an unknown bit
    ("request", 0x8000),      # the top bit
    ("request", END),         # END on a request
    ("notify", END),          # flags on stream 0
])
async def test_malformed_flags_are_refused_and_the_call_never_runs(gw: Framed, client: FrameClient,
                                                                   stream_kind: str, flags: int) -> None:
    before = _calls(gw)
    msg = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
           "params": {"name": "slow__act", "arguments": {"seconds": 0, "flag": flags}}}
    if stream_kind == "notify":
        await client.send(NOTIFY_STREAM, {"jsonrpc": "2.0", "method": "notifications/initialized"}, flags)
        frame = await client.frame_on(NOTIFY_STREAM)
    else:
        stream = client.next_stream()
        await client.send(stream, msg, flags)
        frame = await client.frame_on(stream)
        assert frame.flags & END
    assert is_refusal(frame)
    assert payload(frame)["error"]["code"] == -32600
    await _alive(client)
    assert _calls(gw) == before


async def test_a_stream_id_reused_while_open_is_refused_and_the_first_request_still_completes(
        gw: Framed, client: FrameClient) -> None:
    stream = client.next_stream()
    first = {"jsonrpc": "2.0", "id": "first", "method": "tools/call",
             "params": {"name": "slow__act", "arguments": {"seconds": 1, "which": "first"}}}
    second = {"jsonrpc": "2.0", "id": "second", "method": "tools/call",
              "params": {"name": "slow__act", "arguments": {"seconds": 0, "which": "second"}}}
    await client.send(stream, first)
    await asyncio.sleep(0.2)
    await client.send(stream, second)
    refusal = await client.frame_on(NOTIFY_STREAM)
    assert is_refusal(refusal)
    assert payload(refusal)["error"]["data"]["stream"] == stream
    answer = await client.frame_on(stream)
    assert answer.flags == END
    assert payload(answer)["id"] == "first"
    assert '"which": "second"' not in _calls(gw)


async def test_a_request_id_in_flight_on_two_streams_is_refused(client: FrameClient) -> None:
    a, b = client.next_stream(), client.next_stream()
    msg = {"jsonrpc": "2.0", "id": "dup", "method": "tools/call",
           "params": {"name": "slow__act", "arguments": {"seconds": 1}}}
    await client.send(a, msg)
    await asyncio.sleep(0.2)
    await client.send(b, msg)
    refusal = await client.frame_on(b)
    assert refusal.flags == ERROR | END
    assert "already in flight" in payload(refusal)["error"]["message"]
    assert payload(await client.frame_on(a))["id"] == "dup"


async def test_a_request_on_the_notification_stream_is_refused_and_not_executed(gw: Framed,
                                                                              client: FrameClient) -> None:
    before = _calls(gw)
    await client.send(NOTIFY_STREAM, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                      "params": {"name": "slow__act", "arguments": {"seconds": 0}}})
    refusal = await client.frame_on(NOTIFY_STREAM)
    assert is_refusal(refusal)
    assert payload(refusal)["error"]["data"] == {"stream": 0, "id": 5}
    await _alive(client)
    assert _calls(gw) == before


async def test_a_notification_on_a_request_stream_is_refused(client: FrameClient) -> None:
    stream = client.next_stream()
    await client.send(stream, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    refusal = await client.frame_on(stream)
    assert refusal.flags == ERROR | END
    assert "opens with a request" in payload(refusal)["error"]["message"]


async def test_an_answer_to_a_server_request_must_use_its_stream_and_its_id(gw: Framed) -> None:
    c = await FrameClient.open(gw.socket, "elicited")
    await c.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
                                   "clientInfo": {"name": "frame-test", "version": "1"}})
    await c.send(NOTIFY_STREAM, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    stream = c.next_stream()
    await c.send(stream, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "ev__trigger-elicitation-request", "arguments": {}}})
    ask = await c.next_frame()
    while ask is not None and not ask.stream & SERVER_BIT:
        ask = await c.next_frame()
    assert ask is not None
    request = payload(ask)
    assert request["method"] == "elicitation/create"
    wrong_id = {"jsonrpc": "2.0", "id": "not-the-one", "result": {"action": "decline"}}
    await c.send(ask.stream, wrong_id, END)
    assert is_refusal(await c.frame_on(NOTIFY_STREAM))
    right = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}
    await c.send(ask.stream ^ 1, right, END)  # a server stream that was never opened
    assert is_refusal(await c.frame_on(NOTIFY_STREAM))
    await c.send(ask.stream, right, 0)  # the answer without END
    assert is_refusal(await c.frame_on(NOTIFY_STREAM))
    await c.send(ask.stream, right, END)
    answer = payload(await c.frame_on(stream))
    assert answer["id"] == 1
    assert "result" in answer
    await c.close()


async def test_a_body_that_stalls_after_its_length_closes_the_connection(gw: Framed) -> None:
    c = await FrameClient.open(gw.socket, "slowloris")
    frame = encode(1, b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    await c.raw(frame[:10])  # the length and part of the header; the gateway runs with a 1 s body timeout
    closing = await c.next_frame(timeout=10)
    assert closing is not None
    assert closing.flags & CLOSE
    assert "did not arrive" in payload(closing)["error"]["message"]
    assert await c.next_frame() is None
    await c.close()


async def test_an_idle_connection_between_frames_is_not_closed(gw: Framed, client: FrameClient) -> None:
    await asyncio.sleep(1.5)  # longer than the body timeout, but no frame was started
    await _alive(client)


async def test_a_process_name_that_changes_mid_connection_is_refused(gw: Framed) -> None:
    c = await FrameClient.open(gw.socket, "first-name")
    stream = c.next_stream()
    await c.send(stream, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, 0, "other-name")
    refusal = await c.frame_on(stream)
    assert is_refusal(refusal)
    assert "differs" in payload(refusal)["error"]["message"]
    await c.close()


async def test_a_message_larger_than_a_frame_travels_in_continuation_frames(client: FrameClient) -> None:
    text = "x" * (MAX_FRAME + 200_000)
    stream = client.next_stream()
    body = orjson.dumps({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
                        "params": {"name": "local__echo", "arguments": {"text": text}}})
    cut = MAX_FRAME - HEADER_SIZE
    await client.raw(encode(stream, body[:cut], MORE) + encode(stream, body[cut:]))
    frames = []
    while True:
        frame = await client.frame_on(stream, timeout=30)
        frames.append(frame)
        if frame.flags & END:
            break
    answer = payload(frames[-1])
    assert text_of(answer) == text


async def test_too_many_requests_in_flight_on_one_connection_are_refused(gw: Framed) -> None:
    listener = gw.gateway.service("frame_listener").listener
    saved = listener.max_streams
    listener.max_streams = 3  # for connections accepted from now on
    c = await FrameClient.open(gw.socket, "flood")
    try:
        await c.initialize()
        streams = [c.next_stream() for _ in range(4)]
        for i, s in enumerate(streams):
            await c.send(s, {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "slow__act", "arguments": {"seconds": 1}}})
        refusal = await c.frame_on(streams[3])
        assert refusal.flags == ERROR | END
        assert "in flight" in payload(refusal)["error"]["message"]
        for s in streams[:3]:
            assert payload(await c.frame_on(s))["result"]
    finally:
        listener.max_streams = saved
        await c.close()
