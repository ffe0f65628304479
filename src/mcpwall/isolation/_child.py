"""The aggregator process: holds the upstream connections, and nothing else.

Started by the gateway as `python -m mcpwall.isolation` with an allow-listed
environment, `/` as its directory and no inherited descriptors: it never
sees the policy file, the ledger, the gateway's token or the home directory.
It learns each server's spec when the gateway opens a connection, runs the
same transports the gateway would (stdio, HTTP, SSE; bubblewrap for
sandboxed servers) and relays messages both ways. It exits when its stdin
closes, closing every server first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import Any

from mcpwall.isolation._wire import WireError, pack, read_frame
from mcpwall.policy import ServerSpec
from mcpwall.protocol import Message, RequestId
from mcpwall.transports import Transport, TransportError, transport_for

log = logging.getLogger("mcpwall.aggregator")


class AggregatorChild:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.transports: dict[int, Transport] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def emit(self, obj: dict[str, Any]) -> None:
        """Queue one frame; a write of a whole frame never interleaves with another, so order is kept."""
        self.writer.write(pack(obj))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def serve(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                frame = await read_frame(reader)
                if frame is None:
                    return
                await self.handle(frame)
        except WireError as exc:
            log.error("aggregator: the gateway broke the framing: %s", exc)
        finally:
            await asyncio.gather(*(t.close() for t in self.transports.values()), return_exceptions=True)
            self.transports.clear()

    async def handle(self, frame: dict[str, Any]) -> None:
        op, cid = frame.get("op"), frame.get("cid")
        if not isinstance(cid, int):
            log.error("aggregator: frame without a connection id: %s", op)
            return
        if op == "open":
            self._spawn(self._open(cid, str(frame.get("server", "")), frame.get("spec")))
        elif op == "send":
            transport = self.transports.get(cid)
            msg = frame.get("msg")
            if transport is None or not isinstance(msg, dict):
                self.emit({"op": "closed", "cid": cid, "reason": "no such connection"})
                return
            try:
                await transport.send(msg)
            except TransportError as exc:
                self.emit({"op": "closed", "cid": cid, "reason": str(exc)})
        elif op == "close":
            transport = self.transports.pop(cid, None)
            if transport is not None:
                self._spawn(transport.close())

    async def _open(self, cid: int, name: str, spec_data: Any) -> None:
        try:
            spec = ServerSpec.model_validate(spec_data)
            transport = transport_for(name, spec)

            def on_message(msg: Message, related: RequestId | None) -> None:
                self.emit({"op": "msg", "cid": cid, "msg": msg, "related": related})

            def on_closed(exc: BaseException | None) -> None:
                self.transports.pop(cid, None)
                self.emit({"op": "closed", "cid": cid, "reason": str(exc) if exc else "closed"})

            await transport.connect(on_message, on_closed)
        except Exception as exc:  # every failure goes back to the gateway as this connection's error
            self.emit({"op": "failed", "cid": cid, "error": f"{exc.__class__.__name__}: {exc}"})
            return
        self.transports[cid] = transport
        self.emit({"op": "opened", "cid": cid, "description": transport.description})


async def _pipes() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def amain() -> None:
    reader, writer = await _pipes()
    # stdout is the frame channel: nothing else may print there.
    sys.stdout = sys.stderr
    await AggregatorChild(writer).serve(reader)
    with contextlib.suppress(Exception):
        writer.close()


def main() -> None:
    logging.basicConfig(level=os.environ.get("MCPWALL_AGGREGATOR_LOG", "INFO"), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        import uvloop

        uvloop.run(amain())
    except ImportError:
        asyncio.run(amain())
    except KeyboardInterrupt:
        pass


__all__ = ["AggregatorChild", "amain", "main"]
