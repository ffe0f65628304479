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
    "injected",
)
SECRETS, SINKS, FILES, WRITES, PROGRAMS, HOSTS, ENV, INJECTED = range(8)
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
    r"(?:^|[_-])(?i:code|source|source_code|snippet|python|javascript|js|function|expression|pagefunction)$"
    r"|(?<=[a-z])(?:Code|Source|Snippet|Function|Expression)$"
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
#: A text the tool stores or sends as data and nothing runs (`stored_key`): only the secrets in it are facts.
KEY_STORED: Final = 5
#: Texts of which no fact is wanted (a response's, for response rules).
KEY_NO_FACTS: Final = -1


#: Keys whose value a file or message tool keeps as data: what a file holds, a message says, a search asks
#: (`content`, `text`, `body`, an edit's `newText`, an editor's `file_text`).
_STORED_KEY = re.compile(
    r"(?:^|[_-])(?i:content|contents|text|body|message|messages|msg|description|title|subject|comment|comments|"
    r"note|notes|summary|caption|markdown|md|html|reply|status|observations|observation|new_text|old_text|"
    r"newtext|oldtext|new_string|old_string|new_str|old_str|file_text|insert_text|replacement|thought|thoughts|"
    r"reasoning)$"
    r"|(?<=[a-z])(?:Content|Contents|Text|Body|Message|Description|Title|Subject|Comment|Note|Notes|Summary|"
    r"Markdown|Html|String|Str)$"
)
#: Tool-name words of a web search engine's tool: its query is sent to the engine, not run or put in SQL.
_WEB_SEARCH_WORDS: Final = frozenset(
    {"web", "brave", "google", "bing", "duckduckgo", "ddg", "tavily", "exa", "internet", "serp", "serper", "news",
     "perplexity", "kagi", "searx", "searxng", "wikipedia", "arxiv", "scholar", "youtube",
     # a code host's or a documentation site's index (`search_code`, `search_repositories`, `search_docs`)
     "code", "repositories", "repos", "issues", "docs", "documentation", "papers", "packages", "libraries"}
)
#: Tool-name words of a tool whose writing runs later (a cron job, a CI workflow, a hook, a function deployed):
#: what it is given is code, never data.
_RUNS_LATER: Final = frozenset(
    {"cron", "crontab", "schedule", "scheduled", "job", "jobs", "task", "tasks", "hook", "hooks", "webhook",
     "startup", "service", "daemon", "launch", "autostart", "workflow", "workflows", "pipeline", "script",
     "scripts", "macro", "trigger", "automation", "lambda", "function", "functions", "action", "actions", "alias",
     "profile", "plugin", "extension", "deploy", "install"}
)
#: Tool-name words of a tool that keeps what it is given as notes (a thinking or memory tool, a translator).
_NOTE_WORDS: Final = frozenset(
    {"think", "thinking", "sequentialthinking", "thought", "thoughts", "remember", "memorize", "memory", "note",
     "notes", "journal", "translate", "summarize", "summarise", "observations"}
)
#: A web search's question (`query`, `q`): sent to the engine. Elsewhere a `query` is SQL or a filter a server
#: builds one from (`write_query`, `search_users`), and stays a text that may run.
_QUERY_KEY = re.compile(r"(?i)^(?:query|q|search|search_query|searchquery|keywords?|question|prompt)$")
#: By key: 1 data for every storing tool, 2 only for a web search's (its question), 0 never.
_STORED_KEYS: dict[str, int] = {}


def stored_key(key: str, flags: int) -> bool:
    """Whether a key of a storing tool (`STORE_TOOL` among its `flags`) holds data the tool keeps or sends
    (`_STORED_KEY`; for a web search, its question too), cached by key."""
    found = _STORED_KEYS.get(key)
    if found is None:
        found = 1 if _STORED_KEY.search(key) is not None else 2 if _QUERY_KEY.match(key) else 0
        if len(_STORED_KEYS) >= 4096:
            _STORED_KEYS.clear()
        _STORED_KEYS[key] = found
    if not found or not flags & STORE_TOOL:
        return False
    return found == 1 or bool(flags & WEB_SEARCH)


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
#: The tool keeps or sends texts as data and runs none (a file or message tool, a web search): the texts under
#: its `stored_key`s are data (`_facts.prepare`), unless it writes a place something runs (`runs_written`).
STORE_TOOL: Final = 8
#: The tool asks a web search engine (its question is data too: `stored_key`).
WEB_SEARCH: Final = 16
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
        if "search" in words and not words.isdisjoint(_WEB_SEARCH_WORDS):
            flags |= WEB_SEARCH
        if not flags & SHELL_TOOL and words.isdisjoint(_RUNS_LATER) and (
                flags & (WRITE_TOOL | SEND_TOOL | WEB_SEARCH) or not words.isdisjoint(_NOTE_WORDS)):
            flags |= STORE_TOOL
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
    "INJECTED",
    "KEY_CODE",
    "KEY_COMMAND",
    "KEY_HOST",
    "KEY_NO_FACTS",
    "KEY_PLAIN",
    "KEY_STORED",
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
    "STORE_TOOL",
    "WEB_SEARCH",
    "WRITES",
    "WRITE_TOOL",
    "WRITE_WORDS",
    "Fact",
    "key_class",
    "key_role",
    "place_key",
    "stored_key",
    "tool_flags",
    "tool_words",
]
