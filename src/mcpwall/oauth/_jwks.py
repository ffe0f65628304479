"""What the gateway learns from an issuer: its metadata, its signing keys, its introspection answers.

- Metadata by discovery: RFC 8414 (`/.well-known/oauth-authorization-server` inserted before the
  issuer's path), then OpenID Connect (`issuer + /.well-known/openid-configuration`). The document
  must name the same `issuer` (a mix-up defence), and is kept for `METADATA_TTL_S`.
- Keys from its `jwks_uri`, kept by `kid`. A token signed by a kid the cache does not hold makes
  it fetch the JWKS again (the issuer rotated its key), at most once per `REFETCH_MIN_S`, so a
  stream of tokens with made-up kids cannot turn the gateway into a load on the issuer. Symmetric
  (`oct`) keys in a JWKS are ignored: a public key set has no business holding one.
- Introspection (RFC 7662) as the configured client, the answer cached by the token's SHA-256 for
  at most `INTROSPECTION_TTL_S` and never past the token's `exp`.

Network failures are `IssuerUnavailable`: the caller refuses the token (fail closed).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from mcpwall.errors import MCPWallError
from mcpwall.oauth._config import Issuer

METADATA_TTL_S = 3600.0
JWKS_TTL_S = 3600.0
REFETCH_MIN_S = 5.0
INTROSPECTION_TTL_S = 30.0
_TIMEOUT = httpx.Timeout(10.0)


class IssuerUnavailable(MCPWallError):
    """The issuer's metadata, keys or introspection endpoint could not be used."""


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is looked for, RFC 8414 first."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}{path}/.well-known/openid-configuration"]


def _object(r: httpx.Response, where: str) -> dict[str, Any]:
    """The JSON object of a 200 answer, else `IssuerUnavailable`."""
    if r.status_code != 200:
        raise IssuerUnavailable(f"{where}: HTTP {r.status_code}")
    try:
        body = r.json()
    except ValueError as exc:
        raise IssuerUnavailable(f"{where}: not JSON") from exc
    if not isinstance(body, dict):
        raise IssuerUnavailable(f"{where}: not a JSON object")
    return body


class IssuerKeys:
    """The metadata, JWKS and introspection of one issuer, fetched lazily and cached."""

    def __init__(self, issuer: Issuer, http: httpx.AsyncClient | None = None) -> None:
        self.issuer = issuer
        self.http = http or httpx.AsyncClient(timeout=_TIMEOUT, follow_redirects=False)
        self.metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self.keys: dict[str, jwt.PyJWK] = {}
        self._keys_at = 0.0
        self._last_fetch = -REFETCH_MIN_S
        self._lock = asyncio.Lock()
        self._introspected: dict[str, tuple[float, dict[str, Any]]] = {}
        self.fetches = 0

    async def close(self) -> None:
        await self.http.aclose()

    async def _get(self, url: str) -> dict[str, Any]:
        try:
            r = await self.http.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"{url}: {exc.__class__.__name__}: {exc}") from exc
        return _object(r, url)

    async def meta(self) -> dict[str, Any]:
        """The issuer's authorization server metadata (RFC 8414 or OIDC discovery)."""
        if self.metadata is not None and time.monotonic() - self._metadata_at < METADATA_TTL_S:
            return self.metadata
        problems: list[str] = []
        for url in discovery_urls(self.issuer.issuer):
            try:
                body = await self._get(url)
            except IssuerUnavailable as exc:
                problems.append(str(exc))
                continue
            if str(body.get("issuer", "")).rstrip("/") != self.issuer.issuer.rstrip("/"):
                problems.append(f"{url}: names issuer {body.get('issuer')!r}")
                continue
            self.metadata, self._metadata_at = body, time.monotonic()
            return body
        raise IssuerUnavailable(f"no metadata for issuer {self.issuer.issuer}: {'; '.join(problems)}")

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The signing key `kid` names (the only one, when the token names none and the set has one)."""
        found = self._pick(kid)
        stale = time.monotonic() - self._keys_at > JWKS_TTL_S
        if found is not None and not stale:
            return found
        async with self._lock:
            found = self._pick(kid)
            if found is not None and not stale:
                return found
            if time.monotonic() - self._last_fetch < REFETCH_MIN_S:
                return found  # fetched a moment ago: an unknown kid now is not a rotation
            await self._fetch()
            return self._pick(kid)

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return self.keys.get(kid)
        return next(iter(self.keys.values())) if len(self.keys) == 1 else None

    async def _fetch(self) -> None:
        self._last_fetch = time.monotonic()
        uri = (await self.meta()).get("jwks_uri")
        if not isinstance(uri, str) or not uri:
            raise IssuerUnavailable(f"issuer {self.issuer.issuer} publishes no jwks_uri")
        body = await self._get(uri)
        self.fetches += 1
        keys: dict[str, jwt.PyJWK] = {}
        for index, raw in enumerate(body.get("keys") or []):
            if not isinstance(raw, dict) or raw.get("kty") not in ("RSA", "EC", "OKP"):
                continue  # no symmetric keys from a public key set
            if raw.get("use") not in (None, "sig"):
                continue
            try:
                keys[str(raw.get("kid", f"#{index}"))] = jwt.PyJWK(raw)
            except jwt.PyJWTError:
                continue  # a key this PyJWT cannot use (an unknown curve): the others still serve
        self.keys, self._keys_at = keys, time.monotonic()

    async def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662: the issuer's answer about `token` (cached briefly)."""
        spec = self.issuer.introspection
        if spec is None:
            raise IssuerUnavailable(f"issuer {self.issuer.issuer} has no introspection configured")
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        cached = self._introspected.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        endpoint = spec.endpoint or (await self.meta()).get("introspection_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise IssuerUnavailable(f"issuer {self.issuer.issuer} names no introspection_endpoint")
        try:
            r = await self.http.post(endpoint, data={"token": token, "token_type_hint": "access_token"},
                                     auth=(spec.client_id, spec.client_secret),
                                     headers={"Accept": "application/json"})
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(f"introspection at {endpoint}: {exc.__class__.__name__}") from exc
        answer = _object(r, f"introspection at {endpoint}")
        exp = answer.get("exp")
        until = now + INTROSPECTION_TTL_S
        if isinstance(exp, int | float):
            until = min(until, float(exp))
        if len(self._introspected) > 4096:
            self._introspected = {k: v for k, v in self._introspected.items() if v[0] > now}
        self._introspected[digest] = (until, answer)
        return answer


__all__ = ["INTROSPECTION_TTL_S", "REFETCH_MIN_S", "IssuerKeys", "IssuerUnavailable", "discovery_urls"]
