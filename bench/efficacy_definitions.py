"""Detection and false-positive rates of tool-definition and tool-result scanning, through `mcpwall inspect`.

    python bench/efficacy_definitions.py [PATH.jsonl] [--verbose]

PATH defaults to ../shared/efficacy/dev.jsonl (a sample of MCP-SafetyBench, MSB
and MCPSecBench; see its README). Each case goes through the public command,
`mcpwall inspect --json`, run in-process through the CLI's entry point:

- a tool definition is saved as a two-server payload (`{"servers": {...}}`):
  its own server holding it, and a server "siblings" holding the other tools
  the benchmark lists beside it (`meta.sibling_tools`, names only), the way the
  gateway and `inspect --all` check each server against the others; it counts
  as flagged when inspect reports a finding on that tool;
- a tool result is saved as a tools/call result with one text block; it
  counts as flagged on any finding.

Prints the table by attack class, the false positives (always) and the misses
(with --verbose). Asserts nothing.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.security.poisoning import scan_result, scan_tools

sys.path.insert(0, str(Path(__file__).resolve().parent))
from efficacy_sample import default_cases

DEFAULT = default_cases()
GOALS = {"definitions_detected": 0.95, "definitions_false_positive": 0.01, "responses_detected": 0.95,
         "responses_false_positive": 0.02}
_RUNNER = CliRunner()


def payload_of(case: dict[str, Any]) -> dict[str, Any]:
    """What is saved for `mcpwall inspect` to read."""
    payload, meta = case["payload"], case.get("meta") or {}
    if case["kind"] == "tool_definition":
        server = str(meta.get("server") or "server")
        siblings = [{"name": str(n), "inputSchema": {"type": "object"}} for n in meta.get("sibling_tools") or []]
        return {"servers": {server: {"tools": [payload]}, "siblings": {"tools": siblings}}}
    content = payload.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return {"content": [{"type": "text", "text": text}]}


def inspect(data: dict[str, Any]) -> dict[str, Any]:
    """`mcpwall inspect - --json` on `data`; exit 0 (clean) or 1 (findings), anything else is an error."""
    result = _RUNNER.invoke(cli, ["inspect", "-", "--json"], input=json.dumps(data))
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"inspect exited {result.exit_code}: {result.output[-500:]}")
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def scan_case(case: dict[str, Any]) -> list[dict[str, str]]:
    """The findings `mcpwall inspect --json` reports on the case (a definition: on its own tool)."""
    findings: list[dict[str, str]] = inspect(payload_of(case))["findings"]
    if case["kind"] == "tool_definition":
        server = str((case.get("meta") or {}).get("server") or "server")
        name = case["payload"].get("name")
        findings = [f for f in findings if f["server"] == server and f["tool"] == name]
    return findings


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    paths = [a for a in argv if not a.startswith("--")]
    path = Path(paths[0]) if paths else DEFAULT
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [c for c in cases if c["kind"] in ("tool_definition", "response")]
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    kinds: dict[str, int] = defaultdict(int)
    misses, false_positives = [], []
    t0 = time.perf_counter()
    for case in cases:
        findings = scan_case(case)
        flagged = bool(findings)
        slot = tally[(case["kind"], case["label"])]
        slot[0] += flagged
        slot[1] += 1
        if case["label"] == "malicious":
            cls = by_class[f"{case['kind']}:{case['attack_type']}"]
            cls[0] += flagged
            cls[1] += 1
            for kind in {f["kind"] for f in findings}:
                kinds[kind] += 1
            if not flagged:
                misses.append(case)
        elif flagged:
            false_positives.append((case, findings))
    elapsed = time.perf_counter() - t0

    def rate(kind: str, label: str) -> str:
        hit, total = tally[(kind, label)]
        return f"{hit / total if total else 0.0:6.1%}  ({hit}/{total})"

    print(f"sample: {path} ({len(cases)} definition/result cases through `mcpwall inspect --json`, "
          f"{elapsed * 1000 / max(len(cases), 1):.1f} ms each)\n")
    print("| cases | flagged | goal |\n|---|---|---|")
    print(f"| malicious tool definitions | {rate('tool_definition', 'malicious')} | "
          f">= {GOALS['definitions_detected']:.0%} |")
    print(f"| benign tool definitions | {rate('tool_definition', 'benign')} | "
          f"<= {GOALS['definitions_false_positive']:.0%} |")
    print(f"| malicious tool results | {rate('response', 'malicious')} | >= {GOALS['responses_detected']:.0%} |")
    print(f"| benign tool results | {rate('response', 'benign')} | <= {GOALS['responses_false_positive']:.0%} |")
    print("\n| class (malicious) | flagged |\n|---|---|")
    for name in sorted(by_class):
        hit, total = by_class[name]
        print(f"| {name} | {hit}/{total} |")
    print("\nfinding kinds on malicious cases:", dict(sorted(kinds.items(), key=lambda kv: -kv[1])))
    print(f"\nfalse positives: {len(false_positives)}")
    for case, findings in false_positives:
        print(f"  {case['id']}: " + "; ".join(f"{f['kind']} ({f['severity']}): {f['evidence'][:160]}"
                                              for f in findings))
    print(f"misses: {len(misses)}" + ("" if verbose else " (--verbose lists them)"))
    if verbose:
        for case in misses:
            print(f"  {case['id']} {case['attack_type']}: {json.dumps(case['payload'])[:300]}")
    throughput(cases)
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
