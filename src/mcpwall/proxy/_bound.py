"""A modern call bound to its way through the gateway, as compiled callables.

Every 2026-07-28 call of a client like its last one that passed makes one (`_modern.ModernSessions.took`
hands it to `answer_request`), and every call of a client that can be asked nothing makes the emit
`RefusedOrRelayed`: a compiled class is built in C, where the partials with keywords these replace
parsed their arguments and merged a dict of keywords at each call.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mcpwall.pipeline import Emit, Session
from mcpwall.protocol import Message

if TYPE_CHECKING:
    from mcpwall.proxy._mrtr import Holds


class Plainly:
    """`Holds.plainly` of one first call, bound: what the HTTP frontend hands `answer_request` for a call
    like its client's last one that passed (`_modern`). Every such call makes one: a compiled class is
    built in C, where the partial with a keyword it replaces merged a dict of keywords at every call."""

    __slots__ = ("checked", "holds", "msg", "session", "size")

    def __init__(self, holds: Holds, session: Session, msg: Message, size: int, checked: bool) -> None:
        self.holds = holds
        self.session = session
        self.msg = msg
        self.size = size
        self.checked = checked

    def __call__(self, emit: Emit | None) -> Awaitable[Message | None]:
        return self.holds.plainly(self.session, self.msg, self.size, emit, self.checked)


class Served:
    """`Holds.serve` of one call, bound (as `Plainly`): a call whose client can be asked, or a retry."""

    __slots__ = ("holds", "msg", "session", "size")

    def __init__(self, holds: Holds, session: Session, msg: Message, size: int) -> None:
        self.holds = holds
        self.session = session
        self.msg = msg
        self.size = size

    def __call__(self, emit: Emit | None) -> Awaitable[Message | None]:
        return self.holds.serve(self.session, self.msg, emit, self.size)


class RefusedOrRelayed:
    """`Holds._refused_or_relayed` bound to one call's session and emit: the emit of every call of a
    client that can be asked nothing (built in C, as `Plainly`; a partial parsed its arguments)."""

    __slots__ = ("emit", "holds", "session")

    def __init__(self, holds: Holds, session: Session, emit: Emit | None) -> None:
        self.holds = holds
        self.session = session
        self.emit = emit

    def __call__(self, msg: Message) -> Awaitable[None]:
        return self.holds._refused_or_relayed(self.session, self.emit, msg)


__all__ = ["Plainly", "RefusedOrRelayed", "Served"]
