"""The spellings of an argument text that the text alone decides, cached by text.

`prepare` (`_facts.py`) gives every argument text all its spellings: its forms (`_normalize.py`), each
command in it as the shell runs it (`_shell.py`) and, under a host key, the host's spellings
(`_host.py`). These depend on the text, the home directory and whether the key names a host, and on
nothing else, so `_Walker._leaf` keeps them per text (`spelled_cache`, `remember`: one dict per home
and host key, texts up to CACHED_TEXT, at most CACHE_SIZE a dict) with which of them name a host to
resolve and which are paths whose symlinks to resolve. Resolving hosts and symlinks stays in each call: their answers
change with time and have caches of their own (`_resolve.py`, `CachedRealpath`). A repeated text costs
one dict probe; tests/policy/test_facts_cache.py holds a cached leaf equal to one computed afresh.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from mcpwall.policy._calls import KEY_HOST, Fact, text_facts
from mcpwall.policy._calls_files import spelled_paths
from mcpwall.policy._host import canonical_host, canonical_ip, host_value
from mcpwall.policy._normalize import forms
from mcpwall.policy._shell import command_texts

#: A URL's scheme and host as `url_forms` spells it (no userinfo), for name resolution.
_URL_HOST: Final = re.compile(r"([a-z][a-z0-9+.-]*://)([^/?#@\[\]:\s]+)(?=[:/?#]|$)")
#: A bare `host[:port]` (a host argument's value).
_BARE_HOST: Final = re.compile(r"([^/?#@\[\]:\s]+)(:[0-9]{1,5})?")


def _url_parts(text: str) -> tuple[str, str, str]:
    """(scheme://, canonical host name, the rest) of a URL that names its host; ("", "", "") otherwise."""
    m = _URL_HOST.match(text)
    if m is None or canonical_ip(m.group(2)) is not None:
        return "", "", ""
    return m.group(1), canonical_host(m.group(2)), text[m.end():]


class Spelled(NamedTuple):
    """What a leaf's text alone determines (everything but its symlinks and resolved hosts), cached by text."""

    variants: tuple[str, ...]
    canonical: str
    #: (scheme://, host, rest) of each spelling that names a host to resolve, in the spellings' order.
    hosts: tuple[tuple[str, str, str], ...]
    #: The spellings whose symlinks are resolved (absolute paths without a NUL).
    paths: tuple[str, ...]
    #: What the text touches, runs and sends (`_calls.text_facts`): (fact index, text).
    facts: tuple[Fact, ...] = ()


def spell(text: str, home: str | None, kind: int) -> Spelled:
    """The spellings of `text` that do not change with time, computed afresh (`_Walker._leaf` caches them).

    `kind` is the class of the text's key (`_calls.key_class`): a host, a command line, a URL or plain."""
    host_key = kind == KEY_HOST
    variants, canonical = forms(text, home)
    # `r\\m -rf /`, `'rm' -rf /`, `a; rm -rf ~`: each command as the shell runs it, for the
    # restrictive rules (the canonical, which allow rules see, stays the text's own).
    shell = command_texts(text)
    if shell:
        variants += tuple(t for t in shell if t not in variants)
    facts = text_facts(text, kind)
    if facts:
        # The files a command touches are spellings too: a `file` rule for `/etc/passwd` meets
        # `cat /etc/passwd` as it meets `read_file /etc/passwd` (the home stays `~`: see `_calls.py`).
        # (A shell's reads of the machine's software are not: `_calls_files.spelled_paths`.)
        touched = tuple(dict.fromkeys(t for t in spelled_paths(facts) if t not in variants and t != text))
        if touched:
            variants += touched
    if host_key:
        # `{"host": "2130706433"}` reaches 127.0.0.1 as surely as a URL does. Only
        # restrictive rules get the host's spellings: the canonical one stays the text.
        extra = tuple(h for h in host_value(text) if h not in variants)
        if extra:
            variants += extra
    hosts = _host_names(variants, host_key) if host_key or "://" in text or ":" in text[:12] else ()
    paths = tuple(v for v in variants if v.startswith("/") and "\x00" not in v)
    return tuple.__new__(Spelled, (variants, canonical, hosts, paths, facts))


def _host_names(variants: tuple[str, ...], host_key: bool) -> tuple[tuple[str, str, str], ...]:
    """(scheme://, canonical host, the rest) of each spelling that names a host by name, for `_resolve.py`."""
    out: list[tuple[str, str, str]] = []
    for v in variants:
        parts = _url_parts(v)
        if parts[1]:
            out.append(parts)
        elif host_key and (b := _BARE_HOST.fullmatch(v.strip())) is not None and canonical_ip(b.group(1)) is None:
            out.append(("", canonical_host(b.group(1)), b.group(2) or ""))
    return tuple(out)


#: `spell` by text, one dict per (home, key class) (`spelled_cache`, filled by `remember`).
_SPELLED: Final[dict[tuple[str | None, int], dict[str, Spelled]]] = {}
#: What `remember` keeps for a text that is its only spelling, with no host and no path (most texts):
#: nothing of its own. With a tuple kept per such text, bench/policy_eval.py's stream made the garbage
#: collector run 175 times per 100,000 calls rather than 36 (some 6% of prepare + evaluate, not 2%).
PLAIN: Final = tuple.__new__(Spelled, ((), "", (), (), ()))
#: Texts kept per dict (it is emptied when full) and the longest text kept: at most 16 MiB of texts a dict.
CACHE_SIZE: Final = 16384
CACHED_TEXT: Final = 1024


def spelled_cache(home: str | None, kind: int) -> dict[str, Spelled]:
    """The cache of `spell(text, home, kind)` by text."""
    cache = _SPELLED.get((home, kind))
    if cache is None:
        if len(_SPELLED) >= 16:
            _SPELLED.clear()
        cache = _SPELLED[(home, kind)] = {}
    return cache


def remember(cache: dict[str, Spelled], text: str, spelled: Spelled) -> None:
    """Keep `spelled` (`spell`'s answer for `text`) in `cache`, as PLAIN when it is only `text` itself."""
    if len(text) > CACHED_TEXT:
        return
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    plain = spelled.variants == (text,) and spelled.canonical == text and not spelled.hosts and not spelled.paths \
        and not spelled.facts
    cache[text] = PLAIN if plain else spelled

__all__ = ["CACHED_TEXT", "CACHE_SIZE", "PLAIN", "Spelled", "remember", "spell", "spelled_cache"]
