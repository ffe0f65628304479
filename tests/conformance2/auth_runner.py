"""The suite's `auth/*` client scenarios with mcpwall's OAuth client as the client (issue 26).

Each scenario runs at the revisions it applies to (`conformance list --client` names them): the
ones both frozen requirement sets score at 2025-11-25 and 2026-07-28, the draft ones at
2026-07-28, the 2025-03-26 back-compatibility ones at 2025-03-26, and the extensions (not on the
spec timeline) with no revision. The suite launches tests/conformance2/auth_client.py, which logs
the gateway in and drives its calls through it; the verdict is the suite's (no failed check, no
warning, the client exited 0, where the scenario does not expect the client to give up).
"""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.conformance.helpers import PYTHON, SUITE_BIN
from tests.conformance.runner import Outcome
from tests.conformance2.runner2 import LEGACY, MODERN, SUITE_VERSION, suite

HERE = Path(__file__).resolve().parent
AUTH_CLIENT = HERE / "auth_client.py"
BACKCOMPAT, EXTENSION = "2025-03-26", "extension"

#: The scenarios the frozen 2025-11-25 and 2026-07-28 requirement sets score.
SCORED = ("metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
          "scope-from-www-authenticate", "scope-from-scopes-supported", "scope-omitted-when-undefined",
          "scope-step-up", "scope-retry-limit", "token-endpoint-auth-basic", "token-endpoint-auth-post",
          "token-endpoint-auth-none", "pre-registration")
#: Introduced in 2026-07-28 (the suite's draft list: not scored yet).
DRAFT = ("resource-mismatch", "offline-access-scope", "offline-access-not-supported",
         "authorization-server-migration", "iss-supported", "iss-not-advertised", "iss-supported-missing",
         "iss-wrong-issuer", "iss-unexpected", "iss-normalized", "metadata-issuer-mismatch")
OLD = ("2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback")
EXTENSIONS = ("client-credentials-jwt", "client-credentials-basic", "enterprise-managed-authorization", "dpop",
              "dpop-nonce", "wif-jwt-bearer")

RUNS: tuple[tuple[str, str], ...] = (
    *((LEGACY, f"auth/{s}") for s in SCORED), *((MODERN, f"auth/{s}") for s in SCORED),
    *((MODERN, f"auth/{s}") for s in DRAFT), *((BACKCOMPAT, f"auth/{s}") for s in OLD),
    *((EXTENSION, f"auth/{s}") for s in EXTENSIONS))

#: What CI runs (each run starts two logins and a gateway): the scored scenarios at 2026-07-28, those of them
#: that take their own way through the login or the gateway at 2025-11-25 too, the draft and back-compat
#: ones, and the one extension mcpwall implements. MCPWALL_CONFORMANCE_FULL=1 runs them all (`RUNS`).
_CI_LEGACY = frozenset({"auth/metadata-default", "auth/metadata-var1", "auth/basic-cimd", "auth/scope-step-up",
                        "auth/scope-retry-limit", "auth/pre-registration"})
CI_RUNS = tuple(run for run in RUNS if (run[0] != LEGACY or run[1] in _CI_LEGACY)
                and (run[0] != EXTENSION or run[1] == "auth/client-credentials-basic"))

#: The runs that do not pass, the checks that may fail or warn in them, and why (gateway gap, or not supported).
#: Checked strictly: a run that starts passing, or fails another check, fails its test until this is updated.
GAPS: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    (EXTENSION, "auth/client-credentials-jwt"): (
        frozenset({"client-credentials-grant-type", "client-credentials-jwt-verified"}),
        "gap: `mcpwall login --service` authenticates a client-credentials client with a secret only "
        "(client_secret_basic), not a private-key JWT assertion (RFC 7523, `private_key_jwt`); the driver's "
        "login falls back to the browser flow"),
    (EXTENSION, "auth/enterprise-managed-authorization"): (
        frozenset({"complete-flow-token-exchange", "complete-flow-jwt-bearer"}),
        "not supported: the enterprise-managed extension (an identity assertion from the enterprise IdP "
        "exchanged by RFC 8693 token exchange, then a JWT-bearer grant) needs a login at the enterprise IdP, "
        "which `mcpwall login` does not do"),
    (EXTENSION, "auth/dpop"): (
        frozenset({"sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme",
                   "sep-1932-client-fresh-proof"}),
        "not supported: DPoP (RFC 9449, SEP-1932): the gateway's grants are bearer tokens (docs/AUTH.md, not "
        "covered)"),
    (EXTENSION, "auth/dpop-nonce"): (
        frozenset({"sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme",
                   "sep-1932-client-fresh-proof", "sep-1932-client-as-nonce", "sep-1932-client-rs-nonce"}),
        "not supported: DPoP with a server nonce (RFC 9449 section 8), as `auth/dpop`"),
    (EXTENSION, "auth/wif-jwt-bearer"): (
        frozenset({"wif-grant-type", "wif-assertion-verified"}),
        "not supported: workload identity federation (a platform's workload JWT presented by the "
        "JWT-bearer grant, RFC 7523) is not a grant `mcpwall login` makes"),
}



#: Suite 0.1.10 (tests/conformance, Node 20): its auth scenarios have no revisions, and three are older than
#: the specification they are judged by today. Run with MCPWALL_CONFORMANCE_FULL=1; what does not pass, and why.
RUNS_010 = ("metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
            "2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback", "scope-from-www-authenticate",
            "scope-from-scopes-supported", "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
            "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
            "client-credentials-jwt", "client-credentials-basic")
_ISSUER_010 = ("not applicable: 0.1.10's authorization server serves metadata at the tenant path whose `issuer` is "
               "the root, which RFC 8414 section 3.3 makes the client refuse (the SDK does: \"issuer mismatch\"); "
               "0.2.x fixed its server and checks the refusal in `auth/metadata-issuer-mismatch`, which passes")
GAPS_010: dict[str, tuple[frozenset[str], str]] = {
    "auth/metadata-var2": (frozenset({"client-registration", "authorization-request", "token-request"}), _ISSUER_010),
    "auth/metadata-var3": (frozenset({"client-registration", "authorization-request", "token-request"}), _ISSUER_010),
    "auth/scope-retry-limit": (frozenset(), "not applicable: every check passes and the login gives up after the "
                               "server's repeated 403, as the scenario wants; 0.1.10 then fails the run for the "
                               "client's exit status, which 0.2.x's same scenario allows (`allowClientError`)"),
    "auth/client-credentials-jwt": (frozenset({"client-credentials-grant-type", "client-credentials-jwt-verified"}),
                                    "gap: as 0.2.x's (`private_key_jwt` is not supported)"),
}


#: How long the suite waits for the driver (mcpwall's login and a gateway, several processes): 60 s was
#: too short once on a 2-core machine under `make test`'s two workers ("CLIENT TIMED OUT" after every
#: check had passed); a run ends as soon as the driver does, so only a slow machine waits longer.
CLIENT_TIMEOUT_MS = "150000"


def run_auth_010(scenario: str, out_dir: Path) -> Outcome:
    """One auth scenario of suite 0.1.10 (Node 20), the same driver as the client."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(SUITE_BIN), "client", "--command", f"{PYTHON} {AUTH_CLIENT}", "--scenario", scenario,
                           "--timeout", CLIENT_TIMEOUT_MS, "-o", str(out_dir)], capture_output=True, text=True, timeout=300,
                          check=False, cwd=SUITE_BIN.parents[2])
    (out_dir / "suite.log").write_text(done.stdout + done.stderr)
    return Outcome(scenario, _checks(out_dir), done.returncode, done.stdout + done.stderr)


def listed_auth_scenarios() -> list[str]:
    """Every `auth/*` client scenario `conformance list --client` names."""
    out = suite("list", "--client", timeout=60).stdout
    return [m.group(1) for m in re.finditer(r"^\s+- (auth/\S+)", out, re.M)]


def _checks(out_dir: Path) -> list[dict[str, Any]]:
    found = sorted(out_dir.glob("auth/*/checks.json"))
    return json.loads(found[-1].read_text()) if found else []


def run_auth(revision: str, scenario: str, out_dir: Path) -> Outcome:
    """One auth scenario at `revision`, mcpwall's OAuth client logging in and calling through the gateway."""
    out_dir.mkdir(parents=True, exist_ok=True)
    version = [] if revision == EXTENSION else ["--spec-version", revision]
    done = suite("client", "--command", f"{PYTHON} {AUTH_CLIENT}", "--scenario", scenario, *version,
                 "--timeout", CLIENT_TIMEOUT_MS, "-o", str(out_dir), timeout=300)
    (out_dir / "suite.log").write_text(done.stdout + done.stderr)
    return Outcome(scenario, _checks(out_dir), done.returncode, done.stdout + done.stderr)


def bad_checks(outcome: Outcome) -> set[str]:
    return {str(c.get("id")) for c in [*outcome.with_status("FAILURE"), *outcome.with_status("WARNING")]}


BEGIN = "<!-- BEGIN GENERATED: auth scenarios (tests/conformance2/test_conformance_auth.py) -->"
END = "<!-- END GENERATED auth -->"


def doc_cells(markdown: str | None) -> dict[str, str]:
    """The cells of a table `table` wrote: {"REVISION SCENARIO": cell}."""
    found = re.findall(r"^\| `(auth/[^`]+)` \| ([\w-]+) \| ([^|]+) \|", markdown or "", re.M)
    return {f"{revision} {scenario}": cell.strip() for scenario, revision, cell in found}


def table(cells: dict[str, str]) -> str:
    """docs/CONFORMANCE.md's table of the auth scenarios: {"REVISION SCENARIO": "pass" | "gap" | "FAIL"}."""
    lines = [f"Suite `@modelcontextprotocol/conformance` {SUITE_VERSION}, client scenarios `auth/*`, mcpwall's "
             "OAuth client as the client (`tests/conformance2/auth_client.py`). `pass`: no check failed or "
             "warned and the driver's calls went through the gateway; `gap`: does not pass, for the reason given. "
             "CI runs a subset (`auth_runner.CI_RUNS`); `MCPWALL_CONFORMANCE_FULL=1` runs every row.", "",
             "| scenario | revision | mcpwall | why not |", "|---|---|---|---|"]
    for revision, scenario in RUNS:
        cell = cells.get(f"{revision} {scenario}", "not run")
        why = GAPS[(revision, scenario)][1] if cell == "gap" else ""
        lines.append(f"| `{scenario}` | {revision} | {cell} | {why} |")
    return "\n".join(lines)


def verdict(outcome: Outcome) -> str:
    """`pass`, or the ids of the failed and warned checks (and the suite's exit status)."""
    if outcome.passed and not outcome.with_status("WARNING"):
        return "pass"
    return outcome.describe()


def run_all(out_dir: Path, runs: tuple[tuple[str, str], ...] = RUNS, workers: int = 4
            ) -> dict[tuple[str, str], Outcome]:
    def one(run: tuple[str, str]) -> tuple[tuple[str, str], Outcome]:
        revision, scenario = run
        return run, run_auth(revision, scenario, out_dir / revision / scenario.replace("/", "-"))

    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, runs))


if __name__ == "__main__":
    import sys

    results = run_all(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/mcpwall-auth-conformance"))
    for (revision, scenario), outcome in results.items():
        print(f"{revision:10} {scenario:45} {verdict(outcome)[:400]}")
