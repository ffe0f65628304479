"""Running the official suite: its scenarios, the endpoints it is pointed at, and what it found.

Each *path* is one way for the suite to reach the reference server: directly,
or through mcpwall in one of its shapes. `Paths` starts what a path needs
(real processes on loopback, started lazily, stopped by PID at the end) and
`run_server_suite` runs the suite's server scenarios against its URL, reading
back the `checks.json` the suite writes for each scenario. Client scenarios
run with `client_driver.py` as the suite's `--command`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conformance.helpers import (
    BRIDGE,
    CLIENT_DRIVER,
    HERE,
    MCPWALL,
    PYTHON,
    REFERENCE_SERVER,
    SUITE_BIN,
    gateway_policy,
)
from tests.harness import free_port
from tests.proxy.harness import GatewayProcess, write_servers

#: The suite's server scenarios in 0.1.10, in its order (`conformance list --server`).
SERVER_SCENARIOS = (
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-with-logging", "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
    "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults", "server-sse-polling",
    "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "resources-subscribe", "resources-unsubscribe",
    "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
    "prompts-get-with-image",
)
#: The suite's server scenarios in 0.1.10 that its default ("active") run leaves out as pending.
PENDING = frozenset({"json-schema-2020-12", "tools-call-elicitation", "elicitation-sep1034-defaults",
                     "elicitation-sep1330-enums", "server-sse-polling"})
#: Scenarios whose checks do not name a tool, prompt or completion target, so they also apply
#: to the aggregated endpoints, where every tool and prompt is renamed `server__name`.
NAME_FREE = ("server-initialize", "logging-set-level", "ping", "tools-list", "server-sse-multiple-streams",
             "resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
             "resources-subscribe", "resources-unsubscribe", "prompts-list")
#: The client scenarios that concern a proxy's upstream side.
CLIENT_SCENARIOS = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
#: Child processes the stdio bridges keep booting ahead of the suite's next client.
SPARES = 2
ACTIVE = tuple(s for s in SERVER_SCENARIOS if s not in PENDING)
_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


@dataclass(frozen=True)
class PathSpec:
    """One way for the suite to reach the reference server."""

    name: str
    title: str
    gateway: bool
    #: the path renames tools and prompts `server__name`: only NAME_FREE scenarios apply
    aggregated: bool = False
    #: a new process per client session (the stdio paths): each scenario costs a process boot, so the
    #: pending scenarios are left out, and a subset runs scenario by scenario rather than as a whole suite
    per_session: bool = False

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(s for s in SERVER_SCENARIOS
                     if (not self.aggregated or s in NAME_FREE) and (not self.per_session or s not in PENDING))

    def cell(self, scenario: str) -> str | None:
        """Why a scenario has no result on this path, as the pass table shows it; None if it runs here."""
        if self.aggregated and scenario not in NAME_FREE:
            return "n/a"
        return "–" if self.per_session and scenario in PENDING else None


PATHS = (
    PathSpec("direct-http", "the reference server over streamable HTTP, no mcpwall", False),
    PathSpec("direct-stdio", "the reference server over stdio through the test bridge, no mcpwall", False,
             per_session=True),
    PathSpec("gw-stdio-upstream", "`mcpwall proxy`, `/mcp/{server}`, the server as a stdio upstream", True),
    PathSpec("gw-http-upstream", "`mcpwall proxy`, `/mcp/{server}`, the server as a streamable-HTTP upstream",
             True),
    PathSpec("gw-wrap-stdio", "`mcpwall wrap` (the stdio frontend, one server) through the bridge", True,
             per_session=True),
    PathSpec("gw-aggregated-http", "`mcpwall proxy`, `/mcp` (aggregated, names `server__name`)", True,
             aggregated=True),
    PathSpec("gw-proxy-stdio", "`mcpwall proxy --stdio` (aggregated) through the bridge, HTTP upstream", True,
             aggregated=True, per_session=True),
)


@dataclass
class Outcome:
    """What the suite concluded for one scenario on one path."""

    scenario: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: the suite's verdict on a client scenario: its exit status (0 only with no failure, no warning and
    #: a client that exited 0); None for server scenarios, which the suite fails on FAILURE checks only
    exit_code: int | None = None
    #: the suite's output (its driver's and the client's), shown by `describe` when the suite exited non-zero
    log: str = ""

    def with_status(self, status: str) -> list[dict[str, Any]]:
        return [c for c in self.checks if c.get("status") == status]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and not self.with_status("FAILURE") and self.exit_code in (None, 0)

    def describe(self) -> str:
        bad = [f"{c.get('id')} {c.get('status')}: {c.get('errorMessage') or c.get('description')}"
               for c in [*self.with_status("FAILURE"), *self.with_status("WARNING")]]
        if self.exit_code:
            bad.append(f"the suite exited {self.exit_code}")
        described = "; ".join(bad) or ("no checks recorded" if not self.checks else "passed")
        if self.exit_code and self.log:
            # the run's tmp dir is rotated away by later runs: the output is kept in the failure itself
            described += "\nthe suite's output, last 60 lines:\n" + "\n".join(self.log.splitlines()[-60:])
        return described


def suite_installed() -> bool:
    return SUITE_BIN.exists() and shutil.which("node") is not None


def list_server_scenarios() -> list[str]:
    out = subprocess.run([str(SUITE_BIN), "list", "--server"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return [line.strip()[2:] for line in out.splitlines() if line.strip().startswith("- ")]


def _read_checks(out_dir: Path, prefix: str) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out_dir.glob("*/checks.json")):
        name = _STAMP.sub("", checks.parent.name).removeprefix(prefix)
        found[name] = json.loads(checks.read_text())
    return found


def run_server_suite(url: str, out_dir: Path, path: PathSpec) -> dict[str, Outcome]:
    """Run the suite's server scenarios that apply to `path` against `url`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if path.scenarios == ACTIVE:
        runs = [["--suite", "active"]]
    elif path.per_session:  # a subset, where a session costs more than starting the suite
        runs = [["--scenario", s] for s in path.scenarios]
    else:
        runs = [["--suite", "all"]]
    with (out_dir / "suite.log").open("ab") as log:
        for args in runs:
            subprocess.run([str(SUITE_BIN), "server", "--url", url, *args, "-o", str(out_dir)], stdout=log,
                           stderr=subprocess.STDOUT, timeout=600, check=False, cwd=HERE)
    return {name: Outcome(name, checks) for name, checks in _read_checks(out_dir, "server-").items()
            if name in path.scenarios}


def run_client_scenario(scenario: str, out_dir: Path) -> Outcome:
    """One client scenario, with mcpwall (started by the driver) as the client under test."""
    out_dir.mkdir(parents=True, exist_ok=True)
    command = f"{PYTHON} {CLIENT_DRIVER}"
    with (out_dir / "suite.log").open("ab") as log:
        done = subprocess.run([str(SUITE_BIN), "client", "--command", command, "--scenario", scenario,
                               "--timeout", "90000", "-o", str(out_dir)], stdout=log, stderr=subprocess.STDOUT,
                              timeout=300, check=False, cwd=HERE)
    return Outcome(scenario, _read_checks(out_dir, "").get(scenario, []), done.returncode)


# ---------------------------------------------------------------------- processes


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited: {log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}: {log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, a grace period, then the whole process group (the bridges' children included)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


class Paths:
    """Starts, on first use, what each path needs, and stops all of it on `close()`."""

    #: the reference server and the stdio bridge the paths start (tests/conformance2 runs dual-era ones)
    reference: Path = REFERENCE_SERVER
    bridge: Path = BRIDGE

    def __init__(self, work: Path) -> None:
        self.work = work
        self._procs: list[subprocess.Popen[bytes]] = []
        self._gateways: list[GatewayProcess] = []
        self._urls: dict[str, str] = {}
        self.logs: dict[str, Path] = {}

    def _spawn(self, name: str, argv: list[str], port: int) -> None:
        log = self.work / f"{name}.log"
        self.logs[name] = log
        with log.open("ab") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._procs.append(proc)
        _wait_port(port, proc, log)

    def _reference_http(self) -> str:
        if "reference" not in self._urls:
            port = free_port()
            self._spawn("reference-http", [PYTHON, str(self.reference), "http", str(port)], port)
            self._urls["reference"] = f"http://127.0.0.1:{port}/mcp"
        return self._urls["reference"]

    def _gateway(self) -> str:
        """One gateway in front of the reference server twice: `ref` over stdio, `remote` over HTTP."""
        if "gateway" not in self._urls:
            gw = GatewayProcess(self.work / "gateway", self._gateway_servers(), gateway_policy(),
                                extra=["--insecure-no-auth"])
            self._gateways.append(gw)
            gw.start(timeout=90.0)
            self.logs["gateway"] = gw.log
            self._urls["gateway"] = gw.url
        return self._urls["gateway"]

    def _gateway_servers(self) -> dict[str, dict[str, Any]]:
        return {"ref": {"command": PYTHON, "args": [str(self.reference), "stdio"]},
                "remote": {"url": self._reference_http(), "type": "http"}}

    def _bridge(self, name: str, command: list[str]) -> str:
        if name not in self._urls:
            port = free_port()
            self._spawn(name, [PYTHON, str(self.bridge), "--spares", str(SPARES), str(port), *command], port)
            self._urls[name] = f"http://127.0.0.1:{port}/mcp"
        return self._urls[name]

    def _stdio_home(self, servers: dict[str, dict[str, Any]]) -> Path:
        home = self.work / f"stdio-home-{len(servers)}-{next(iter(servers))}"
        home.mkdir(parents=True, exist_ok=True)
        (home / "policy.yaml").write_text(gateway_policy())
        write_servers(home / "servers.json", servers)
        return home

    def url(self, path: str) -> str:
        reference_stdio = [PYTHON, str(self.reference), "stdio"]
        if path == "direct-http":
            return self._reference_http()
        if path == "direct-stdio":
            return self._bridge(path, reference_stdio)
        if path == "gw-stdio-upstream":
            return f"{self._gateway()}/mcp/ref"
        if path == "gw-http-upstream":
            return f"{self._gateway()}/mcp/remote"
        if path == "gw-aggregated-http":
            return f"{self._gateway()}/mcp"
        if path == "gw-wrap-stdio":
            home = self._stdio_home({"ref": {"command": PYTHON, "args": [str(self.reference), "stdio"]}})
            return self._bridge(path, [MCPWALL, "wrap", "--home", str(home), "--name", "ref", "--",
                                       *reference_stdio])
        if path == "gw-proxy-stdio":
            home = self._stdio_home({"remote": {"url": self._reference_http(), "type": "http"}})
            return self._bridge(path, [MCPWALL, "proxy", "--stdio", "--home", str(home), "--servers",
                                       str(home / "servers.json"), "--log-level", "WARNING"])
        raise KeyError(path)

    def close(self) -> None:
        for gw in self._gateways:
            gw.stop()
        for proc in reversed(self._procs):
            _stop(proc)


@contextlib.contextmanager
def paths(work: Path) -> Iterator[Paths]:
    p = Paths(work)
    try:
        yield p
    finally:
        p.close()


__all__ = ["ACTIVE", "CLIENT_SCENARIOS", "NAME_FREE", "PATHS", "PENDING", "SERVER_SCENARIOS", "Outcome", "PathSpec", "Paths",
           "list_server_scenarios", "paths", "run_client_scenario", "run_server_suite", "suite_installed"]
