"""Relay addresses: `unix:PATH`, `tcp:HOST:PORT` and `vsock:CID:PORT`.

The framed listener has no bearer token: a sandboxed agent must never hold
the gateway's token. Access is controlled by who can reach the socket, so
a Unix socket is created owner-only (0600) and a TCP listener is refused on
anything but a loopback address.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from mcpwall.errors import ConfigError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
#: Read buffer of the socket streams; frames are bounded by the decoder, not by this.
STREAM_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Address:
    kind: str  # "unix", "tcp", "vsock"
    path: str = ""
    host: str = ""
    port: int = 0
    cid: int = 0

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix:{self.path}"
        if self.kind == "tcp":
            host = f"[{self.host}]" if ":" in self.host else self.host
            return f"tcp:{host}:{self.port}"
        return f"vsock:{self.cid}:{self.port}"


def parse_address(text: str) -> Address:
    """Parse a relay address; raises ConfigError with the accepted forms."""
    kind, _, rest = text.partition(":")
    if kind == "unix" and rest:
        return Address("unix", path=rest)
    if kind == "tcp" and rest:
        host, _, port = rest.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if host and port.isdigit() and 0 < int(port) < 65536:
            return Address("tcp", host=host, port=int(port))
    if kind == "vsock" and rest:
        cid, _, port = rest.partition(":")
        if cid.lstrip("-").isdigit() and port.isdigit():
            return Address("vsock", cid=int(cid), port=int(port))
    raise ConfigError(f"bad relay address {text!r}: use unix:PATH, tcp:HOST:PORT or vsock:CID:PORT")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def listen(address: Address, handler: Handler) -> asyncio.Server:
    """Start accepting connections on `address`."""
    if address.kind == "unix":
        path = Path(address.path)
        _clear_stale(path)
        old = os.umask(0o177)  # the socket is born 0600: no window where others can connect
        try:
            server = await asyncio.start_unix_server(handler, path=str(path), limit=STREAM_LIMIT)
        finally:
            os.umask(old)
        return server
    if address.kind == "tcp":
        if not _loopback(address.host):
            raise ConfigError(f"refusing to listen for frames on {address.host}: the framed relay has no token, "
                              "so it binds loopback only (use unix:PATH or vsock:CID:PORT to reach a sandbox)")
        return await asyncio.start_server(handler, address.host, address.port, limit=STREAM_LIMIT)
    if not hasattr(socket, "AF_VSOCK"):
        raise ConfigError("vsock is not available on this operating system")
    sock = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    try:
        sock.bind((address.cid, address.port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {address}: {exc}") from exc
    sock.setblocking(False)
    return await asyncio.start_server(handler, sock=sock, limit=STREAM_LIMIT)


def _clear_stale(path: Path) -> None:
    """Remove a socket file left by a gateway that died; refuse to replace anything else."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise ConfigError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()
        return
    finally:
        probe.close()
    raise ConfigError(f"{path} is in use by another process")


async def connect(address: Address, timeout: float = 10.0) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a connection to a listener (the relay side)."""
    if address.kind == "unix":
        coro = asyncio.open_unix_connection(address.path, limit=STREAM_LIMIT)
    elif address.kind == "tcp":
        coro = asyncio.open_connection(address.host, address.port, limit=STREAM_LIMIT)
    else:
        if not hasattr(socket, "AF_VSOCK"):
            raise ConfigError("vsock is not available on this operating system")
        sock = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (address.cid, address.port)), timeout)
        except BaseException:
            sock.close()
            raise
        coro = asyncio.open_connection(sock=sock, limit=STREAM_LIMIT)
    return await asyncio.wait_for(coro, timeout)


def peer_of(writer: asyncio.StreamWriter) -> str:
    """Who connected: the peer's pid and uid for a Unix socket (SO_PEERCRED), else its address."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return ""
    with contextlib.suppress(OSError, AttributeError):
        if sock.family == socket.AF_UNIX and hasattr(socket, "SO_PEERCRED"):
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid, uid, _gid = struct.unpack("3i", creds)
            return f"unix pid={pid} uid={uid}"
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return ":".join(str(p) for p in peer[:2])
    return str(peer or "")


__all__ = ["Address", "connect", "listen", "parse_address", "peer_of"]
