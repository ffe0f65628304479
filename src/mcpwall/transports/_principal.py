"""Whose request a transport is sending: the seam between the gateway and upstream OAuth.

The gateway forwards a client's request inside `acting_for(session.principal)`; an HTTP transport
reads `current_principal()` (its tasks inherit the context) to pick that principal's upstream
grant and session. The grants themselves are `mcpwall.oauth`'s, which sits above the transports:
it registers `set_auth_factory` so that `transport_for` can give a remote server its auth flow
without the transports importing it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

_acting: contextvars.ContextVar[str | None] = contextvars.ContextVar("mcpwall_upstream_principal", default=None)
_factory: list[Callable[[str], Any]] = []


class acting_for:  # lower case: read as a function, `with acting_for(principal):`
    """Requests sent upstream inside this block are made for `principal` (a Session's). A class,
    not a contextlib generator: every forwarded request enters it, and this costs a third."""

    __slots__ = ("_principal", "_token")

    def __init__(self, principal: str) -> None:
        self._principal = principal

    def __enter__(self) -> None:
        self._token = _acting.set(self._principal)

    def __exit__(self, *exc: object) -> None:
        _acting.reset(self._token)


def current_principal() -> str | None:
    """The principal of the request being sent, None for the gateway's own requests."""
    return _acting.get()


def login_command(server: str, principal: str | None) -> str:
    return f"mcpwall login {server}" + (f" --principal {principal}" if principal else "")


def login_required(server: str, principal: str | None, detail: str = "") -> str:
    """The error text of an upstream that needs a login the gateway has not had."""
    who = f" for principal {principal!r}" if principal else ""
    return (f"upstream {server!r} requires authorization{who}: run `{login_command(server, principal)}`"
            + (f" ({detail})" if detail else ""))


def set_auth_factory(factory: Callable[[str], Any]) -> None:
    """How a remote server's transport gets its httpx auth flow (by server name)."""
    _factory[:] = [factory]


def auth_for(server: str) -> Any:
    """The auth flow for `server`'s transport, None when no factory is registered (outside a gateway)."""
    return _factory[0](server) if _factory else None


__all__ = ["acting_for", "auth_for", "current_principal", "login_command", "login_required", "set_auth_factory"]
