"""bench/proxy_overhead.py's `wrk_counted`: the direct calls' latencies counted as wrk counts its own, so
that the added p99 compares like with like."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "bench" / "proxy_overhead.py"
_spec = importlib.util.spec_from_file_location("proxy_overhead", _PATH)
assert _spec
assert _spec.loader
proxy_overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(proxy_overhead)
wrk_counted, percentile = proxy_overhead.wrk_counted, proxy_overhead.percentile


def test_calls_without_a_stall_are_counted_as_they_came() -> None:
    calls = [0.001, 0.0012, 0.0009, 0.0011] * 25
    assert sorted(wrk_counted(calls, sum(calls), 1)) == sorted(calls)


def test_a_stall_also_counts_the_calls_that_would_have_waited_behind_it() -> None:
    calls = [0.001] * 990 + [0.020]
    interval = sum(calls) / len(calls)
    counted = wrk_counted(calls, sum(calls), 1)
    added = sorted(counted[len(calls):], reverse=True)
    # wrk's stats_correct: 20 ms less 1, 2, ... intervals, while more than one interval is left
    assert added == pytest.approx([0.020 - k * interval for k in range(1, 19)])
    assert min(added) > interval
    assert percentile(calls, 0.99) == 0.001
    assert percentile(counted, 0.99) > 0.005


def test_the_counted_p99_follows_the_stalls_not_the_call_rate() -> None:
    def run(per_call: float) -> list[float]:
        n = round(10 / per_call)  # a 10 s run with twenty 12 ms stalls: 240 ms of them
        return [per_call] * (n - 20) + [0.012] * 20

    slow, fast = run(0.0004), run(0.0001)
    p_slow = percentile(wrk_counted(slow, sum(slow), 1), 0.99)
    p_fast = percentile(wrk_counted(fast, sum(fast), 1), 0.99)
    # as the calls came, both p99s are the per-call time; as wrk counts, both are the stalls' level
    assert percentile(slow, 0.99) == 0.0004
    assert percentile(fast, 0.99) == 0.0001
    # the level the stalls exceed for 1% of the run (100 ms): 20 * (12 ms - L) = 100 ms, L = 7 ms
    assert p_slow == pytest.approx(0.007, abs=0.0005)
    assert p_fast == pytest.approx(0.007, abs=0.0005)
