"""The gateway as an OAuth 2.1 resource server (issue 26 item 1), through the real gateway.

Strategy: one real `mcpwall proxy` process whose policy.yaml `auth:` trusts the session's real
Glewlwyd (tests/oauth/glewlwyd.py), in front of a real stdio server (mcp-server-time) and a
recording HTTP upstream (tests/oauth/recorder.py, which writes down every header it is sent).
Clients: the official Python SDK 2.x and TypeScript SDK (tests/oauth/ts_client.mjs) with their OAuth support (discovery from the 401, dynamic
registration, code + PKCE at Glewlwyd, a user's login driven over httpx as a browser would), and
raw HTTP requests for the refusals, each of which must carry the challenge a client acts on.
Forged tokens are built from a real token's claims, so only the attacked property differs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from mcpwall.oauth._jwks import REFETCH_MIN_S
from tests.harness import free_port
from tests.oauth.glewlwyd import Glewlwyd
from tests.proxy.harness import PERMISSIVE, TIME, GatewayProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def call(tool: str, arguments: dict[str, Any], rid: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


NOW = call("time__get_current_time", {"timezone": "UTC"})
CONVERT = call("time__convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})


@dataclass
class Setup:
    glewlwyd: Glewlwyd
    gw: GatewayProcess
    recorder_log: Path

    @property
    def resource(self) -> str:
        return f"{self.gw.url}/mcp"

    def post(self, body: Any, token: str | None, path: str = "/mcp", session: str | None = None) -> httpx.Response:
        headers = dict(ACCEPT)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if session:
            headers["Mcp-Session-Id"] = session
        return httpx.post(f"{self.gw.url}{path}", json=body, headers=headers, timeout=30.0)

    def session(self, token: str, path: str = "/mcp") -> str:
        r = self.post(INIT, token, path)
        assert r.status_code == 200, (r.status_code, r.headers.get("www-authenticate"), r.text)
        sid = r.headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, token, path, sid)
        return sid

    def token(self, user: str = "alice", scopes: str = "mcp:tools", resource: str | None = None) -> str:
        return self.glewlwyd.token_for(user, scopes, resource or self.resource).access_token


@pytest.fixture(scope="module")
def rs(glewlwyd: Glewlwyd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    work = tmp_path_factory.mktemp("rs")
    log = work / "recorder.jsonl"
    port = free_port()
    recorder = subprocess.Popen([sys.executable, str(HERE / "recorder.py"), str(port), str(log)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gw = GatewayProcess(work / "home", {"time": TIME, "rec": {"url": f"http://127.0.0.1:{port}/mcp", "type": "http"}})
    (gw.home / "policy.yaml").write_text(PERMISSIVE + f"""\
auth:
  issuers:
    - issuer: {glewlwyd.issuer}
      scopes: [mcp:tools]
      principalClaim: preferred_username
      clockSkew: 2
  tools:
    "time__convert_time": [mcp:admin]
""")
    try:
        for _ in range(100):
            try:
                httpx.post(f"http://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "method": "x"}, timeout=0.5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        gw.start()
        glewlwyd.allow_resource(f"{gw.url}/mcp", f"{gw.url}/mcp/time", f"{gw.url}/mcp/rec", "http://127.0.0.1:1/mcp")
        yield Setup(glewlwyd, gw, log)
    finally:
        gw.stop()
        recorder.terminate()
        recorder.wait(10)


def _challenge(r: httpx.Response) -> dict[str, str]:
    header = r.headers.get("www-authenticate", "")
    assert header.startswith("Bearer "), (r.status_code, header, r.text)
    out: dict[str, str] = {}
    for part in header[7:].split(", "):
        key, _, value = part.partition("=")
        out[key] = value.strip('"')
    return out


# ---------------------------------------------------------------------- metadata and challenges


def test_protected_resource_metadata_is_served_at_the_root_and_per_path(rs: Setup) -> None:
    base = f"{rs.gw.url}/.well-known/oauth-protected-resource"
    for path, resource in (("", rs.resource), ("/mcp", rs.resource), ("/mcp/time", f"{rs.resource}/time")):
        r = httpx.get(base + path)
        assert r.status_code == 200, path
        doc = r.json()
        assert doc["resource"] == resource
        assert doc["authorization_servers"] == [rs.glewlwyd.issuer]
        assert {"mcp:tools", "mcp:admin"} <= set(doc["scopes_supported"])
    assert httpx.get(base + "/mcp/no-such-server").status_code == 404
    assert httpx.get(base + "/elsewhere").status_code == 404


@pytest.mark.parametrize("path", ["/mcp", "/mcp/time"])
def test_no_token_gets_401_with_the_metadata_and_the_scope_to_ask_for(rs: Setup, path: str) -> None:
    r = rs.post(INIT, None, path)
    assert r.status_code == 401
    challenge = _challenge(r)
    assert challenge["resource_metadata"] == f"{rs.gw.url}/.well-known/oauth-protected-resource{path}"
    assert challenge["scope"] == "mcp:tools"
    assert "error" not in challenge  # no token was presented (RFC 6750 section 3.1)
    assert r.json()["error"]["code"] == -32003


def test_the_static_token_keeps_working_beside_the_issuers(rs: Setup) -> None:
    sid = rs.session(rs.gw.token)
    r = rs.post(NOW, rs.gw.token, session=sid)
    assert r.status_code == 200
    assert "datetime" in r.text


# ---------------------------------------------------------------------- refused tokens


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forge(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    return head + "." + _b64(signature)


def _hmac(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[header["alg"]]
    return head + "." + _b64(hmac.new(secret, head.encode(), digest).digest())


def _public_keys(g: Glewlwyd) -> list[bytes]:
    """The issuer's public key in the spellings an HMAC-confusion attack tries as the secret."""
    jwk = g.public_jwks()["keys"][0]
    key = jwt.PyJWK(jwk).key
    return [key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
            key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1),
            key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo),
            json.dumps(jwk).encode()]


def _refused_tokens(rs: Setup) -> list[tuple[str, str]]:
    real = rs.token("alice")
    header = jwt.get_unverified_header(real)
    claims = jwt.decode(real, options={"verify_signature": False})
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    out = [("expired", rs.glewlwyd.expired_token("alice", "mcp:tools", rs.resource, past_skew=2)),
           ("wrong issuer", rs.glewlwyd.foreign_token("alice", "mcp:tools", rs.resource)),
           ("wrong audience", rs.token("alice", resource="http://127.0.0.1:1/mcp")),
           ("issuer claim rewritten", _forge(header, {**claims, "iss": rs.glewlwyd.other_issuer},
                                              base64.urlsafe_b64decode(real.split(".")[2] + "=="))),
           ("audience claim rewritten", real.split(".")[0] + "." + _b64(json.dumps(
               {**claims, "aud": f"{rs.resource}/other"}).encode()) + "." + real.split(".")[2]),
           ("attacker's key under the issuer's kid",
            jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": header["kid"]})),
           ("unknown kid", jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": "made-up"})),
           ("opaque garbage", "not-a-jwt-" + "x" * 40),
           ("three dots of nothing", "a.b.c")]
    for spelling in ("none", "None", "NONE", "nOnE"):
        out.append((f"alg {spelling}", _forge({"alg": spelling, "typ": "JWT"}, claims)))
        out.append((f"alg {spelling} keeping the signature",
                    _forge({**header, "alg": spelling}, claims, base64.urlsafe_b64decode(real.split(".")[2] + "=="))))
    for alg in ("HS256", "HS384", "HS512"):
        for i, secret in enumerate(_public_keys(rs.glewlwyd)):
            out.append((f"{alg} keyed with the public key #{i}", _hmac({**header, "alg": alg}, claims, secret)))
    return out


def test_refused_tokens_each_get_401_invalid_token_with_the_challenge(rs: Setup) -> None:
    failures = []
    for name, token in _refused_tokens(rs):
        r = rs.post(INIT, token)
        if r.status_code != 401:
            failures.append(f"{name}: HTTP {r.status_code}")
            continue
        challenge = _challenge(r)
        if challenge.get("error") != "invalid_token" or "resource_metadata" not in challenge:
            failures.append(f"{name}: challenge {challenge}")
        if token in r.text:
            failures.append(f"{name}: the answer repeats the token")
    assert not failures, failures


def test_a_token_for_one_server_does_not_open_another_or_the_aggregate(rs: Setup) -> None:
    token = rs.token("bob", resource=f"{rs.resource}/time")
    assert rs.post(INIT, token, "/mcp/time").status_code == 200
    for path in ("/mcp/rec", "/mcp"):
        r = rs.post(INIT, token, path)
        assert r.status_code == 401, path
        assert _challenge(r)["resource_metadata"].endswith(f"oauth-protected-resource{path}")


def test_made_up_kids_do_not_make_the_gateway_fetch_the_issuers_keys_each_time(rs: Setup) -> None:
    claims = jwt.decode(rs.token("alice"), options={"verify_signature": False})
    attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def fetches() -> int:
        health = httpx.get(f"{rs.gw.url}/health", headers=rs.gw.headers).json()
        return int(health["stages"]["oauth"]["jwks_fetches"])

    before = fetches()
    for i in range(8):
        token = jwt.encode(claims, attacker, algorithm="RS256", headers={"kid": f"made-up-{i}"})
        assert rs.post(INIT, token).status_code == 401
    assert fetches() - before <= 1  # one refetch per REFETCH_MIN_S at most, whatever the kids


# ---------------------------------------------------------------------- accepted tokens


def test_a_users_token_calls_tools_as_that_user_without_the_static_token(rs: Setup) -> None:
    token = rs.token("bob")
    sid = rs.session(token)
    r = rs.post(NOW, token, session=sid)
    assert r.status_code == 200
    assert "datetime" in r.text
    # the session is bob's: alice's token cannot use its id
    other = rs.token("alice")
    assert rs.post(NOW, other, session=sid).status_code == 404
    # and the ledger says bob made the call
    for _ in range(50):
        out = subprocess.run([str(Path(sys.executable).parent / "mcpwall"), "logs", "--home", str(rs.gw.home),
                              "--json"], capture_output=True, text=True, timeout=60)
        rows = json.loads(out.stdout)["rows"] if out.returncode == 0 else []
        if any(r["agent_id"] == "bob" and r["tool_name"] == "get_current_time" for r in rows):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"no ledger row of bob's call: {out.stdout[-500:]} {out.stderr[-500:]}")


def test_a_missing_scope_is_403_insufficient_scope_and_a_token_with_it_works(rs: Setup) -> None:
    bob = rs.token("bob")
    sid = rs.session(bob)
    r = rs.post(CONVERT, bob, session=sid)
    assert r.status_code == 403
    challenge = _challenge(r)
    assert challenge["error"] == "insufficient_scope"
    assert "mcp:admin" in challenge["scope"].split()
    assert "mcp:tools" in challenge["scope"].split()
    # the same call in a batch, or on the server's own endpoint, is held to the same scope
    assert rs.post([CONVERT], bob, session=sid).status_code == 403
    bob_time = rs.token("bob", resource=f"{rs.resource}/time")
    time_sid = rs.session(bob_time, "/mcp/time")
    r = rs.post(call("convert_time", CONVERT["params"]["arguments"]), bob_time, "/mcp/time", time_sid)
    assert r.status_code == 403
    alice = rs.token("alice", "mcp:tools mcp:admin")
    sid = rs.session(alice)
    r = rs.post(CONVERT, alice, session=sid)
    assert r.status_code == 200
    assert "Asia/Tokyo" in r.text


def test_a_token_without_the_issuers_required_scope_is_403(rs: Setup) -> None:
    token = rs.token("alice", "mcp:admin")
    r = rs.post(INIT, token)
    assert r.status_code == 403
    challenge = _challenge(r)
    assert challenge["error"] == "insufficient_scope"
    assert challenge["scope"].split() == ["mcp:tools"]


def test_a_rotated_key_is_accepted_after_the_jwks_refresh(rs: Setup) -> None:
    before = rs.token("alice")
    assert rs.post(INIT, before).status_code == 200  # the gateway holds the JWKS now
    kid = rs.glewlwyd.rotate_key()
    time.sleep(REFETCH_MIN_S + 0.5)  # past the refetch rate limit of the JWKS
    after = rs.token("alice")
    assert jwt.get_unverified_header(after)["kid"] == kid
    assert rs.post(INIT, after).status_code == 200
    assert rs.post(INIT, before).status_code == 200  # the old key is still published


def test_the_clients_token_never_reaches_the_upstream_nor_the_logs(rs: Setup) -> None:
    token = rs.token("alice")
    sid = rs.session(token)
    r = rs.post(call("rec__echo", {"text": "hello"}), token, session=sid)
    assert r.status_code == 200
    assert "hello" in r.text
    seen = rs.recorder_log.read_text()
    assert '"tools/call"' in seen  # the call did reach the recorder
    signature = token.split(".")[2]
    for text, where in ((seen, "upstream"), (rs.gw.log.read_text(errors="replace"), "gateway log")):
        assert token not in text, where
        assert signature not in text, where
    assert "authorization" not in {k.lower() for line in seen.splitlines() for k, _ in json.loads(line)["headers"]}
    ledger = (rs.gw.home / "ledger.db").read_bytes() + b"".join(
        p.read_bytes() for p in rs.gw.home.glob("ledger.db-wal"))
    assert signature.encode() not in ledger


# ---------------------------------------------------------------------- the Python SDK's OAuth client


class _Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _provider(rs: Setup, url: str, user: str, scope: str | None = None) -> tuple[OAuthClientProvider, list[str]]:
    urls: list[str] = []

    async def redirect(auth_url: str) -> None:
        urls.append(auth_url)

    async def callback() -> AuthorizationCodeResult:
        answer = await anyio.to_thread.run_sync(rs.glewlwyd.redirect, urls[-1], user)
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    metadata = OAuthClientMetadata(client_name="sdk test", redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="client_secret_post", scope=scope)
    return OAuthClientProvider(url, metadata, _Memory(), redirect_handler=redirect, callback_handler=callback), urls


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/mcp", "/mcp/time"])
async def test_the_python_sdk_logs_in_through_discovery_and_calls_a_tool(rs: Setup, path: str) -> None:
    url = f"{rs.gw.url}{path}"
    provider, urls = _provider(rs, url, "bob")
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        name = "time__get_current_time" if path == "/mcp" else "get_current_time"
        assert name in {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool(name, {"timezone": "UTC"})
        assert "datetime" in str(result.content)
    assert len(urls) == 1  # one login, found from the 401's challenge
    assert f"resource={url.replace(':', '%3A').replace('/', '%2F')}" in urls[0]


@pytest.mark.anyio
async def test_the_python_sdk_steps_up_on_insufficient_scope_and_the_call_then_succeeds(rs: Setup) -> None:
    url = f"{rs.gw.url}/mcp"
    provider, urls = _provider(rs, url, "alice", scope="mcp:tools")
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool("time__convert_time", CONVERT["params"]["arguments"])
        assert "Asia/Tokyo" in str(result.content)
    assert len(urls) == 2  # the login, then the step-up for mcp:admin
    assert "mcp%3Aadmin" in urls[1]
    assert "mcp%3Atools" in urls[1]


# ---------------------------------------------------------------------- the TypeScript SDK's OAuth client


def test_the_typescript_sdk_logs_in_through_discovery_and_calls_a_tool(rs: Setup) -> None:
    proc = subprocess.Popen(["node", str(HERE / "ts_client.mjs"), f"{rs.gw.url}/mcp", "time__get_current_time",
                             json.dumps({"timezone": "UTC"})], cwd=HERE.parents[1], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        first = json.loads(proc.stdout.readline())
        answer = rs.glewlwyd.redirect(first["authorize"], "bob")  # bob's browser at Glewlwyd's login
        proc.stdin.write(urllib.parse.urlencode(answer) + "\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, err[-2000:]
    assert "datetime" in json.loads(out.strip().splitlines()[-1])["result"]["content"][0]["text"]
