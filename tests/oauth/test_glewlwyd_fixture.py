"""The Glewlwyd fixture keeps the promises its docstring makes to the OAuth tests.

Strategy: the session's real Glewlwyd; every token is checked the way a resource server would
check it (PyJWT against the published JWKS), so a fixture that silently hands out something else
(the scope list as audience, an HMAC token, a key that is not published) fails here first.
"""

from __future__ import annotations

import httpx
import jwt
import pytest

from tests.oauth.glewlwyd import Glewlwyd, GlewlwydError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

RESOURCE = "http://127.0.0.1:1/mcp"


def _verify(g: Glewlwyd, token: str, audience: str = RESOURCE) -> dict[str, object]:
    keys = jwt.PyJWKClient(g.jwks_uri, cache_keys=False)
    key = keys.get_signing_key_from_jwt(token)
    return dict(jwt.decode(token, key, algorithms=["RS256"], audience=audience, issuer=g.issuer))


def test_discovery_names_the_issuer_and_the_endpoints_the_flows_use(glewlwyd: Glewlwyd) -> None:
    meta = httpx.get(glewlwyd.discovery_url).json()
    assert meta["issuer"] == glewlwyd.issuer
    assert meta["jwks_uri"] == glewlwyd.jwks_uri
    assert meta["token_endpoint"] == glewlwyd.token_endpoint
    assert meta["registration_endpoint"] == glewlwyd.registration_endpoint
    assert "S256" in meta["code_challenge_methods_supported"]
    assert {"mcp:tools", "mcp:admin"} <= set(meta["scopes_supported"])


def test_a_user_token_is_an_rs256_jwt_for_the_resource_with_the_users_name(glewlwyd: Glewlwyd) -> None:
    glewlwyd.allow_resource(RESOURCE)
    tokens = glewlwyd.token_for("bob", "mcp:tools", RESOURCE)
    assert jwt.get_unverified_header(tokens.access_token)["alg"] == "RS256"
    claims = _verify(glewlwyd, tokens.access_token)
    assert claims["aud"] == RESOURCE
    assert claims["preferred_username"] == "bob"
    assert claims["scope"] == "mcp:tools"
    assert glewlwyd.introspect(tokens.access_token)["active"] is True
    assert _verify(glewlwyd, glewlwyd.refresh(tokens, RESOURCE).access_token)["aud"] == RESOURCE


def test_a_user_gets_only_the_scopes_they_hold_and_only_known_resources(glewlwyd: Glewlwyd) -> None:
    glewlwyd.allow_resource(RESOURCE)
    with pytest.raises(GlewlwydError):
        glewlwyd.token_for("bob", "mcp:admin", RESOURCE)
    with pytest.raises(GlewlwydError, match="invalid_target"):
        glewlwyd.token_for("alice", "mcp:tools", "http://127.0.0.1:2/not-allowed")


def test_rotation_signs_with_a_new_published_key(glewlwyd: Glewlwyd) -> None:
    glewlwyd.allow_resource(RESOURCE)
    before = glewlwyd.kid
    kid = glewlwyd.rotate_key()
    assert kid != before
    assert {kid, before} <= {k["kid"] for k in glewlwyd.public_jwks()["keys"]}
    token = glewlwyd.token_for("alice", "mcp:tools", RESOURCE).access_token
    assert jwt.get_unverified_header(token)["kid"] == kid
    _verify(glewlwyd, token)


def test_expired_and_foreign_tokens_are_what_they_say(glewlwyd: Glewlwyd) -> None:
    glewlwyd.allow_resource(RESOURCE)
    with pytest.raises(jwt.ExpiredSignatureError):
        _verify(glewlwyd, glewlwyd.expired_token("alice", "mcp:tools", RESOURCE))
    foreign = glewlwyd.foreign_token("alice", "mcp:tools", RESOURCE)
    assert jwt.decode(foreign, options={"verify_signature": False})["iss"] == glewlwyd.other_issuer
    with pytest.raises(jwt.PyJWKClientError):
        _verify(glewlwyd, foreign)


def test_open_dynamic_registration_gives_a_client_that_can_log_a_user_in(glewlwyd: Glewlwyd) -> None:
    glewlwyd.allow_resource(RESOURCE)
    for method in ("client_secret_post", "client_secret_basic"):
        client = glewlwyd.register_client(auth_method=method)
        tokens = glewlwyd.token_for("alice", "mcp:tools", RESOURCE, client=client)
        assert _verify(glewlwyd, tokens.access_token)["client_id"] == client.client_id, method
    assert glewlwyd.token_for("bob", "mcp:tools", RESOURCE, client=glewlwyd.public).access_token
