"""What a tool call does, read from its name, description and arguments.

Tool names are split into words (`read_text_file`, `sendEmail`,
`playwright_navigate`) and combined with what the arguments hold (paths,
URLs, commands). The attack-chain tracker, the toxic-flow tracker and the
judge all reason on these facts rather than on raw strings.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpwall.policy import canonical_host, forms
from mcpwall.security._json import Flat, strings
from mcpwall.security._paths import PATH_KEYS, looks_like_path, sensitive, system_path

_HOME = os.path.expanduser("~")

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

READ = frozenset({"read", "get", "cat", "view", "show", "open", "load", "list", "search", "query", "find",
                  "head", "tail", "grep", "export", "dump", "fetch", "download", "retrieve", "lookup", "describe",
                  "inspect", "browse", "scan", "select"})
WRITE = frozenset({"write", "create", "save", "put", "append", "edit", "update", "modify", "move", "rename",
                   "copy", "patch", "replace", "insert", "set", "store", "mkdir", "touch", "overwrite"})
SHELL = frozenset({"shell", "bash", "sh", "zsh", "terminal", "powershell", "pwsh", "cmd", "exec", "execute",
                   "eval", "console", "repl"})
RUNNABLE = frozenset({"command", "cmd", "script", "code", "program", "shell", "process"})
NETWORK = frozenset({"http", "https", "fetch", "request", "curl", "wget", "url", "web", "browse", "browser",
                     "navigate", "download", "upload", "webhook", "api", "scrape", "crawl", "socket", "ftp",
                     "ssh", "post", "playwright", "puppeteer"})
#: verbs that push data to someone else
SEND = frozenset({"send", "post", "publish", "reply", "comment", "notify", "tweet", "share", "upload", "push",
                  "forward", "invite", "submit", "sms", "broadcast", "transfer", "webhook", "email", "mail"})
#: nouns of tools that hold private data when read
PRIVATE = frozenset({"email", "emails", "mail", "inbox", "message", "messages", "chat", "chats", "dm", "contact",
                     "contacts", "calendar", "drive", "secret", "secrets", "vault", "credential", "credentials",
                     "password", "passwords", "keychain", "token", "tokens", "customer", "customers", "account",
                     "accounts", "payment", "payments", "invoice", "wallet", "patient", "medical", "health",
                     "ssn", "private", "personal", "salary", "payroll", "hr", "employee", "employees", "bank",
                     "transactions", "history", "notes", "env", "environment"})
#: tools whose results come from outside: fetched pages, search results, other people's messages
UNTRUSTED = frozenset({"fetch", "browse", "browser", "navigate", "scrape", "crawl", "web", "search", "url", "http",
                       "download", "playwright", "puppeteer", "rss", "feed", "inbox", "email", "mail", "issue",
                       "issues", "comment", "comments", "message", "messages", "chat"})

_URL = re.compile(r"^(?:https?|wss?|ftp|sftp|gopher|ldap|dict|tftp)://", re.IGNORECASE)
_COMMAND_KEYS = frozenset({"command", "cmd", "script", "shell", "code", "args", "argv", "commandline",
                           "command_line", "program", "exec"})
_HOST_KEYS = frozenset({"host", "hostname", "domain", "server", "endpoint", "address", "ip"})
_LOCAL_HOSTS = ("localhost", "127.", "::1", "0.0.0.0")
#: how a path may start without a slash in it (`looks_like_path`)
_BARE_PATH = ("~", "%", "$HOME")


def words(name: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(name))


@dataclass(init=False, slots=True)
class CallFacts:
    """The security-relevant facts of one call."""

    tool: str
    words: frozenset[str]
    shell: bool
    reads: bool
    writes: bool
    sends: bool
    network: bool
    urls: list[str]
    hosts: list[str]
    paths: list[str]
    commands: list[str]
    #: (label, path) of sensitive files named in the arguments
    sensitive: list[tuple[str, str]]
    system: list[tuple[str, str]]
    arg_size: int

    # Written out rather than generated: the generated one calls a factory for each of the six lists,
    # and a call's facts are built on every tools/call (a third of classify's cost on a plain call).
    def __init__(self, tool: str, words: frozenset[str], shell: bool = False, reads: bool = False,
                 writes: bool = False, sends: bool = False, network: bool = False) -> None:
        self.tool, self.words, self.shell, self.reads = tool, words, shell, reads
        self.writes, self.sends, self.network = writes, sends, network
        self.urls = []
        self.hosts = []
        self.paths = []
        self.commands = []
        self.sensitive = []
        self.system = []
        self.arg_size = 0

    @property
    def private_source(self) -> str | None:
        """Why this call reads private data, or None."""
        if self.sensitive and not self.writes:
            label, path = self.sensitive[0]
            return f"{label} {path}"
        if (self.words & PRIVATE) and (self.reads or not (self.writes or self.sends)) and not self.sends:
            return f"private-data tool {self.tool}"
        return None

    @property
    def untrusted_source(self) -> str | None:
        """Why this call's result is content from outside, or None."""
        if self.sends or self.writes:
            return None
        remote = [u for u in self.urls if not _local(u)]
        if remote and (self.network or self.reads):
            return f"fetched {remote[0][:120]}"
        if self.words & UNTRUSTED and (self.reads or self.network):
            return f"external content from {self.tool}"
        return None

    def outbound(self, workspace: Sequence[str]) -> str | None:
        """Why this call sends data out of the session's reach (network, message, write elsewhere), or None."""
        remote = [u for u in self.urls if not _local(u)]
        if self.sends:
            target = remote[0] if remote else (self.hosts[0] if self.hosts else "")
            return f"sends data ({self.tool}{' to ' + target[:120] if target else ''})"
        if remote and (self.network or self.shell or not self.reads):
            return f"network request to {remote[0][:120]}"
        if self.shell and any(re.search(r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|ftp|ssh|telnet|socat)\b", c)
                              for c in self.commands):
            return "shell command with a network tool"
        if self.writes and self.paths:
            outside = [p for p in self.paths if not _inside(p, workspace)]
            if outside and workspace:
                return f"write outside the workspace ({outside[0][:120]})"
        return None


def _local(url: str) -> bool:
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1].lower()
    return host.startswith(_LOCAL_HOSTS) or host.startswith("[::1]")


def _inside(path: str, roots: Sequence[str]) -> bool:
    """Inside one of the roots, judged on the canonical spelling (as allow rules are)."""
    _, canonical = forms(path, _HOME)
    for root in roots:
        r = root.rstrip("/")
        if canonical == r or canonical.startswith(r + "/"):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _name_facts(tool: str) -> tuple[frozenset[str], bool, bool, bool, bool, bool]:
    """What a tool's name says (its words; reads, writes, sends, network, shell): asked once per name."""
    ws = words(tool)
    reads = bool(ws & READ)
    sends = (bool(ws & SEND) and not reads) or bool(ws & {"send", "post", "publish", "upload", "forward"})
    return ws, reads, bool(ws & WRITE), sends, bool(ws & NETWORK), bool(ws & SHELL) or ("run" in ws and bool(ws & RUNNABLE))


@functools.lru_cache(maxsize=4096)
def _plain_name(key: str) -> bool:
    """Whether an argument's name makes its value neither a host, a command nor a path (asked once
    per name)."""
    low = key.lower()
    return not (low in _HOST_KEYS or low in _COMMAND_KEYS or key in PATH_KEYS or low in PATH_KEYS)


def _read(facts: CallFacts, key: str, text: str) -> None:
    """What one argument's value adds to the call's facts: a URL and its host, a host, a command, a
    path (and whether it is sensitive or a system location)."""
    low_key = key.lower()
    if _URL.match(text):
        facts.urls.append(text)
        host = text.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        facts.hosts.append(canonical_host(host.split(":", 1)[0] if host.count(":") == 1 else host))
    elif low_key in _HOST_KEYS:
        facts.hosts.append(canonical_host(text))
    if low_key in _COMMAND_KEYS:
        facts.commands.append(text)
        if facts.shell or "command" in low_key or "cmd" in low_key or "script" in low_key:
            facts.shell = True
    elif looks_like_path(key, text):
        facts.paths.append(text)
        label = sensitive(text)
        if label is not None:
            facts.sensitive.append((label, text))
        sys_label = system_path(text)
        if sys_label is not None:
            facts.system.append((sys_label, text))


def classify(tool: str, arguments: Mapping[str, Any], description: str = "", *, flat: Flat | None = None
             ) -> CallFacts:
    """The call's facts; `flat`: the arguments' strings when the caller has them (`_json.flatten`)."""
    ws, reads, writes, sends, network, shell = _name_facts(tool)
    facts = CallFacts(tool, ws, shell, reads, writes, sends, network)
    size = 0
    for _path, key, text in strings(arguments) if flat is None else flat:
        size += len(text)
        # The cheap first test: under a name that says nothing (not a host, command or path argument),
        # a value is a URL or a path only with a slash or a backslash in it, or starting as a home or
        # variable path does (`looks_like_path`); most values of most calls are neither.
        if _plain_name(key) and "/" not in text and "\\" not in text and not text.startswith(_BARE_PATH):
            continue
        _read(facts, key, text)
    for command in facts.commands:
        for token in re.findall(r"(?<![\w$])(?:~|/|\.\.?/)[^\s'\";|&<>]+", command):
            label = sensitive(token)
            if label is not None:
                facts.sensitive.append((label, token))
            elif system_path(token) is not None:
                facts.system.append((str(system_path(token)), token))
        facts.urls.extend(re.findall(r"https?://[^\s'\"<>|;]+", command))
    facts.arg_size = size
    return facts


__all__ = ["NETWORK", "PRIVATE", "READ", "SEND", "SHELL", "UNTRUSTED", "WRITE", "CallFacts", "classify", "words"]
