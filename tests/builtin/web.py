"""A real HTTP server on 127.0.0.1 for the built-in tools' tests (threaded, stopped by the test).

Routes: /hello (text), /data.json, /lines (a text with known lines), /big (5 MB), /slow
(answers after 5 s), /redirect?to=URL (302), /head (headers only matter).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

BIG = 5 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8",
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Test-Server", "mcpwall")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.server.seen.append((self.command, self.path, self.headers.get("Host")))  # type: ignore[attr-defined]
        if parts.path == "/hello":
            self._send(200, b"hello from the test server")
        elif parts.path == "/data.json":
            self._send(200, json.dumps({"items": [1, 2, 3]}).encode(), "application/json")
        elif parts.path == "/lines":
            self._send(200, b"alpha one\nbeta two\nALPHA three\ngamma four\n")
        elif parts.path == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(BIG // len(chunk)):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif parts.path == "/slow":
            time.sleep(5)
            self._send(200, b"too late")
        elif parts.path == "/redirect":
            target = parse_qs(parts.query)["to"][0]
            self._send(302, b"", extra={"Location": target})
        else:
            self._send(404, b"not found")


@contextmanager
def web_server() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """(base URL, the requests it saw)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
