"""Local fake HTTP APIs speaking the real wire formats: ThreatFox, Anthropic Messages, OpenAI Chat.

`FakeAPI` is a real HTTP server (stdlib `ThreadingHTTPServer`) on 127.0.0.1 in a
background thread. A test sets `api.handler` to decide each answer (status,
JSON body, delay) from the request's path, headers and JSON body, and reads
`api.requests` to see what the client sent. `stop()` shuts it down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: Any = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


Handler = Callable[[Seen], Answer]


class FakeAPI:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Seen] = []
        api = self

        class _H(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                api.requests.append(seen)
                answer = api.handler(seen)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                data = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def threatfox_hit(ioc: str, ioc_type: str, threat_type: str = "botnet_cc", malware: str = "Cobalt Strike",
                  confidence: int = 100) -> dict[str, Any]:
    """A `search_ioc` answer with one match, shaped like ThreatFox's."""
    return {"query_status": "ok", "data": [{
        "id": "1234567", "ioc": ioc, "threat_type": threat_type, "threat_type_desc": "C2 server",
        "ioc_type": ioc_type, "ioc_type_desc": "ip:port combination used for botnet C&C",
        "malware": "win.cobalt_strike", "malware_printable": malware, "malware_alias": "BEACON,CobaltStrike",
        "malware_malpedia": "https://malpedia.caad.fkie.fraunhofer.de/details/win.cobalt_strike",
        "confidence_level": confidence, "first_seen": "2026-07-04 21:46:30 UTC", "last_seen": None,
        "reference": None, "reporter": "abuse_ch", "tags": ["CobaltStrike"]}]}


THREATFOX_MISS = {"query_status": "no_result", "data": "Your search did not yield any results"}


def anthropic_message(text: str) -> dict[str, Any]:
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-3-5-haiku-20241022", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 120, "output_tokens": 40}}


def anthropic_error(kind: str = "overloaded_error", message: str = "Overloaded") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1735689600, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}}


def openai_error(message: str = "The server had an error", kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
