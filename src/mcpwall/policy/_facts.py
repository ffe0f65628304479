"""What a decision is made on: the call, its context, and the prepared facts.

`prepare()` is the only step that may touch the outside world (the home
directory, symlinks on disk). Everything after it (`evaluate`) is pure, so a
decision can be replayed from the facts alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple

import orjson

from mcpwall.policy._host import canonical_host, canonical_ip, host_value, is_host_key
from mcpwall.policy._normalize import forms
from mcpwall.policy._resolve import HostResolver
from mcpwall.policy._shell import SHELLS, command_texts

#: Values beyond these bounds are not inspected one by one; the call is then
#: treated as uninspectable, which `evaluate` denies in enforce mode.
MAX_VALUES = 5_000
MAX_DEPTH = 32
_ENV_KEYS = frozenset({"env", "environment", "envvars", "env_vars"})
_NO_ARGUMENTS: Mapping[str, Any] = MappingProxyType({})


class Call(NamedTuple):
    """One message the policy decides on, as the gateway sees it.

    `name` is the tool name for `tools/call`, the URI for `resources/*` and the
    prompt name for `prompts/get` (as mcp-seatbelt passes them to its engine).
    Immutable; a NamedTuple rather than a frozen dataclass because the gateway
    makes one per call and a frozen dataclass costs 2.5 times as much to build.
    """

    method: str = "tools/call"
    name: str = ""
    arguments: Mapping[str, Any] = _NO_ARGUMENTS
    server: str = ""
    description: str = ""
    client: str = ""
    agent: str = ""
    session: str = ""
    #: The upstream's result, for response-side rules.
    result: Any = None


_clock: list[Any] = [0.0, None]


def local_now() -> datetime:
    """The local time, refreshed once a second.

    `datetime.now().astimezone()` costs several microseconds (it asks the C
    library for the zone each time); time windows are hour-granular, so the
    gateway's per-call decisions read this instead.
    """
    t = time.time()
    if t - _clock[0] >= 1.0 or _clock[1] is None:
        _clock[0] = t
        _clock[1] = datetime.now().astimezone()
    value: datetime = _clock[1]
    return value


class Context(NamedTuple):
    """The world at decision time, passed in so that `evaluate` stays pure (made per call, hence a NamedTuple)."""

    now: datetime
    #: Requests this client made in the last 60 s, this one included.
    requests_last_minute: int = 0


class ArgValue(NamedTuple):
    """One scalar argument: where it sits, its text and every spelling of it.

    A NamedTuple rather than a frozen dataclass: calls create many of these and
    tuple construction is several times cheaper (bench/policy_eval.py).
    """

    path: str
    key: str
    raw: str
    variants: tuple[str, ...]
    canonical: str


class Facts(NamedTuple):
    """What `prepare` derived from a call (a NamedTuple for the same reason as `Call`)."""

    call: Call
    values: tuple[ArgValue, ...]
    #: (path, key) of every mapping key at every depth of the arguments.
    keys: tuple[tuple[str, str], ...]
    env_keys: tuple[str, ...]
    response_texts: tuple[str, ...]
    #: True when the arguments exceeded MAX_VALUES / MAX_DEPTH.
    truncated: bool = False


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return None


#: First characters of a string worth trying as embedded JSON.
_JSON_OPENERS = frozenset("{[")
#: A mapping key that is a path: absolute, home, relative, a file: URL, UNC, a drive, or %-encoded.
_PATH_KEY = re.compile(r"(/|~/|\.\.?/|file:|\\\\|[A-Za-z]:[\\/]|%2[fF])")
#: Longest string argument parsed as embedded JSON.
MAX_EMBEDDED_JSON = 64 * 1024
#: Longest list of strings also read as one command line (an argv), and the keys that name a program
#: and its arguments side by side.
MAX_ARGV = 256
_PROGRAM_KEYS = frozenset({"command", "cmd", "program", "executable", "exe", "bin", "binary"})
_ARGV_KEYS = frozenset({"args", "argv", "arguments", "params", "parameters", "options", "flags"})
#: Keys beside a program that hold what it reads on its standard input (a shell's script).
_STDIN_KEYS = frozenset({"stdin", "input", "script", "stdin_data", "stdindata", "input_text", "standard_input"})


#: A URL's scheme and host as `url_forms` spells it (no userinfo), for name resolution.
_URL_HOST = re.compile(r"([a-z][a-z0-9+.-]*://)([^/?#@\[\]:\s]+)(?=[:/?#]|$)")
#: A bare `host[:port]` (a host argument's value).
_BARE_HOST = re.compile(r"([^/?#@\[\]:\s]+)(:[0-9]{1,5})?")


def _url_parts(text: str) -> tuple[str, str, str]:
    """(scheme://, canonical host name, the rest) of a URL that names its host; ("", "", "") otherwise."""
    m = _URL_HOST.match(text)
    if m is None or canonical_ip(m.group(2)) is not None:
        return "", "", ""
    return m.group(1), canonical_host(m.group(2)), text[m.end():]


#: `_url_parts` by text, and `command_texts` by text (a dict probe here costs less than a call there).
_URL_PARTS: dict[str, tuple[str, str, str]] = {}
_SHELL_TEXTS: dict[str, tuple[str, ...]] = {}
_PARTS_CACHE_SIZE = 16384
_SHELL_CACHED_TEXT = 1024


class _Walker:
    __slots__ = ("env_keys", "home", "keys", "realpath", "resolver", "truncated", "values")

    def __init__(self, home: str | None, realpath: Callable[[str], str] | None,
                 resolver: Callable[[str], tuple[str, ...] | None] | None = None) -> None:
        self.values: list[ArgValue] = []
        self.keys: list[tuple[str, str]] = []
        self.env_keys: list[str] = []
        self.truncated = False
        self.home = home
        self.realpath = realpath
        self.resolver = resolver

    def walk(self, value: Any, path: str, key: str, depth: int) -> None:
        if len(self.values) + len(self.keys) >= MAX_VALUES or depth > MAX_DEPTH:
            self.truncated = True
            return
        kind = type(value)
        if kind is str:
            self._leaf(value, path, key)
            if value[:1] in _JSON_OPENERS and len(value) <= MAX_EMBEDDED_JSON:
                # JSON carried in a string (`{"payload": "{\"path\": \"/etc/...\"}"}`) reaches a server
                # that parses it: its values are checked too.
                with contextlib.suppress(orjson.JSONDecodeError):
                    inner = orjson.loads(value)
                    if isinstance(inner, dict | list):
                        self.walk(inner, f"{path}#json", key, depth + 1)
        elif kind is dict or (kind is not list and isinstance(value, Mapping)):
            for k, v in value.items():
                ks = str(k)
                sub = f"{path}.{ks}" if path else ks
                self.keys.append((sub, ks))
                if _PATH_KEY.match(ks):
                    # A path used as a key (`{"files": {"/etc/cron.d/x": "..."}}`) is one the tool acts on.
                    self._leaf(ks, f"{sub}#key", ks)
                if ks.lower() in _ENV_KEYS and isinstance(v, Mapping):
                    self.env_keys.extend(str(e) for e in v)
                self.walk(v, sub, ks, depth + 1)
            self._command_line(value, path)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                self.walk(v, f"{path}[{i}]", key, depth + 1)
            if 1 < len(value) <= MAX_ARGV and all(type(v) is str for v in value):
                # An argv (`["rm", "-rf", "/"]`) runs as one command line: the patterns see it joined too.
                self._leaf(" ".join(value), f"{path}[*]", key)
        else:
            text = _scalar_text(value)
            if text is not None:
                self._leaf(text, path, key)

    def _command_line(self, value: Mapping[Any, Any], path: str) -> None:
        """`{"command": "rm", "args": ["-rf", "/"]}`: the program and its arguments, as one command line;
        `{"command": "bash", "stdin": "rm -rf /"}`: the program fed its input, as `bash -c 'rm -rf /'`."""
        if len(value) < 2:
            return
        program = next((v for k, v in value.items() if type(v) is str and str(k).lower() in _PROGRAM_KEYS), None)
        if program is None:
            return
        line = program
        for k, v in value.items():
            if str(k).lower() in _ARGV_KEYS and isinstance(v, list) and 0 < len(v) <= MAX_ARGV \
                    and all(type(a) is str for a in v):
                line = " ".join([program, *v])
                self._leaf(line, f"{path}#argv" if path else "#argv", str(k))
                break
        for k, v in value.items():
            if type(v) is str and str(k).lower() in _STDIN_KEYS and v.strip():
                # A shell runs its input as a script: `sh -c '<input>'`; another program reads it as
                # `program <<< '<input>'`. Either way its commands are commands (`_shell.py`).
                shell = program.rstrip("/").rpartition("/")[2] in SHELLS
                self._leaf(f"{line} {'-c' if shell else '<<<'} {shlex.quote(v)}",
                           f"{path}#stdin" if path else "#stdin", str(k))
                break

    def _leaf(self, text: str, path: str, key: str) -> None:
        variants, canonical = forms(text, self.home)
        # `r\\m -rf /`, `'rm' -rf /`, `a; rm -rf ~`: each command as the shell runs it, for the
        # restrictive rules (the canonical, which allow rules see, stays the text's own).
        shell = _SHELL_TEXTS.get(text)
        if shell is None:
            shell = command_texts(text)
            if len(text) <= _SHELL_CACHED_TEXT:  # the cache holds its texts: at most 16,384 of 1 KiB
                if len(_SHELL_TEXTS) >= _PARTS_CACHE_SIZE:
                    _SHELL_TEXTS.clear()
                _SHELL_TEXTS[text] = shell
        if shell:
            variants += tuple(t for t in shell if t not in variants)
        host_key = bool(key) and is_host_key(key)
        if host_key:
            # `{"host": "2130706433"}` reaches 127.0.0.1 as surely as a URL does. Only
            # restrictive rules get the host's spellings: the canonical one stays the text.
            extra = tuple(h for h in host_value(text) if h not in variants)
            if extra:
                variants += extra
        if self.resolver is not None and (host_key or "://" in text or ":" in text[:12]):
            variants = self._resolve_hosts(variants, host_key)
        if self.realpath is not None:
            variants, canonical = self._resolve_links(variants, canonical)
        self.values.append(ArgValue(path, key, text, variants, canonical))

    def _resolve_hosts(self, variants: tuple[str, ...], host_key: bool) -> tuple[str, ...]:
        """The spellings with a host name replaced by each non-public address it resolves to
        (`http://myhost:9420/` as `http://127.0.1.1:9420/`): `_resolve.py`."""
        assert self.resolver is not None
        extra: list[str] = []
        for v in variants:
            parts = _URL_PARTS.get(v)
            if parts is None:
                parts = _url_parts(v)
                if len(_URL_PARTS) >= _PARTS_CACHE_SIZE:
                    _URL_PARTS.clear()
                _URL_PARTS[v] = parts
            if parts[1]:
                prefix, host, rest = parts
            elif host_key and (b := _BARE_HOST.fullmatch(v.strip())) is not None \
                    and canonical_ip(b.group(1)) is None:
                prefix, host, rest = "", canonical_host(b.group(1)), b.group(2) or ""
            else:
                continue
            for address in self.resolver(host) or ():
                spelled = prefix + (f"[{address}]" if ":" in address else address) + rest
                if spelled not in variants and spelled not in extra:
                    extra.append(spelled)
                    if rest and not prefix and address not in extra:
                        extra.append(address)
        return variants + tuple(extra) if extra else variants

    def _resolve_links(self, variants: tuple[str, ...], canonical: str) -> tuple[tuple[str, ...], str]:
        assert self.realpath is not None
        extra: list[str] = []
        for v in variants:
            if v.startswith("/") and "\x00" not in v:
                real = self.realpath(v)
                if v.endswith("/") and not real.endswith("/"):
                    real += "/"  # realpath drops it; `/workspace/` must stay the directory the rules name
                if real != v and real not in variants and real not in extra:
                    extra.append(real)
                    if v == canonical:
                        canonical = real
        return (variants + tuple(extra), canonical) if extra else (variants, canonical)


def _response_texts(result: Any) -> tuple[str, ...]:
    if result is None:
        return ()
    walker = _Walker(None, None)
    walker.walk(result, "", "", 0)
    return tuple(v.raw for v in walker.values if v.key not in ("type", "mimeType"))


class CachedRealpath:
    """`os.path.realpath` with a short-lived cache: symlinks change rarely, calls repeat often."""

    def __init__(self, ttl: float = 2.0, size: int = 32768) -> None:
        self._ttl = ttl
        self._size = size
        self._cache: dict[str, tuple[float, str]] = {}

    def __call__(self, path: str) -> str:
        now = time.monotonic()
        hit = self._cache.get(path)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            real = path
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[path] = (now, real)
        return real


_default_realpath = CachedRealpath()
_default_resolver = HostResolver()
_HOME = os.path.expanduser("~")


def prepare(call: Call, *, home: str | None = None, resolve_symlinks: bool = True,
            resolve_hosts: bool = True) -> Facts:
    """Derive the facts rules match on: every value at every depth, in every spelling.

    `resolve_symlinks` and `resolve_hosts` are the two steps that touch the machine (the file
    system, the resolver: cached, and bounded in time, see `_resolve.py`).
    """
    if home is None:
        home = _HOME
    walker = _Walker(home, _default_realpath if resolve_symlinks else None,
                     _default_resolver if resolve_hosts else None)
    walker.walk(call.arguments, "", "", 0)
    return Facts(
        call=call,
        values=tuple(walker.values),
        keys=tuple(walker.keys),
        env_keys=tuple(walker.env_keys),
        response_texts=_response_texts(call.result),
        truncated=walker.truncated,
    )


__all__ = ["ArgValue", "CachedRealpath", "Call", "Context", "Facts", "local_now", "prepare"]
