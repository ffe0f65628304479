"""The `--command` the conformance suite launches for its `auth/*` client scenarios: mcpwall's OAuth client.

Usage (by the suite): auth_client.py SERVER_URL, with MCP_CONFORMANCE_SCENARIO, _PROTOCOL_VERSION
and, for pre-registered clients, MCP_CONFORMANCE_CONTEXT (client_id, client_secret) in the
environment. SERVER_URL is the scenario's protected MCP server; its authorization server is the
suite's, which approves every authorization request at once (a 302 to the redirect URI).

What a user does, done by this driver: a gateway home with SERVER_URL as the remote upstream
`conformance`, then `mcpwall login conformance --no-browser` (a subprocess, as typed), whose
printed URL the driver opens as the person's browser would (following the authorization
server's redirect to the login's loopback callback), or `mcpwall login --service` with the
context's client credentials (`$MCPWALL_CLIENT_SECRET`, never argv). Then `mcpwall proxy` starts
on that home and the official Python client lists and calls the server's tools through
`/mcp/conformance`: the discovery, registration, PKCE, `resource`, `iss` and token requests the
suite checks are the gateway's, and so is the bearer token on the MCP requests after them. When
the gateway says the server wants a login (a 401 or a 403 insufficient_scope it cannot satisfy),
the driver logs in again, as `mcpwall`'s message tells the user to, at most twice.

Exits 0 when every tool call went through, 1 otherwise; the logins' output and the gateway's log
go to stderr, which the suite saves.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.conformance.helpers import MCPWALL, gateway_policy  # noqa: E402
from tests.proxy.harness import GatewayProcess, http_client  # noqa: E402

SERVER = "conformance"
#: the URL the suite's CIMD scenario expects as client_id (basic-cimd.ts, CIMD_CLIENT_METADATA_URL)
CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: scenarios whose context carries a client-credentials client (the extension's client_secret_basic one)
SERVICE = frozenset({"auth/client-credentials-basic"})
RELOGINS = 2


def _env(home: Path) -> dict[str, str]:
    # the encrypted file store's key outside the home; no desktop keyring
    return {**os.environ, "MCPWALL_KEY_DIR": str(home.parent / "keys"), "MCPWALL_KEYRING": "off"}


def _context() -> dict[str, Any]:
    try:
        value = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def login(home: Path, scenario: str, *extra: str) -> None:
    """`mcpwall login conformance` as a user types it, the browser's part played here."""
    args = [MCPWALL, "login", SERVER, "--home", str(home), "--servers", str(home / "servers.json"),
            "--timeout", "30", *extra]
    env = _env(home)
    context = _context()
    if scenario in SERVICE:
        args += ["--service", "--client-id", str(context.get("client_id", ""))]
        env["MCPWALL_CLIENT_SECRET"] = str(context.get("client_secret", ""))
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=False)
        sys.stderr.write(f"$ {' '.join(args[1:])}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            raise RuntimeError(f"mcpwall login --service exited {done.returncode}")
        return
    if scenario == "auth/basic-cimd":
        args += ["--client-metadata-url", CIMD_URL]
    if context.get("client_id"):  # a client registered beforehand (auth/pre-registration)
        args += ["--client-id", str(context["client_id"])]
        env["MCPWALL_CLIENT_SECRET"] = str(context.get("client_secret", ""))
    proc = subprocess.Popen([*args, "--no-browser"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    seen: list[str] = []
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            match = re.match(r"\s+(https?://\S+)$", line)
            if match:
                _browser(match.group(1))
                break
        seen.append(proc.stdout.read())
        code = proc.wait(60)
    sys.stderr.write(f"$ {' '.join(args[1:])} --no-browser\n{''.join(seen)}")
    if code != 0:
        raise RuntimeError(f"mcpwall login exited {code}")


def _browser(url: str) -> None:
    """The person's browser: open the authorization URL, follow the redirect to the loopback callback."""
    try:
        r = httpx.get(url, follow_redirects=True, timeout=15)
        sys.stderr.write(f"browser: {url[:200]} -> {r.status_code} at {str(r.url)[:200]}\n")
    except httpx.HTTPError as exc:
        sys.stderr.write(f"browser: {url[:200]} failed: {exc!r}\n")


async def drive(url: str) -> None:
    async with http_client(url, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            result = await client.call_tool(tool.name, {})
            print(f"{tool.name}: {result.model_dump_json(exclude_none=True)[:300]}", file=sys.stderr)
            if result.is_error:
                raise RuntimeError(f"{tool.name} failed: {result.content}")


def _wait_up(gateway: GatewayProcess, timeout: float) -> GatewayProcess:
    """Until the gateway answers `/health` at all: an upstream that wants a login leaves it degraded."""
    assert gateway.proc is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gateway.proc.poll() is not None:
            raise RuntimeError(f"gateway exited: {gateway.log.read_text()[-3000:]}")
        try:
            httpx.get(f"{gateway.url}/health", timeout=1.0).json()
            return gateway
        except (httpx.HTTPError, ValueError):
            time.sleep(0.2)
    raise RuntimeError("the gateway did not start")


def _health(gateway: GatewayProcess) -> str:
    try:
        return httpx.get(f"{gateway.url}/health", timeout=5.0).text
    except httpx.HTTPError:
        return ""


def _wait_server(gateway: GatewayProcess, timeout: float = 35.0) -> None:
    """After a login: until the gateway retried a server whose handshake wanted one (its restart
    schedule: 2, 4, 8 ... seconds), or at once when it was running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = httpx.get(f"{gateway.url}/health", timeout=5.0).json()["servers"][SERVER]["state"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            state = "?"
        if state not in ("failed", "starting", "?"):
            return
        time.sleep(0.3)


def _leaf(exc: BaseException) -> BaseException:
    """The error inside the client's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _wants_login(text: str) -> str | None:
    """The scope to ask for when the gateway says the upstream wants a (new) login (in the call's
    error or in `/health`, where a server whose handshake was refused says so), else None ("" for
    the server's default scopes)."""
    if "mcpwall login" not in text and "insufficient_scope" not in text:
        return None
    match = re.search(r"--scope[ =]['\"]?([^'\"`]+)", text)
    return match.group(1).strip() if match else ""


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: auth_client.py SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "?")
    with tempfile.TemporaryDirectory(prefix=f"mcpwall-auth-{scenario.replace('/', '-')}-") as tmp:
        home = Path(tmp) / "home"
        gateway = GatewayProcess(home, {SERVER: {"url": argv[-1], "type": "http"}}, gateway_policy(),
                                 extra=["--insecure-no-auth"], env=_env(home))
        gateway._wait_healthy = lambda timeout: _wait_up(gateway, timeout)  # type: ignore[method-assign]
        try:
            login(home, scenario)
            gateway.start(timeout=45.0)
            for attempt in range(RELOGINS + 1):
                try:
                    asyncio.run(asyncio.wait_for(drive(f"{gateway.url}/mcp/{SERVER}"), 30.0))
                    return 0
                except Exception as exc:
                    said = f"{_leaf(exc)}\n{_health(gateway)}"
                    scope = _wants_login(said)
                    if scope is None or attempt == RELOGINS:
                        raise
                    print(f"the gateway asks for a login: {said}", file=sys.stderr)
                    login(home, scenario, *(["--scope", scope] if scope else []))
                    _wait_server(gateway)
            return 1
        except Exception as exc:
            print(f"driver failed: {_leaf(exc).__class__.__name__}: {_leaf(exc)}", file=sys.stderr)
            return 1
        finally:
            _stop(gateway)


def _stop(gateway: GatewayProcess) -> None:
    """Stop the gateway (by its PID) and hand its log to the suite, which saves stderr."""
    gateway.stop()
    if gateway.log.exists():
        sys.stderr.write(gateway.log.read_text(errors="replace")[-20000:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
