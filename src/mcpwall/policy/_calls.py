"""What a call touches and sends: the facts rules match beside the argument texts.

One model for file, shell and network tools (issue 25): `text_facts` reads an
argument text and says which files it touches (and which it writes), which
programs it runs, which hosts it reaches, which network sinks it sends to and
with what, and which secrets leave in it. `cat /etc/passwd` through a shell
tool touches the file `/etc/passwd` as `read_file /etc/passwd` does, and a
rule on `touches.files` (or a `file` rule: the touched paths are spellings of
the text too, `_spelling.py`) sees it whichever tool reaches it.

The facts, by rule target (each fact is one text a rule's values match):

| target | texts |
|---|---|
| `secrets_out` | the type of each secret in an argument (`aws-access-key`, `jwt`, `private-key`, `seed-phrase`, `env-dump`, ...; `high-entropy@sink` for random material in a call that reaches a network sink) |
| `sinks` | `<kind> <destination>`: `url`, `fetch`, `post`, `upload`, `remote`, `local` (to this machine), `query`, `dns`, `socket`, `listen`, `mail`, `spoof` (a userinfo spelled as a host); `+exec`, `+file`, `+pii`, `+encoded`, `+env` when what is sent is a shell substitution, a local file, personal data, an encoded blob or the environment |
| `touches.files` | every path an argument names or a command reads or writes (`~` kept, `$HOME` as `~`) |
| `touches.writes` | the paths written: redirections, `tee`, `cp`/`mv` targets, `sed -i`, a write tool's path |
| `touches.programs` | each command a command argument runs, from its program's basename on (`whoami`, `sudo -l`) |
| `touches.hosts` | the host of every URL and of every network command |
| `touches.env` | environment variables a command prints or sends (`*` for a whole dump) |

The work is split by what it reads: `_calls_args` (what keys and tool names say), `_calls_shell`
(command lines), `_calls_files` (the files they touch), `_calls_net` (network sinks) and
`_calls_secrets` (secrets going out). This module puts them together per text and per call, and is
the one the rest of the policy imports. Everything here is pure text analysis: nothing runs or
resolves.

Cost: `prepare` asks `text_facts` once per new argument text (`_spelling.py` caches the answer),
and most texts are plain: words, numbers, a path, a glob. `_QUIET` is one regular expression that
finds every character and shape any of the readers below would act on (shell syntax, `://`, `$`,
`@`, `=`, a 16-character token run, key armour...); a plain text without one is answered at once
(a path touches itself, anything else touches nothing, twelve words may be a seed phrase), which
tests/security/test_calls_speed.py checks against the full reading on every text of the tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from mcpwall.policy._calls_args import (
    CALL_FACTS,
    ENV,
    FACT_INDEX,
    FACT_TARGETS,
    FILES,
    HOSTS,
    INJECTED,
    KEY_CODE,
    KEY_COMMAND,
    KEY_HOST,
    KEY_NO_FACTS,
    KEY_PLAIN,
    KEY_STORED,
    KEY_URL,
    MAIL_ROLE,
    PATH_ROLE,
    PROGRAMS,
    SECRETS,
    SEND_TOOL,
    SHELL_TOOL,
    SINKS,
    STORE_TOOL,
    WRITE_TOOL,
    WRITES,
    Fact,
    key_class,
    key_role,
    place_key,
    stored_key,
    tool_flags,
    tool_words,
)
from mcpwall.policy._calls_files import home, runs_place, single_path
from mcpwall.policy._calls_net import BARE_URL, EMAIL, NETWORK_PROGRAMS, URL, dns_shaped, url_facts, url_host
from mcpwall.policy._calls_programs import program_facts
from mcpwall.policy._calls_secrets import (
    SecretFinder,
    secret_facts,
    secret_finder,
    seed_only,
    set_secret_finder,
)
from mcpwall.policy._calls_shell import KNOWN_PROGRAMS, command_facts, is_command

#: Whatever any reader acts on: shell syntax and `$` (`_calls_shell`), `://` and `:` (URLs, `file:`),
#: `@` (addresses), `=` and the other shapes of `_calls_secrets.MAYBE_SECRET`.
_QUIET: Final = re.compile(r"[;|&`<>\n$@=:]|[A-Za-z0-9+_~-]{16}|BEGIN|Private-Lines|eyJ|hooks\.slack\.com")
_BLANK: Final = re.compile(r"\s")


def text_facts(text: str, kind: int) -> tuple[Fact, ...]:
    """The facts one argument text gives on its own (its key's class aside), for `_spelling.spell`."""
    if kind == KEY_NO_FACTS:
        return ()
    if kind == KEY_STORED:
        # Data a tool keeps or sends (a file's content, a message): nothing in it runs, only its secrets leave.
        return tuple((SECRETS, t) for t in secret_facts(text))
    if kind == KEY_PLAIN and len(text) < 16 and text.isascii() and text.replace(" ", "").isalnum():
        return ()  # a few short words or a number (the commonest text): no fact can be in it
    if kind == KEY_PLAIN and text and _QUIET.search(text) is None and not text[0].isspace() \
            and not text[-1].isspace():
        # A plain text nothing below would act on (most texts): the answer without reading it.
        if text[0] in "/~.":
            if _BLANK.search(text) is None:
                return ((FILES, text),) if len(text) <= 4096 else ()
        elif seed_only(text):
            return ((SECRETS, "seed-phrase"),)
        else:
            return ()
    return _read(text, kind)


def _read(text: str, kind: int) -> tuple[Fact, ...]:
    """`text_facts` in full: the text read as its key's class says and as its shape says."""
    out: list[Fact] = []
    stripped = text.strip()
    if kind == KEY_CODE and stripped:
        # source a code tool runs is inline code as `python -c` gets it: the same rules judge it
        out.append((PROGRAMS, "code -c " + " ".join(stripped.split())[:4096]))
    elif is_command(stripped, kind):
        out += command_facts(stripped)
    elif ("://" in stripped and URL.match(stripped)) or (kind == KEY_URL and BARE_URL.match(stripped)):
        url_facts(stripped, "url", out)
    elif kind == KEY_HOST and stripped and " " not in stripped:
        host = url_host(stripped)
        out.append((HOSTS, host))
        if dns_shaped(host):
            out.append((SINKS, f"dns {host}"))
    elif single_path(stripped):
        out.append((FILES, home(stripped[7:] if stripped.startswith("file://") else stripped)))
    elif "@" in stripped and (m := EMAIL.match(stripped)) is not None:
        out.append((HOSTS, m.group(1).lower()))
    for program in [t for index, t in out if index == PROGRAMS]:
        program_facts(program, out)  # inline code's environment dumps and file reads, installs from a URL
    found = secret_facts(text)
    if found:
        out += ((SECRETS, t) for t in found)
    return tuple(dict.fromkeys(out)) if out else ()


# ---------------------------------------------------------------- the whole call


_RUNS: dict[str, bool] = {}


def runs_written(text: str) -> bool:
    """Whether a text is one path to a place whose files something runs (`_calls_files.runs_place`): then what a
    storing tool writes in that call is not data (`~/.bashrc`, `/etc/cron.d/x`, `.git/hooks/pre-commit`).
    Cached by text: the same paths come call after call."""
    found = _RUNS.get(text)
    if found is None:
        stripped = text.strip()
        found = bool(stripped) and single_path(stripped) and runs_place(
            stripped[7:] if stripped.startswith("file://") else stripped)
        if len(text) <= 1024:
            if len(_RUNS) >= 4096:
                _RUNS.clear()
            _RUNS[text] = found
    return found


def may_add_facts(flags: int, derived: list[tuple[int, str, str]]) -> bool:
    """Whether `call_facts` can find anything in a call (its `tool_flags`) whose texts gave `derived`."""
    if flags & CALL_FACTS:
        return True
    if not derived:
        return False
    return any(f[0] == SECRETS for f in derived) and any(f[0] == SINKS for f in derived)


_ADDRESSES: Final = re.compile(r"[,;\s]+")
#: The path a write tool's path argument writes, by text (None: not one path), and the addresses a
#: send tool's recipient argument names, by text: the same few values come call after call.
_WRITTEN: dict[str, str | None] = {}
_RECIPIENTS: dict[str, tuple[str, ...]] = {}


def _written(text: str) -> str | None:
    found = _WRITTEN.get(text, "")
    if found == "":
        stripped = text.strip()
        found = home(stripped) if single_path(stripped) else None
        if len(text) <= 1024:
            if len(_WRITTEN) >= 4096:
                _WRITTEN.clear()
            _WRITTEN[text] = found
    return found


def _recipients(text: str) -> tuple[str, ...]:
    found = _RECIPIENTS.get(text)
    if found is None:
        found = tuple(f"mail {a.lower()}" for a in _ADDRESSES.split(text) if EMAIL.match(a))
        if len(text) <= 1024:
            if len(_RECIPIENTS) >= 4096:
                _RECIPIENTS.clear()
            _RECIPIENTS[text] = found
    return found


#: An argument value as `_facts.ArgValue` holds it: (path, key, text, spellings, canonical spelling).
Leaf = tuple[str, str, str, tuple[str, ...], str]


def call_facts(name: str, derived: Iterable[tuple[int, str, str]], leaves: Iterable[Leaf]) -> list[tuple[int, str, str]]:
    """Facts of the whole call beyond its texts': a write tool's path is written, a send tool's recipient is
    a `mail` sink, and random material in a call that reaches a network sink is a secret going out.

    `derived` are the texts' facts, `leaves` the argument values (`_facts.ArgValue`)."""
    extra: list[tuple[int, str, str]] = []
    flags = tool_flags(name)
    writes = flags & WRITE_TOOL
    sends = flags & SEND_TOOL
    if writes or sends:
        for path, key, text, _, _ in leaves:
            role = key_role(key)
            if not role:
                continue
            if writes and role & PATH_ROLE:
                written = _written(text)
                if written is not None:
                    extra.append((WRITES, written, path))
            if sends and role & MAIL_ROLE:
                extra.extend((SINKS, sink, path) for sink in _recipients(text))
    entropy: list[str] = []
    sink = bool(sends)
    for kind, text, path in derived:
        if kind == SECRETS and text == "high-entropy":
            entropy.append(path)
        elif kind == SINKS:
            sink = True
    if entropy and sink:
        extra.extend((SECRETS, "high-entropy@sink", path) for path in entropy)
    return extra


#: A git tool's switch that overwrites a remote's history, as a boolean argument (`{"force": true}`).
_FORCE_KEY: Final = re.compile(r"(?i)^(?:force|force_?push|mirror)$")
_REMOTE_KEY: Final = re.compile(r"(?i)^(?:remote|remote_name|branch|branch_name|refspec|ref)$")


def pushed_command(name: str, leaves: Iterable[Leaf]) -> list[tuple[int, str, str]]:
    """A git tool's push with its force switch on, as the command line it runs (`git push --force origin main`),
    so that `ask-history-rewrite` asks about it as about the command; `force_with_lease` is not the switch.
    Empty for every other call (the tool's name has no `push`)."""
    if "push" not in tool_words(name):
        return []
    forced = ""
    words: list[str] = []
    for path, key, text, _, _ in leaves:
        if _FORCE_KEY.match(key) is not None and text.strip().lower() in ("true", "1", "yes", "on"):
            forced = forced or path
        elif _REMOTE_KEY.match(key) is not None and text and " " not in text:
            words.append(text)
    if not forced:
        return []
    return [(PROGRAMS, " ".join(["git push --force", *words]), forced)]


__all__ = [
    "CALL_FACTS",
    "ENV",
    "FACT_INDEX",
    "FACT_TARGETS",
    "FILES",
    "HOSTS",
    "INJECTED",
    "KEY_CODE",
    "KEY_COMMAND",
    "KEY_HOST",
    "KEY_NO_FACTS",
    "KEY_PLAIN",
    "KEY_STORED",
    "KEY_URL",
    "KNOWN_PROGRAMS",
    "NETWORK_PROGRAMS",
    "PROGRAMS",
    "SECRETS",
    "SHELL_TOOL",
    "SINKS",
    "STORE_TOOL",
    "WRITES",
    "Fact",
    "SecretFinder",
    "call_facts",
    "command_facts",
    "dns_shaped",
    "key_class",
    "may_add_facts",
    "place_key",
    "pushed_command",
    "runs_written",
    "secret_finder",
    "set_secret_finder",
    "stored_key",
    "text_facts",
    "tool_flags",
    "tool_words",
    "url_host",
]
