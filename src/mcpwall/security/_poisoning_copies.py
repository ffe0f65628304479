"""Copies: one tool's description under another name (tool shadowing without a trigger phrase).

A server that wants another tool's calls need not give any order: it lists
a tool that reads exactly like the other one, under a name of its own, and
lets the model choose. The name checks (`_poisoning_names`) see look-alike
names; this sees look-alike descriptions, on the same server or another:
the gateway and `inspect --all` know every server's tools.

A description is compared by its words: made visible (`visible_text`),
case-folded, punctuation and spacing dropped, and each tool's own name (in
any spelling) replaced by a placeholder, so "Use get_weather to ..."
copied as "Use weather_now to ..." still matches. Short, generic
descriptions ("Echo", "Returns the current time") are not compared: many
tools honestly share them (and two real servers for one job share a short
one with its parameters: puppeteer's and executeautomation's "Fill out an
input field"). A copy whose new name's words stand in the copied text
("new_issue" in "Create a new issue ...") is found by the text as written.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mcpwall.security._poisoning_chars import visible_text

#: Fewer words than this is too generic to call a copy.
MIN_WORDS = 8
_WORD = re.compile(r"[^\W_]+|\u2400")
_NAME_SPLIT = re.compile(r"[\s_\-.:/]+|(?<=[a-z0-9])(?=[A-Z])")


def _keys(tool: Mapping[str, Any]) -> set[str]:
    """`copy_key`, and the key of the description as written (its own name kept): a copy whose new
    name's words stand in the copied text ("new_issue" in "Create a new issue ...") reads the same."""
    name = tool.get("name")
    keys = {copy_key(tool), copy_key({**tool, "name": ""}) if isinstance(name, str) and name else None}
    return {k for k in keys if k is not None}


def copy_key(tool: Mapping[str, Any]) -> str | None:
    """A digest of what `tool`'s description says (its own name left out), or None when too short."""
    description, name = tool.get("description"), tool.get("name")
    if not isinstance(description, str) or len(description) < 40:
        return None
    return _key(description, name if isinstance(name, str) else "")


@functools.lru_cache(maxsize=8192)
def _key(description: str, name: str) -> str | None:
    text = visible_text(description).casefold()
    own = [w.casefold() for w in _NAME_SPLIT.split(name) if w]
    if own:
        # the name as the text spells it: "get_weather", "get weather", "getWeather" (case is folded)
        text = re.sub(r"\b" + r"[\W_]*".join(map(re.escape, own)) + r"\b", " \u2400 ", text)
    words = _WORD.findall(text)
    if len(words) < MIN_WORDS:
        return None
    return hashlib.sha256(" ".join(words).encode()).hexdigest()[:32]


class CopyIndex:
    """Copy keys of every server's tools: key -> [(server, name)]."""

    def __init__(self, definitions: Mapping[str, Iterable[Mapping[str, Any]]] | None = None) -> None:
        self.by_key: dict[str, list[tuple[str, str]]] = {}
        for server, tools in (definitions or {}).items():
            for tool in tools:
                name = tool.get("name")
                for key in _keys(tool) if isinstance(name, str) else ():
                    self.by_key.setdefault(key, []).append((server, str(name)))

    def copies_of(self, tool: Mapping[str, Any], server: str) -> list[tuple[str, str]]:
        """Other tools, on any server, whose description is `tool`'s under another name."""
        name = tool.get("name")
        found: dict[tuple[str, str], None] = {}
        for key in _keys(tool) if self.by_key else ():
            found.update((entry, None) for entry in self.by_key.get(key, ()) if entry[1] != name)
        return list(found)


__all__ = ["MIN_WORDS", "CopyIndex", "copy_key"]
