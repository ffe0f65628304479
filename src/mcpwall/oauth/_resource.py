"""The gateway as an OAuth 2.1 resource server: who a bearer token from an identity provider is.

`ResourceServer.authenticate` runs when a request's bearer token is not one of the gateway's
static tokens (the gateway token, the named tokens: those stay the single-machine default and are
checked first, by `AuthStage`). In order:

1. no bearer token: 401 with the challenge that points to the protected resource metadata;
2. a JWT (three base64url parts) is checked against its issuer: the header's `alg` must be in the
   issuer's allow-list (asymmetric only) and fit the key's type, the key is found by `kid` in the
   issuer's JWKS (fetched again on an unknown kid, rate-limited), the signature verified, `iss`
   equal to the configured issuer, `aud` one of the resource URIs of the request's path, `exp`
   and `nbf` and `iat` within the issuer's clock skew. An issuer set to `validation:
   introspection`, and any token that is not a JWT, is asked about by introspection (RFC 7662)
   instead, and must come back `active`, from that issuer, for this audience and unexpired;
3. the token must hold the issuer's required scopes (else 403 `insufficient_scope`), name a
   principal in its `principalClaim`, and that principal must not be "" or one of this machine's
   named-token identities (a token could otherwise pass for a local agent);
4. when `auth.tools` names scopes for tools, a POST's body is read (and replayed to the frontend)
   and a `tools/call` of such a tool without them is refused with 403 `insufficient_scope`
   naming the scopes to ask for (incremental consent);
5. the token's roles (`roles:` of its issuer) are given to the principal in the RBAC enforcer.

The token itself is used here and nowhere after: the session knows the principal, never the
token, so nothing can forward it upstream, log it or record it.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt
import orjson

from mcpwall.oauth._calls import missing_tool_scopes
from mcpwall.oauth._config import AuthConfig, Issuer
from mcpwall.oauth._jwks import IssuerKeys, IssuerUnavailable
from mcpwall.oauth._metadata import PREFIX, Challenge, Metadata
from mcpwall.oauth._roles import RoleGrants

log = logging.getLogger("mcpwall.oauth")

Scope = dict[str, Any]
Receive = Callable[[], Any]
#: which JWS algorithms each JWK key type may verify
_FAMILY = {"RSA": ("RS", "PS"), "EC": ("ES",), "OKP": ("EdDSA",)}


@dataclass(frozen=True)
class Principal:
    """Who a valid token stands for, as the gateway keeps it (never the token)."""

    name: str
    issuer: str
    scopes: frozenset[str]
    roles: frozenset[str] = frozenset()
    client_id: str | None = None
    expires: float | None = None
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)


class Refused(Exception):
    """A token the gateway does not accept: how to say so (status, RFC 6750 error, scopes)."""

    def __init__(self, description: str, *, status: int = 401, error: str = "invalid_token",
                 scopes: Iterable[str] = ()) -> None:
        super().__init__(description)
        self.description = description
        self.status = status
        self.error = error
        self.scopes = tuple(scopes)


def _segment(part: str) -> Any:
    return orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def _unverified(token: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The header and claims of a JWT-shaped token, unverified; None for anything else (opaque)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, claims = _segment(parts[0]), _segment(parts[1])
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return header, claims


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(str(v) for v in value if isinstance(v, str))
    return frozenset()


class ResourceServer:
    """Validates identity-provider tokens for the HTTP frontend (see the module docstring)."""

    name = "oauth"

    def __init__(self, config: AuthConfig, servers: Callable[[], Iterable[str]],
                 local_identities: Callable[[], Iterable[str]] = tuple, rbac: Callable[[], Any] = lambda: None) -> None:
        self.config = config
        self.metadata = Metadata(config, servers)
        self.local_identities = local_identities
        self.rbac = rbac
        self.issuers = {i.issuer: IssuerKeys(i) for i in config.issuers}
        #: principal name -> what its latest valid token said (the dashboard, H2's upstream side)
        self.principals: dict[str, Principal] = {}
        self.roles = RoleGrants(rbac)
        self.counts = {"accepted": 0, "refused": 0, "insufficient_scope": 0}

    # ------------------------------------------------------------------ the frontend's hook

    async def authenticate(self, scope: Scope, receive: Receive,
                           headers: Mapping[str, str]) -> tuple[Challenge | None, str | None, Receive]:
        """(refusal or None, the principal, the receive the frontend reads the body from)."""
        path: str = scope["path"]
        authorization = headers.get("authorization", "")
        if authorization[:7].lower() != "bearer " or not authorization[7:].strip():
            self.counts["refused"] += 1
            return self.metadata.challenge(path), None, receive
        try:
            principal = await self.validate(authorization[7:].strip(), path)
            if self.config.tools and scope["method"] == "POST":
                receive, missing = await missing_tool_scopes(self.config, principal.scopes, path, receive)
                if missing:
                    self.counts["insufficient_scope"] += 1
                    # the scopes to ask for: the issuer's own and this call's (a client unions them with its grant)
                    held = next(i.scopes for i in self.config.issuers if i.issuer == principal.issuer)
                    raise Refused(f"this call needs scope {' '.join(missing)}", status=403,
                                  error="insufficient_scope", scopes=[*held, *missing])
        except Refused as exc:
            self.counts["refused"] += 1
            return self.metadata.challenge(path, status=exc.status, error=exc.error, description=exc.description,
                                           scopes=exc.scopes), None, receive
        self.counts["accepted"] += 1
        self._grant_roles(principal)
        return None, principal.name, receive

    # ------------------------------------------------------------------ validation

    async def validate(self, token: str, path: str = "/mcp") -> Principal:
        """The principal of `token` on `path`; `Refused` says why not."""
        audiences = self.metadata.audiences_for(path)
        parsed = _unverified(token)
        if parsed is None:
            claims, issuer = await self._introspect_any(token, audiences)
        else:
            header, unverified = parsed
            issuer = self._issuer_of(unverified)
            if issuer.validation == "introspection":
                claims = await self._introspect(issuer, token, audiences)
            else:
                claims = await self._verify_jwt(issuer, token, header, audiences)
        return self._principal(issuer, claims)

    def _issuer_of(self, claims: Mapping[str, Any]) -> Issuer:
        iss = claims.get("iss")
        for issuer in self.config.issuers:
            if isinstance(iss, str) and iss.rstrip("/") == issuer.issuer.rstrip("/"):
                return issuer
        raise Refused("the token's issuer is not trusted by this gateway")

    async def _verify_jwt(self, issuer: Issuer, token: str, header: Mapping[str, Any],
                          audiences: list[str]) -> dict[str, Any]:
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in issuer.algorithms:
            raise Refused(f"signing algorithm {alg!r} is not allowed")
        kid = header.get("kid")
        try:
            key = await self.issuers[issuer.issuer].key(kid if isinstance(kid, str) else None)
        except IssuerUnavailable as exc:
            log.warning("cannot check a token of %s: %s", issuer.issuer, exc)
            raise Refused("the token's issuer cannot be reached to check it") from exc
        if key is None:
            raise Refused("the token is signed by a key its issuer does not publish")
        kty = str(key.key_type)
        declared = getattr(key, "_jwk_data", {}).get("alg")
        if not alg.startswith(_FAMILY.get(kty, ("-",))) or (declared and declared != alg):
            raise Refused(f"signing algorithm {alg} does not fit the issuer's key")
        try:
            return dict(jwt.decode(token, key.key, algorithms=[alg], audience=audiences, issuer=issuer.issuer,
                                   leeway=issuer.clock_skew,
                                   options={"require": ["exp", "iss", "aud"], "verify_iat": True}))
        except jwt.ExpiredSignatureError as exc:
            raise Refused("the token has expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise Refused("the token is not valid yet") from exc
        except jwt.InvalidAudienceError as exc:
            raise Refused("the token is meant for another resource (aud)") from exc
        except jwt.InvalidIssuerError as exc:
            raise Refused("the token's issuer is not trusted by this gateway") from exc
        except jwt.InvalidSignatureError as exc:
            raise Refused("the token's signature does not verify") from exc
        except jwt.PyJWTError as exc:
            raise Refused(f"the token is not valid: {exc.__class__.__name__}") from exc

    async def _introspect_any(self, token: str, audiences: list[str]) -> tuple[dict[str, Any], Issuer]:
        candidates = [i for i in self.config.issuers if i.introspection is not None]
        if not candidates:
            raise Refused("the token is not a JWT and no issuer is configured for introspection")
        last: Refused | None = None
        for issuer in candidates:
            try:
                return await self._introspect(issuer, token, audiences), issuer
            except Refused as exc:
                last = exc
        assert last is not None
        raise last

    async def _introspect(self, issuer: Issuer, token: str, audiences: list[str]) -> dict[str, Any]:
        try:
            answer = await self.issuers[issuer.issuer].introspect(token)
        except IssuerUnavailable as exc:
            log.warning("cannot introspect a token at %s: %s", issuer.issuer, exc)
            raise Refused("the token's issuer cannot be reached to check it") from exc
        if answer.get("active") is not True:
            raise Refused("the token is not active")
        iss = answer.get("iss")
        if iss is not None and str(iss).rstrip("/") != issuer.issuer.rstrip("/"):
            raise Refused("the token's issuer is not trusted by this gateway")
        aud = answer.get("aud")
        auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if not any(a in audiences for a in auds):
            raise Refused("the token is meant for another resource (aud)")
        now = time.time()
        exp = answer.get("exp")
        if isinstance(exp, int | float) and exp + issuer.clock_skew < now:
            raise Refused("the token has expired")
        nbf = answer.get("nbf")
        if isinstance(nbf, int | float) and nbf - issuer.clock_skew > now:
            raise Refused("the token is not valid yet")
        claims = dict(answer)
        claims.setdefault("iss", issuer.issuer)
        if "sub" not in claims and isinstance(answer.get("username"), str):
            claims["sub"] = answer["username"]
        if issuer.principal_claim not in claims and isinstance(answer.get("username"), str):
            claims[issuer.principal_claim] = answer["username"]
        return claims

    def _principal(self, issuer: Issuer, claims: dict[str, Any]) -> Principal:
        scopes = _scopes(claims)
        missing = [s for s in issuer.scopes if s not in scopes]
        if missing:
            self.counts["insufficient_scope"] += 1
            raise Refused(f"the token lacks scope {' '.join(missing)}", status=403, error="insufficient_scope",
                          scopes=issuer.scopes)
        name = claims.get(issuer.principal_claim)
        if not isinstance(name, str | int) or isinstance(name, bool) or not str(name).strip():
            raise Refused(f"the token names no principal in claim {issuer.principal_claim!r}")
        name = str(name)
        if name in set(self.local_identities()):
            raise Refused("the token's principal is the name of one of this machine's agent tokens")
        client = claims.get("client_id") or claims.get("azp")
        exp = claims.get("exp")
        return Principal(name=name, issuer=issuer.issuer, scopes=scopes, roles=issuer.roles.of(claims, scopes),
                         client_id=client if isinstance(client, str) else None,
                         expires=float(exp) if isinstance(exp, int | float) else None, claims=claims)

    def _grant_roles(self, principal: Principal) -> None:
        """Keep what the principal's latest token said, and give its roles in RBAC."""
        self.principals[principal.name] = principal
        self.roles.give(principal.name, principal.roles)

    # ------------------------------------------------------------------ service

    def handles(self, path: str) -> bool:
        return path == PREFIX or path.startswith(PREFIX + "/")

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        for keys in self.issuers.values():
            await keys.close()

    def status(self) -> dict[str, Any]:
        return {**self.counts, "issuers": list(self.issuers), "resource": self.config.resource,
                "jwks_fetches": sum(keys.fetches for keys in self.issuers.values())}


__all__ = ["Principal", "Refused", "ResourceServer"]
