"""What a call's names say about its arguments: the fact targets, the key classes and the tool's kind.

Before any text is read (`_calls.text_facts`), the key a text sits under says what to read it as
(a command line, a URL, a host, program source, or nothing special), and the tool's name says
whether it runs its arguments as commands (`run_command`, `terminal`), writes files or sends
messages. These answers depend on names only and are cached by name: the same few keys and tools
come in every call.
"""

from __future__ import annotations

import re
from typing import Final

#: The rule targets of the facts, by index (`Facts.derived` holds (index, text, argument path)).
FACT_TARGETS: Final = (
    "secrets_out",
    "sinks",
    "touches.files",
    "touches.writes",
    "touches.programs",
    "touches.hosts",
    "touches.env",
)
SECRETS, SINKS, FILES, WRITES, PROGRAMS, HOSTS, ENV = range(7)
FACT_INDEX: Final = {name: i for i, name in enumerate(FACT_TARGETS)}
#: One fact of a text: (index into FACT_TARGETS, text).
Fact = tuple[int, str]

#: Argument keys whose value is a command line (also as the last word: `shell_command`, `shellCommand`).
_COMMAND_KEY = re.compile(
    r"(?:^|[_-])(?i:command|commands|cmd|cmdline|commandline|command_line|script|shell|bash|"
    r"sh|zsh|powershell|pwsh|exec|run|terminal)$"
    r"|(?<=[a-z])(?:Command|Commands|Cmd|Cmdline|CommandLine|Script|Shell)$"
)
#: Argument keys whose value is a URL even without a scheme (`{"url": "crr3.com?name=x"}`).
_URL_KEY = re.compile(
    r"(?:^|[_-])(?i:url|urls|uri|link|href|endpoint|website|webhook|callback)$"
    r"|(?<=[a-z])(?:Url|URL|Urls|Uri|URI|Link|Href|Endpoint|Webhook)$"
)
#: Keys that name a place, not a command, even in a shell tool's arguments (`cwd`, `path`, `dir`).
_PLACE_KEY = re.compile(
    r"(?:^|[_-])(?i:path|paths|file|filename|filepath|cwd|dir|directory|workdir|"
    r"working_directory|folder|root|home|output|dest|destination|target|env|timeout)$"
    r"|(?<=[a-z])(?:Path|Paths|File|Dir|Directory|Folder|Root|Output|Dest|Destination|Target)$"
)
#: Argument keys whose value is program source a code tool runs (`run_python(code=...)`).
_CODE_KEY = re.compile(
    r"(?:^|[_-])(?i:code|source|source_code|snippet|python|javascript|js)$"
    r"|(?<=[a-z])(?:Code|Source|Snippet)$"
)
#: Keys of a send tool that name its recipients, and of a write tool that name the file written.
MAIL_KEYS: Final = re.compile(
    r"(?i)^(to|cc|bcc|recipient|recipients|email|address|emails|to_address|toaddress|"
    r"recipient_email|to_email)$"
)
_PATH_KEYS = re.compile(
    r"(?:^|[_-])(?i:path|file|filename|filepath|destination|dest|target|output|to)$"
    r"|(?<=[a-z])(?:Path|File|Filename|FilePath|Destination|Dest|Target|Output)$"
)

KEY_PLAIN, KEY_HOST, KEY_COMMAND, KEY_URL, KEY_CODE = 0, 1, 2, 3, 4
#: Texts of which no fact is wanted (a response's, for response rules).
KEY_NO_FACTS: Final = -1


def place_key(key: str) -> bool:
    """Whether a key names a place (a path, a directory) or a setting, not something a shell runs."""
    return _PLACE_KEY.search(key) is not None


def key_class(key: str, host_key: bool) -> int:
    """What an argument key says its value is: a host, a command line, a URL, or nothing special."""
    if host_key:
        return KEY_HOST
    if _COMMAND_KEY.search(key) is not None:
        return KEY_COMMAND
    if _URL_KEY.search(key) is not None:
        return KEY_URL
    if _CODE_KEY.search(key) is not None:
        return KEY_CODE
    return KEY_PLAIN


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
WRITE_WORDS: Final = frozenset(
    {"write", "create", "save", "put", "append", "edit", "update", "modify", "move", "rename", "copy", "patch",
     "replace", "insert", "overwrite", "upload", "mkdir", "touch"}
)
SEND_WORDS: Final = frozenset(
    {"send", "post", "publish", "reply", "email", "mail", "message", "notify", "submit", "upload", "webhook",
     "tweet", "share", "forward", "sms", "chat", "comment"}
)
#: Tool-name words of a tool that runs commands (`run_command`, `terminal`, `execute_shell`).
_SHELL_WORDS: Final = frozenset(
    {"shell", "bash", "sh", "zsh", "terminal", "powershell", "pwsh", "cmd", "exec", "execute", "console"}
)
_RUNNABLE: Final = frozenset({"command", "cmd", "script", "shell", "process"})
_TOOL_WORDS: dict[str, frozenset[str]] = {}


def tool_words(name: str) -> frozenset[str]:
    """The lower-cased words of a tool's name (`sendEmail`, `send_email`: send, email), cached by name."""
    words = _TOOL_WORDS.get(name)
    if words is None:
        words = frozenset(w.lower() for w in _WORD.findall(name))
        if len(_TOOL_WORDS) >= 4096:
            _TOOL_WORDS.clear()
        _TOOL_WORDS[name] = words
    return words


SHELL_TOOL: Final = 1
#: The tool writes files (its path argument is written).
WRITE_TOOL: Final = 2
#: The tool sends messages (its recipients are `mail` sinks, and it is a network sink itself).
SEND_TOOL: Final = 4
CALL_FACTS: Final = WRITE_TOOL | SEND_TOOL
_TOOL_FLAGS: dict[str, int] = {}


def tool_flags(name: str) -> int:
    """SHELL_TOOL when a tool runs its arguments as commands (`run_command`, `terminal`, `execute_shell`:
    every argument text is then a command line, whatever its key, `terminal(input="id")`), WRITE_TOOL and
    SEND_TOOL when it writes or sends (`call_facts` may find a written path or a recipient). Cached by name."""
    flags = _TOOL_FLAGS.get(name)
    if flags is None:
        words = tool_words(name)
        flags = 0
        if not words.isdisjoint(_SHELL_WORDS) or ("run" in words and not words.isdisjoint(_RUNNABLE)):
            flags |= SHELL_TOOL
        if not words.isdisjoint(WRITE_WORDS):
            flags |= WRITE_TOOL
        if not words.isdisjoint(SEND_WORDS):
            flags |= SEND_TOOL
        if len(_TOOL_FLAGS) >= 4096:
            _TOOL_FLAGS.clear()
        _TOOL_FLAGS[name] = flags
    return flags


PATH_ROLE, MAIL_ROLE = 1, 2
_KEY_ROLES: dict[str, int] = {}


def key_role(key: str) -> int:
    """Whether a key names a path (PATH_ROLE) or a recipient (MAIL_ROLE), cached by key."""
    role = _KEY_ROLES.get(key)
    if role is None:
        role = (PATH_ROLE if _PATH_KEYS.search(key) else 0) | (MAIL_ROLE if MAIL_KEYS.match(key) else 0)
        if len(_KEY_ROLES) >= 4096:
            _KEY_ROLES.clear()
        _KEY_ROLES[key] = role
    return role


__all__ = [
    "CALL_FACTS",
    "ENV",
    "FACT_INDEX",
    "FACT_TARGETS",
    "FILES",
    "HOSTS",
    "KEY_CODE",
    "KEY_COMMAND",
    "KEY_HOST",
    "KEY_NO_FACTS",
    "KEY_PLAIN",
    "KEY_URL",
    "MAIL_KEYS",
    "MAIL_ROLE",
    "PATH_ROLE",
    "PROGRAMS",
    "SECRETS",
    "SEND_TOOL",
    "SEND_WORDS",
    "SHELL_TOOL",
    "SINKS",
    "WRITES",
    "WRITE_TOOL",
    "WRITE_WORDS",
    "Fact",
    "key_class",
    "key_role",
    "place_key",
    "tool_flags",
    "tool_words",
]
