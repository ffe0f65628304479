"""The 0.2.x pass table of docs/CONFORMANCE.md, generated from a run of tests/conformance2.

`python -m tests.conformance2.report2` rewrites the table between its markers
from the results the last run saved (test-artifacts/conformance2/results.json);
test_conformance2.py checks that the doc's table is the one its run produced.
The markers and file handling are tests/conformance/report.py's.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.conformance import report
from tests.conformance.helpers import ROOT
from tests.conformance2.runner2 import NODE_VERSION, PATHS, REQUIRED, REVISIONS, SUITE_VERSION

RESULTS = ROOT / "test-artifacts" / "conformance2" / "results.json"
BEGIN = "<!-- BEGIN GENERATED: python -m tests.conformance2.report2 -->"
END = "<!-- END GENERATED 0.2 -->"
#: results.json: {"server": {revision: {path: {scenario: "pass" | "FAIL" | "gap"}}}, "full": bool}
Results = dict[str, Any]


def table(results: Results) -> str:
    """The markdown between the markers: one table per requirement set."""
    lines = [f"Suite `@modelcontextprotocol/conformance` {SUITE_VERSION} on Node {NODE_VERSION}, its frozen "
             "requirement sets. `pass`: no check failed; `FAIL`: a check failed; `gap`: fails through the "
             "gateway, a known gap listed below; `n/a`: does not apply on this path; `–`: not run in CI on this "
             "path (a process per scenario; `MCPWALL_CONFORMANCE_FULL=1` runs it). The *upstream era* row says which era "
             "the gateway was told to speak to each path's upstream (`era:` in servers.json; `mixed`: the aggregated "
             "endpoint has upstreams of both)."
             + (" This run was the full matrix." if results.get("full") else "")]
    eras = results.get("upstream_eras") or {}
    if eras:
        lines += ["", "The revision the gateway spoke to each upstream in this run (`mcpwall proxy`'s log): "
                  + ", ".join(f"`{name}` {era}" for name, era in sorted(eras.items())) + "."]
    for revision in REVISIONS:
        cells_by_path: dict[str, dict[str, str]] = results["server"].get(revision, {})
        lines += ["", f"**{revision}**", "",
                  "| scenario | " + " | ".join(f"`{p.name}`" for p in PATHS) + " |",
                  "|---|" + "---|" * len(PATHS),
                  "| *upstream era* | " + " | ".join(p.era or "(none)" for p in PATHS) + " |"]
        for scenario in REQUIRED[revision]:
            cells = [p.cell(revision, scenario) or cells_by_path.get(p.name, {}).get(scenario, "missing")
                     for p in PATHS]
            lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def current_table() -> str | None:
    return report.current_table(report.DOC, BEGIN, END)


def write_table(results: Results) -> None:
    report.write_between(table(results), report.DOC, BEGIN, END)


def save(results: Results) -> None:
    report.save(results, RESULTS)


def main() -> int:
    try:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"no results at {RESULTS}: run `pytest tests/conformance2` first", file=sys.stderr)
        return 1
    write_table(results)
    print(f"wrote the 0.2.x pass table into {report.DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
