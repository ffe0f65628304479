"""Call-level detection on the `call` cases of shared/efficacy/dev.jsonl, through `mcpwall simulate`.

Each case is decided by the public command, run in-process through the CLI's entry point:
`mcpwall simulate TOOL --server S --args JSON --json` on the built-in default policy (a fresh,
empty home, so no policy.yaml of the user's is read). A case is *stopped* when the decision is
deny or ask **and a rule decided it**: a deny by `defaultAction` (the shipped default is deny) is
not counted, since it refuses every call no rule allows, benign ones too, and stops nothing once
an operator allows the tools they use. The table is by attack class, with the rule ids that
stopped each malicious case, the misses and the false positives.

Usage: python bench/efficacy_calls.py [--cases PATH] [--json]
Nothing here special-cases the sample's strings; a held-out set measures the same code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from click.testing import CliRunner  # noqa: E402

from mcpwall.cli import cli  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from efficacy_sample import default_cases  # noqa: E402

DEFAULT_CASES = default_cases()
#: A weekday noon: the business-hours allow rule is in force (the harder case for detection).
NOW = "2026-12-02T12:00:00"


def decide(runner: CliRunner, home: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """`mcpwall simulate` on one call: the decision as `--json` prints it."""
    argv = [
        "simulate",
        payload["tool"],
        "--server",
        payload.get("server", ""),
        "--args",
        json.dumps(payload.get("arguments") or {}),
        "--now",
        NOW,
        "--home",
        str(home),
        "--json",
    ]
    result = runner.invoke(cli, argv, catch_exceptions=False)
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"simulate exited {result.exit_code}: {result.output}")
    decided: dict[str, Any] = json.loads(result.output)
    return decided


def stopped_by_rule(decision: dict[str, Any]) -> bool:
    """A deny or ask that a rule decided (the default action's deny does not count)."""
    if decision.get("action") not in ("deny", "ask") and decision.get("enforced_action") not in (
        "deny",
        "ask",
    ):
        return False
    return bool(decision.get("rule_ids"))


def run(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    runner = CliRunner()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            decision = decide(runner, Path(tmp), case["payload"])
            rows.append(
                {
                    "id": case["id"],
                    "label": case["label"],
                    "attack_type": case["attack_type"],
                    "action": decision.get("action"),
                    "rule_ids": decision.get("rule_ids") or [],
                    "stopped": stopped_by_rule(decision),
                    "payload": case["payload"],
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["label"] == "malicious":
            by_class[r["attack_type"]].append(r)
    mal = [r for r in rows if r["label"] == "malicious"]
    ben = [r for r in rows if r["label"] == "benign"]
    classes = []
    for name in sorted(by_class):
        items = by_class[name]
        classes.append(
            {
                "class": name,
                "cases": len(items),
                "stopped": sum(r["stopped"] for r in items),
                "rules": dict(Counter(i for r in items if r["stopped"] for i in r["rule_ids"])),
            }
        )
    return {
        "malicious": len(mal),
        "stopped": sum(r["stopped"] for r in mal),
        "benign": len(ben),
        "false_positives": sum(r["stopped"] for r in ben),
        "classes": classes,
        "missed": [
            {"id": r["id"], "class": r["attack_type"], "call": r["payload"]} for r in mal if not r["stopped"]
        ],
        "false_positive_cases": [
            {"id": r["id"], "rule_ids": r["rule_ids"], "call": r["payload"]} for r in ben if r["stopped"]
        ],
    }


def _rate(n: int, d: int) -> str:
    return f"{n}/{d} = {n / d:.1%}" if d else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = [c for c in map(json.loads, args.cases.read_text().splitlines()) if c["kind"] == "call"]
    summary = summarize(run(cases))
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"call cases: {len(cases)} from {args.cases} (mcpwall simulate, built-in default policy)\n")
    print("| class | stopped by a rule | rules |\n|---|---|---|")
    for c in summary["classes"]:
        rules = ", ".join(f"{k} ({v})" for k, v in sorted(c["rules"].items()))
        print(f"| {c['class']} | {_rate(c['stopped'], c['cases'])} | {rules or '-'} |")
    print(f"| **malicious, all** | {_rate(summary['stopped'], summary['malicious'])} | |")
    print(f"| **benign stopped** | {_rate(summary['false_positives'], summary['benign'])} | |")
    for miss in summary["missed"]:
        print(f"missed: {miss['id']} ({miss['class']}): {json.dumps(miss['call'])}")
    for fp in summary["false_positive_cases"]:
        print(f"false positive: {fp['id']} by {', '.join(fp['rule_ids'])}: {json.dumps(fp['call'])}")


if __name__ == "__main__":
    main()
