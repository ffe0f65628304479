"""A real OAuth 2.1 / OpenID Connect authorization server for the tests: Glewlwyd from Debian.

`Glewlwyd(workdir).start()` runs its own `glewlwyd` process on a free 127.0.0.1 port, with its
own config file and its own SQLite database initialised from the package's schema
(`/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3`); the Debian system service, if
any, is never touched. `stop()` ends that process by its PID. `tests/oauth/conftest.py` exposes
one instance per test session as the `glewlwyd` fixture (skipped, with the reason, when the
binary is not installed; `tools/system_packages.sh` installs it).

Through Glewlwyd's admin API the instance is given:

- an OIDC plugin instance `oidc` (`issuer`): JWT access tokens (RFC 9068) signed RS256 with
  a key from `private_jwks`, the public JWKS at `jwks_uri`, discovery at
  `issuer + "/.well-known/openid-configuration"`, introspection (RFC 7662) and revocation,
  dynamic client registration (RFC 7591, open: no initial token), PKCE S256 (required), refresh
  tokens, client credentials, resource indicators (RFC 8707: a token's `aud` is its resource);
- `short`, a second plugin instance with the same `iss` and keys whose access tokens live one
  second, for `expired_token()`;
- `other`, a second, unrelated authorization server (its own issuer and RSA key): a token from
  it is a well-formed token from an issuer a gateway does not trust (`foreign_token()`);
- `device` (`device_issuer`) and `devexp` (`devexp_issuer`): authorization servers that also offer
  the device authorization grant (RFC 8628, polling interval 1 s), with the main key; a `devexp`
  device code expires 3 seconds after it is issued. The person's side is `approve_device(user_code,
  user)` (Glewlwyd's verification URI in the user's session, as its device page does);
- scopes `mcp:tools`, `mcp:admin`, `mcp:introspect`; users `alice` (mcp:tools, mcp:admin) and
  `bob` (mcp:tools) with the passwords in `USERS`;
- `confidential` (client_secret_basic or _post; code, refresh, client_credentials; may
  introspect the tokens issued to it) and `public` (no secret, PKCE), both redirecting to
  `REDIRECT_URI`; `device_client` (public, device authorization and refresh only): Glewlwyd 2.7.5
  refuses to register a device client dynamically (it wants redirect_uris, and spells the grant
  `device_authorization` instead of RFC 8628's URN), so a device login names this one.

A resource (e.g. a gateway's `http://127.0.0.1:PORT/mcp`) must be allowed before a token can name
it: `allow_resource(uri)` (Glewlwyd refuses unknown resources with `invalid_target`).

Getting tokens, always through the real flows (Glewlwyd's password grant cannot carry a
resource, so none of these use it):

- `token_for(user, scopes, resource)` -> `Tokens`: the user logs in through Glewlwyd's login API
  (as its login page does), consents to the scopes, and the authorization code + PKCE flow runs
  against the authorize and token endpoints with httpx;
- `authorize(url, user)` -> `(code, state)` (`redirect(url, user)`: the redirect's whole query, `iss` too): what a user's browser does with an authorization URL
  a client built (the MCP SDK's `redirect_handler`, `mcpwall login`): log in, consent to the
  requested scopes for that client (also dynamically registered ones), follow the redirect;
- `register_client(redirect_uris, auth_method)` -> `Client`: dynamic registration, as an MCP client does;
- `refresh(tokens)`, `service_token(scopes, resource)` (client credentials),
  `introspect(token)`, `expired_token(...)`, `foreign_token(...)`;
- `rotate_key(keep_old=True)`: a new RSA key becomes the signing key (the old one stays in the
  JWKS unless `keep_old=False`); tokens issued afterwards carry the new `kid`.

Known quirk of Glewlwyd 2.7.5: a client registered dynamically with `token_endpoint_auth_method:
"none"` is stored as a confidential client without a secret (its check expects an array there), so
its code exchange fails with `unauthorized_client`; Glewlwyd's own extension `"client_confidential":
false` in the registration makes it public. Registered confidential clients work as specified.

Every method is synchronous (httpx) and safe to call from sync tests; async tests call them
through `anyio.to_thread.run_sync` or directly (each call is a few milliseconds on loopback).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.harness import free_port

BINARY = shutil.which("glewlwyd") or "/usr/bin/glewlwyd"
SCHEMA = Path("/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3")
MODULES = Path("/usr/lib/glewlwyd")

#: the administrator the package's schema creates
ADMIN = ("admin", "password")
#: the test users, their passwords and the scopes each may be granted
USERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "alice": ("alice-password-1", ("openid", "mcp:tools", "mcp:admin")),
    "bob": ("bob-password-2", ("openid", "mcp:tools")),
}
SCOPES = ("mcp:tools", "mcp:admin", "mcp:introspect")
#: where the registered clients' authorization responses go (nothing listens: the code is read off the Location)
REDIRECT_URI = "http://127.0.0.1:9/callback"


def available() -> bool:
    """Whether this machine can run the fixture (the binary, its modules and the schema are there)."""
    return Path(BINARY).exists() and SCHEMA.exists() and (MODULES / "plugin" / "libprotocol_oidc.so").exists()


@dataclass(frozen=True)
class Client:
    """A client registered at Glewlwyd (secret empty for a public client).

    `auth_method` is how it authenticates at the token endpoint, as registered
    (client_secret_basic, client_secret_post or none); Glewlwyd holds a client to it."""

    client_id: str
    secret: str = ""
    auth_method: str = "client_secret_basic"


@dataclass(frozen=True)
class Tokens:
    """A token endpoint's answer."""

    access_token: str
    refresh_token: str | None
    expires_in: int
    scope: str
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


class GlewlwydError(RuntimeError):
    """Glewlwyd refused a set-up or flow step; the message carries its status and body."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_rsa_jwk(kid: str) -> dict[str, Any]:
    """A private RSA JWK (2048 bits, alg RS256) in the form Glewlwyd's `jwks-private` takes."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key))
    jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
    return jwk


class Glewlwyd:
    """One Glewlwyd process of the tests, configured as the module docstring says."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.api = f"{self.base}/api"
        self.issuer = f"{self.api}/oidc"
        self.other_issuer = f"{self.api}/other"
        self.device_issuer = f"{self.api}/device"
        self.devexp_issuer = f"{self.api}/devexp"
        self.confidential = Client("mcpwall-confidential", "confidential-secret-" + secrets.token_hex(8))
        self.public = Client("mcpwall-public", auth_method="none")
        self.device_client = Client("mcpwall-device", auth_method="none")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "glewlwyd.log"
        self.private_jwks: dict[str, Any] = {"keys": [new_rsa_jwk("key-1")]}
        self.other_jwks: dict[str, Any] = {"keys": [new_rsa_jwk("other-1")]}
        self.resources: list[str] = []
        self._key_serial = 1
        self._admin: httpx.Client | None = None

    # ------------------------------------------------------------------ endpoints

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/auth"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/introspect"

    @property
    def registration_endpoint(self) -> str:
        return f"{self.issuer}/register"

    @property
    def kid(self) -> str:
        """The kid of the key that signs new tokens."""
        return str(self.private_jwks["keys"][0]["kid"])

    # ------------------------------------------------------------------ process

    def start(self, timeout: float = 30.0) -> Glewlwyd:
        self.workdir.mkdir(parents=True, exist_ok=True)
        db = self.workdir / "glewlwyd.db"
        db.unlink(missing_ok=True)
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.executescript(SCHEMA.read_text())
            conn.commit()
        conf = self.workdir / "glewlwyd.conf"
        conf.write_text(self._config(db))
        self.proc = subprocess.Popen([BINARY, f"--config-file={conf}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait(timeout)
            self._provision()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def _config(self, db: Path) -> str:
        return f"""\
port={self.port}
bind_address="127.0.0.1"
external_url="{self.base}"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="{self.log}"
cookie_secure=0
cookie_same_site="empty"
session_expiration=2419200
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
plugin_api_run_enabled=""
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="{MODULES}/user"
client_module_path="{MODULES}/client"
user_auth_scheme_module_path="{MODULES}/scheme"
plugin_module_path="{MODULES}/plugin"
hash_algorithm="SHA512"
database = {{
  type = "sqlite3"
  path = "{db}"
}};
"""

    def _wait(self, timeout: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise GlewlwydError(f"glewlwyd exited ({self.proc.returncode}): {self._log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.api}/auth/scheme/", timeout=1.0).status_code < 500:
                    return
            time.sleep(0.1)
        raise GlewlwydError(f"glewlwyd did not answer within {timeout}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else "(no log)"

    # ------------------------------------------------------------------ admin API

    @property
    def admin(self) -> httpx.Client:
        """An httpx client holding the administrator's session cookie."""
        if self._admin is None:
            self._admin = self.login(*ADMIN)
        return self._admin

    def login(self, username: str, password: str) -> httpx.Client:
        """A browser-like session of `username`, logged in through Glewlwyd's login API."""
        http = httpx.Client(base_url=self.api, timeout=10.0)
        r = http.post("/auth/", json={"username": username, "password": password})
        if r.status_code != 200:
            http.close()
            raise GlewlwydError(f"login of {username} refused: {r.status_code} {r.text}")
        return http

    def _admin_call(self, method: str, path: str, body: Any = None) -> Any:
        r = self.admin.request(method, path, json=body)
        if r.status_code == 401:
            # the administrator's login lasts its scope's password age (g_admin's: 600 s in Debian's schema):
            # a test session that needs the admin API again later (other files ran in between) logs in anew
            self.admin.close()
            self._admin = None
            r = self.admin.request(method, path, json=body)
        if r.status_code != 200:
            raise GlewlwydError(f"{method} {path}: {r.status_code} {r.text}")
        return r.json() if r.content else None

    def _provision(self) -> None:
        for scope in SCOPES:
            self._admin_call("POST", "/scope/", {
                "name": scope, "display_name": scope, "description": f"MCP {scope}",
                "password_required": True, "password_max_age": 0, "scheme": {}})
        for username, (password, scopes) in USERS.items():
            self._admin_call("POST", "/user/", {
                "username": username, "password": password, "name": username.title(),
                "email": f"{username}@example.test", "enabled": True, "scope": list(scopes)})
        methods = ["client_secret_basic", "client_secret_post"]
        self._admin_call("POST", "/client/", {
            "client_id": self.confidential.client_id, "name": "mcpwall tests (confidential)",
            "confidential": True, "client_secret": self.confidential.secret, "enabled": True,
            "authorization_type": ["code", "refresh_token", "client_credentials", "delete_token"],
            "redirect_uri": [REDIRECT_URI], "scope": ["mcp:tools", "mcp:admin"],
            "token_endpoint_auth_method": methods})
        self._admin_call("POST", "/client/", {
            "client_id": self.public.client_id, "name": "mcpwall tests (public)", "confidential": False,
            "enabled": True, "authorization_type": ["code", "refresh_token"], "redirect_uri": [REDIRECT_URI],
            "scope": [], "token_endpoint_auth_method": ["none"]})
        self._admin_call("POST", "/client/", {
            "client_id": self.device_client.client_id, "name": "mcpwall tests (device)", "confidential": False,
            "enabled": True, "authorization_type": ["device_authorization", "refresh_token"], "redirect_uri": [],
            "scope": [], "token_endpoint_auth_method": ["none"]})
        for plugin in self._plugins():
            self._admin_call("POST", "/mod/plugin/", plugin)

    def _plugins(self) -> list[dict[str, Any]]:
        return [self._plugin("oidc", self.issuer, self.private_jwks, 3600),
                self._plugin("short", self.issuer, self.private_jwks, 1),
                self._plugin("other", self.other_issuer, self.other_jwks, 3600),
                self._plugin("device", self.device_issuer, self.private_jwks, 3600, device_expiry=600),
                self._plugin("devexp", self.devexp_issuer, self.private_jwks, 3600, device_expiry=3)]

    def _plugin(self, name: str, iss: str, jwks: dict[str, Any], lifetime: int,
                device_expiry: int | None = None) -> dict[str, Any]:
        resource_scopes = {scope: list(self.resources) for scope in (*SCOPES, "openid")}
        device = {"auth-type-device-enabled": True, "device-authorization-expiration": device_expiry,
                  "device-authorization-interval": 1} if device_expiry else {}
        return {"module": "oidc", "name": name, "display_name": f"mcpwall tests ({name})", "enabled": True,
                "parameters": {
                    "iss": iss, "jwks-private": json.dumps(jwks), "default-kid": jwks["keys"][0]["kid"],
                    "jwks-show": True, "subject-type": "public",
                    "access-token-duration": lifetime, "refresh-token-duration": 1209600, "code-duration": 600,
                    "refresh-token-rolling": True, "allow-non-oidc": True,
                    "auth-type-code-enabled": True, "auth-type-token-enabled": False,
                    "auth-type-id-token-enabled": True, "auth-type-none-enabled": False,
                    "auth-type-password-enabled": False, "auth-type-client-enabled": True,
                    "auth-type-refresh-enabled": True, "auth-type-device-enabled": False,
                    "pkce-allowed": True, "pkce-method-plain-allowed": False, "pkce-required": True,
                    "introspection-revocation-allowed": True, "introspection-revocation-allow-target-client": True,
                    "introspection-revocation-auth-scope": ["mcp:introspect"],
                    "register-client-allowed": True, "register-client-auth-scope": [],
                    "register-client-credentials-scope": [], "register-client-management-allowed": False,
                    "register-default-properties": {},
                    "resource-allowed": True, "resource-scope": resource_scopes,
                    "resource-scope-and-client-property": False,
                    "oauth-as-iss-id": True,
                    "additional-parameters": [
                        {"user-parameter": "username", "token-parameter": "preferred_username"},
                        {"user-parameter": "email", "token-parameter": "email"}],
                    "allowed-scope": ["openid", *SCOPES], "claims": [], **device,
                }}

    def _update_plugins(self) -> None:
        for plugin in self._plugins():
            self._admin_call("PUT", f"/mod/plugin/{plugin['name']}", plugin)
            self._admin_call("PUT", f"/mod/plugin/{plugin['name']}/reset")

    def allow_resource(self, *uris: str) -> None:
        """Let tokens of every test scope name these resources (RFC 8707) as their audience."""
        fresh = [u for u in uris if u not in self.resources]
        if fresh:
            self.resources.extend(fresh)
            self._update_plugins()

    def rotate_key(self, keep_old: bool = True) -> str:
        """Sign new tokens with a new RSA key; keep the old key published unless `keep_old` is False.

        Returns the new kid. Tokens issued before stay valid against the JWKS only if `keep_old`."""
        self._key_serial += 1
        new = new_rsa_jwk(f"key-{self._key_serial}")
        self.private_jwks = {"keys": [new, *(self.private_jwks["keys"] if keep_old else [])]}
        self._update_plugins()
        return str(new["kid"])

    def public_jwks(self) -> dict[str, Any]:
        """The JWKS as Glewlwyd publishes it."""
        r = httpx.get(self.jwks_uri, timeout=10.0)
        r.raise_for_status()
        return dict(r.json())

    # ------------------------------------------------------------------ flows

    def grant(self, user: str, client_id: str, scopes: str) -> None:
        """`user` consents to `scopes` for `client_id` (what Glewlwyd's consent screen records)."""
        with contextlib.closing(self.login(user, USERS[user][0])) as http:
            r = http.put(f"/auth/grant/{urllib.parse.quote(client_id, safe='')}", json={"scope": scopes})
        if r.status_code != 200:
            raise GlewlwydError(f"grant of {scopes!r} to {client_id} by {user}: {r.status_code} {r.text}")

    def authorize(self, url: str, user: str = "alice") -> tuple[str, str | None]:
        """What `user`'s browser does with an authorization URL: log in, consent, follow to the redirect.

        Returns the code and the state of the redirect. Raises GlewlwydError with the redirect's
        `error` when Glewlwyd refuses the request (unknown resource, missing PKCE, ...)."""
        answer = self.redirect(url, user)
        return answer["code"], answer.get("state")

    def redirect(self, url: str, user: str = "alice") -> dict[str, str]:
        """As `authorize`, but the whole redirect's query: `code`, `state` and `iss` (RFC 9207)."""
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        if "scope" in query and "client_id" in query:
            self.grant(user, query["client_id"], query["scope"])
        with contextlib.closing(self.login(user, USERS[user][0])) as http:
            # g_continue: the user already passed the login page (Glewlwyd's page adds it the same way)
            r = http.get(url + ("&" if "?" in url else "?") + "g_continue")
        location = r.headers.get("location", "")
        if r.status_code != 302 or not location:
            raise GlewlwydError(f"authorization did not redirect: {r.status_code} {r.text[:300]}")
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        if "code" not in answer:
            raise GlewlwydError(f"authorization refused: {location}")
        return answer

    def approve_device(self, verification_uri: str, user: str = "alice") -> str:
        """What `user` does at a device login's verification URI (with its `code`, as
        `verification_uri_complete` gives it): log in, consent to the scopes the device asked for
        (Glewlwyd's login page names the client and the scopes when consent is missing), and
        confirm. Returns the `prompt` Glewlwyd ends on (`deviceComplete` when the device may poll
        its token; `deviceCodeError` for a wrong or expired code)."""
        url = verification_uri + ("&" if "?" in verification_uri else "?") + "g_continue"
        with contextlib.closing(self.login(user, USERS[user][0])) as http:
            for _ in range(2):
                r = http.get(url)
                location = r.headers.get("location", "")
                if r.status_code != 302 or not location:
                    raise GlewlwydError(f"device verification did not redirect: {r.status_code} {r.text[:300]}")
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
                if query.get("prompt", "").startswith("device") and query["prompt"] != "device":
                    return query["prompt"]
                if "client_id" not in query or "scope" not in query:
                    raise GlewlwydError(f"device verification went to {location}")
                grant = http.put(f"/auth/grant/{urllib.parse.quote(query['client_id'], safe='')}",
                                 json={"scope": query["scope"]})
                if grant.status_code != 200:
                    raise GlewlwydError(f"consent for the device: {grant.status_code} {grant.text}")
        raise GlewlwydError(f"device verification did not complete: {location}")

    def token_for(self, user: str = "alice", scopes: str = "mcp:tools", resource: str | None = None, *,
                  client: Client | None = None, plugin: str = "oidc") -> Tokens:
        """An access token of `user` for `scopes` and `resource` (its `aud`), by code + PKCE S256."""
        client = client or self.confidential
        issuer = f"{self.api}/{plugin}"
        verifier = secrets.token_urlsafe(48)
        params = {"response_type": "code", "client_id": client.client_id, "redirect_uri": REDIRECT_URI,
                  "scope": scopes, "state": secrets.token_urlsafe(8),
                  "code_challenge": _b64(hashlib.sha256(verifier.encode()).digest()),
                  "code_challenge_method": "S256"}
        if resource:
            params["resource"] = resource
        code, state = self.authorize(f"{issuer}/auth?{urllib.parse.urlencode(params)}", user)
        assert state == params["state"]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier}
        if resource:
            form["resource"] = resource
        return self._token(f"{issuer}/token", form, client)

    def refresh(self, tokens: Tokens, resource: str | None = None, *, client: Client | None = None) -> Tokens:
        """A new access token from a refresh token."""
        assert tokens.refresh_token, "no refresh token"
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        if resource:
            form["resource"] = resource
        return self._token(self.token_endpoint, form, client or self.confidential)

    def service_token(self, scopes: str = "mcp:tools", resource: str | None = None) -> Tokens:
        """A client-credentials token of the confidential client (no user)."""
        form = {"grant_type": "client_credentials", "scope": scopes}
        if resource:
            form["resource"] = resource
        return self._token(self.token_endpoint, form, self.confidential)

    def expired_token(self, user: str = "alice", scopes: str = "mcp:tools", resource: str | None = None,
                      past_skew: float = 0.0) -> str:
        """A token of the trusted issuer, signed by its current key, that has expired (lived one second),
        and more than `past_skew` seconds ago (a resource server's allowed clock skew)."""
        tokens = self.token_for(user, scopes, resource, plugin="short")
        time.sleep(2.1 + past_skew)
        return tokens.access_token

    def foreign_token(self, user: str = "alice", scopes: str = "mcp:tools", resource: str | None = None) -> str:
        """A well-formed token from `other_issuer`, a real authorization server the gateway does not trust."""
        return self.token_for(user, scopes, resource, plugin="other").access_token

    def introspect(self, token: str, client: Client | None = None) -> dict[str, Any]:
        """RFC 7662 introspection as the (confidential) client, answers `{"active": ...}`."""
        client = client or self.confidential
        r = httpx.post(self.introspection_endpoint, data={"token": token}, auth=(client.client_id, client.secret),
                       timeout=10.0)
        if r.status_code != 200:
            raise GlewlwydError(f"introspection: {r.status_code} {r.text}")
        return dict(r.json())

    def register_client(self, redirect_uris: list[str] | None = None,
                        auth_method: str = "client_secret_basic") -> Client:
        """A client registered dynamically (RFC 7591, no initial access token), as an MCP client would."""
        r = httpx.post(self.registration_endpoint, timeout=10.0, json={
            "redirect_uris": redirect_uris or [REDIRECT_URI], "token_endpoint_auth_method": auth_method,
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "client_name": "mcpwall tests (registered)"})
        if r.status_code != 200:
            raise GlewlwydError(f"registration: {r.status_code} {r.text}")
        body = r.json()
        return Client(body["client_id"], body.get("client_secret", ""), auth_method)

    def _token(self, endpoint: str, form: dict[str, str], client: Client) -> Tokens:
        if client.auth_method == "client_secret_basic":
            r = httpx.post(endpoint, data=form, auth=(client.client_id, client.secret), timeout=10.0)
        elif client.auth_method == "client_secret_post":
            r = httpx.post(endpoint, data={**form, "client_id": client.client_id, "client_secret": client.secret},
                           timeout=10.0)
        else:
            r = httpx.post(endpoint, data={**form, "client_id": client.client_id}, timeout=10.0)
        if r.status_code != 200:
            raise GlewlwydError(f"token endpoint refused {form.get('grant_type')}: {r.status_code} {r.text}")
        body = r.json()
        return Tokens(access_token=body["access_token"], refresh_token=body.get("refresh_token"),
                      expires_in=int(body.get("expires_in", 0)), scope=str(body.get("scope", "")), raw=body)
