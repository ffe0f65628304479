"""A local webhook receiver: a real HTTP server on loopback that records what it is sent.

Each path can be scripted to answer a sequence of statuses (e.g. 503, 503, 200) before it
settles on 200, so retries can be observed from the receiving side.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from tests.harness import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)
    script: dict[str, list[int]] = field(default_factory=dict)

    def on(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def wait(self, path: str, count: int = 1, timeout: float = 15.0) -> list[Received]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.on(path)) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{path}: expected {count} deliveries, got {self.on(path)}")
            await asyncio.sleep(0.05)
        return self.on(path)

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            event = await receive()
            chunks.append(event.get("body", b""))
            if not event.get("more_body"):
                break
        raw = b"".join(chunks)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.received.append(Received(scope["path"], headers, body, raw))
        plan = self.script.get(scope["path"])
        status = plan.pop(0) if plan else 200
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})


@asynccontextmanager
async def receiver() -> AsyncIterator[Receiver]:
    port = free_port()
    r = Receiver(f"http://127.0.0.1:{port}")
    server = uvicorn.Server(uvicorn.Config(r.app, host="127.0.0.1", port=port, lifespan="off", log_level="warning",
                                           interface="asgi3"))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        yield r
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
