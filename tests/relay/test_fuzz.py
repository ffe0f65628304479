"""Fuzzing the frame parser with libFuzzer, plus hypothesis properties on every run.

Strategy: `fuzz_frames.py` is an atheris (libFuzzer) harness over the sans-I/O parser the
listener uses; the test runs it in a subprocess with a per-input timeout (hangs) and an RSS
limit (runaway memory), seeded with valid streams, and requires a clean "Done N runs".
N is MCPWALL_FRAME_FUZZ_RUNS: 1,000,000 for the full campaign (docs/wire.md records its
run), 100,000 by default so that `make test` stays inside CI's time budget (the full run
takes 10-15 minutes of one core here). The hypothesis tests below are quicker and run the
same target on random bytes and on valid streams with bytes flipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwall.relay import END, MORE, encode, meta_line

HERE = Path(__file__).resolve().parent
RUNS = int(os.environ.get("MCPWALL_FRAME_FUZZ_RUNS", "100000"))


def _seeds(directory: Path) -> None:
    streams = [
        meta_line("agent") + encode(1, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'),
        encode(0, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 0, "claude"),
        encode(2, b'{"jsonrpc":', MORE) + encode(2, b'"2.0","id":2,"result":{}}', END),
        encode(0x80000001, b'{"jsonrpc":"2.0","id":"mcpwall-1","result":{}}', END),
    ]
    for i, stream in enumerate(streams):
        (directory / f"seed{i}").write_bytes(b"\x00" + stream)
        (directory / f"seed{i}-split").write_bytes(b"\x01" + stream)


@pytest.mark.integration
@pytest.mark.timeout(1800)
def test_the_frame_parser_survives_fuzzed_inputs_without_crash_hang_or_memory_growth(
        tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is a dev dependency (libFuzzer for Python)")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _seeds(corpus)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    # Through a shell that forks: Linux carries a process's peak RSS across exec, so a fuzzer started
    # straight from this pytest process (near 800 MB late in the suite) reported pytest's peak as its
    # own and libFuzzer's -rss_limit_mb stopped it at its first check; a forked child starts afresh.
    proc = subprocess.run(
        ["sh", "-c", '"$@"; exit $?', "sh",
         sys.executable, str(HERE / "fuzz_frames.py"), f"-runs={RUNS}", "-max_len=4096", "-timeout=5",
         "-rss_limit_mb=768", "-seed=1", "-print_final_stats=1", str(corpus)],
        capture_output=True, text=True, timeout=1700, env=env, cwd=str(tmp_path))
    tail = proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    assert f"Done {RUNS} runs" in proc.stderr, tail


def _target(data: bytes) -> None:
    from tests.relay.fuzz_frames import test_one_input  # the harness imports atheris

    test_one_input(data)


_VALID = [encode(1, b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', 0, "a"),
          encode(3, b'{"x":1}', MORE) + encode(3, b"", END),
          meta_line("p") + encode(0, b'{"jsonrpc":"2.0","method":"x"}')]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2048))
def test_random_bytes_only_ever_raise_the_parsers_own_refusal(data: bytes) -> None:
    pytest.importorskip("atheris")
    _target(data)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(_VALID), flips=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)),
                                                      max_size=6), step=st.integers(0, 40))
def test_valid_streams_with_flipped_bytes_only_ever_raise_the_parsers_own_refusal(
        base: bytes, flips: list[tuple[int, int]], step: int) -> None:
    pytest.importorskip("atheris")
    data = bytearray(base)
    for pos, value in flips:
        if pos < len(data):
            data[pos] = value
    _target(bytes([step]) + bytes(data))
