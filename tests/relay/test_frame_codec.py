"""The wire format codec on its own: frames built by `encode` are read back by `FrameDecoder`.

Strategy: sans-I/O unit tests. Every bound of docs/wire.md is exercised with bytes built by
hand (a wrong magic, a length over 1 MiB, a header that lies about its sizes) and must raise
FrameError before the decoder buffers a body; property tests check that any split of a valid
byte stream into chunks decodes to the same frames.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwall.relay import (
    CLOSE,
    END,
    ERROR,
    HEADER_SIZE,
    MAX_FRAME,
    MAX_MESSAGE,
    MAX_NAME,
    MORE,
    Frame,
    FrameDecoder,
    FrameError,
    MessageAssembler,
    encode,
    encode_message,
    meta_line,
    sanitize_name,
)


def _header(size: int, *, magic: bytes = b"MCPW", version: int = 1, head: int = HEADER_SIZE, stream: int = 1,
            flags: int = 0, name_len: int = 0, payload_len: int = 0) -> bytes:
    return struct.pack(">I4sBBIHHI", size, magic, version, head, stream, flags, name_len, payload_len)


def test_a_frame_round_trips_with_its_stream_flags_name_and_payload() -> None:
    data = encode(7, b'{"jsonrpc":"2.0"}', END, "claude")
    assert data[:4] == struct.pack(">I", len(data) - 4)
    assert data[4:8] == b"MCPW"
    frames = FrameDecoder().feed(data)
    assert frames == [Frame(7, END, "claude", b'{"jsonrpc":"2.0"}')]


def test_the_meta_line_names_the_process_before_the_first_frame() -> None:
    decoder = FrameDecoder()
    frames = decoder.feed(meta_line("gemini cli") + encode(0, b"{}"))
    assert decoder.meta == "gemini cli"
    assert frames == [Frame(0, 0, "", b"{}")]


def test_the_meta_line_split_across_reads_is_still_recognised() -> None:
    decoder = FrameDecoder()
    data = meta_line("agent") + encode(1, b"x")
    out: list[Frame] = []
    for i in range(len(data)):
        out += decoder.feed(data[i:i + 1])
    assert decoder.meta == "agent"
    assert out == [Frame(1, 0, "", b"x")]


def test_process_names_are_sanitised_and_bounded() -> None:
    assert sanitize_name("evil\x1b[31m\nname") == "evil__31m_name"
    assert len(sanitize_name("a" * 500)) == MAX_NAME
    decoder = FrameDecoder()
    decoder.feed(b"\x00MCPWALL_META:" + "ü\x07\u202ex".encode() + b"\n")
    assert decoder.meta is not None
    assert decoder.meta.isascii()
    assert "\x07" not in decoder.meta


def test_a_length_over_one_mebibyte_is_refused_before_the_body_arrives() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match="exceeds"):
        decoder.feed(_header(MAX_FRAME + 1))


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    payload = b"x" * (MAX_FRAME - HEADER_SIZE)
    assert FrameDecoder().feed(encode(1, payload)) == [Frame(1, 0, "", payload)]
    with pytest.raises(ValueError, match="exceeds"):
        encode(1, payload + b"x")


@pytest.mark.parametrize(("data", "message"), [
    (_header(HEADER_SIZE, magic=b"HTTP"), "magic"),
    (_header(HEADER_SIZE, version=2), "version"),
    (_header(HEADER_SIZE, head=10), "header length"),
    (_header(HEADER_SIZE, head=200), "header length"),
    (_header(HEADER_SIZE + 65, name_len=65) + b"n" * 65, "process name"),
    (_header(HEADER_SIZE, payload_len=5), "does not match"),
])
def test_a_header_that_breaks_the_format_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        FrameDecoder().feed(data)


def test_a_frame_shorter_than_its_header_is_refused() -> None:
    with pytest.raises(FrameError, match="shorter"):
        FrameDecoder().feed(struct.pack(">I", 3) + b"abc")


def test_the_decoder_reports_a_partial_frame_so_the_body_timeout_can_run() -> None:
    decoder = FrameDecoder()
    data = encode(1, b"payload")
    assert decoder.feed(data[:6]) == []
    assert decoder.in_frame
    assert decoder.feed(data[6:]) == [Frame(1, 0, "", b"payload")]
    assert not decoder.in_frame


def test_unknown_flag_bits_are_refused_by_the_assembler() -> None:
    frame = FrameDecoder().feed(struct.pack(">I", HEADER_SIZE) + _header(0, flags=0x0100)[4:])[0]
    with pytest.raises(FrameError, match="unknown flag") as caught:
        MessageAssembler().push(frame)
    assert not caught.value.fatal
    with pytest.raises(ValueError, match="unknown flag"):
        encode(1, b"", 0x40)


def test_a_long_message_is_split_with_more_and_joined_again() -> None:
    payload = bytes(range(256)) * 9000  # 2.3 MB: three frames
    frames = encode_message(5, payload, END, "agent")
    assert len(frames) == 3
    assert all(len(f) - 4 <= MAX_FRAME for f in frames)
    decoder, assembler = FrameDecoder(), MessageAssembler()
    out = [m for f in frames for raw in decoder.feed(f) if (m := assembler.push(raw)) is not None]
    assert out == [Frame(5, END, "agent", payload)]


def test_a_continued_message_may_not_be_interleaved_with_another_stream() -> None:
    assembler = MessageAssembler()
    assembler.push(Frame(1, MORE, "", b"part"))
    with pytest.raises(FrameError, match="interleaved"):
        assembler.push(Frame(2, 0, "", b"other"))


def test_a_continued_message_may_not_grow_past_the_message_bound() -> None:
    assembler = MessageAssembler(max_message=MAX_MESSAGE)
    chunk = b"x" * (MAX_FRAME - HEADER_SIZE)
    for _ in range(MAX_MESSAGE // len(chunk)):
        assembler.push(Frame(1, MORE, "", chunk))
    with pytest.raises(FrameError, match="exceeds"):
        assembler.push(Frame(1, MORE, "", chunk))


def test_more_cannot_carry_close_or_error() -> None:
    for flags in (MORE | CLOSE, MORE | ERROR):
        with pytest.raises(FrameError):
            MessageAssembler().push(Frame(1, flags, "", b""))


frames_strategy = st.lists(st.tuples(st.integers(0, 2**32 - 1), st.sampled_from([0, END, ERROR, END | ERROR]),
                                     st.text(max_size=80), st.binary(max_size=3000)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(frames=frames_strategy, cuts=st.lists(st.integers(1, 5000), max_size=20))
def test_any_chunking_of_a_valid_stream_decodes_to_the_same_frames(
        frames: list[tuple[int, int, str, bytes]], cuts: list[int]) -> None:
    data = b"".join(encode(s, p, f, n) for s, f, n, p in frames)
    decoder = FrameDecoder()
    out: list[Frame] = []
    pos = 0
    for cut in cuts:
        out += decoder.feed(data[pos:pos + cut])
        pos += cut
    out += decoder.feed(data[pos:])
    assert out == [Frame(s, f, sanitize_name(n), p) for s, f, n, p in frames]
    assert not decoder.in_frame
