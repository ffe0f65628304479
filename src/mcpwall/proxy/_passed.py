"""What a 2026-07-28 client's last tools/call showed at the door, so that the next one like it is
not taken apart again.

A modern client repeats itself: the same endpoint, token and agent, the same MCP headers, the same
`_meta` envelope, often the same tool. The HTTP frontend checks every request's headers against its
body (`_modern.mismatch`), reads its envelope (`protocol.modern.envelope`) and finds its session
(`ModernSessions.session`); for a tools/call identical in all that those read to the last one that
passed for that client, each answer is the same again, so `Passed` gives back the envelope and the
session found then. Identical means: the same endpoint, principal and X-Agent-Id; no header name
sent twice; the same `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` values and the same tool
name in the body; a `_meta` equal to a copy of the one that passed; the tool's catalog entry still
the very one it was, so that it still designates no `x-mcp-header` (a call of a tool that designates
one is never remembered: its `Mcp-Param-*` headers are checked every time); and the session still
open. Anything else takes the full checks. One entry per client, at most `_KEEP` clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpwall.pipeline import Session
from mcpwall.protocol.modern import Envelope
from mcpwall.proxy._mrtr import can_be_asked

if TYPE_CHECKING:
    from mcpwall.proxy._gateway import Gateway

#: clients remembered at once (then forgotten all together: each costs its next call the full checks)
_KEEP = 1024

#: (endpoint, principal, X-Agent-Id header)
Key = tuple[str | None, str, str | None]
#: MCP-Protocol-Version, Mcp-Method and Mcp-Name as sent, and the body's tool name
Signature = tuple[str | None, str | None, str | None, str]


class _Shape:
    """What one call that passed showed (a plain class: compiled, the door reads its fields in C)."""

    __slots__ = ("askable", "entry", "env", "meta", "owner", "session", "sig", "tool", "upstream")

    def __init__(self, sig: Signature, meta: dict[str, Any], env: Envelope, session: Session, owner: str,
                 upstream: Any, tool: str, entry: Any, askable: bool) -> None:
        self.sig = sig
        self.meta = meta
        self.env = env
        self.session = session
        #: the server's name, the server, the tool's name there and its catalog entry then
        self.owner = owner
        self.upstream = upstream
        self.tool = tool
        self.entry = entry
        #: whether the `_meta` declares a capability a held call's questions need (`_mrtr.can_be_asked`):
        #: when not, a first call goes to `Holds.plainly` without `Holds.serve`'s look
        self.askable = askable


class Passed:
    """Each modern client's last tools/call that passed the door checks (`_modern.ModernSessions`)."""

    def __init__(self, gateway: Gateway) -> None:
        #: the gateway's servers by name (its own dict, read at a fixed offset: the gateway is a Python object)
        self._servers: dict[str, Any] = gateway.servers
        self._by: dict[Key, _Shape] = {}

    def same(self, key: Key, sig: Signature, meta: dict[str, Any]) -> _Shape | None:
        """The last call of client `key` that passed, when this one shows the same (see the module
        docstring; the caller has seen that no header name came twice), else None."""
        shape = self._by.get(key)
        if shape is None or shape.sig != sig or shape.meta != meta or shape.session.closed:
            return None
        tools: dict[str, Any] = shape.upstream.catalog.tools  # (typed: a dict's own `get`, in C)
        if tools.get(shape.tool) is not shape.entry or self._servers.get(shape.owner) is not shape.upstream:
            return None
        return shape

    def remember(self, key: Key, sig: Signature, meta: dict[str, Any],
                 env: Envelope, session: Session, found: tuple[str, str, Any, Any, Any] | None) -> None:
        """Keep a call that passed every check; `found` is what `ModernSessions._designated` found for
        its tool: (server, tool, the server, its entry, the schema when it designates a header)."""
        if found is None or found[4] is not None:  # an unknown tool, or one whose headers are checked each time
            self._by.pop(key, None)
            return
        if len(self._by) >= _KEEP:
            self._by.clear()
        owner, tool, upstream, entry, _ = found
        # a copy (two levels: the capabilities and clientInfo objects too), so that what is compared next
        # time is what was checked, whatever later holds the request's own
        kept = {k: dict(v) if type(v) is dict else v for k, v in meta.items()}
        self._by[key] = _Shape(sig, kept, env, session, owner, upstream, tool, entry, can_be_asked(kept))


__all__ = ["Key", "Passed", "Signature"]
