"""`mcpwall login SERVER --device` end to end (RFC 8628; issue 26 item 2).

Strategy: all parts real. Glewlwyd's `device` plugin offers the device authorization grant
(`devexp`: the same, with codes that expire in 3 s); a protected MCP server written with the
Python SDK (tests/oauth/protected_server.py) takes that plugin's tokens. `mcpwall login` runs as
a subprocess and prints the verification URI and the user code; the test is the person: it reads
both off the output, opens the URI with the code in a Glewlwyd session of alice and consents, as
Glewlwyd's own device page does. Then the gateway (`mcpwall proxy`) serves the SDK client, whose
`whoami` call shows which user's token reached the server.

Glewlwyd 2.7.5 cannot register a device client dynamically (tests/oauth/glewlwyd.py), so the
logins name the fixture's pre-registered public client with `--client-id`, as one does with most
identity providers; that refusal itself must come out as a clear error.

Not covered here: a person *denying* a device code (RFC 8628 `access_denied`), which Glewlwyd's
device page has no button for; `_poll_failure` words it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oauth.glewlwyd import Glewlwyd
from tests.oauth.test_upstream_client import (
    Protected,
    _assert_nowhere_in_clear,
    _env,
    _store,
    _whoami,
    serve_protected,
)
from tests.proxy.harness import MCPWALL, GatewayProcess

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def device_server(glewlwyd: Glewlwyd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    """A protected server whose authorization server offers the device grant."""
    log = tmp_path_factory.mktemp("device") / "server.log"
    with serve_protected(glewlwyd, log, issuer=glewlwyd.device_issuer) as server:
        yield server


@pytest.fixture(scope="module")
def expiring_server(glewlwyd: Glewlwyd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    """The same, with an authorization server whose device codes expire 3 s after they are issued."""
    log = tmp_path_factory.mktemp("devexp") / "server.log"
    with serve_protected(glewlwyd, log, issuer=glewlwyd.devexp_issuer) as server:
        yield server


class DeviceLogin:
    """`mcpwall login prot --device` as a subprocess, its prompt read line by line."""

    def __init__(self, home: Path, url: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [MCPWALL, "login", "prot", "--url", url, "--home", str(home), "--device", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(home), text=True)
        self.seen: list[str] = []

    def prompt(self) -> tuple[str, str]:
        """(verification URI, user code) as printed; fails with the output if none comes."""
        assert self.proc.stdout is not None
        uri = None
        for line in self.proc.stdout:
            self.seen.append(line)
            if match := re.search(r"visit (http://\S+)", line):
                uri = match.group(1)
            if uri and (match := re.search(r"enter the code: (\S+)", line)):
                return uri, match.group(1)
        raise AssertionError(f"no device prompt: {''.join(self.seen)}")

    def finish(self) -> tuple[int, str]:
        assert self.proc.stdout is not None
        with self.proc:  # closes the pipe
            self.seen.append(self.proc.stdout.read())
            return self.proc.wait(60), "".join(self.seen)


async def test_a_device_login_stores_a_grant_the_gateway_sends(glewlwyd: Glewlwyd, device_server: Protected,
                                                               tmp_path: Path) -> None:
    home = tmp_path / "home"
    login = DeviceLogin(home, device_server.url, "--client-id", glewlwyd.device_client.client_id,
                        "--timeout", "60")
    uri, code = login.prompt()
    assert uri == f"{glewlwyd.device_issuer}/device"  # the verification URI, without the code in it
    assert re.fullmatch(r"[A-Z0-9]{4}-[A-Z0-9]{4}", code)
    # the person opens the URI, types the code, logs in as alice and consents
    assert glewlwyd.approve_device(f"{uri}?code={code}", "alice") == "deviceComplete"
    status, out = login.finish()
    assert status == 0, out
    assert "prot: authorized until" in out
    grant = _store(home).get("prot", "")
    assert grant is not None
    assert grant.issuer == glewlwyd.device_issuer
    assert grant.refresh_token
    assert grant.resource == device_server.url
    assert grant.access_token not in out
    gw = GatewayProcess(home, {"prot": {"url": device_server.url}}, env=_env(home)).start()
    try:
        answer = await _whoami(gw, gw.token)
        assert answer == f"user=alice client={glewlwyd.device_client.client_id}"
        _assert_nowhere_in_clear(home, gw, [grant.access_token, grant.refresh_token])
    finally:
        gw.stop()
    # a second person's code is theirs: entering it again after use gets Glewlwyd's error page
    assert glewlwyd.approve_device(f"{uri}?code={code}", "bob") == "deviceCodeError"


def test_a_device_code_that_expires_before_it_is_entered_fails_clearly(
        glewlwyd: Glewlwyd, expiring_server: Protected, tmp_path: Path) -> None:
    home = tmp_path / "home"
    login = DeviceLogin(home, expiring_server.url, "--client-id", glewlwyd.device_client.client_id)
    uri, code = login.prompt()
    status, out = login.finish()  # nobody enters the code: Glewlwyd answers expired_token
    assert status == 1, out
    assert "the device code expired before it was entered: run the login again" in out
    assert "Traceback" not in out
    assert _store(home).index().get("prot") is None
    # entered too late, the code is refused at the authorization server too
    assert glewlwyd.approve_device(f"{uri}?code={code}", "alice") == "deviceCodeError"


def test_a_device_login_gives_up_at_its_timeout(glewlwyd: Glewlwyd, device_server: Protected,
                                                tmp_path: Path) -> None:
    home = tmp_path / "home"
    login = DeviceLogin(home, device_server.url, "--client-id", glewlwyd.device_client.client_id,
                        "--timeout", "2")
    login.prompt()
    status, out = login.finish()
    assert status == 1, out
    assert "the device code was not entered within 2 s: run the login again" in out
    assert _store(home).index().get("prot") is None


def test_a_server_that_will_not_register_a_device_client_names_client_id(
        device_server: Protected, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run([MCPWALL, "login", "prot", "--url", device_server.url, "--home", str(home), "--device"],
                          env=_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "refused to register a device client" in done.stderr
    assert "pass --client-id" in done.stderr
    assert "Traceback" not in done.stderr
