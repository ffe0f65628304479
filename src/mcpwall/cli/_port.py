"""Is the gateway's address free? Asked before any upstream server is started.

`mcpwall proxy` on a port that another process holds used to start every
upstream (npx downloads, containers, OAuth refreshes) and then end with
uvicorn's raw `[Errno 98] error while attempting to bind`. Binding a test
socket first turns that into one line naming the address and `--port`, with
nothing started. The sockets are set up as asyncio's `create_server`
(uvicorn's) sets up its own: SO_REUSEADDR, IPv6-only for IPv6, every
address the host name resolves to, an address this machine lacks skipped
when another one binds. So a port that uvicorn could bind is never refused; the check cannot stop another
process from taking the port in the instant between it and uvicorn's bind,
which then fails as before.
"""

from __future__ import annotations

import errno
import socket

from mcpwall.errors import MCPWallError


class AddressUnavailable(MCPWallError):
    """The gateway cannot listen on the address it was given."""


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_port(host: str, port: int) -> None:
    """Raise `AddressUnavailable` (one line, exit 1) when `host:port` cannot be bound now.

    Port 0 (let the system choose) is always free.
    """
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise AddressUnavailable(f"cannot listen on {_where(host, port)}: unknown host {host!r} "
                                 f"({exc.strerror}); check --host") from exc
    unavailable: OSError | None = None
    bound = 0
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
                bound += 1
            except OSError as exc:
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise AddressUnavailable(_message(host, port, exc)) from exc
                # asyncio's create_server (uvicorn's) skips such an address too: `localhost` without IPv6
                unavailable = exc
    if not bound and unavailable is not None:
        raise AddressUnavailable(_message(host, port, unavailable)) from unavailable


def _message(host: str, port: int, exc: OSError) -> str:
    where = _where(host, port)
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} is already in use on {host} (another mcpwall gateway, or another program); "
                f"stop it or choose another port with --port")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"cannot listen on {where}: permission denied (ports below 1024 need privileges); use --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: {host} is not an address of this machine; check --host"
    return f"cannot listen on {where}: {exc.strerror or exc}; check --host and --port"


__all__ = ["AddressUnavailable", "check_port"]
