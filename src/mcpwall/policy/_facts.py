"""What a decision is made on: the call, its context, and the prepared facts.

`prepare()` is the only step that may touch the outside world (the home
directory, symlinks on disk). Everything after it (`evaluate`) is pure, so a
decision can be replayed from the facts alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple

import orjson

from mcpwall.policy._host import host_value, is_host_key
from mcpwall.policy._normalize import forms

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


class _Walker:
    __slots__ = ("env_keys", "home", "keys", "realpath", "truncated", "values")

    def __init__(self, home: str | None, realpath: Callable[[str], str] | None) -> None:
        self.values: list[ArgValue] = []
        self.keys: list[tuple[str, str]] = []
        self.env_keys: list[str] = []
        self.truncated = False
        self.home = home
        self.realpath = realpath

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
        """`{"command": "rm", "args": ["-rf", "/"]}`: the program and its arguments, as one command line."""
        if len(value) < 2:
            return
        program = next((v for k, v in value.items() if type(v) is str and str(k).lower() in _PROGRAM_KEYS), None)
        if program is None:
            return
        for k, v in value.items():
            if str(k).lower() in _ARGV_KEYS and isinstance(v, list) and 0 < len(v) <= MAX_ARGV \
                    and all(type(a) is str for a in v):
                self._leaf(" ".join([program, *v]), f"{path}#argv" if path else "#argv", str(k))
                return

    def _leaf(self, text: str, path: str, key: str) -> None:
        variants, canonical = forms(text, self.home)
        if key and is_host_key(key):
            # `{"host": "2130706433"}` reaches 127.0.0.1 as surely as a URL does. Only
            # restrictive rules get the host's spellings: the canonical one stays the text.
            extra = tuple(h for h in host_value(text) if h not in variants)
            if extra:
                variants += extra
        if self.realpath is not None:
            variants, canonical = self._resolve_links(variants, canonical)
        self.values.append(ArgValue(path, key, text, variants, canonical))

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
_HOME = os.path.expanduser("~")


def prepare(call: Call, *, home: str | None = None, resolve_symlinks: bool = True) -> Facts:
    """Derive the facts rules match on: every value at every depth, in every spelling."""
    if home is None:
        home = _HOME
    walker = _Walker(home, _default_realpath if resolve_symlinks else None)
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
