"""Spawn a stdio MCP server and exchange newline-delimited JSON with it.

- Only an allow-listed environment is passed (as the SDK's stdio client does),
  plus the server's own `env` from the policy.
- stderr goes to the gateway's log, one line at a time, never into the protocol.
- Lines that are not JSON (a server printing banners to stdout) are logged and
  skipped; a line over the size bound is discarded without buffering it whole.
- Shutdown: close stdin, wait a grace period, SIGTERM the process group, wait,
  then SIGKILL it, so `npx` wrappers and their children all go.
- A gateway that dies without that shutdown (SIGKILL, the OOM killer, a crash)
  takes its servers with it on Linux: each is started with the parent-death
  signal set to SIGKILL (`prctl(PR_SET_PDEATHSIG)`, what bubblewrap's
  `--die-with-parent` does). Each runs in a session of its own, so nothing else
  would tell it, and a server that does not end at end of input (the reference
  server-everything keeps its timers running) went on with the user's
  privileges and no one in front of it. The signal reaches the process the
  gateway started; what a wrapper it started (`npx`, `uvx`) runs in turn is
  told by the end of its input only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence

import orjson

from mcpwall.protocol import (
    MAX_MESSAGE_BYTES,
    ErrorCode,
    Message,
    answer_id,
    loads_from_server,
    unreadable_answer,
)
from mcpwall.transports._lines import log_lines, skip_line
from mcpwall.transports.base import OnClosed, OnMessage, TransportClosed, TransportError

log = logging.getLogger("mcpwall.upstream")

#: Environment variables passed to every stdio server (the SDK's list, plus locale and temp dir).
DEFAULT_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
                    "XDG_RUNTIME_DIR")
_GRACE_SECONDS = 2.0


#: prctl(2)'s option: the signal a process gets when the thread that started it ends
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """What a child runs before its program (`preexec_fn`): SIGKILL when this process ends; None where
    there is no prctl (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the gateway ended before the signal was set: it would never come
            os._exit(1)

    return preexec


def default_environment() -> dict[str, str]:
    env = {}
    for key in DEFAULT_ENV_KEYS:
        value = os.environ.get(key)
        if value is not None and not value.startswith("()"):  # skip exported shell functions
            env[key] = value
    return env


class StdioTransport:
    """A child process speaking MCP over its stdin/stdout."""

    def __init__(self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 cwd: str | None = None, name: str = "", wrapper: Sequence[str] = ()) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self.name = name
        #: A command prefix (e.g. bubblewrap) that confines the server.
        self.wrapper = list(wrapper)
        self.description = "stdio: " + " ".join([command, *self.args])
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._on_closed: OnClosed | None = None
        self.pid: int | None = None

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        env = {**default_environment(), **self.env}
        argv = [*self.wrapper, self.command, *self.args]
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env, cwd=self.cwd, start_new_session=True,
                preexec_fn=die_with_parent(), limit=MAX_MESSAGE_BYTES + 1024)
        except (OSError, ValueError) as exc:
            raise TransportError(f"cannot start {argv[0]!r}: {exc}") from exc
        self.pid = self._proc.pid
        self._on_closed = on_closed
        assert self._proc.stdout is not None
        assert self._proc.stderr is not None
        self._tasks = [asyncio.create_task(self._read(self._proc.stdout, on_message)),
                       asyncio.create_task(log_lines(self._proc.stderr, log, self.name))]

    async def _read(self, stdout: asyncio.StreamReader, on_message: OnMessage) -> None:
        reason: BaseException | None = None
        try:
            while True:
                try:
                    line = await stdout.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    if exc.partial.strip():
                        self._deliver(exc.partial, on_message)
                    break
                except asyncio.LimitOverrunError:
                    await self._discard_long_line(stdout, on_message)
                    continue
                self._deliver(line, on_message)
        except Exception as exc:  # the reader must never die silently
            reason = exc
        finally:
            code = await self._wait_exit()
            if reason is None and not self._closed:
                reason = TransportError(f"server process exited (code {code})")
            if self._on_closed is not None and not self._closed:
                self._on_closed(reason)

    async def _discard_long_line(self, stdout: asyncio.StreamReader, on_message: OnMessage) -> None:
        """Skip a message over the size bound; if it was an answer, its caller gets -32600 now
        instead of waiting for its timeout."""
        head, tail = await skip_line(stdout)
        rid = answer_id(head, tail)
        log.warning("[%s] discarded a stdout line over %d bytes%s", self.name, MAX_MESSAGE_BYTES,
                    "" if rid is None else f" (the answer to request {rid!r})")
        if rid is not None:
            try:
                on_message({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": int(ErrorCode.INVALID_REQUEST),
                    "message": f"the server's answer exceeds the {MAX_MESSAGE_BYTES} byte limit"}}, None)
            except Exception:
                log.exception("[%s] error handling an oversized answer", self.name)

    def _deliver(self, line: bytes, on_message: OnMessage) -> None:
        line = line.strip()
        if not line:
            return
        try:
            msg = loads_from_server(line)
        except orjson.JSONDecodeError as exc:
            answer = unreadable_answer(line, exc, self.name)
            log.warning("[%s] ignored non-JSON stdout line%s: %s", self.name,
                        "" if answer is None else f" (the answer to request {answer['id']!r})",
                        line[:200].decode("utf-8", "replace"))
            if answer is not None:
                try:
                    on_message(answer, None)
                except Exception:
                    log.exception("[%s] error handling an unreadable answer", self.name)
            return
        if not isinstance(msg, dict):
            log.warning("[%s] ignored non-object JSON on stdout", self.name)
            return
        try:
            on_message(msg, None)
        except Exception:
            log.exception("[%s] error handling an upstream message", self.name)

    async def _wait_exit(self) -> int | None:
        """The exit code once stdout has closed; a process that lingers is reported as None."""
        if self._proc is None:
            return None
        with contextlib.suppress(Exception):
            return await asyncio.wait_for(self._proc.wait(), _GRACE_SECONDS)
        return None

    async def send(self, message: Message) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or self._closed or proc.returncode is not None:
            raise TransportClosed(f"{self.name}: server process is not running")
        try:
            proc.stdin.write(orjson.dumps(message) + b"\n")
            if proc.stdin.transport.get_write_buffer_size() > 256 * 1024:
                await proc.stdin.drain()
        except (ConnectionError, RuntimeError, AttributeError) as exc:
            raise TransportClosed(f"{self.name}: cannot write to server: {exc}") from exc

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None and proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), _GRACE_SECONDS)
            except TimeoutError:
                self._signal_group(signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), _GRACE_SECONDS)
                except TimeoutError:
                    self._signal_group(signal.SIGKILL)
                    with contextlib.suppress(Exception):
                        await proc.wait()
        # The server is gone (it may have exited on its own, in the grace period or before);
        # make sure no child it left behind in its process group survives it.
        self._signal_group(signal.SIGKILL)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _signal_group(self, sig: int) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


__all__ = ["DEFAULT_ENV_KEYS", "StdioTransport", "default_environment", "die_with_parent"]
