"""The floor for bench/proxy_overhead.py: a relay with no checks at all.

uvicorn (httptools, uvloop) and orjson in front of one stdio MCP server: each
POST body is a JSON-RPC request, sent to the server with a fresh id, and the
server's answer goes back with the client's id. No auth, no session, no
policy, no timeouts: what any Python relay on this machine costs before it
checks anything (issue 3 puts it at 0.15-0.25 ms of CPU a call).

    python bench/bare_relay.py PORT COMMAND [ARG...]
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from typing import Any

import orjson
import uvicorn

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bare", "version": "1"}}}


class Relay:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.ids = itertools.count(1)
        self.stdin: asyncio.StreamWriter | None = None

    async def start(self) -> None:
        proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=1 << 24)
        self.stdin = proc.stdin
        self.reader = asyncio.get_running_loop().create_task(self._read(proc.stdout))
        await self.call(dict(INIT))
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _write(self, msg: dict[str, Any]) -> None:
        if self.stdin is not None:
            self.stdin.write(orjson.dumps(msg) + b"\n")

    async def _read(self, stdout: asyncio.StreamReader | None) -> None:
        while stdout is not None and (line := await stdout.readline()):
            msg = orjson.loads(line)
            future = self.pending.pop(msg.get("id"), None)
            if future is not None and not future.done():
                future.set_result(msg)

    async def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        rid, theirs = next(self.ids), msg.get("id")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        self._write({**msg, "id": rid})
        answer = await future
        answer["id"] = theirs
        return answer

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        out = orjson.dumps(await self.call(orjson.loads(body)))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})


def main() -> None:
    port, argv = int(sys.argv[1]), sys.argv[2:]
    uvicorn.run(Relay(argv), host="127.0.0.1", port=port, log_level="warning", loop="uvloop", http="httptools",
                access_log=False, lifespan="on")


if __name__ == "__main__":
    main()
