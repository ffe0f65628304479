"""Detection and false-positive rates of the poisoning scan on a labelled sample.

    python bench/efficacy_definitions.py [PATH.jsonl] [--verbose]

PATH defaults to ../shared/efficacy/dev.jsonl (a sample of MCP-SafetyBench, MSB
and MCPSecBench; see its README). Tool definitions are scanned with the other
tools of their server (`meta.sibling_tools`) as peers, the way the gateway
scans a server's tools against every other tool it knows; tool results are
scanned as the text content of a tools/call result. A case counts as flagged
when the scan reports any finding. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from mcpwall.security.poisoning import Finding, scan_result, scan_tool, scan_tools

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "efficacy" / "dev.jsonl"
GOALS = {"definitions_detected": 0.90, "definitions_false_positive": 0.02, "responses_detected": 0.80}


def scan_case(case: dict[str, Any]) -> list[Finding]:
    payload, meta = case["payload"], case.get("meta") or {}
    if case["kind"] == "tool_definition":
        server = str(meta.get("server") or "server")
        peers = {"siblings": [str(n) for n in meta.get("sibling_tools") or []]}
        return scan_tool(payload, server=server, peers=peers)
    content = payload.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return scan_result({"content": [{"type": "text", "text": text}]}, tool=str(payload.get("tool", ""))).findings


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    paths = [a for a in argv if not a.startswith("--")]
    path = Path(paths[0]) if paths else DEFAULT
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    kinds: Counter[str] = Counter()
    misses, false_positives = [], []
    t0 = time.perf_counter()
    scanned = 0
    for case in cases:
        if case["kind"] not in ("tool_definition", "response"):
            continue
        scanned += 1
        findings = scan_case(case)
        flagged = bool(findings)
        slot = tally[(case["kind"], case["label"])]
        slot[0] += flagged
        slot[1] += 1
        if case["label"] == "malicious":
            by_type[f"{case['kind']}:{case['attack_type']}"][0] += flagged
            by_type[f"{case['kind']}:{case['attack_type']}"][1] += 1
            kinds.update({f.kind for f in findings})
            if not flagged:
                misses.append(case)
        elif flagged:
            false_positives.append((case, findings))
    elapsed = time.perf_counter() - t0

    def rate(kind: str, label: str) -> tuple[float, str]:
        hit, total = tally[(kind, label)]
        return (hit / total if total else 0.0), f"{hit}/{total}"

    d_tp, d_tp_s = rate("tool_definition", "malicious")
    d_fp, d_fp_s = rate("tool_definition", "benign")
    r_tp, r_tp_s = rate("response", "malicious")
    r_fp, r_fp_s = rate("response", "benign")
    print(f"sample: {path} ({scanned} definition/response cases, {elapsed * 1000 / max(scanned, 1):.2f} ms each)")
    print(f"malicious tool definitions flagged : {d_tp:6.1%}  ({d_tp_s})   goal >= {GOALS['definitions_detected']:.0%}")
    print(f"benign tool definitions flagged    : {d_fp:6.1%}  ({d_fp_s})   goal <= "
          f"{GOALS['definitions_false_positive']:.0%}")
    print(f"malicious tool results flagged     : {r_tp:6.1%}  ({r_tp_s})   goal >= {GOALS['responses_detected']:.0%}")
    print(f"benign tool results flagged        : {r_fp:6.1%}  ({r_fp_s})")
    print("\nby attack type (flagged/total):")
    for name in sorted(by_type):
        hit, total = by_type[name]
        print(f"  {name:60s} {hit}/{total}")
    print("\nfinding kinds on malicious cases:", dict(kinds.most_common()))
    throughput(cases)
    if verbose:
        for case in misses:
            print(f"\nMISS {case['id']} {case['attack_type']}: {json.dumps(case['payload'])[:400]}")
        for case, findings in false_positives:
            print(f"\nFALSE POSITIVE {case['id']}: {[f.as_dict() for f in findings]}")
    else:
        print(f"\n{len(misses)} miss(es), {len(false_positives)} false positive(s); --verbose lists them")
    return 0


def throughput(cases: list[dict[str, Any]]) -> None:
    """What a scan costs the gateway: a whole tools/list (uncached) and a large tool result."""
    tools = [c["payload"] for c in cases if c["kind"] == "tool_definition" and c["label"] == "benign"]
    tools = [{**t, "name": f"{t['name']}_{i}"} for i in range(3) for t in tools][:150]
    t0 = time.perf_counter()
    scan_tools(tools, server="bench")
    list_ms = (time.perf_counter() - t0) * 1000
    text = ("Row %d: a line of ordinary tool output, with numbers 12345 and a path /tmp/x.\n" * 12000) % tuple(
        range(12000))
    t0 = time.perf_counter()
    scan_result({"content": [{"type": "text", "text": text}]}, redact=True)
    result_ms = (time.perf_counter() - t0) * 1000
    print(f"\ncost: tools/list of {len(tools)} tools scanned in {list_ms:.1f} ms (verdicts are then cached per "
          f"definition); a {len(text) / 1024 / 1024:.1f} MiB result in {result_ms:.1f} ms")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
