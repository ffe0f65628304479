"""A tool's inputSchema cannot make the gateway fetch a URL (SEP-2106; found by suite 0.2.x's
`json-schema-ref-no-deref` client scenario, where mcpwall's schema stage GET the canary).

Strategy: a real HTTP server on loopback counts every request; schemas whose `$ref` points at it,
spelled several ways (absolute, `localhost`, relative to an `$id`, with a fragment, nested in
`$defs`), are validated by the schema stage's cache. Nothing may reach the server, and the call is
refused with a `$ref` error rather than let through unchecked; same-document refs still work.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from mcpwall.security.schema import SchemaCache


class _Canary(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Canary.hits.append(self.path)
        body = b'{"type": "object"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def canary() -> Iterator[int]:
    _Canary.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Canary)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _spellings(port: int) -> list[dict[str, Any]]:
    base = f"http://127.0.0.1:{port}"
    return [
        {"type": "object", "properties": {"p": {"$ref": f"{base}/profile.json"}}},
        {"type": "object", "properties": {"p": {"$ref": f"http://localhost:{port}/profile.json"}}},
        {"type": "object", "properties": {"p": {"$ref": f"{base}/profile.json#/properties/x"}}},
        {"$id": f"{base}/base.json", "type": "object", "properties": {"p": {"$ref": "other.json"}}},
        {"type": "object", "$defs": {"hop": {"$ref": f"{base}/deep.json"}}, "properties": {"p": {"$ref": "#/$defs/hop"}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
         "properties": {"p": {"$ref": f"{base}/draft7.json"}}},
    ]


@pytest.mark.parametrize("which", range(6))
def test_a_network_ref_in_a_tool_schema_is_never_fetched_and_the_call_is_refused(canary: int, which: int) -> None:
    schema = _spellings(canary)[which]
    errors = SchemaCache().errors("remote", "lookup_user", schema, {"p": {"x": 1}})
    assert _Canary.hits == []
    assert [e["validator"] for e in errors] == ["$ref"]
    assert "never fetched" in errors[0]["message"]


def test_same_document_refs_still_validate(canary: int) -> None:
    schema = {"type": "object", "$defs": {"id": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
              "properties": {"id": {"$ref": "#/$defs/id"}}, "required": ["id"]}
    cache = SchemaCache()
    assert cache.errors("remote", "lookup_user", schema, {"id": "alice-1"}) == []
    assert [e["validator"] for e in cache.errors("remote", "lookup_user", schema, {"id": "Alice!"})] == ["pattern"]
    assert _Canary.hits == []
