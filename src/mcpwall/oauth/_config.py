"""The `auth:` section of policy.yaml: the issuers whose access tokens the gateway accepts.

    auth:
      resource: https://mcp.example.com/mcp     # default: http://HOST:PORT/mcp of this gateway
      issuers:
        - issuer: https://idp.example.com/realms/mcp
          audience: [https://mcp.example.com/mcp]   # default: the resource (and /mcp/NAME on that path)
          scopes: [mcp:tools]                        # every request needs these
          principalClaim: preferred_username         # default: sub
          algorithms: [RS256, ES256]                 # default: the asymmetric JWS algorithms
          clockSkew: 60                              # seconds, at most 300
          validation: auto                           # auto | jwt | introspection
          introspection:                             # RFC 7662, for opaque tokens (or validation: introspection)
            endpoint: https://idp.example.com/introspect   # default: the issuer metadata's
            clientId: mcpwall-gateway
            clientSecret: {env: MCPWALL_INTROSPECTION_SECRET}   # or {file: path}; never inline
          roles:
            claim: groups                            # each value of this claim is an RBAC role
            scopes: {mcp:admin: admin}               # a granted scope -> a role
            clients: {cursor: cursor-tools}          # the token's client_id / azp -> a role
      tools:                                         # tool patterns -> scopes a call needs (step-up)
        "everything__get-env": [mcp:admin]

The parsed form is frozen dataclasses; every mistake is a `ConfigError` naming the key.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpwall._token import read_secret
from mcpwall.errors import ConfigError

#: JWS algorithms accepted by default: asymmetric only (never `none`, never HMAC: a gateway that
#: accepted HS256 could be handed a token "signed" with the issuer's public key as the secret).
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
MAX_SKEW_S = 300
_ISSUER_KEYS = {"issuer", "audience", "scopes", "principalClaim", "algorithms", "clockSkew", "validation",
                "introspection", "roles"}


@dataclass(frozen=True)
class Introspection:
    """Where and as whom the gateway asks an issuer about a token (RFC 7662)."""

    client_id: str
    client_secret: str = field(repr=False)
    endpoint: str | None = None


@dataclass(frozen=True)
class Roles:
    """How a token's claims and scopes become RBAC roles."""

    claim: str | None = None
    scopes: Mapping[str, str] = field(default_factory=dict)
    clients: Mapping[str, str] = field(default_factory=dict)

    def of(self, claims: Mapping[str, Any], scopes: frozenset[str]) -> frozenset[str]:
        found: set[str] = set()
        if self.claim:
            value = claims.get(self.claim)
            values = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
            found.update(str(v) for v in values if isinstance(v, str | int) and str(v))
        found.update(role for scope, role in self.scopes.items() if scope in scopes)
        client = claims.get("client_id") or claims.get("azp")
        if isinstance(client, str) and client in self.clients:
            found.add(self.clients[client])
        return frozenset(found)


@dataclass(frozen=True)
class Issuer:
    """One trusted authorization server."""

    issuer: str
    audience: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    principal_claim: str = "sub"
    algorithms: tuple[str, ...] = ASYMMETRIC
    clock_skew: int = 60
    validation: str = "auto"
    introspection: Introspection | None = None
    roles: Roles = field(default_factory=Roles)


@dataclass(frozen=True)
class AuthConfig:
    """The whole `auth:` section; `resource` is the gateway's own resource URI."""

    resource: str
    issuers: tuple[Issuer, ...]
    tools: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def scopes_for_tool(self, name: str) -> tuple[str, ...]:
        """The scopes a call of `name` (server__tool) needs beyond its issuer's."""
        needed: list[str] = []
        for pattern, scopes in self.tools:
            if fnmatch.fnmatchcase(name, pattern):
                needed.extend(s for s in scopes if s not in needed)
        return tuple(needed)

    @property
    def scopes_supported(self) -> list[str]:
        out: list[str] = []
        for scope in [s for i in self.issuers for s in i.scopes] + [s for _, ss in self.tools for s in ss]:
            if scope not in out:
                out.append(scope)
        return out


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"auth: {key} must be a string or a list of strings")
    return tuple(value)


def _url(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ConfigError(f"auth: {key} must be an http(s) URL, not {value!r}")
    return value.rstrip("/") if value.count("/") > 2 else value


def secret_from(ref: Any, key: str, base: Path | None) -> str:
    """A secret named by reference: `{env: NAME}` or `{file: PATH}` (relative to the policy's folder,
    mode 0600).

    An inline string is refused: policy.yaml is read by editors, diffs and backups."""
    if isinstance(ref, str):
        raise ConfigError(f"auth: {key} must name the secret by reference ({{env: NAME}} or {{file: PATH}}), "
                          "not hold it inline")
    if not isinstance(ref, dict) or len(ref) != 1 or next(iter(ref)) not in ("env", "file"):
        raise ConfigError(f"auth: {key} must be {{env: NAME}} or {{file: PATH}}")
    kind, name = next(iter(ref.items()))
    if not isinstance(name, str) or not name:
        raise ConfigError(f"auth: {key}.{kind} must be a non-empty string")
    if kind == "env":
        value = os.environ.get(name, "")
        if not value:
            raise ConfigError(f"auth: {key}: environment variable {name} is not set")
        return value
    path = Path(name).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        return read_secret(path)  # mode 0600, not empty
    except ConfigError as exc:
        raise ConfigError(f"auth: {key}: {exc}") from exc


def _issuer(raw: Any, index: int, base: Path | None) -> Issuer:
    where = f"issuers[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"auth: {where} must be a mapping with at least `issuer`")
    unknown = set(raw) - _ISSUER_KEYS
    if unknown:
        raise ConfigError(f"auth: {where}: unknown key(s) {', '.join(sorted(unknown))}")
    algorithms = _strings(raw.get("algorithms"), f"{where}.algorithms") or ASYMMETRIC
    bad = [a for a in algorithms if a not in ASYMMETRIC]
    if bad:
        raise ConfigError(f"auth: {where}.algorithms: {', '.join(bad)} not allowed (only {', '.join(ASYMMETRIC)}; "
                          "never none or HMAC)")
    skew = raw.get("clockSkew", 60)
    if not isinstance(skew, int) or isinstance(skew, bool) or not 0 <= skew <= MAX_SKEW_S:
        raise ConfigError(f"auth: {where}.clockSkew must be a whole number of seconds from 0 to {MAX_SKEW_S}")
    validation = raw.get("validation", "auto")
    if validation not in ("auto", "jwt", "introspection"):
        raise ConfigError(f"auth: {where}.validation must be auto, jwt or introspection")
    introspection = None
    if raw.get("introspection") is not None:
        spec = raw["introspection"]
        if not isinstance(spec, dict) or set(spec) - {"endpoint", "clientId", "clientSecret"} or "clientId" not in spec:
            raise ConfigError(f"auth: {where}.introspection takes endpoint, clientId and clientSecret")
        introspection = Introspection(
            client_id=str(spec["clientId"]),
            client_secret=secret_from(spec.get("clientSecret"), f"{where}.introspection.clientSecret", base),
            endpoint=_url(spec["endpoint"], f"{where}.introspection.endpoint") if spec.get("endpoint") else None)
    if validation == "introspection" and introspection is None:
        raise ConfigError(f"auth: {where}: validation: introspection needs an introspection block")
    roles_raw = raw.get("roles") or {}
    if not isinstance(roles_raw, dict) or set(roles_raw) - {"claim", "scopes", "clients"}:
        raise ConfigError(f"auth: {where}.roles takes claim, scopes and clients")
    for key in ("scopes", "clients"):
        value = roles_raw.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise ConfigError(f"auth: {where}.roles.{key} must map names to role names")
    principal = raw.get("principalClaim", "sub")
    if not isinstance(principal, str) or not principal:
        raise ConfigError(f"auth: {where}.principalClaim must be a claim name")
    return Issuer(
        issuer=_url(raw.get("issuer"), f"{where}.issuer"),
        audience=tuple(_url(a, f"{where}.audience") for a in _strings(raw.get("audience"), f"{where}.audience")),
        scopes=_strings(raw.get("scopes"), f"{where}.scopes"), principal_claim=principal, algorithms=algorithms,
        clock_skew=skew, validation=validation, introspection=introspection,
        roles=Roles(claim=roles_raw.get("claim"), scopes=dict(roles_raw.get("scopes") or {}),
                    clients=dict(roles_raw.get("clients") or {})))


def parse_auth(section: Any, default_resource: str, base: Path | None = None) -> AuthConfig | None:
    """The `auth:` section as an `AuthConfig`; None when there is none (static tokens only)."""
    if section is None:
        return None
    if not isinstance(section, dict) or set(section) - {"resource", "issuers", "tools"}:
        raise ConfigError("auth: takes resource, issuers and tools")
    issuers = section.get("issuers")
    if not isinstance(issuers, list) or not issuers:
        raise ConfigError("auth: issuers must list at least one issuer")
    parsed = tuple(_issuer(raw, i, base) for i, raw in enumerate(issuers))
    names = [i.issuer for i in parsed]
    if len(set(names)) != len(names):
        raise ConfigError("auth: an issuer is listed twice")
    tools_raw = section.get("tools") or {}
    if not isinstance(tools_raw, dict):
        raise ConfigError("auth: tools must map tool name patterns to scopes")
    tools = tuple((str(k), _strings(v, f"tools.{k}")) for k, v in tools_raw.items())
    resource = _url(section.get("resource", default_resource), "resource")
    return AuthConfig(resource=resource, issuers=parsed, tools=tools)


__all__ = ["ASYMMETRIC", "AuthConfig", "Introspection", "Issuer", "Roles", "parse_auth", "secret_from"]
