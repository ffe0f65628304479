"""Forensic capture (`mcpwall record`): every message of every session, to a file per session.

When the gateway runs with `settings.extras["record"]` set, this stage
registers a tap that sees each message a session receives ("in": client to
gateway) and sends ("out"). Each message is serialised at once (so later
changes to the object cannot alter the record) and kept per session; a
background thread rewrites `<home>/sessions/<session id>.mcpcap.json`
atomically every second while the session has news, when it closes and at
shutdown (SIGINT/SIGTERM stop the gateway, which stops this stage).

The file is mcp-seatbelt's `.mcpcap.json`: `sessionId`, `startedAt`,
`endedAt`, `eventCount` and `events` of `{timestamp (ms), direction,
payload}`, where direction is seatbelt's "request" (client to gateway) or
"response" (gateway to client); `kind` (request, notification, response,
error) and, once known, the session's client and agent are added. Captures
hold raw payloads, secrets included: files are 0600 in a 0700 directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from mcpwall.pipeline import Stage
from mcpwall.stages._components import Components

if TYPE_CHECKING:
    from mcpwall.pipeline import Session
    from mcpwall.protocol import Message

log = logging.getLogger("mcpwall.capture")

FLUSH_INTERVAL = 1.0


def _kind(msg: Mapping[str, Any]) -> str:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "error" if "error" in msg else "response"


class _Capture:
    __slots__ = ("agent", "client", "closed", "dirty", "ended", "events", "session_id", "started")

    def __init__(self, session_id: str, started: float) -> None:
        self.session_id = session_id
        self.started = started
        self.ended = started
        self.events: list[bytes] = []
        self.dirty = False
        self.closed = False
        self.client = ""
        self.agent = ""

    def document(self) -> bytes:
        head = {"sessionId": self.session_id, "startedAt": int(self.started * 1000),
                "endedAt": int(self.ended * 1000), "eventCount": len(self.events),
                "client": self.client, "agent": self.agent, "format": "mcp-seatbelt mcpcap"}
        prefix = orjson.dumps(head)[:-1]
        return prefix + b',"events":[' + b",".join(self.events) + b"]}"


class CaptureStage(Stage):
    name = "capture"

    def __init__(self, directory: Path, flush_interval: float = FLUSH_INTERVAL) -> None:
        self.directory = directory
        self.flush_interval = flush_interval
        self._captures: dict[str, _Capture] = {}
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.events = 0
        self.files = 0
        self.errors = 0

    def tap(self, session: Session, direction: str, message: Message) -> None:
        """Called by the gateway for every message in and out of every session."""
        now = time.time()
        event = orjson.dumps({"timestamp": int(now * 1000), "direction": "request" if direction == "in"
                              else "response", "kind": _kind(message), "payload": message},
                             default=str, option=orjson.OPT_NON_STR_KEYS)
        with self._lock:
            capture = self._captures.get(session.id)
            if capture is None:
                capture = self._captures[session.id] = _Capture(session.id, now)
                self._sessions[session.id] = session
            capture.events.append(event)
            capture.ended = now
            capture.dirty = True
            self.events += 1

    async def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mcpwall-capture", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            import asyncio

            await asyncio.to_thread(self._thread.join, 10.0)
            self._thread = None
        self.flush(final=True)

    def status(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "sessions": len(self._captures), "events": self.events,
                "files": self.files, "errors": self.errors}

    def path_for(self, session_id: str) -> Path:
        safe = "".join(c for c in session_id if c.isalnum() or c in "-_") or "session"
        return self.directory / f"{safe}.mcpcap.json"

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.flush_interval)
            if self._stopping:
                break
            try:
                self.flush()
            except Exception:
                log.exception("capture flush failed")

    def flush(self, final: bool = False) -> None:
        """Write every capture with news; drop closed sessions from memory once written."""
        with self._lock:
            todo: list[tuple[_Capture, bytes]] = []
            for sid, capture in list(self._captures.items()):
                session = self._sessions.get(sid)
                if session is not None:
                    capture.client = session.client_name
                    capture.agent = session.agent
                    capture.closed = session.closed
                if capture.dirty or final:
                    todo.append((capture, capture.document()))
                    capture.dirty = False
                if capture.closed or final:
                    self._captures.pop(sid, None)
                    self._sessions.pop(sid, None)
        for capture, document in todo:
            self._write(self.path_for(capture.session_id), document)

    def _write(self, path: Path, document: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(document)
            os.replace(tmp, path)
            self.files += 1
        except OSError as exc:
            self.errors += 1
            log.error("cannot write the capture %s: %s", path, exc)


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> CaptureStage | None:
    """Only when recording (`mcpwall record` sets settings.extras["record"])."""
    extras = getattr(settings, "extras", None) or {}
    home = getattr(settings, "home", None)
    if not extras.get("record") or home is None:
        return None
    stage = CaptureStage(Path(home) / "sessions")
    if components is not None:
        components.taps.append(stage.tap)  # every message in and out of every session
    return stage


__all__ = ["CaptureStage", "build"]
