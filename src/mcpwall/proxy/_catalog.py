"""What an upstream offers: its tools, resources, templates and prompts, every page of each list."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcpwall.proxy._requests import UpstreamError

LIST_PAGES = 50

#: Sends one request to the upstream outside any client's session: (method, params, timeout) -> result.
Call = Callable[[str, dict[str, Any], float], Awaitable[dict[str, Any]]]


@dataclass
class Catalog:
    """What the upstream offers, as of its last list answers.

    An entry is replaced by the object a newer list answer brings, never changed in place:
    stages key what they computed from an entry by its identity (the poisoning stage's digest)."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)


async def list_pages(call: Call, method: str, key: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every page of one list (at most LIST_PAGES), the items under `key`."""
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(LIST_PAGES):
        result = await call(method, {"cursor": cursor} if cursor else {}, timeout)
        page = result.get(key)
        if isinstance(page, list):
            items += [i for i in page if isinstance(i, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items


async def fetch_catalog(call: Call, caps: dict[str, Any]) -> Catalog:
    """The tools, resources, templates and prompts a server with capabilities `caps` offers."""
    catalog = Catalog()
    if "tools" in caps:
        catalog.tools = {t["name"]: t for t in await list_pages(call, "tools/list", "tools")
                         if isinstance(t.get("name"), str)}
    if "resources" in caps:
        catalog.resources = await list_pages(call, "resources/list", "resources")
        with contextlib.suppress(UpstreamError):
            catalog.templates = await list_pages(call, "resources/templates/list", "resourceTemplates")
    if "prompts" in caps:
        catalog.prompts = {p["name"]: p for p in await list_pages(call, "prompts/list", "prompts")
                           if isinstance(p.get("name"), str)}
    return catalog


__all__ = ["LIST_PAGES", "Catalog", "fetch_catalog", "list_pages"]
