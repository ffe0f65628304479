"""Tool pinning: the definitions a server showed first are the ones it is held to.

The first time the gateway sees a server's tools (and prompts, resources and
resource templates), it pins each one: its name, title, description, input
and output schemas and annotations, hashed, kept in `gateway.state` (the ledger when one
runs, so pins survive a restart) under the namespace "pins". Later lists are
compared with the pins:

- `changed`: a pinned tool comes back with another definition;
- `readded`: a tool that disappeared comes back different (removal does not
  drop its pin, so remove-then-readd cannot launder a change);
- `renamed`: a tool never seen before carries the description of a pinned one,
  or appears as a pinned one disappears with a description alike to it (or
  the same input schema shape and a description somewhat alike): renaming
  must not escape the pin;
- `added`: any other new tool (prompt, resource template) on a server whose
  list was already pinned; a new resource is pinned on sight (resources are
  data that come and go; a copy of a pinned one is still `renamed`).

A change, a re-add or a rename is a rug pull. With `onChange: block` (the
default in enforce mode) the tool is not listed and calls to it are denied
(-32001) until a person runs `mcpwall pin --accept SERVER[/NAME]`; with
`onChange: warn` (the default in audit mode) the gateway logs it and carries
on. An added tool follows `onNew`: `warn` (the default: logged, recorded,
shown by `pin --list` until accepted, usable), `block` (as a change under
`onChange: block`), or `pin` (pinned on first sight, silently). Lists are checked when a
client lists, when a server sends list_changed (the gateway refreshes its
catalog, then calls `Components.catalog_listeners`), on a server restart, and
once when each server first becomes ready.

    stages:
      pins: {onChange: block, onNew: warn}
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from mcpwall.errors import ConfigError
from mcpwall.pipeline import Reject, RequestContext, Stage
from mcpwall.protocol import ErrorCode, Message
from mcpwall.security._poisoning_chars import clean
from mcpwall.security._poisoning_pins import KINDS, PinBook, PinChange, pin_key
from mcpwall.stages._components import Components

#: How long a call's pin check is reused for the same catalog entry.
_RECHECK_S = 0.5
log = logging.getLogger("mcpwall.pins")

_LISTS = {"tools/list": "tool", "prompts/list": "prompt", "resources/list": "resource",
          "resources/templates/list": "template"}
_LIST_KEYS = {"tool": "tools", "prompt": "prompts", "resource": "resources", "template": "resourceTemplates"}
_CALLS = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource",
          "resources/subscribe": "resource"}
_FILTER_KEYS = {"tools": "tool", "prompts": "prompt", "resources": "resource"}


class PinStage(Stage):
    name = "pins"

    def __init__(self, on_change: str | None = None, on_new: str = "warn") -> None:
        #: "block", "warn", or None for the mode's default (block in enforce, warn in audit)
        self.on_change = on_change
        self.on_new = on_new
        self.gateway: Any = None
        #: (server, kind, name) -> (catalog entry, pending record, when): the per-call fast path
        self._checked: dict[tuple[str, str, str], tuple[Any, dict[str, Any] | None, float]] = {}
        self.counts = {"pinned": 0, "changes": 0, "blocked": 0}

    # ------------------------------------------------------------------ wiring

    def bind(self, gateway: Any) -> None:
        self.gateway = gateway

    async def start(self) -> None:
        if self.gateway is not None:
            self.gateway.spawn(self._first_sight())

    async def _first_sight(self) -> None:
        """Pin what each server offers as soon as it is ready, before any client asks."""
        async def one(upstream: Any) -> None:
            if await upstream.wait_ready(self.gateway.options.ready_timeout_s):
                self.check_upstream(upstream)

        await asyncio.gather(*(one(u) for u in list(self.gateway.servers.values())), return_exceptions=True)

    @property
    def book(self) -> PinBook:
        # read through each time: the ledger may replace gateway.state after bind(), and the
        # `pin` command writes to the same store while the gateway runs
        return PinBook(self.gateway.state)

    def blocking(self) -> bool:
        """Whether a change, re-add or rename blocks (onChange, by default the mode's)."""
        if self.on_change is not None:
            return self.on_change == "block"
        return self.gateway is None or self.gateway.policy.current.mode != "audit"

    def blocks(self, change: str) -> bool:
        """Whether a pending `change` blocks: an added tool follows onNew, the rest onChange."""
        return self.on_new == "block" if change == "added" else self.blocking()

    # ------------------------------------------------------------------ checking

    def check_upstream(self, upstream: Any) -> list[PinChange]:
        """Compare a server's whole catalog (every page, fresh) with its pins."""
        changes: list[PinChange] = []
        for kind in ("tool", "prompt", "resource", "template"):
            changes += self._sync(upstream.name, kind, _catalog_items(upstream, kind), full=True)
        return changes

    def _sync(self, server: str, kind: str, items: Iterable[Mapping[str, Any]], *, full: bool) -> list[PinChange]:
        book = self.book
        first = not book.seen(server, kind)
        changes = book.sync(server, kind, list(items), full=full, on_new=self.on_new)
        if changes:
            self._checked.clear()  # a change must show on the very next call, not after _RECHECK_S
        if first:
            self.counts["pinned"] += len(book.records(server, kind))
        for change in changes:
            self.counts["changes"] += 1
            log.warning("[%s] %s: %s %r %s%s; %s until `mcpwall pin --accept %s/%s`", server,
                        "new on a pinned server" if change.change == "added" else "rug pull", kind,
                        change.name, change.change, f" (copy of {change.of!r})" if change.of else "",
                        "blocked" if self.blocks(change.change) else "warning only", server, change.name)
        return changes

    def _pending(self, server: str, kind: str, name: str) -> dict[str, Any] | None:
        record = self.book.get(server, kind, name)
        if record is not None and (record.get("pending") or record.get("hash") is None):
            return record
        return None

    async def on_request(self, ctx: RequestContext) -> Reject | None:
        kind = _CALLS.get(ctx.method)
        if kind is None or ctx.server is None or self.gateway is None:
            return None
        upstream = self.gateway.servers.get(ctx.server)
        if upstream is None:
            return None
        item = _catalog_item(upstream, kind, ctx.target)
        slot = (ctx.server, kind, ctx.target)
        now = time.monotonic()
        memo = self._checked.get(slot)
        if memo is not None and memo[0] is item and now - memo[2] < _RECHECK_S:
            # The same catalog entry, checked a moment ago: its pin record cannot have
            # changed here, and an acceptance by `mcpwall pin` shows within _RECHECK_S.
            record = memo[1]
        else:
            if not self.book.seen(ctx.server, kind):
                # a call before any list reached us: pin the whole catalog, not just this entry
                self._sync(ctx.server, kind, _catalog_items(upstream, kind), full=True)
            elif item is not None:
                # the catalog may be newer than the pins (a list the gateway fetched itself)
                self._sync(ctx.server, kind, [item], full=False)
            record = self._pending(ctx.server, kind, ctx.target)
            if len(self._checked) > 10_000:
                self._checked.clear()
            self._checked[slot] = (item, record, now)
        if record is None:
            return None
        pending = record.get("pending") or {}
        change = pending.get("change", "changed")
        ctx.notes["pins"] = {"pending": pin_key(ctx.server, kind, ctx.target), "change": change}
        reason = (f"{kind} {ctx.server}/{ctx.target} {change} since it was pinned"
                  + (f" (a copy of {pending['of']!r})" if pending.get("of") else "")
                  + f"; a person must run `mcpwall pin --accept {ctx.server}/{ctx.target}`")
        if not self.blocks(change):
            log.warning("warn %s", reason)
            return None
        self.counts["blocked"] += 1
        what = "a new tool on a pinned server" if change == "added" else "rug pull"
        return Reject(ErrorCode.BLOCKED, f"Blocked by mcpwall: {what}: {reason}",
                      {"reasons": [reason], "rule_ids": [f"pins:{change}"], "change": change,
                       "pinned_hash": record.get("hash"), "seen_hash": pending.get("hash")})

    async def on_response(self, ctx: RequestContext, response: Message) -> Message:
        kind = _LISTS.get(ctx.method)
        body = response.get("result")
        if kind is None or not isinstance(body, dict) or self.gateway is None:
            return response
        items = body.get(_LIST_KEYS[kind])
        if not isinstance(items, list):
            return response
        if ctx.session.server is None:
            # aggregated: the gateway just fetched every page of every ready server
            for upstream in self.gateway.servers.values():
                if upstream.state == "ready":
                    self._sync(upstream.name, kind, _catalog_items(upstream, kind), full=True)
        else:
            whole = not ctx.params.get("cursor") and not body.get("nextCursor")
            self._sync(ctx.session.server, kind, [i for i in items if isinstance(i, dict)], full=whole)
        waiting = {k: r for k, r in self.book.all().items() if r.get("pending") or r.get("hash") is None}
        if waiting:
            hidden = [k for k, r in waiting.items() if self.blocks(_change(r))]
            # the list filter sees names after the poisoning stage stripped invisible characters
            hidden += [pin_key(str(r.get("server")), str(r.get("kind")), cleaned) for k, r in waiting.items()
                       if k in hidden and isinstance(r.get("name"), str) and (cleaned := clean(r["name"])) != r["name"]]
            ctx.notes["pins"] = {"pending": list(waiting), "hidden": hidden, "blocked": bool(hidden)}
        return response

    def _visible(self, ctx: RequestContext, key: str, server: str, name: str, item: Any) -> bool:
        kind = _FILTER_KEYS.get(key)
        if kind is None or not (self.blocking() or self.on_new == "block"):
            return True
        noted = ctx.notes.get("pins")
        if isinstance(noted, dict) and isinstance(noted.get("hidden"), list):
            return pin_key(server, kind, name) not in noted["hidden"]
        if ctx.method in _LISTS:
            return True  # on_response compared this list with the pins and found nothing pending
        record = self._pending(server, kind, name)
        return record is None or not self.blocks(_change(record))

    def status(self) -> dict[str, Any]:
        return dict(self.counts)


def _change(record: Mapping[str, Any]) -> str:
    return str((record.get("pending") or {}).get("change") or "changed")


def _catalog_items(upstream: Any, kind: str) -> list[dict[str, Any]]:
    catalog = upstream.catalog
    if kind == "tool":
        return list(catalog.tools.values())
    if kind == "prompt":
        return list(catalog.prompts.values())
    if kind == "template":
        return list(catalog.templates)
    return list(catalog.resources)


def _catalog_item(upstream: Any, kind: str, name: str) -> dict[str, Any] | None:
    if kind == "tool":
        item = upstream.catalog.tools.get(name)
    elif kind == "prompt":
        item = upstream.catalog.prompts.get(name)
    else:
        item = next((r for r in upstream.catalog.resources if r.get("uri") == name), None)
    return item if isinstance(item, dict) else None


def build(config: Mapping[str, Any], settings: Any = None,
          components: Components | None = None) -> PinStage | None:
    """`stages: {pins: {onChange: warn|block, onNew: pin|warn|block}}`; on unless `enabled: false`."""
    section = (config.get("stages") or {}).get("pins")
    if section is False or (isinstance(section, dict) and section.get("enabled") is False):
        return None
    section = section if isinstance(section, dict) else {}
    unknown = set(section) - {"enabled", "onChange", "onNew"}
    if unknown:
        raise ConfigError(f"stages.pins: unknown key(s) {', '.join(sorted(unknown))}")
    on_change = section.get("onChange")
    if on_change not in (None, "warn", "block"):
        raise ConfigError(f"stages.pins.onChange: {on_change!r} is not one of warn, block")
    on_new = section.get("onNew", "warn")
    if on_new not in ("pin", "warn", "block"):
        raise ConfigError(f"stages.pins.onNew: {on_new!r} is not one of pin, warn, block")
    stage = PinStage(on_change, on_new)
    if components is not None:
        components.catalog_listeners.append(stage.check_upstream)  # a changed catalog is checked at once
        components.tool_filters.append(stage._visible)  # a held change is not listed
    return stage


__all__ = ["KINDS", "PinStage", "build"]
