"""The conformance suite's `auth/*` client scenarios against the gateway's OAuth client (issue 26 acceptance).

Strategy: the official suite (0.2.0-alpha.12, Node 22, tests/conformance2) starts, per scenario, its
own protected MCP server and authorization server (which approves at once, redirecting to the
client's redirect URI), and launches tests/conformance2/auth_client.py as the client. The driver
does what a user does: a gateway home with the scenario's server as a remote upstream, `mcpwall
login` as a subprocess (the driver follows the printed authorization URL as the person's browser
would), then `mcpwall proxy` and the official Python client listing and calling the server's tools
through it, logging in again when the gateway says the server wants it. So discovery (RFC 9728,
RFC 8414 / OIDC), registration (DCR, CIMD, pre-registered), PKCE, `resource`, `iss`, the token
requests and the bearer token on the MCP requests are all mcpwall's, judged by the suite's checks.

Every scenario the suite lists runs (`auth_runner.RUNS`, all at once, four at a time) with
MCPWALL_CONFORMANCE_FULL=1: the scored ones at 2025-11-25 and at 2026-07-28 (the login's and the
gateway's handshake and stateless paths); CI runs `auth_runner.CI_RUNS`, 34 of the 47 (the
scored ones at 2026-07-28 and six at 2025-11-25, the draft and back-compat ones, the
client-credentials extension). A run passes on the suite's own verdict: no check failed or warned and the
driver's calls went through. What does not pass is in `auth_runner.GAPS` with the checks it may
fail and why, checked strictly: a gap that closes, or a new failing check, fails its test.
docs/CONFORMANCE.md's table is the one this run produced.

Resource-server side: suite 0.2.0-alpha.12 has no server scenario that checks authorization (its
`authorization` command tests an authorization server, which the gateway is not); the
gateway's downstream resource server is tested with Glewlwyd in tests/oauth/test_resource_server.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance import report
from tests.conformance.helpers import ROOT
from tests.conformance.runner import Outcome
from tests.conformance2.auth_runner import (
    BEGIN,
    CI_RUNS,
    END,
    GAPS,
    GAPS_010,
    RUNS,
    RUNS_010,
    bad_checks,
    doc_cells,
    listed_auth_scenarios,
    run_all,
    run_auth_010,
    table,
)
from tests.conformance2.runner2 import full, suite_installed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

#: every run with MCPWALL_CONFORMANCE_FULL=1, else CI's subset
RUNS_HERE = RUNS if full() else CI_RUNS
RESULTS = ROOT / "test-artifacts" / "conformance2" / "auth.json"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Outcome]:
    if not suite_installed():
        pytest.fail("suite 0.2.x is not installed: run `npm ci --prefix tests/conformance2` (make setup does)")
    return run_all(tmp_path_factory.mktemp("conformance-auth"), RUNS_HERE)


def test_every_auth_scenario_the_suite_lists_runs() -> None:
    assert sorted({s for _, s in RUNS}) == sorted(listed_auth_scenarios())


@pytest.mark.parametrize(("revision", "scenario"), [pytest.param(r, s, id=f"{r}:{s}") for r, s in RUNS_HERE])
def test_mcpwall_oauth_client_passes_the_auth_scenario(outcomes: dict[tuple[str, str], Outcome], revision: str,
                                                       scenario: str) -> None:
    outcome = outcomes[(revision, scenario)]
    assert outcome.checks, f"{scenario} at {revision} recorded no checks"
    bad = bad_checks(outcome)
    if (revision, scenario) in GAPS:
        allowed, why = GAPS[(revision, scenario)]
        assert bad, f"{scenario} at {revision} passes now: drop it from auth_runner.GAPS ({why})"
        assert bad <= allowed, f"{scenario} at {revision} fails more than its gap: {outcome.describe()}"
        return
    assert not bad, f"gateway bug: {scenario} at {revision}: {outcome.describe()}"
    assert outcome.exit_code == 0, f"the driver's calls failed: {scenario} at {revision}: {outcome.describe()}"


def test_the_auth_table_in_docs_is_the_one_this_run_produced(outcomes: dict[tuple[str, str], Outcome]) -> None:
    def cell(run: tuple[str, str]) -> str:
        outcome = outcomes[run]
        if outcome.checks and not bad_checks(outcome) and outcome.exit_code == 0:
            return "pass"
        return "gap" if run in GAPS and bad_checks(outcome) <= GAPS[run][0] else "FAIL"

    cells = {f"{r} {s}": cell((r, s)) for r, s in RUNS_HERE}
    report.save({"auth": cells}, RESULTS)
    # rows this run did not make (CI runs a subset) keep what the doc says
    merged = {**doc_cells(report.current_table(report.DOC, BEGIN, END)), **cells}
    if os.environ.get("MCPWALL_UPDATE_CONFORMANCE_DOC") == "1":
        report.write_between(table(merged), report.DOC, BEGIN, END)
    assert report.current_table(report.DOC, BEGIN, END) == table(merged), (
        "docs/CONFORMANCE.md's auth table differs from this run: run this test with "
        "MCPWALL_UPDATE_CONFORMANCE_DOC=1 and review the diff")


@pytest.mark.skipif(not full(), reason="suite 0.1.10's auth scenarios run with MCPWALL_CONFORMANCE_FULL=1")
@pytest.mark.parametrize("scenario", [f"auth/{s}" for s in RUNS_010])
def test_suite_0_1_10_auth_scenarios(tmp_path: Path, scenario: str) -> None:
    outcome = run_auth_010(scenario, tmp_path)
    assert outcome.checks, f"{scenario} recorded no checks (suite output under {tmp_path})"
    bad = bad_checks(outcome)
    if scenario in GAPS_010:
        allowed, why = GAPS_010[scenario]
        assert (bad or outcome.exit_code), f"{scenario} passes on 0.1.10 now: drop it from GAPS_010 ({why})"
        assert bad <= allowed, f"{scenario} on 0.1.10 fails more than its gap: {outcome.describe()}"
        return
    assert not bad, f"gateway bug: {scenario} on 0.1.10: {outcome.describe()}"
    assert outcome.exit_code == 0, f"the driver's calls failed: {scenario} on 0.1.10: {outcome.describe()}"
