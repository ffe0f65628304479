"""The official conformance suite 0.2.x (Node 22), both frozen requirement sets, through every gateway path.

Strategy (issue 24, acceptance's first point): `@modelcontextprotocol/conformance`
0.2.0-alpha.12 runs on the Node 22 that tests/conformance2/package.json pins
(npm's `node` package; `npm ci --prefix tests/conformance2`, which `make setup`
does). Every server scenario its `2025-11-25` and `2026-07-28` requirement
sets name runs against the dual-era reference server (reference_server2.py,
the official Python SDK 2.x) directly, over HTTP and over stdio through the
test bridge (bridge2.py), then through real `mcpwall` processes: `/mcp/{server}`
and `POST /{server}` in front of a stdio and a streamable-HTTP upstream, the
aggregated `/mcp`, `mcpwall wrap` and `mcpwall proxy --stdio` (stdio upstream
and HTTP upstream). The gateway runs as shipped (the default policy in audit
mode) with `--insecure-no-auth`, as in tests/conformance.

The rule is per check: a check that passes on the path's control (direct-http
for an HTTP frontend, direct-stdio for a bridged one) passes through the
gateway. What an upstream's era cannot carry is in `_GAPS`, by upstream kind and era, checked strictly: a gap
that closes fails its test until it is dropped from the list. Every path's run
happens once, all paths at once, in the module fixture; the last test compares
docs/CONFORMANCE.md's 0.2.x table with this run's.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.runner import Outcome
from tests.conformance2 import report2
from tests.conformance2.runner2 import (
    CLIENT,
    CLIENT_CORE,
    LEGACY,
    MODERN,
    NODE,
    NODE_VERSION,
    PATHS,
    REQUIRED,
    REVISIONS,
    Path2,
    Paths2,
    full,
    listed_server_scenarios,
    run,
    run_client,
    suite,
    suite_installed,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

_KEYS = ("a handshake-era upstream asks its questions as server-to-client requests, which carry no key: the "
         "gateway names them itself (`mcpwall-N`), so the scenario's `user_name` cannot be the server's")
_ONE_AT_A_TIME = ("a handshake-era upstream asks one question at a time and waits for each answer, so its three "
                  "questions come in three rounds, not together in one InputRequiredResult")
_LEGACY_CAPS = ("a handshake-era upstream reads the capabilities of the gateway's own `initialize`, not the "
                "client's per-request ones, and decides on them without asking anything the gateway could refuse "
                "on the client's behalf (the gateway does refuse a question for a capability the client did not "
                "declare)")
#: What fails through the gateway, by (revision, scenario) and the path's combination (upstream kind and era,
#: `Path2.combination`): only what the upstream's era cannot carry (docs/CONFORMANCE.md says why).
_GAPS: dict[tuple[str, str], dict[str, str]] = {
    (MODERN, "input-required-result-basic-elicitation"): {"stdio-legacy": _KEYS, "http-legacy": _KEYS},
    (MODERN, "input-required-result-multiple-input-requests"): {"stdio-legacy": _ONE_AT_A_TIME,
                                                                "http-legacy": _ONE_AT_A_TIME},
    (MODERN, "input-required-result-capability-check"): {"stdio-legacy": _LEGACY_CAPS, "http-legacy": _LEGACY_CAPS},
    (MODERN, "server-stateless"): {"stdio-legacy": _LEGACY_CAPS, "http-legacy": _LEGACY_CAPS},
}
#: The checks a gap may lose, where a scenario has more than the gap's (the rest must pass as on the control).
_GAP_CHECKS: dict[tuple[str, str], frozenset[str]] = {
    (MODERN, "server-stateless"): frozenset({"sep-2575-server-rejects-undeclared-capability",
                                             "sep-2575-missing-capability-http-400"}),
}


def known_gap(path: Path2, revision: str, scenario: str) -> str | None:
    """Why a scenario fails through this path today (issue 24's open items), or None."""
    return _GAPS.get((revision, scenario), {}).get(path.combination) if path.gateway else None


#: Checks of the HTTP transport that fail on direct-stdio, the bridged paths' control: the bridge compares no
#: header with the body, and the SDK's stdio server answers an `initialize` in the 2026-07-28 envelope with
#: -32022, not the -32601 (404) of its HTTP transport.
BRIDGE_CHECKS = frozenset({"sep-2575-http-server-header-mismatch-400",
                           "sep-2575-http-server-method-not-found-404-initialize"})
#: the gateway's log line for an upstream it opened: `[ref] ready (stdio: ..., 2025-11-25)`
_READY = re.compile(r"\[(\w+)\] ready \([^,]*, ([0-9-]+)\)")
DIRECT = [p for p in PATHS if not p.gateway]
GATEWAY = [p for p in PATHS if p.gateway]


class Runs:
    """Every path's suite run for both requirement sets, done at once on first use."""

    def __init__(self, paths: Paths2, work: Path) -> None:
        self.paths = paths
        self.work = work
        self.results: dict[tuple[str, str], dict[str, Outcome]] = {}
        self.seconds: dict[str, float] = {}

    def run_all(self) -> None:
        # the bridged handshake-era runs are the slow ones (a process per scenario): they start first
        jobs = sorted(((p, r) for p in PATHS for r in REVISIONS), key=lambda j: not (j[0].bridged and j[1] == LEGACY))
        urls = {p.name: self.paths.url(p.name) for p in PATHS}
        # A handshake-era stdio upstream's questions say not which call they are for: the gateway gives one
        # to nobody while calls of several clients are in flight to it, so the two revisions' runs of a path
        # in front of one such process take turns (each path has its own process: `ref`, `pref`).
        turns = {p.name: threading.Lock() for p in PATHS}

        def one(job: tuple[Path2, str]) -> None:
            path, revision = job
            shared = path.combination == "stdio-legacy" and not path.bridged
            with turns[path.name] if shared else contextlib.nullcontext():
                started = time.monotonic()
                self.results[(path.name, revision)] = run(urls[path.name], self.work / revision / path.name, path,
                                                          revision)
                self.seconds[f"{revision}:{path.name}"] = round(time.monotonic() - started, 1)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, jobs))

    def outcome(self, path: str, revision: str, scenario: str) -> Outcome:
        return self.results[(path, revision)].get(scenario) or Outcome(scenario)

    def where(self, path: str, revision: str) -> str:
        return f"suite output under {self.work / revision / path}; logs: {', '.join(map(str, self.paths.logs.values()))}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    if not suite_installed():
        pytest.fail("suite 0.2.x is not installed: run `npm ci --prefix tests/conformance2` (make setup does)")
    work = tmp_path_factory.mktemp("conformance2")
    paths = Paths2(work)
    try:
        r = Runs(paths, work)
        r.run_all()
        yield r
    finally:
        paths.close()


def _cases(specs: list[Path2]) -> list[Any]:
    return [pytest.param(p.name, r, s, id=f"{r}:{p.name}:{s}") for p in specs for r in REVISIONS
            for s in p.scenarios(r)]


def _failed(outcome: Outcome) -> set[str]:
    return {str(c.get("id")) for c in outcome.with_status("FAILURE")}


def _passed(outcome: Outcome) -> set[str]:
    return {str(c.get("id")) for c in outcome.with_status("SUCCESS")}


def test_the_suite_runs_on_the_pinned_node_22() -> None:
    assert NODE.exists(), "run `npm ci --prefix tests/conformance2`"
    assert suite("--version", timeout=60).returncode == 0
    assert subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True).stdout.strip() \
        == f"v{NODE_VERSION}"


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_pinned_suite_requires_exactly_the_scenarios_we_run(revision: str) -> None:
    assert listed_server_scenarios(revision) == list(REQUIRED[revision])


@pytest.mark.parametrize(("path", "revision", "scenario"), _cases(DIRECT))
def test_the_reference_server_passes_every_required_scenario_directly(runs: Runs, path: str, revision: str,
                                                                      scenario: str) -> None:
    outcome = runs.outcome(path, revision, scenario)
    allowed = BRIDGE_CHECKS if path == "direct-stdio" else frozenset()
    assert outcome.checks, f"{scenario} did not run on {path} ({runs.where(path, revision)})"
    assert _failed(outcome) <= allowed, f"{scenario} on {path}: {outcome.describe()} ({runs.where(path, revision)})"


@pytest.mark.parametrize(("path", "revision", "scenario"), _cases(GATEWAY))
def test_a_check_that_passes_directly_passes_through_mcpwall(runs: Runs, path: str, revision: str,
                                                             scenario: str) -> None:
    spec = next(p for p in PATHS if p.name == path)
    control = runs.outcome(spec.control, revision, scenario)
    outcome = runs.outcome(path, revision, scenario)
    lost = sorted(_passed(control) & _failed(outcome))
    gap = known_gap(spec, revision, scenario)
    if gap is not None:
        assert lost or not outcome.checks, f"{scenario} passes through {path} now: drop it from _GAPS ({gap})"
        allowed = _GAP_CHECKS.get((revision, scenario))
        assert allowed is None or set(lost) <= allowed, (
            f"{scenario} through {path} loses {sorted(set(lost) - (allowed or set()))} beyond its gap ({gap}): "
            f"{outcome.describe()} ({runs.where(path, revision)})")
        return
    assert outcome.checks, f"{scenario} did not run through {path} ({runs.where(path, revision)})"
    assert not lost, (f"gateway bug: {scenario} through {path} ({revision}) fails {lost} that pass on "
                      f"{spec.control}: {outcome.describe()} ({runs.where(path, revision)})")


#: Client scenarios mcpwall fails as the client of its upstream today, with the reason (checked strictly).
CLIENT_GAPS: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize(("revision", "scenario"),
                         [pytest.param(r, s, id=f"{r}:{s}") for r, s in CLIENT if full() or (r, s) in CLIENT_CORE])
def test_mcpwall_as_the_client_passes_the_upstream_side_client_scenarios(tmp_path: Path, revision: str,
                                                                         scenario: str) -> None:
    outcome = run_client(revision, scenario, tmp_path)
    failed = [*outcome.with_status("FAILURE"), *outcome.with_status("WARNING")]
    if (revision, scenario) in CLIENT_GAPS:
        assert failed, f"{scenario} passes now: drop it from CLIENT_GAPS ({CLIENT_GAPS[revision, scenario]})"
        return
    # A check-level verdict: json-schema-ref-no-deref's driver exits 1 by design, the call it makes
    # reaches the network $ref and is refused by the schema stage (tests/security/test_schema_network_ref.py).
    assert outcome.checks, f"{scenario} recorded no checks (suite output under {tmp_path})"
    assert not failed, f"{scenario}: {outcome.describe()} (suite output under {tmp_path})"


def test_the_pass_table_in_docs_is_the_one_this_run_produced(runs: Runs) -> None:
    def cell(path: Path2, revision: str, scenario: str) -> str:
        """A direct path's own verdict; a gateway path's against its control (`pass`: no check lost)."""
        outcome = runs.outcome(path.name, revision, scenario)
        failed = _failed(outcome)
        if not outcome.checks:
            return "missing"
        if not path.gateway:
            return "pass" if failed <= (BRIDGE_CHECKS if path.bridged else frozenset()) else "FAIL"
        if not _passed(runs.outcome(path.control, revision, scenario)) & failed:
            return "pass"
        return "gap" if known_gap(path, revision, scenario) else "FAIL"

    gateway_log = runs.paths.logs.get("gateway")
    eras = dict(_READY.findall(gateway_log.read_text(errors="replace"))) if gateway_log else {}
    results = {"full": full(), "seconds": runs.seconds, "upstream_eras": eras,
               "server": {r: {p.name: {s: cell(p, r, s) for s in p.scenarios(r)} for p in PATHS} for r in REVISIONS}}
    report2.save(results)
    if os.environ.get("MCPWALL_UPDATE_CONFORMANCE_DOC") == "1":
        report2.write_table(results)
    assert report2.current_table() == report2.table(results), (
        "docs/CONFORMANCE.md's 0.2.x table differs from this run: run `python -m tests.conformance2.report2` "
        "(or this test with MCPWALL_UPDATE_CONFORMANCE_DOC=1) and review the diff")
