"""Normalising argument values before rules see them.

An attacker controls argument text, so a rule written for `/etc` or for a host
must also see through the spellings that reach the same file or host. For each
string we compute:

- **variants**: every spelling we can derive (NUL-truncated, percent-decoded up
  to three times, `file:` URL to path, `~`/`$HOME` expanded, `.`/`..`/`//`
  collapsed, Windows paths normalised, and URLs as both the WHATWG parser
  (Node) and `urllib` (httpx) read them, with hosts IDNA-mapped, lower-cased,
  without userinfo, trailing dots and default ports, and numeric IP forms such
  as `0x7f.1` or `2130706433` turned into dotted quads: `_url.py`,
  `_host.py`). Rules that restrict (deny, ask, warn, redact, rewrite) match
  if *any* variant matches.
- **canonical**: the single most-resolved spelling (decoded, collapsed,
  symlinks resolved by the caller). Rules that permit (allow) and
  `argConstraints` look only at this one, so `/workspace/../etc/shadow` can
  never satisfy an allow rule written for `/workspace/`. A URL whose host the
  two parsers disagree on keeps its raw text as the canonical spelling.

Everything here is pure; the symlink step needs the file system and lives in
`_facts.py`. docs/POLICY.md lists what is normalised.
"""

from __future__ import annotations

import ntpath
import re
from functools import lru_cache
from urllib.parse import unquote

from mcpwall.policy._host import canonical_host, canonical_ip
from mcpwall.policy._url import collapse_posix, file_url_path, url_forms

_WIN_RE = re.compile(r"^(?:[a-zA-Z]:[\\/]|\\\\)")


def _decode_all(value: str) -> list[str]:
    out: list[str] = []
    current = value
    for _ in range(3):
        if "%" not in current:
            break
        decoded = unquote(current)
        if decoded == current:
            break
        out.append(decoded)
        current = decoded
    return out


def _expand_home(value: str, home: str | None) -> str | None:
    if not home:
        return None
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    for var in ("$HOME", "${HOME}"):
        if value == var or value.startswith(var + "/"):
            return home + value[len(var):]
    return None


def _looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.startswith(("~", "."))


#: A value without any of these characters has exactly one spelling.
_SPECIAL = re.compile(r"[/\\%~$:.\x00]")


def forms(value: str, home: str | None = None) -> tuple[tuple[str, ...], str]:
    """All spellings of `value` (raw first, no duplicates) and its canonical one."""
    if _SPECIAL.search(value) is None:
        return (value,), value
    return _forms(value, home)


@lru_cache(maxsize=32768)
def _forms(value: str, home: str | None) -> tuple[tuple[str, ...], str]:
    seen: dict[str, None] = {value: None}
    canonical = value
    pending = [value]
    if "\x00" in value:
        truncated = value.split("\x00", 1)[0]
        pending.append(truncated)
        canonical = truncated
    for item in list(pending):
        for decoded in _decode_all(item):
            pending.append(decoded)
            canonical = decoded
    for item in list(pending):
        file_url = file_url_path(item)
        if file_url is not None:
            pending.append(file_url[0])
            if file_url[1]:  # a remote host's path is never what an allow rule may see
                canonical = file_url[0]
    for item in list(pending):
        expanded = _expand_home(item, home)
        if expanded is not None:
            pending.append(expanded)
            if item == canonical:
                canonical = expanded
    for item in list(pending):
        urls, best = url_forms(item)
        if urls:
            pending.extend(urls)
            if item == canonical and best is not None:
                canonical = best
        elif _WIN_RE.match(item) or ("\\" in item and "/" not in item):
            win = ntpath.normpath(item)
            pending.append(win)
            pending.append(win.replace("\\", "/"))
            if win[-1:] in (".", " ") and win.rstrip(". ")[-1:] not in ("", "\\", ":", "."):
                # Win32 drops a name's trailing dots and spaces: `.env.` and `.env ` open `.env`.
                pending.append(win.rstrip(". "))
            if item == canonical:
                canonical = win
        elif _looks_like_path(item):
            collapsed = collapse_posix(item)
            pending.append(collapsed)
            if len(collapsed) > 1 and collapsed.endswith("/"):
                # What the server opens: Node's path.resolve drops the trailing slash, so `.env/`,
                # `.env//` and `.env/./` read `.env`. Restrictive rules see this spelling; the
                # canonical keeps the slash (an allow rule for `/workspace/` names the directory).
                pending.append(collapsed.rstrip("/"))
            if item == canonical:
                canonical = collapsed
    for item in pending:
        seen.setdefault(item, None)
    return tuple(seen), canonical


__all__ = ["canonical_host", "canonical_ip", "forms"]
