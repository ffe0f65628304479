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
from typing import Any, Final, NamedTuple

import orjson

from mcpwall.policy._calls import (
    KEY_CODE,
    KEY_COMMAND,
    KEY_HOST,
    KEY_NO_FACTS,
    KEY_PLAIN,
    KEY_STORED,
    KEY_URL,
    SHELL_TOOL,
    STORE_TOOL,
    call_facts,
    key_class,
    may_add_facts,
    place_key,
    pushed_command,
    runs_written,
    stored_key,
    tool_flags,
    tool_words,
)
from mcpwall.policy._calls_args import FILES, PROGRAMS, SECRETS, SINKS
from mcpwall.policy._calls_files import code_file, decoded_run, network_program, single_path, staged_harm
from mcpwall.policy._calls_presented import presented
from mcpwall.policy._host import is_host_key
from mcpwall.policy._realpath import CachedRealpath
from mcpwall.policy._resolve import HostResolver
from mcpwall.policy._shell import SHELLS
from mcpwall.policy._spelling import PLAIN, spelled_cache

#: Values beyond these bounds are not inspected one by one; the call is then
#: treated as uninspectable, which `evaluate` denies in enforce mode.
MAX_VALUES: Final = 5_000
MAX_DEPTH: Final = 32
_ENV_KEYS: Final = frozenset({"env", "environment", "envvars", "env_vars"})
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
    #: What the call touches, runs, sends and lets out (`_calls.py`): (index into `_calls.FACT_TARGETS`,
    #: text, the argument's path), matched by the rules whose target is that fact.
    derived: tuple[tuple[int, str, str], ...] = ()
    #: Paths of the values the tool keeps or sends as data and nothing runs (a file tool's content, a message's
    #: body, a web search's question: `_calls_args.stored_key`): the rules on what a call touches, reaches and
    #: runs (`file`, `network`, `process`, `runnable`) do not read them; `argValue` rules and the secrets in
    #: them (`secrets_out`) do.
    inert: tuple[str, ...] = ()


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
_JSON_OPENERS: Final = frozenset("{[")
#: A mapping key that is a path: absolute, home, relative, a file: URL, UNC, a drive, or %-encoded.
_PATH_KEY: Final = re.compile(r"(/|~/|\.\.?/|file:|\\\\|[A-Za-z]:[\\/]|%2[fF])")
#: Longest string argument parsed as embedded JSON.
MAX_EMBEDDED_JSON: Final = 64 * 1024
#: Longest list of strings also read as one command line (an argv), and the keys that name a program
#: and its arguments side by side.
MAX_ARGV: Final = 256
_PROGRAM_KEYS: Final = frozenset({"command", "cmd", "program", "executable", "exe", "bin", "binary"})
_ARGV_KEYS: Final = frozenset({"args", "argv", "arguments", "params", "parameters", "options", "flags"})
#: Keys beside a program that hold what it reads on its standard input (a shell's script).
_STDIN_KEYS: Final = frozenset({"stdin", "input", "script", "stdin_data", "stdindata", "input_text", "standard_input"})
#: What a mapping key is to `_Walker`, as bits of `_key_kind` (`Final`: compiled code reads these and the
#: module's other constants without a lookup in the module's dict).
_PATH_KEY_BIT: Final = 1
_ENV_BIT: Final = 2
_PROGRAM_BIT: Final = 4
_ARGV_BIT: Final = 8
_STDIN_BIT: Final = 16
_HOST_BIT: Final = 32
#: A key whose value is a command line or a URL (`_calls.key_class`).
_COMMAND_BIT: Final = 64
_URL_BIT: Final = 128
#: A key that names a place or a setting (`cwd`, `path`): not run as a command by a shell tool.
_PLACE_BIT: Final = 256
#: A key whose value is program source a code tool runs (`code`).
_CODE_BIT: Final = 512
_KEY_KINDS: Final[dict[str, int]] = {}


def _key_kind(key: str) -> int:
    """Which of the `_*_BIT`s `key` has (a path, an env mapping, a program, its argv, its input, a host),
    cached by key: the same few keys come in every call and asking costs a regex and `lower()` each."""
    kind = _KEY_KINDS.get(key)
    if kind is None:
        lower = key.lower()
        kind = 0
        if _PATH_KEY.match(key):
            kind |= _PATH_KEY_BIT
        if lower in _ENV_KEYS:
            kind |= _ENV_BIT
        if lower in _PROGRAM_KEYS:
            kind |= _PROGRAM_BIT
        if lower in _ARGV_KEYS:
            kind |= _ARGV_BIT
        if lower in _STDIN_KEYS:
            kind |= _STDIN_BIT
        if key and is_host_key(key):
            kind |= _HOST_BIT
        if key and place_key(key):
            kind |= _PLACE_BIT
        cls = key_class(key, bool(kind & _HOST_BIT)) if key else KEY_PLAIN
        if cls == KEY_COMMAND:
            kind |= _COMMAND_BIT
        elif cls == KEY_URL:
            kind |= _URL_BIT
        elif cls == KEY_CODE:
            kind |= _CODE_BIT
        if len(key) <= 256:
            if len(_KEY_KINDS) >= 4096:
                _KEY_KINDS.clear()
            _KEY_KINDS[key] = kind
    return kind


class _Walker:
    __slots__ = ("derived", "env_keys", "facts", "home", "inert", "keys", "plain", "realpath", "resolver", "shell",
                 "spelled", "stores", "truncated", "values")

    def __init__(self, home: str | None, realpath: Callable[[str], str] | None,
                 resolver: Callable[[str], tuple[str, ...] | None] | None = None, facts: bool = True,
                 shell: bool = False, stores: int = 0) -> None:
        self.values: list[ArgValue] = []
        self.keys: list[tuple[str, str]] = []
        self.env_keys: list[str] = []
        self.derived: list[tuple[int, str, str]] = []
        self.truncated = False
        self.home = home
        self.realpath = realpath
        self.resolver = resolver
        #: Whether the texts' facts are wanted (`_calls.py`): not for a response's texts.
        self.facts = facts
        #: The tool runs its arguments as commands (`_calls.shell_tool`): every text is a command line.
        self.shell = shell
        #: The key class of a text under a key that says nothing of it.
        self.plain = KEY_NO_FACTS if not facts else (KEY_COMMAND if shell else KEY_PLAIN)
        self.spelled = spelled_cache(home, self.plain)
        #: The tool's flags when it keeps or sends texts as data (`_calls_args.STORE_TOOL`), else 0.
        self.stores = stores
        self.inert: list[str] = []

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
            seen = 0
            for k, v in value.items():
                ks = str(k)
                bits = _key_kind(ks)
                seen |= bits
                sub = f"{path}.{ks}" if path else ks
                self.keys.append((sub, ks))
                if bits & _PATH_KEY_BIT:
                    # A path used as a key (`{"files": {"/etc/cron.d/x": "..."}}`) is one the tool acts on.
                    self._leaf(ks, f"{sub}#key", ks)
                if bits & _ENV_BIT and isinstance(v, Mapping):
                    self.env_keys.extend(str(e) for e in v)
                self.walk(v, sub, ks, depth + 1)
            if seen & _PROGRAM_BIT:
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
        program = next((v for k, v in value.items() if type(v) is str and _key_kind(str(k)) & _PROGRAM_BIT), None)
        if program is None:
            return
        line = program
        for k, v in value.items():
            if _key_kind(str(k)) & _ARGV_BIT and isinstance(v, list) and 0 < len(v) <= MAX_ARGV \
                    and all(type(a) is str for a in v):
                line = " ".join([program, *v])
                self._leaf(line, f"{path}#argv" if path else "#argv", str(k))
                if self.facts:
                    # The same quoted as the program gets it, each argument one word (`bash -c 'cat x'`), read
                    # as a command line: what it runs and touches are facts, its files spellings.
                    self._leaf(shlex.join([program, *v]), f"{path}#argv" if path else "#argv", "command")
                break
        for k, v in value.items():
            if type(v) is str and _key_kind(str(k)) & _STDIN_BIT and v.strip():
                # A shell runs its input as a script: `sh -c '<input>'`; another program reads it as
                # `program <<< '<input>'`. Either way its commands are commands (`_shell.py`).
                shell = program.rstrip("/").rpartition("/")[2] in SHELLS
                self._leaf(f"{line} {'-c' if shell else '<<<'} {shlex.quote(v)}",
                           f"{path}#stdin" if path else "#stdin", str(k))
                break

    def _leaf(self, text: str, path: str, key: str) -> None:
        bits = _key_kind(key) if key else 0
        if self.stores and not bits & (_HOST_BIT | _COMMAND_BIT | _URL_BIT | _CODE_BIT | _PATH_KEY_BIT) \
                and stored_key(key, self.stores):
            # A file's content, a message's body: data, of which only the secrets are facts (`Facts.inert`).
            self.inert.append(path)
            cache = spelled_cache(self.home, KEY_STORED)
        elif not bits & (_HOST_BIT | _COMMAND_BIT | _URL_BIT | _CODE_BIT):
            cache = self.spelled
            if self.shell and ("[" in path or "." in path or bits & _PLACE_BIT):
                # A shell tool runs its top-level texts (`terminal(input="id")`), not a list's items (tags).
                cache = spelled_cache(self.home, KEY_PLAIN)
        elif not self.facts:
            cache = spelled_cache(self.home, KEY_HOST if bits & _HOST_BIT else KEY_NO_FACTS)
        else:
            cache = spelled_cache(self.home, KEY_HOST if bits & _HOST_BIT else (
                KEY_COMMAND if bits & _COMMAND_BIT else KEY_URL if bits & _URL_BIT else KEY_CODE))
        spelled = cache.new.get(text)
        if spelled is None:
            spelled = cache.recall(text)
        if spelled is PLAIN:  # the text is its only spelling (`_spelling.py`)
            self.values.append(tuple.__new__(ArgValue, (path, key, text, (text,), text)))
            return
        if spelled.facts and self.facts:
            derived = self.derived
            for fact in spelled.facts:
                derived.append((fact[0], fact[1], path))
        variants = spelled.variants
        canonical = spelled.canonical
        paths = spelled.paths
        if spelled.hosts and self.resolver is not None:
            resolved = self._resolve_hosts(variants, spelled.hosts)
            if resolved:
                variants += resolved
                paths += tuple(v for v in resolved if v.startswith("/") and "\x00" not in v)
        if paths and self.realpath is not None:
            variants, canonical = self._resolve_links(variants, canonical, paths)
        # As `ArgValue(...)`, without the NamedTuple's `__new__`, a Python frame a value (here and below).
        self.values.append(tuple.__new__(ArgValue, (path, key, text, variants, canonical)))

    def _resolve_hosts(self, variants: tuple[str, ...], hosts: tuple[tuple[str, str, str], ...]) -> tuple[str, ...]:
        """The spellings with a host name replaced by each non-public address it resolves to
        (`http://myhost:9420/` as `http://127.0.1.1:9420/`; `_resolve.py`) that are not spellings already."""
        assert self.resolver is not None
        extra: list[str] = []
        for prefix, host, rest in hosts:
            for address in self.resolver(host) or ():
                spelled = prefix + (f"[{address}]" if ":" in address else address) + rest
                if spelled not in variants and spelled not in extra:
                    extra.append(spelled)
                    if rest and not prefix and address not in extra:
                        extra.append(address)
        return tuple(extra)

    def _resolve_links(self, variants: tuple[str, ...], canonical: str,
                       paths: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
        """`variants` with the real path of each of `paths` (the absolute ones) that is a new spelling."""
        assert self.realpath is not None
        extra: list[str] = []
        for v in paths:
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
    walker = _Walker(None, None, facts=False)
    walker.walk(result, "", "", 0)
    return tuple(v.raw for v in walker.values if v.key not in ("type", "mimeType"))


def _runs_spelled(walker: _Walker) -> bool:
    """Whether a value that is not data names a place something runs in any spelling (the text as sent, its
    normal form, its real path, a path inside JSON carried in a string, a mapping key that is a path)."""
    inert = walker.inert
    for v in walker.values:
        if v.path in inert:
            continue
        for text in v.variants:
            if text[:1] in "/~$.f" and runs_written(text):
                return True
    return False



#: A string literal of a program's source: quoted by ', " or ` on one line (escapes kept as written).
_LITERAL: Final = re.compile(r"""(['"`])((?:\\.|(?!\1)[^\\\n])*)\1""")

def _writes_code(walker: _Walker) -> bool:
    """Whether a storing call writes a program (`_calls_files.code_file`): a value that is not data is one path
    to such a file, or a text it writes starts with `#!`."""
    inert = walker.inert
    for v in walker.values:
        if v.path in inert:
            if v.raw[:2] == "#!" or v.raw.lstrip()[:2] == "#!":
                return True
        elif single_path(v.raw.strip()) or "/" in v.raw or "." in v.raw:
            text = v.raw.strip()
            if len(text) <= 4096 and code_file(text[7:] if text.startswith("file://") else text):
                return True
    return False


def _staged_harm(walker: _Walker) -> bool:
    """Whether a program's content, read as commands (`walker` walked it so), sends data out, opens a socket,
    or reads a credential store and reaches the network (`_calls_files.staged_harm`)."""
    sinks = [text for index, text, _path in walker.derived if index == SINKS]
    files = [text for index, text, _path in walker.derived if index == FILES]
    # the network reached: a URL anywhere in the program (`requests.post(URL, ...)`), or a command of a network
    # program (`dig $line.x.example`, `nc host 80`, `scp`)
    net = any("://" in v.raw for v in walker.values) or any(
        index == PROGRAMS and network_program(text) for index, text, _path in walker.derived)
    return bool(sinks or files) and staged_harm(sinks, files, net)


_default_realpath: Final = CachedRealpath()
_default_resolver: Final = HostResolver()
_HOME: Final = os.path.expanduser("~")


def prepare(call: Call, *, home: str | None = None, resolve_symlinks: bool = True,
            resolve_hosts: bool = True) -> Facts:
    """Derive the facts rules match on: every value at every depth, in every spelling.

    `resolve_symlinks` and `resolve_hosts` are the two steps that touch the machine (the file
    system, the resolver: cached, and bounded in time, see `_resolve.py`).
    """
    if home is None:
        home = _HOME
    flags = tool_flags(call.name)
    # A file or message tool's texts are data, unless it writes where something runs them (`~/.bashrc`, in any
    # spelling: `_runs_spelled`).
    stores = flags if flags & STORE_TOOL else 0
    realpath = _default_realpath if resolve_symlinks else None
    resolver = _default_resolver if resolve_hosts else None
    walker = _Walker(home, realpath, resolver, shell=bool(flags & SHELL_TOOL), stores=stores)
    walker.walk(call.arguments, "", "", 0)
    if walker.inert and _runs_spelled(walker):
        # A place something runs, spelled otherwise or reached through a symlink (`/workspace/rc` -> ~/.bashrc):
        # nothing the call writes is data after all.
        walker = _Walker(home, realpath, resolver, shell=bool(flags & SHELL_TOOL))
        walker.walk(call.arguments, "", "", 0)
    elif walker.inert and _writes_code(walker):
        # A program written where nothing runs it yet (`/workspace/build.sh`, a Makefile): read as commands, and
        # judged so when what it would do is no developer's (`_calls_files.staged_harm`), or when it runs decoded
        # text through a shell (`_calls_files.decoded_run`).
        # A shell's program is its text; another language's commands, URLs and paths are its string literals.
        arguments = call.arguments
        literals = [{"command": m.group(2)} for v in walker.values if v.path in walker.inert
                    for m in _LITERAL.finditer(v.raw[:65536]) if len(m.group(2)) > 3]
        probe = _Walker(home, realpath, resolver, shell=True)
        probe.walk({**arguments, "#literals": literals[:256]} if literals else arguments, "", "", 0)
        if _staged_harm(probe) or any(decoded_run(v.raw) for v in walker.values if v.path in walker.inert):
            walker = probe
    derived = walker.derived
    if flags or (len(derived) > 1 and may_add_facts(flags, derived)):  # a secret and a sink take two facts
        derived += call_facts(call.name, derived, walker.values)
    if "push" in tool_words(call.name):  # a git tool's `{"force": true}` is the command line it runs
        derived += pushed_command(call.name, walker.values)
    for fact in derived:
        if fact[0] == SECRETS:
            # a token sent in its credential slot to the API that issued it is presented, not leaked
            derived = presented(call.name, call.server, derived, walker.values)
            break
    # As `Facts(call, values, ...)`, without the NamedTuple's `__new__` (see `_Walker._leaf`).
    return tuple.__new__(Facts, (call, tuple(walker.values), tuple(walker.keys), tuple(walker.env_keys),
                                 _response_texts(call.result), walker.truncated,
                                 tuple(derived) if derived else (), tuple(walker.inert) if walker.inert else ()))


__all__ = ["ArgValue", "CachedRealpath", "Call", "Context", "Facts", "local_now", "prepare"]
