"""Bounded HTTP for the built-in tools: checked address, capped size, capped time.

Each hop (the URL and every redirect) goes through `check_url`; the request
is sent to the address that check resolved (the Host header and TLS server
name stay the URL's host), so the connection goes where the check looked.
The body is read as a stream and cut at `max_bytes`; the whole exchange,
redirects included, must finish within `timeout_s`. Proxies from the
environment are ignored: they would connect on our behalf to anything.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from mcpwall import __version__
from mcpwall.builtin._net import HostPolicy, Resolver, Target, URLRefused, check_url, system_resolver
from mcpwall.errors import InternalError

MAX_REDIRECTS = 5
DEFAULT_MAX_BYTES = 256 * 1024
HARD_MAX_BYTES = 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0
HARD_TIMEOUT_S = 30.0
_REDIRECTS = (301, 302, 303, 307, 308)


class FetchError(InternalError):
    """The fetch failed for a reason the agent should see."""


@dataclass
class Fetched:
    url: str
    status: int
    headers: dict[str, str]
    body: bytes = b""
    truncated: bool = False
    elapsed_ms: float = 0.0
    redirects: list[str] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def text(self) -> str:
        charset = "utf-8"
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.body.decode(charset, "replace")
        except LookupError:
            return self.body.decode("utf-8", "replace")


def clamp(max_bytes: int | None, timeout_s: float | None) -> tuple[int, float]:
    size = DEFAULT_MAX_BYTES if max_bytes is None else max(1, min(int(max_bytes), HARD_MAX_BYTES))
    seconds = DEFAULT_TIMEOUT_S if timeout_s is None else max(0.1, min(float(timeout_s), HARD_TIMEOUT_S))
    return size, seconds


async def fetch(url: str, policy: HostPolicy, *, method: str = "GET", max_bytes: int | None = None,
                timeout_s: float | None = None, resolver: Resolver = system_resolver) -> Fetched:
    """Fetch `url` under the allowlist and caps; raises URLRefused or FetchError."""
    limit, seconds = clamp(max_bytes, timeout_s)
    started = time.perf_counter()
    try:
        result = await asyncio.wait_for(_follow(url, policy, method, limit, seconds, resolver), seconds)
    except TimeoutError:
        raise FetchError(f"no complete answer within {seconds:g} s") from None
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


async def _follow(url: str, policy: HostPolicy, method: str, limit: int, seconds: float,
                  resolver: Resolver) -> Fetched:
    hops: list[str] = []
    timeout = httpx.Timeout(seconds)
    async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=timeout, verify=True) as client:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            target = await check_url(current, policy, resolver)
            result = await _one(client, target, method, limit)
            location = result.headers.get("location")
            if result.status in _REDIRECTS and location:
                hops.append(current)
                current = urljoin(current, location)
                if result.status == 303:
                    method = "GET" if method != "HEAD" else "HEAD"
                continue
            result.redirects = hops
            return result
    raise FetchError(f"more than {MAX_REDIRECTS} redirects")


async def _one(client: httpx.AsyncClient, target: Target, method: str, limit: int) -> Fetched:
    parts = urlsplit(target.url)
    address = f"[{target.address}]" if ":" in target.address else target.address
    netloc = f"{address}:{target.port}"
    pinned = urlunsplit((target.scheme, netloc, parts.path or "/", parts.query, ""))
    default_port = target.port == (443 if target.scheme == "https" else 80)
    host_header = target.host if default_port else f"{target.host}:{target.port}"
    headers = {"Host": host_header, "User-Agent": f"mcpwall-builtin/{__version__}", "Accept-Encoding": "identity"}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    request = client.build_request(method, pinned, headers=headers, extensions=extensions)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise FetchError(f"{method} {target.url} failed: {exc.__class__.__name__}: {exc}") from exc
    try:
        chunks: list[bytes] = []
        size = 0
        truncated = False
        if method != "HEAD":
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    chunks.append(chunk[:len(chunk) - (size - limit)])
                    truncated = True
                    break
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise FetchError(f"{method} {target.url} failed while reading: {exc}") from exc
    finally:
        await response.aclose()
    return Fetched(url=target.url, status=response.status_code,
                   headers={k.lower(): v for k, v in response.headers.items()},
                   body=b"".join(chunks), truncated=truncated)


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_TIMEOUT_S", "HARD_MAX_BYTES", "HARD_TIMEOUT_S", "MAX_REDIRECTS",
           "FetchError", "Fetched", "URLRefused", "clamp", "fetch"]
