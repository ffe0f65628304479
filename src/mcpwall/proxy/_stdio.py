"""The stdio frontend: one session over this process's stdin/stdout.

Used by `mcpwall proxy --stdio` (all servers aggregated) and `mcpwall wrap`
(one server, names unchanged). stdout carries only protocol messages; logs
go to stderr. Requests are served concurrently; writes are serialised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import orjson

from mcpwall.pipeline import Session
from mcpwall.protocol import Message, ProtocolError, parse
from mcpwall.proxy._gateway import Gateway
from mcpwall.transports._lines import skip_line, stdin_is_file, stdio_streams

#: How long calls in flight may still finish once the client has closed stdin.
SHUTDOWN_GRACE_S = 1.0

log = logging.getLogger("mcpwall.stdio")


class StdioFrontend:
    def __init__(self, gateway: Gateway, server: str | None = None, *, agent: str = "",
                 process_name: str = "") -> None:
        self.gateway = gateway
        self.server = server
        self.agent = agent
        self.process_name = process_name
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._writer: asyncio.StreamWriter | None = None

    async def _write(self, msg: Message) -> None:
        data = orjson.dumps(msg) + b"\n"
        async with self._lock:
            assert self._writer is not None
            self._writer.write(data)
            await self._writer.drain()

    async def serve(self, reader: asyncio.StreamReader | None = None,
                    writer: asyncio.StreamWriter | None = None) -> None:
        """Serve until stdin closes; then shut the gateway down."""
        scripted = False
        if reader is None or writer is None:
            reader, writer = await stdio_streams()
            scripted = stdin_is_file()
        self._writer = writer
        session = self.gateway.open_session("stdio", self.server, agent=self.agent, principal=self.agent,
                                            process_name=self.process_name or "", peer="stdio")
        session.send = self._write
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    if exc.partial.strip():
                        await self._one(session, exc.partial)
                    break
                except asyncio.LimitOverrunError:
                    # Answered with the request's id when its first or last bytes tell it, so
                    # the client is not left waiting for an answer that will never come.
                    await self._write(await self.gateway.refused_oversized(*await skip_line(reader),
                                                                           session=session))
                    continue
                if line.strip():
                    await self._one(session, line)
        finally:
            await self._settle_inflight(None if scripted else SHUTDOWN_GRACE_S)
            self.gateway.close_session(session)

    async def _settle_inflight(self, grace: float | None) -> None:
        """At the end of input (or a signal): give calls in flight a short grace, together, then
        cancel the rest, so each still gets its ledger row (`cancelled`) before the process exits.
        The official SDK's client SIGKILLs a server 4 s after closing its stdin. Requests read
        from a file (`grace` None) are all answered, each within its own timeout."""
        self.gateway.traffic.listen.close_all()  # listen streams end at once, with their graceful close
        tasks = list(self._tasks)
        if not tasks:
            return
        interrupted = False
        try:
            _, late = await asyncio.wait(tasks, timeout=grace)
        except asyncio.CancelledError:
            interrupted, late = True, {t for t in tasks if not t.done()}
        for task in late:
            task.cancel()
        if late:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(late, timeout=1.0)
        if interrupted:
            raise asyncio.CancelledError  # after the calls were settled, the cancellation goes on

    async def _one(self, session: Session, raw: bytes) -> None:
        try:
            msg = parse(raw)
        except ProtocolError as exc:
            await self.gateway.refused_raw(raw, exc, session=session)  # a batch of calls: each gets its row
            await self._write(exc.to_message())
            return
        if "method" in msg and "id" in msg:
            task = asyncio.create_task(self._request(session, msg, len(raw)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        reply = await self.gateway.handle(session, msg)
        if reply is not None:
            await self._write(reply)

    async def _request(self, session: Session, msg: Message, size: int) -> None:
        try:
            mrtr = self.gateway.traffic.mrtr
            if mrtr.applies(msg):  # a modern client's call that may take input rounds (_mrtr.py)
                response = await mrtr.serve(session, msg, None, size)
            else:
                response = await self.gateway.handle_request(session, msg, None, bytes_in=size)
        except asyncio.CancelledError:
            return
        if response is not None:
            await self._write(response)


__all__ = ["StdioFrontend"]
