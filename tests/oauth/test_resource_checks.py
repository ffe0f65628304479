"""The resource server's checks one at a time, in process, against the real Glewlwyd.

Strategy: `ResourceServer` built from an `auth:` section as the gateway builds it, validating real
tokens from the session's Glewlwyd (no gateway process: these are the rules, the gateway tests
are the wiring); the policy section's mistakes each get their one-line error; introspection
(RFC 7662) answers from Glewlwyd's real endpoint; roles land in a real casbin enforcer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import casbin
import pytest

from mcpwall.errors import ConfigError
from mcpwall.oauth import ResourceServer, parse_auth
from mcpwall.oauth._resource import Refused
from tests.oauth.glewlwyd import Glewlwyd

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(60)]

RESOURCE = "http://127.0.0.1:7/mcp"


OPEN: list[ResourceServer] = []


def _track(rs: ResourceServer) -> ResourceServer:
    OPEN.append(rs)
    return rs




def _server(g: Glewlwyd, extra: str = "", **issuer: Any) -> ResourceServer:
    section = {"issuers": [{"issuer": g.issuer, "scopes": ["mcp:tools"], "principalClaim": "preferred_username",
                            **issuer}]}
    config = parse_auth(section, RESOURCE)
    assert config is not None
    return _track(ResourceServer(config, lambda: ["time"],
                                 lambda: ["", "cursor", "bob"] if extra == "bob-local" else [""]))


@pytest.fixture
async def g(glewlwyd: Glewlwyd) -> Any:
    """The session's Glewlwyd, this file's resources allowed; the resource servers built with it closed after."""
    glewlwyd.allow_resource(RESOURCE, f"{RESOURCE}/time")
    yield glewlwyd
    while OPEN:
        await OPEN.pop().stop()


async def test_a_valid_token_names_its_user_scopes_and_client(g: Glewlwyd) -> None:
    rs = _server(g)
    principal = await rs.validate(g.token_for("alice", "mcp:tools mcp:admin", RESOURCE).access_token)
    assert principal.name == "alice"
    assert principal.scopes == {"mcp:tools", "mcp:admin"}
    assert principal.client_id == g.confidential.client_id
    assert principal.issuer == g.issuer


async def test_a_principal_that_is_a_local_agent_tokens_name_is_refused(g: Glewlwyd) -> None:
    rs = _server(g, "bob-local")
    with pytest.raises(Refused, match="agent tokens"):
        await rs.validate(g.token_for("bob", "mcp:tools", RESOURCE).access_token)


async def test_the_principal_claim_must_be_present(g: Glewlwyd) -> None:
    rs = _server(g, principalClaim="employee_number")
    with pytest.raises(Refused, match="names no principal"):
        await rs.validate(g.token_for("alice", "mcp:tools", RESOURCE).access_token)


async def test_an_issuer_limited_to_es256_refuses_its_rs256_tokens(g: Glewlwyd) -> None:
    rs = _server(g, algorithms=["ES256"])
    with pytest.raises(Refused, match="not allowed"):
        await rs.validate(g.token_for("alice", "mcp:tools", RESOURCE).access_token)


async def test_per_server_audience_holds_only_on_that_servers_path(g: Glewlwyd) -> None:
    rs = _server(g)
    token = g.token_for("alice", "mcp:tools", f"{RESOURCE}/time").access_token
    assert (await rs.validate(token, "/mcp/time")).name == "alice"
    with pytest.raises(Refused, match="another resource"):
        await rs.validate(token, "/mcp")


async def test_introspection_accepts_an_active_token_and_refuses_others(g: Glewlwyd, tmp_path: Path) -> None:
    secret = tmp_path / "introspection.secret"
    secret.write_text(g.confidential.secret)
    os.chmod(secret, 0o600)
    section = {"issuers": [{"issuer": g.issuer, "scopes": ["mcp:tools"], "validation": "introspection",
                            "introspection": {"clientId": g.confidential.client_id,
                                              "clientSecret": {"file": str(secret)}}}]}
    config = parse_auth(section, RESOURCE)
    assert config is not None
    rs = _track(ResourceServer(config, lambda: [], lambda: [""]))
    token = g.token_for("alice", "mcp:tools", RESOURCE).access_token
    principal = await rs.validate(token)
    assert principal.scopes == {"mcp:tools"}
    assert principal.name  # the subject Glewlwyd's introspection names
    with pytest.raises(Refused, match="not active"):
        await rs.validate("an-opaque-token-nobody-issued-" + "z" * 20)
    with pytest.raises(Refused, match="not active"):  # Glewlwyd says an expired token is inactive
        await rs.validate(g.expired_token("bob", "mcp:tools", RESOURCE))


async def test_scopes_and_clients_become_rbac_roles_and_leave_with_them(g: Glewlwyd, tmp_path: Path) -> None:
    model = tmp_path / "model.conf"
    model.write_text("[request_definition]\nr = sub, obj, act\n[policy_definition]\np = sub, obj, act\n"
                     "[role_definition]\ng = _, _\n[policy_effect]\ne = some(where (p.eft == allow))\n"
                     "[matchers]\nm = g(r.sub, p.sub) && keyMatch(r.obj, p.obj) && r.act == p.act\n")
    policy = tmp_path / "policy.csv"
    policy.write_text("p, admin, time__*, execute\np, tools, time__get_current_time, execute\n")

    class Stage:
        name = "rbac"
        enforcer = casbin.Enforcer(str(model), str(policy))
        _cache: ClassVar[dict[Any, Any]] = {}

    section = {"issuers": [{"issuer": g.issuer, "principalClaim": "preferred_username",
                            "roles": {"scopes": {"mcp:admin": "admin"}, "clients": {g.confidential.client_id: "tools"}}}]}
    config = parse_auth(section, RESOURCE)
    assert config is not None
    rs = _track(ResourceServer(config, lambda: [], lambda: [""], lambda: Stage))
    admin = await rs.validate(g.token_for("alice", "mcp:tools mcp:admin", RESOURCE).access_token)
    assert admin.roles == {"admin", "tools"}
    rs._grant_roles(admin)
    assert Stage.enforcer.enforce("alice", "time__convert_time", "execute")
    plain = await rs.validate(g.token_for("alice", "mcp:tools", RESOURCE).access_token)
    rs._grant_roles(plain)
    assert not Stage.enforcer.enforce("alice", "time__convert_time", "execute")
    assert Stage.enforcer.enforce("alice", "time__get_current_time", "execute")


@pytest.mark.parametrize(("section", "message"), [
    ({"issuers": []}, "at least one issuer"),
    ({"issuers": [{"issuer": "ftp://x"}]}, "http(s) URL"),
    ({"issuers": [{"issuer": "https://a.example", "algorithms": ["HS256"]}]}, "never none or HMAC"),
    ({"issuers": [{"issuer": "https://a.example", "algorithms": ["none"]}]}, "never none or HMAC"),
    ({"issuers": [{"issuer": "https://a.example", "clockSkew": 3600}]}, "0 to 300"),
    ({"issuers": [{"issuer": "https://a.example", "audiance": "x"}]}, "unknown key"),
    ({"issuers": [{"issuer": "https://a.example", "introspection": {"clientId": "c", "clientSecret": "s3cret"}}]},
     "by reference"),
    ({"issuers": [{"issuer": "https://a.example", "introspection": {"clientId": "c",
                                                                     "clientSecret": {"env": "MCPWALL_NO_SUCH_VAR"}}}]},
     "not set"),
    ({"issuers": [{"issuer": "https://a.example", "validation": "introspection"}]}, "needs an introspection"),
    ({"issuers": [{"issuer": "https://a.example"}, {"issuer": "https://a.example"}]}, "listed twice"),
    ({"issuers": [{"issuer": "https://a.example"}], "extra": 1}, "takes resource, issuers and tools"),
])
def test_a_bad_auth_section_is_refused_with_what_is_wrong(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_auth(section, RESOURCE)


def test_a_secret_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "s"
    secret.write_text("x")
    os.chmod(secret, 0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        parse_auth({"issuers": [{"issuer": "https://a.example", "introspection": {
            "clientId": "c", "clientSecret": {"file": str(secret)}}}]}, RESOURCE)
