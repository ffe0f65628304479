"""`mcpwall builtin`: the built-in tools as their own stdio MCP server.

The gateway runs it like any other server (a `servers.local` entry whose
command is `mcpwall builtin`), so the tools appear as `local__fetch_http`,
`local__grep_http`, `local__http_headers` and `local__echo`, pass the same
pipeline and land in the same ledger. It runs in its own process so that a
fetch gone wrong cannot touch the gateway's memory, token or ledger.

- `echo` does no I/O: it measures what the transport costs.
- The HTTP tools read `allowlist.hosts` from the policy file on every call
  (re-parsed only when the file changed), so a policy edit applies at once.
- `format="json"` returns the JSON document and nothing else in the text
  content (errors too: `{"error": ...}`), so `json.loads` on it never fails.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

from mcpwall import __version__
from mcpwall.builtin._http import Fetched, FetchError, fetch
from mcpwall.builtin._net import HostPolicy, Resolver, URLRefused, system_resolver
from mcpwall.errors import PolicyError

log = logging.getLogger("mcpwall.builtin")

Format = Literal["text", "json"]
MAX_MATCHES = 1000
MAX_LINE = 2000


class PolicySource:
    """The host allowlist from a policy file, re-read when the file changes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp: tuple[float, int] | None = None
        self._policy = HostPolicy()
        self.error: str | None = None

    def current(self) -> HostPolicy:
        if self.path is None:
            return self._policy
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise URLRefused(f"the policy file {self.path} cannot be read: {exc}") from exc
        stamp = (st.st_mtime, st.st_size)
        if stamp != self._stamp:
            from mcpwall.policy import load_policy

            try:
                resolved = load_policy(self.path)
            except PolicyError as exc:
                # Fail closed: a broken policy allows no fetch until it is fixed.
                self.error = str(exc)
                raise URLRefused(f"the policy file is invalid: {exc}") from exc
            self._policy = HostPolicy(resolved.allowlist.hosts, resolved.corp_allowlist.hosts)
            self._stamp = stamp
            self.error = None
        return self._policy


def _result(payload: Any, fmt: Format, text: str, *, is_error: bool = False) -> CallToolResult:
    body = json.dumps(payload, ensure_ascii=False) if fmt == "json" else text
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=is_error)


def _failure(exc: Exception, url: str, fmt: Format) -> CallToolResult:
    kind = "refused" if isinstance(exc, URLRefused) else "failed"
    return _result({"error": str(exc), "kind": kind, "url": url}, fmt, f"{kind}: {exc}", is_error=True)


def _summary(f: Fetched) -> dict[str, Any]:
    return {"url": f.url, "status": f.status, "content_type": f.content_type, "bytes": len(f.body),
            "truncated": f.truncated, "redirects": f.redirects, "elapsed_ms": f.elapsed_ms}


def create_server(policy_path: Path | None, resolver: Resolver = system_resolver) -> MCPServer[Any]:
    """The built-in tools server; `resolver` is the DNS seam (tests pin names to addresses)."""
    source = PolicySource(policy_path)
    server: MCPServer[Any] = MCPServer("mcpwall-builtin", version=__version__,
                                       instructions="Built-in tools of mcpwall: bounded HTTP and an echo probe.")

    @server.tool(description="Return the text unchanged. Does no I/O: a probe for transport overhead.",
                 structured_output=False)
    def echo(text: str = "") -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)])

    @server.tool(description="Fetch a URL (GET) from a host the policy allows. Public addresses only unless the "
                             "allowlist names a private one. The body is cut at max_bytes. format=json returns "
                             "{url, status, content_type, bytes, truncated, redirects, elapsed_ms, body}.",
                 structured_output=False)
    async def fetch_http(url: str, format: Format = "text", max_bytes: int | None = None,
                         timeout_s: float | None = None) -> CallToolResult:
        try:
            got = await fetch(url, source.current(), max_bytes=max_bytes, timeout_s=timeout_s, resolver=resolver)
        except (URLRefused, FetchError) as exc:
            return _failure(exc, url, format)
        body = got.text()
        note = " (truncated)" if got.truncated else ""
        return _result({**_summary(got), "body": body}, format,
                       f"HTTP {got.status} {got.content_type} {len(got.body)} bytes{note}\n\n{body}")

    @server.tool(description="Fetch a URL and return the lines matching a regular expression (RE2 syntax). "
                             "format=json returns {url, status, matches: [{line, text}], truncated}.",
                 structured_output=False)
    async def grep_http(url: str, pattern: str, format: Format = "text", ignore_case: bool = False,
                        max_matches: int = 100, max_bytes: int | None = None,
                        timeout_s: float | None = None) -> CallToolResult:
        import re2

        try:
            regex = re2.compile(pattern, re2.Options() if not ignore_case else _nocase())
        except re2.error as exc:
            return _failure(FetchError(f"invalid pattern: {exc}"), url, format)
        try:
            got = await fetch(url, source.current(), max_bytes=max_bytes, timeout_s=timeout_s, resolver=resolver)
        except (URLRefused, FetchError) as exc:
            return _failure(exc, url, format)
        limit = max(1, min(max_matches, MAX_MATCHES))
        matches: list[dict[str, Any]] = []
        for number, line in enumerate(got.text().splitlines(), 1):
            if regex.search(line):
                matches.append({"line": number, "text": line[:MAX_LINE]})
                if len(matches) >= limit:
                    break
        text = "\n".join(f"{m['line']}: {m['text']}" for m in matches) or "(no match)"
        return _result({**_summary(got), "matches": matches, "match_limit_reached": len(matches) >= limit},
                       format, text)

    @server.tool(description="HEAD a URL and return its status and response headers. "
                             "format=json returns {url, status, headers}.",
                 structured_output=False)
    async def http_headers(url: str, format: Format = "text", timeout_s: float | None = None) -> CallToolResult:
        try:
            got = await fetch(url, source.current(), method="HEAD", timeout_s=timeout_s, resolver=resolver)
        except (URLRefused, FetchError) as exc:
            return _failure(exc, url, format)
        text = f"HTTP {got.status}\n" + "\n".join(f"{k}: {v}" for k, v in sorted(got.headers.items()))
        return _result({"url": got.url, "status": got.status, "headers": got.headers,
                        "redirects": got.redirects, "elapsed_ms": got.elapsed_ms}, format, text)

    return server


def _nocase() -> Any:
    import re2

    options = re2.Options()
    options.case_sensitive = False
    return options


async def serve(policy_path: Path | None) -> None:
    """Serve the built-in tools on this process's stdin/stdout until stdin closes."""
    await create_server(policy_path).run_stdio_async()


__all__ = ["PolicySource", "create_server", "serve"]
