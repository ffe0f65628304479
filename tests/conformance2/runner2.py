"""Running suite 0.2.x: its frozen requirement sets, on Node 22, on every path through mcpwall.

`@modelcontextprotocol/conformance` 0.2.x names what each revision of the
specification requires of a server, frozen at its release
(`conformance list --server --requirements REVISION`), and runs it at that
revision's wire: `2025-11-25` (the `initialize` handshake) and `2026-07-28`
(stateless: `server/discover`, per-request `_meta`). `run` drives one path and
one revision; the paths are tests/conformance/runner.py's (`Paths`, started
lazily, stopped by PID) with the dual-era reference server
(reference_server2.py) and bridge (bridge2.py), plus the gateway paths 0.1.10
did not take: seatbelt's `POST /{server}` and `proxy --stdio` in front of a
stdio upstream.

The suite runs on the Node that tests/conformance2/package.json pins (the npm
registry's `node` package), never the machine's.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conformance import runner
from tests.conformance.helpers import CLIENT_DRIVER, MCPWALL, PYTHON
from tests.conformance.runner import Outcome, _read_checks

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node" / "bin" / "node"
SUITE_PACKAGE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE_JS = SUITE_PACKAGE / "dist" / "index.js"
#: pinned in tests/conformance2/package.json
SUITE_VERSION = "0.2.0-alpha.12"
NODE_VERSION = "22.23.3"
LEGACY, MODERN = "2025-11-25", "2026-07-28"
REVISIONS = (LEGACY, MODERN)

#: The server scenarios each frozen requirement set names, in the suite's order.
REQUIRED: dict[str, tuple[str, ...]] = {
    LEGACY: (
        "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
        "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
        "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
        "tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults",
        "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list", "resources-read-text",
        "resources-read-binary", "resources-templates-read", "resources-subscribe", "resources-unsubscribe",
        "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
        "prompts-get-with-image", "dns-rebinding-protection"),
    MODERN: (
        "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
        "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
        "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
        "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
        "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection", "caching", "input-required-result-basic-elicitation",
        "input-required-result-basic-sampling", "input-required-result-basic-list-roots",
        "input-required-result-request-state", "input-required-result-multiple-input-requests",
        "input-required-result-multi-round", "input-required-result-missing-input-response",
        "input-required-result-non-tool-request", "input-required-result-result-type",
        "input-required-result-unsupported-methods", "input-required-result-tampered-state",
        "input-required-result-capability-check", "input-required-result-ignore-extra-params",
        "input-required-result-validate-input"),
}
#: Scenarios that name no tool, prompt or completion target, so they apply to the aggregated endpoints too.
NAME_FREE = frozenset({*runner.NAME_FREE, "dns-rebinding-protection", "sep-2164-resource-not-found", "caching"})
#: Checks of the HTTP transport itself (Host and Origin, headers against the body): a stdio frontend has
#: none, so on the bridged paths they are the bridge's and only the bridge control (direct-stdio) judges them.
HTTP_ONLY = frozenset({"dns-rebinding-protection"})
#: What the bridged handshake-era paths run in CI (a process per scenario); every scenario still runs on the
#: HTTP paths in front of both upstream kinds. MCPWALL_CONFORMANCE_FULL=1 runs them all everywhere.
CORE = frozenset({"server-initialize", "tools-list", "tools-call-with-logging", "tools-call-with-progress",
                  "tools-call-sampling", "tools-call-elicitation", "resources-read-text"})
#: Handshake-era scenarios that need the server's messages outside the answer (log lines, progress,
#: sampling and elicitation requests): seatbelt's `POST /{server}` answers each POST with one JSON
#: reply and has no stream to carry them, so they do not apply there.
BACKCHANNEL = frozenset({"tools-call-with-logging", "tools-call-with-progress", "tools-call-sampling",
                         "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"})


def full() -> bool:
    return os.environ.get("MCPWALL_CONFORMANCE_FULL") == "1"


@dataclass(frozen=True)
class Path2:
    """One way for the suite to reach the reference server, and what the gateway stands in front of."""

    name: str
    title: str
    gateway: bool
    #: the upstream the gateway reaches the reference server by: "stdio", "http", "both" (aggregated); "" direct
    upstream: str
    #: the frontend is stdio, reached through bridge2.py (a process per handshake-era client)
    bridged: bool = False
    aggregated: bool = False
    #: seatbelt's plain JSON-RPC endpoint: one JSON answer per POST, no stream
    plain: bool = False
    #: the era the gateway is told to speak to the upstream (`era:` in servers.json): "legacy" (`initialize`)
    #: or "modern" (`server/discover`, 2026-07-28 per request); "" for the direct paths
    era: str = ""
    #: run in CI (the rest with MCPWALL_CONFORMANCE_FULL=1 only)
    ci: bool = True

    @property
    def combination(self) -> str:
        """The upstream kind and era, as _GAPS keys them: `stdio-legacy`, `http-modern`, `both-modern`, ..."""
        return f"{self.upstream}-{self.era}"

    @property
    def control(self) -> str:
        """The direct path this one is judged against: the same frontend transport with no mcpwall."""
        return "direct-stdio" if self.bridged else "direct-http"

    def cell(self, revision: str, scenario: str) -> str | None:
        """Why a scenario has no result here, as the table shows it; None if it runs here."""
        if (self.aggregated and scenario not in NAME_FREE) or (self.bridged and scenario in HTTP_ONLY) \
                or (self.plain and revision == LEGACY and scenario in BACKCHANNEL):
            return "n/a"
        if self.bridged and revision == LEGACY and not full() and scenario not in CORE:
            return "–"
        return None

    def scenarios(self, revision: str) -> tuple[str, ...]:
        return tuple(s for s in REQUIRED[revision] if self.cell(revision, s) is None)


_LEGACY_PATHS = (
    Path2("gw-stdio-upstream", "`mcpwall proxy`, `/mcp/ref`: a stdio upstream", True, "stdio", era="legacy"),
    Path2("gw-http-upstream", "`mcpwall proxy`, `/mcp/remote`: a streamable-HTTP upstream", True, "http",
          era="legacy"),
    Path2("gw-aggregated-http", "`mcpwall proxy`, `/mcp`: the five upstreams of both eras aggregated "
          "(`server__name`)", True, "both", aggregated=True, era="mixed"),
    Path2("gw-post-stdio-upstream", "`mcpwall proxy`, `POST /pref`: seatbelt's JSON-RPC endpoint, stdio upstream",
          True, "stdio", plain=True, era="legacy"),
    Path2("gw-post-http-upstream", "`mcpwall proxy`, `POST /remote`: seatbelt's JSON-RPC endpoint, HTTP upstream",
          True, "http", plain=True, era="legacy"),
    Path2("gw-wrap-stdio", "`mcpwall wrap` (one stdio server, names unchanged) through bridge2.py", True, "stdio",
          bridged=True, era="legacy"),
    Path2("gw-proxy-stdio", "`mcpwall proxy --stdio` (aggregated) through bridge2.py, HTTP upstream", True,
          "http", bridged=True, aggregated=True, era="legacy"),
    Path2("gw-proxy-stdio-stdio-upstream", "`mcpwall proxy --stdio` (aggregated) through bridge2.py, stdio upstream",
          True, "stdio", bridged=True, aggregated=True, era="legacy"),
)
#: The same reference server reached in its 2026-07-28 era (`era: modern`): `mref` over stdio, `mremote` over
#: HTTP. A 2026-07-28 client then meets a modern upstream; a 2025-11-25 client is bridged to it.
_MODERN_PATHS = (
    Path2("gw-stdio-modern-upstream", "`mcpwall proxy`, `/mcp/mref`: a stdio upstream, `era: modern`", True,
          "stdio", era="modern"),
    Path2("gw-http-modern-upstream", "`mcpwall proxy`, `/mcp/mremote`: a streamable-HTTP upstream, `era: modern`",
          True, "http", era="modern"),
    Path2("gw-post-stdio-modern-upstream", "`mcpwall proxy`, `POST /mref`: JSON-RPC endpoint, stdio upstream, "
          "`era: modern`", True, "stdio", plain=True, era="modern", ci=False),
    Path2("gw-post-http-modern-upstream", "`mcpwall proxy`, `POST /mremote`: JSON-RPC endpoint, HTTP upstream, "
          "`era: modern`", True, "http", plain=True, era="modern", ci=False),
    Path2("gw-proxy-stdio-modern", "`mcpwall proxy --stdio` (aggregated) through bridge2.py, HTTP upstream, "
          "`era: modern`", True, "http", bridged=True, aggregated=True, era="modern", ci=False),
    Path2("gw-proxy-stdio-stdio-modern", "`mcpwall proxy --stdio` (aggregated) through bridge2.py, stdio upstream, "
          "`era: modern`", True, "stdio", bridged=True, aggregated=True, era="modern"),
    Path2("gw-wrap-stdio-modern", "`mcpwall wrap --era modern` (one stdio server, names unchanged) through "
          "bridge2.py", True, "stdio", bridged=True, era="modern"),
)
ALL_PATHS = (
    Path2("direct-http", "the reference server over streamable HTTP, no mcpwall", False, ""),
    Path2("direct-stdio", "the reference server over stdio through bridge2.py, no mcpwall", False, "",
          bridged=True),
    *_LEGACY_PATHS, *_MODERN_PATHS,
)
#: The paths this run takes: the representative matrix in CI, every path with MCPWALL_CONFORMANCE_FULL=1.
PATHS = tuple(p for p in ALL_PATHS if p.ci or full())
BY_NAME = {p.name: p for p in ALL_PATHS}
#: where the shared gateway serves each modern-upstream path
_GATEWAY_ROUTES = {"gw-stdio-modern-upstream": "/mcp/mref", "gw-http-modern-upstream": "/mcp/mremote",
                   "gw-post-stdio-modern-upstream": "/mref",
                   "gw-post-http-modern-upstream": "/mremote"}


class Paths2(runner.Paths):
    """tests/conformance's paths with the dual-era reference server and bridge, and the paths added here."""

    reference = HERE / "reference_server2.py"
    bridge = HERE / "bridge2.py"

    def _servers(self, era: str) -> dict[str, dict[str, Any]]:
        """The reference server as `ref` (stdio) and `remote` (HTTP), spoken to in `era`."""
        return {"ref": {"command": PYTHON, "args": [str(self.reference), "stdio"], "era": era},
                "remote": {"url": self._reference_http(), "type": "http", "era": era}}

    def _gateway_servers(self) -> dict[str, dict[str, Any]]:
        """The shared gateway's upstreams: the reference server five times, `ref`, `pref` (stdio) and `remote`
        (HTTP) opened with `initialize` (era: legacy), `mref` and `mremote` spoken to in 2026-07-28 (era: modern).
        `POST /pref` has a stdio process of its own: a handshake-era stdio server's questions say not which
        call they are for, so two paths' scenarios at once on one process could be told apart by nobody (the
        gateway then refuses them), which is not what a path's scenario tests."""
        modern, legacy = self._servers("modern"), self._servers("legacy")
        return {**legacy, "pref": legacy["ref"], "mref": modern["ref"], "mremote": modern["remote"]}

    def _stdio_proxy(self, path: str, servers: dict[str, dict[str, Any]]) -> str:
        home = self._stdio_home(servers)
        return self._bridge(path, [MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers",
                                   str(home / "servers.json"), "--log-level", "WARNING"])

    def url(self, path: str) -> str:
        if path in _GATEWAY_ROUTES:
            return f"{self._gateway()}{_GATEWAY_ROUTES[path]}"
        if path == "gw-proxy-stdio-modern":
            return self._stdio_proxy(path, {"mremote": self._servers("modern")["remote"]})
        if path == "gw-proxy-stdio-stdio-modern":
            return self._stdio_proxy(path, {"mref": self._servers("modern")["ref"]})
        if path == "gw-proxy-stdio":
            return self._stdio_proxy(path, {"remote": self._servers("legacy")["remote"]})
        if path == "gw-post-stdio-upstream":
            return f"{self._gateway()}/pref"
        if path == "gw-post-http-upstream":
            return f"{self._gateway()}/remote"
        if path == "gw-wrap-stdio-modern":
            reference = [PYTHON, str(self.reference), "stdio"]
            home = self._stdio_home({"wref": {"command": PYTHON, "args": reference[1:]}})
            return self._bridge(path, [MCPWALL, "wrap", "--home", str(home), "--name", "wref", "--era", "modern",
                                       "--", *reference])
        if path == "gw-proxy-stdio-stdio-upstream":
            return self._stdio_proxy(path, {"local": self._servers("legacy")["ref"]})
        return super().url(path)


def suite_installed() -> bool:
    return NODE.exists() and SUITE_JS.exists()


def suite(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The suite's CLI on the pinned Node 22."""
    return subprocess.run([str(NODE), str(SUITE_JS), *args], capture_output=True, text=True, timeout=timeout,
                          check=False, cwd=HERE)


def listed_server_scenarios(revision: str) -> list[str]:
    """What `conformance list --server --requirements REVISION` names as required server scenarios."""
    out = suite("list", "--server", "--requirements", revision, timeout=60).stdout
    section = out.split("Server scenarios", 1)[1].split("\n\n", 1)[0]
    return [line.strip()[2:] for line in section.splitlines() if line.strip().startswith("- ")]


#: The client scenarios of each requirement set that concern a proxy's upstream side (the auth/* ones are
#: the OAuth client's, tests/oauth; the rest are the gateway's as the client of its upstream).
CLIENT: tuple[tuple[str, str], ...] = (
    (LEGACY, "initialize"), (LEGACY, "tools_call"), (LEGACY, "elicitation-sep1034-client-defaults"),
    (LEGACY, "sse-retry"), (MODERN, "tools_call"), (MODERN, "request-metadata"), (MODERN, "http-standard-headers"),
    (MODERN, "http-custom-headers"), (MODERN, "http-invalid-tool-headers"), (MODERN, "json-schema-ref-no-deref"),
    (MODERN, "sep-2322-client-request-state"))
#: The client scenarios CI runs (each starts a gateway, 5 to 10 s; the 2025-11-25 ones are 0.1.10's, which
#: CI runs): the 2026-07-28 ones that judge the gateway's own client behaviour beyond a plain call.
CLIENT_CORE = frozenset({(MODERN, "http-standard-headers"), (MODERN, "json-schema-ref-no-deref"),
                         (MODERN, "request-metadata"), (MODERN, "sep-2322-client-request-state"),
                         (MODERN, "http-custom-headers"), (MODERN, "http-invalid-tool-headers")})


def run_client(revision: str, scenario: str, out_dir: Path) -> Outcome:
    """One client scenario with mcpwall as the client (tests/conformance/client_driver.py starts it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = suite("client", "--command", f"{PYTHON} {CLIENT_DRIVER}", "--scenario", scenario,
                 "--spec-version", revision, "--timeout", "90000", "-o", str(out_dir), timeout=300)
    (out_dir / "suite.log").write_text(done.stdout + done.stderr)
    return Outcome(scenario, _read_checks(out_dir, "").get(scenario, []), done.returncode,
                   done.stdout + done.stderr)


def run(url: str, out_dir: Path, path: Path2, revision: str) -> dict[str, Outcome]:
    """The requirement set's server scenarios that apply to `path`, at the revision's wire.

    One `--requirements` run does them all (those that do not apply are left out of the result),
    except for a handshake-era client of a bridged path, which costs a process boot: there only the
    scenarios that apply run, one by one (`--scenario S --spec-version REVISION`, the same wire), as
    bridge.py closes an idle session when the next client starts.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = path.scenarios(revision)
    if path.bridged and revision == LEGACY:
        runs = [["--scenario", s, "--spec-version", revision] for s in wanted]
    else:
        runs = [["--requirements", revision]]
    logs = []
    for args in runs:
        done = suite("server", "--url", url, *args, "-o", str(out_dir), timeout=600)
        logs.append(done.stdout + done.stderr)
    (out_dir / "suite.log").write_text("\n".join(logs))
    return {name: Outcome(name, checks) for name, checks in _read_checks(out_dir, "server-").items()
            if name in wanted}


__all__ = ["ALL_PATHS", "BACKCHANNEL", "BY_NAME", "CLIENT", "CLIENT_CORE", "CORE", "HTTP_ONLY", "LEGACY", "MODERN", "NAME_FREE", "NODE", "NODE_VERSION", "PATHS",
           "REQUIRED", "REVISIONS", "SUITE_VERSION", "Path2", "Paths2", "full", "listed_server_scenarios", "run", "run_client",
           "suite", "suite_installed"]
