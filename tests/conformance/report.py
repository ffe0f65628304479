"""The pass table of docs/CONFORMANCE.md, generated from a run of tests/conformance.

`python -m tests.conformance.report` rewrites the table in the doc from the
results the last test run saved (test-artifacts/conformance/results.json);
test_conformance.py checks that the doc's table is the one its run produced.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conformance.helpers import ROOT, SUITE_VERSION
from tests.conformance.runner import CLIENT_SCENARIOS, PATHS, PENDING

DOC = ROOT / "docs" / "CONFORMANCE.md"
RESULTS = ROOT / "test-artifacts" / "conformance" / "results.json"
BEGIN = "<!-- BEGIN GENERATED: python -m tests.conformance.report -->"
END = "<!-- END GENERATED -->"

#: results.json: {"server": {path: {scenario: "pass" | "FAIL"}}, "client": {scenario: "pass" | "FAIL"},
#:                "scenarios": [every server scenario, in the suite's order]}
Results = dict[str, Any]


def table(results: Results) -> str:
    """The markdown between the markers."""
    server: dict[str, dict[str, str]] = results["server"]
    lines = [f"Suite `@modelcontextprotocol/conformance` {SUITE_VERSION}. `pass`: no check failed; `FAIL`: a check "
             "failed; `n/a`: does not apply (the aggregated endpoints rename tools and prompts); `–`: pending "
             "scenario, not run on the stdio paths (a process per session).", "",
             "| scenario | " + " | ".join(f"`{p.name}`" for p in PATHS) + " |",
             "|---|" + "---|" * len(PATHS)]
    for scenario in results["scenarios"]:
        label = f"{scenario} (pending)" if scenario in PENDING else scenario
        cells = [p.cell(scenario) or server.get(p.name, {}).get(scenario, "missing") for p in PATHS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "| client scenario | mcpwall as the client (`client_driver.py`) |", "|---|---|"]
    lines += [f"| {s} | {results['client'].get(s, 'n/a')} |" for s in CLIENT_SCENARIOS]
    return "\n".join(lines)


def current_table(doc: Path = DOC, begin: str = BEGIN, end: str = END) -> str | None:
    """What the doc holds between the markers (tests/conformance2 passes its own)."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if begin not in text or end not in text:
        return None
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def write_between(markdown: str, doc: Path = DOC, begin: str = BEGIN, end: str = END) -> None:
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{markdown}\n{end}{tail}", encoding="utf-8")


def write_table(results: Results, doc: Path = DOC) -> None:
    write_between(table(results), doc)


def save(results: Results, path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=True), encoding="utf-8")


def main() -> int:
    if not RESULTS.exists():
        print(f"no results at {RESULTS}: run `pytest tests/conformance` first", file=sys.stderr)
        return 1
    write_table(json.loads(RESULTS.read_text(encoding="utf-8")))
    print(f"wrote the pass table into {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
