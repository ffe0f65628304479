"""The spellings of an argument text that the text alone decides, cached by text.

`prepare` (`_facts.py`) gives every argument text all its spellings: its forms (`_normalize.py`), each
command in it as the shell runs it (`_shell.py`) and, under a host key, the host's spellings
(`_host.py`). These depend on the text, the home directory and whether the key names a host, and on
nothing else, so `_Walker._leaf` keeps them per text (`spelled_cache`: one `SpellCache` per home and
key class, texts up to CACHED_TEXT, two generations of at most CACHE_SIZE) with which of them name a
host to resolve and which are paths whose symlinks to resolve. Resolving hosts and symlinks stays in each call: their answers
change with time and have caches of their own (`_resolve.py`, `CachedRealpath`). A repeated text costs
one dict probe; tests/policy/test_facts_cache.py holds a cached leaf equal to one computed afresh.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from mcpwall.policy._calls import (
    INJECTED,
    KEY_HOST,
    KEY_NO_FACTS,
    KEY_PLAIN,
    KEY_STORED,
    KEY_URL,
    SECRETS,
    Fact,
    text_facts,
)
from mcpwall.policy._calls_files import spelled_paths
from mcpwall.policy._calls_secrets import seed_only
from mcpwall.policy._calls_shell import SHELL_SYNTAX
from mcpwall.policy._host import canonical_host, canonical_ip, host_value
from mcpwall.policy._normalize import forms
from mcpwall.policy._shell import _WRAPPERS, command_texts

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


#: Words of ASCII letters and digits one blank apart, none of 16 characters or more (possessive: no backtracking).
_PLAIN_WORDS: Final = re.compile(r"(?:[A-Za-z0-9]{1,15}+ )*+[A-Za-z0-9]{1,15}+")
_NO_FACTS: Final[tuple[Fact, ...]] = ()
_SEED_PHRASE: Final[tuple[Fact, ...]] = ((SECRETS, "seed-phrase"),)


def quiet(text: str) -> bool:
    """Whether `spell` can answer `text` under a plain key without reading it: words of ASCII letters and
    digits, one blank apart, each shorter than 16 characters, no `BEGIN` or `eyJ` in it (a key's armour, a
    JWT), the first word no command wrapper (`nohup`, `time`: what `_shell._plain_words` also asks).

    Such a text is its only spelling (`forms` finds none of its special characters, `command_texts` no shell
    syntax), names no host and no path, and holds no fact but a seed phrase (`_calls._QUIET` finds none of
    the shapes the readers act on: a 16-character run is a token, `=`, `:`, `@`, `$`, `/` are assignments,
    URLs, addresses, variables and paths). Most argument texts are such (messages, contents, names), and
    reading one costs `forms`, `command_texts` and `text_facts` each a screen of its own: ~2-3 us a text in
    bench/policy_eval.py's stream against ~0.4 us for this one. tests/policy/test_spelling_quick.py holds
    `spell`'s answer equal to `spell_full`'s on every test text and on generated ones."""
    if _PLAIN_WORDS.fullmatch(text) is None or "BEGIN" in text or "eyJ" in text:
        return False
    blank = text.find(" ")
    return (text if blank < 0 else text[:blank]) not in _WRAPPERS


def spell(text: str, home: str | None, kind: int) -> Spelled:
    """The spellings of `text` that do not change with time, computed afresh (`_Walker._leaf` caches them).

    `kind` is the class of the text's key (`_calls.key_class`): a host, a command line, a URL or plain."""
    if kind in (KEY_PLAIN, KEY_NO_FACTS, KEY_STORED) and quiet(text):
        # The quick answer (`quiet`): twelve words or more may still be a seed phrase.
        facts = _SEED_PHRASE if kind != KEY_NO_FACTS and seed_only(text) else _NO_FACTS
        return tuple.__new__(Spelled, ((text,), text, (), (), facts))
    return spell_full(text, home, kind)


def spell_full(text: str, home: str | None, kind: int) -> Spelled:
    """`spell` without its quick answer: every reader asked."""
    host_key = kind == KEY_HOST
    variants, canonical = forms(text, home)
    # `r\\m -rf /`, `'rm' -rf /`, `a; rm -rf ~`: each command as the shell runs it, for the
    # restrictive rules (the canonical, which allow rules see, stays the text's own).
    # A text a tool keeps or sends as data (KEY_STORED: a file's content, a message) is not split as a shell
    # would run it: nothing runs it (`_calls_args.stored_key`).
    shell = command_texts(text) if kind != KEY_STORED else ()
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
    if kind in (KEY_PLAIN, KEY_HOST, KEY_URL) and (SHELL_SYNTAX.search(text) is not None or len(variants) > 1):
        # Shell syntax where no command line is expected (a file name, a host, a URL: `x.txt; curl ...`), in
        # every spelling (`%3B` decoded): the `injected` fact. A command line's own syntax is the shell's.
        injected = tuple((INJECTED, v) for v in variants if SHELL_SYNTAX.search(v) is not None)
        if injected:
            facts = facts + injected if facts else injected
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


#: What a cache keeps for a text that is its only spelling, with no host and no path (most texts):
#: nothing of its own. With a tuple kept per such text, bench/policy_eval.py's stream made the garbage
#: collector run 175 times per 100,000 calls rather than 36 (some 6% of prepare + evaluate, not 2%).
PLAIN: Final = tuple.__new__(Spelled, ((), "", (), (), ()))
#: Texts kept per generation of a cache (`SpellCache`) and the longest text kept: at most 2 * 16384 texts
#: of 512 characters, 16 MiB, a cache.
CACHE_SIZE: Final = 16384
CACHED_TEXT: Final = 512


class SpellCache:
    """`spell(text, home, kind)` by text for one (home, key class), in two generations.

    `new` takes every text spelled or found again; when it is full it becomes `old` (the previous `old`
    is dropped), and a text found in `old` moves back to `new`. So a text asked again before
    CACHE_SIZE others were spelled stays, where emptying one dict when full dropped the texts of every
    call (the paths and URLs a session uses all day) along with those seen once (contents, messages,
    queries): in bench/policy_eval.py's stream 17,000 fewer texts a pass are spelled again (of 66,000).
    `_Walker._leaf` probes `new` itself and calls `recall` when the text is not there."""

    __slots__ = ("home", "kind", "new", "old")

    def __init__(self, home: str | None, kind: int) -> None:
        self.home = home
        self.kind = kind
        self.new: dict[str, Spelled] = {}
        self.old: dict[str, Spelled] = {}

    def recall(self, text: str) -> Spelled:
        """The spellings of a text not in `new`: from `old`, else spelled; PLAIN for a text that is
        its only spelling (see PLAIN)."""
        spelled = self.old.get(text)
        if spelled is None:
            spelled = spell(text, self.home, self.kind)
            if len(text) > CACHED_TEXT:
                return spelled
            if spelled.variants == (text,) and spelled.canonical == text and not spelled.hosts \
                    and not spelled.paths and not spelled.facts:
                spelled = PLAIN
        if len(self.new) >= CACHE_SIZE:
            self.old = self.new
            self.new = {}
        self.new[text] = spelled
        return spelled


#: The caches, one per (home, key class) (`spelled_cache`).
_SPELLED: Final[dict[tuple[str | None, int], SpellCache]] = {}


def spelled_cache(home: str | None, kind: int) -> SpellCache:
    """The cache of `spell(text, home, kind)` by text."""
    cache = _SPELLED.get((home, kind))
    if cache is None:
        if len(_SPELLED) >= 16:
            _SPELLED.clear()
        cache = _SPELLED[(home, kind)] = SpellCache(home, kind)
    return cache


__all__ = ["CACHED_TEXT", "CACHE_SIZE", "PLAIN", "SpellCache", "Spelled", "quiet", "spell", "spell_full",
           "spelled_cache"]
