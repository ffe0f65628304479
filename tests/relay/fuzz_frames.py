"""libFuzzer harness (atheris) for the frame parser: `python tests/relay/fuzz_frames.py -runs=1000000 [CORPUS]`.

Each input is split into reads of fuzzer-chosen sizes (a socket delivers bytes in any
grouping) and fed to `FrameDecoder`, every frame to `MessageAssembler`, and every whole
message through the same JSON-RPC parse and classify the listener applies. `FrameError` and
`ProtocolError` are the parser saying no; any other exception is a crash. After every read
the buffered bytes must stay within one frame plus that read, and a continued message within
the message bound: a parser that buffers more is a memory bug even if it does not crash.
libFuzzer's `-timeout` catches hangs and `-rss_limit_mb` runaway memory.
"""

from __future__ import annotations

import sys

import atheris

# Only the parser is instrumented for coverage: the gateway modules the package imports are not
# under test here and would slow every run.
with atheris.instrument_imports(include=["mcpwall.relay._frame"]):
    from mcpwall.relay import _frame
    from mcpwall.relay._frame import MAX_FRAME, MAX_MESSAGE, FrameDecoder, FrameError, MessageAssembler
import contextlib

from mcpwall.protocol import ProtocolError, classify, parse


def test_one_input(data: bytes) -> None:
    # The first byte picks the read size (0: everything at once), the rest is the byte stream.
    step = (data[0] * 3) if data else 0
    stream = data[1:]
    step = step or len(stream) or 1
    decoder, assembler = FrameDecoder(), MessageAssembler()
    pos = 0
    try:
        while pos < len(stream):
            size = step
            chunk = stream[pos:pos + size]
            pos += size
            frames = decoder.feed(chunk)
            if len(decoder._buf) > 4 + MAX_FRAME + len(chunk):
                raise AssertionError("the decoder buffered more than one frame")
            for frame in frames:
                whole = assembler.push(frame)
                if assembler._size > MAX_MESSAGE:
                    raise AssertionError("the assembler buffered more than one message")
                if whole is None:
                    continue
                with contextlib.suppress(ProtocolError):
                    classify(parse(whole.payload))
    except FrameError:
        pass


def main() -> None:
    assert _frame is not None
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
