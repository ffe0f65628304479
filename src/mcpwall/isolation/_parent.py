"""The gateway's side of isolation: upstream connections live in a separate process.

With isolation on, every `UpstreamServer` gets an `IsolatedTransport`: the
same Transport seam, but `connect`, `send` and `close` become msgpack frames
to one aggregator process (`_child.py`), and what the servers send comes
back the same way. The gateway keeps everything that must not be exposed to
third-party code (policy, ledger, token, the agents' sessions); a server that
compromises the aggregator finds none of it there.

The aggregator starts with the first connection and is started again if it
dies (each upstream then fails over like after any exit: pending requests
fail at once, restarts with backoff). Its environment is the allow-listed
one the stdio transport gives servers, its directory is `/`, and it inherits
no descriptor but its pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from mcpwall.isolation._wire import WireError, pack, read_frame
from mcpwall.policy import ServerSpec
from mcpwall.protocol import Message
from mcpwall.transports import (
    OnClosed,
    OnMessage,
    TransportClosed,
    TransportError,
    default_environment,
    die_with_parent,
)
from mcpwall.transports._lines import log_lines

if TYPE_CHECKING:
    from mcpwall.proxy import Gateway

log = logging.getLogger("mcpwall.isolation")

OPEN_TIMEOUT_S = 120.0
_STOP_GRACE_S = 5.0


class Aggregator:
    """The aggregator process and the demultiplexing of its frames."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self.proc: asyncio.subprocess.Process | None = None
        self.connections: dict[int, IsolatedTransport] = {}
        self.starts = 0
        self._ids = itertools.count(1)
        self._start_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    async def ensure_started(self) -> None:
        async with self._start_lock:
            if self.proc is not None and self.proc.returncode is None:
                return
            if self._stopping:
                raise TransportError("the gateway is stopping")
            env = default_environment()
            self.proc = await asyncio.create_subprocess_exec(
                self.python, "-m", "mcpwall.isolation", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd="/",
                start_new_session=True, preexec_fn=die_with_parent(), limit=1024 * 1024)
            self.starts += 1
            log.info("aggregator process started (pid %d)", self.proc.pid)
            assert self.proc.stdout is not None
            assert self.proc.stderr is not None
            self._tasks = [asyncio.create_task(self._read(self.proc.stdout, self.proc)),
                           asyncio.create_task(log_lines(self.proc.stderr, log, "aggregator"))]

    def next_cid(self) -> int:
        return next(self._ids)

    def write(self, obj: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None or proc.stdin is None or proc.stdin.is_closing():
            raise TransportClosed("the aggregator process is not running")
        proc.stdin.write(pack(obj))

    async def _read(self, stdout: asyncio.StreamReader, proc: asyncio.subprocess.Process) -> None:
        reason = "the aggregator process exited"
        try:
            while True:
                frame = await read_frame(stdout)
                if frame is None:
                    break
                conn = self.connections.get(frame.get("cid", -1))
                if conn is not None:
                    conn._frame(frame)
        except WireError as exc:
            reason = f"the aggregator broke the framing: {exc}"
            log.error("%s", reason)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        except Exception as exc:  # the reader must not die silently
            reason = f"aggregator reader failed: {exc}"
            log.exception("aggregator reader failed")
        for conn in list(self.connections.values()):
            conn._lost(reason)

    async def stop(self) -> None:
        self._stopping = True
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), _STOP_GRACE_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 2.0)

    def status(self) -> dict[str, Any]:
        return {"pid": self.pid, "starts": self.starts, "connections": len(self.connections)}


class IsolatedTransport:
    """A Transport whose connection lives in the aggregator process."""

    def __init__(self, aggregator: Aggregator, name: str, spec: ServerSpec) -> None:
        self.aggregator = aggregator
        self.name = name
        self.spec = spec
        target = spec.url or " ".join([spec.command or "", *spec.args])
        self.description = f"isolated: {target}"
        self.cid = 0
        self._opened: asyncio.Future[str] | None = None
        self._on_message: OnMessage | None = None
        self._on_closed: OnClosed | None = None
        self._closed = False

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        await self.aggregator.ensure_started()
        self._on_message, self._on_closed = on_message, on_closed
        self.cid = self.aggregator.next_cid()
        self._opened = asyncio.get_running_loop().create_future()
        self.aggregator.connections[self.cid] = self
        try:
            self.aggregator.write({"op": "open", "cid": self.cid, "server": self.name,
                                   "spec": self.spec.model_dump(mode="json")})
            description = await asyncio.wait_for(self._opened, OPEN_TIMEOUT_S)
        except TimeoutError:
            self._forget()
            raise TransportError(f"{self.name}: the aggregator did not open the connection in time") from None
        except TransportError:
            self._forget()
            raise
        self.description = f"isolated {description}"

    async def send(self, message: Message) -> None:
        if self._closed:
            raise TransportClosed(f"{self.name}: connection closed")
        self.aggregator.write({"op": "send", "cid": self.cid, "msg": message})

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(TransportError):
            self.aggregator.write({"op": "close", "cid": self.cid})
        self._forget()

    def _forget(self) -> None:
        self.aggregator.connections.pop(self.cid, None)

    def _frame(self, frame: dict[str, Any]) -> None:
        op = frame.get("op")
        if op == "msg":
            msg = frame.get("msg")
            if isinstance(msg, dict) and self._on_message is not None:
                related = frame.get("related")
                self._on_message(msg, related if isinstance(related, int | str) else None)
        elif op == "opened":
            if self._opened is not None and not self._opened.done():
                self._opened.set_result(str(frame.get("description", "")))
        elif op == "failed":
            if self._opened is not None and not self._opened.done():
                self._opened.set_exception(TransportError(f"{self.name}: {frame.get('error')}"))
        elif op == "closed":
            self._lost(str(frame.get("reason", "closed")))

    def _lost(self, reason: str) -> None:
        if self._opened is not None and not self._opened.done():
            self._opened.set_exception(TransportError(f"{self.name}: {reason}"))
            self._forget()
            return
        if self._closed:
            return
        self._closed = True
        self._forget()
        if self._on_closed is not None:
            self._on_closed(TransportError(reason))


class IsolationService:
    """Puts every upstream of the gateway behind the aggregator; stops it with the gateway (a service)."""

    name = "isolation"

    def __init__(self, gateway: Gateway) -> None:
        from mcpwall.proxy import UpstreamServer

        self.aggregator = aggregator = Aggregator()
        for name, upstream in list(gateway.servers.items()):
            spec = upstream.spec

            def factory(name: str = name, spec: ServerSpec = spec) -> IsolatedTransport:
                return IsolatedTransport(aggregator, name, spec)

            gateway.servers[name] = UpstreamServer(name, spec, gateway, transport_factory=factory)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await self.aggregator.stop()

    def status(self) -> dict[str, Any]:
        return self.aggregator.status()


def isolation_service(settings: Any, gateway: Gateway) -> IsolationService | None:
    """A `mcpwall.proxy.SERVICES` entry: isolates upstreams when `extras["isolate"]` is true."""
    extras = getattr(settings, "extras", None) or {}
    return IsolationService(gateway) if extras.get("isolate") else None


__all__ = ["OPEN_TIMEOUT_S", "Aggregator", "IsolatedTransport", "IsolationService", "isolation_service"]
