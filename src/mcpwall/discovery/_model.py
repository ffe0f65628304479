"""What a scan finds: config files, server entries, deduplicated servers, risk.

Everything here is plain data. Secret values (env values, header values) are
held in memory because `init` must write them back unchanged and `proxy
--discover` must pass them to the servers, but no renderer ever prints them:
reports show keys only, and every rendered text goes through the scrubber of
`_secrets.py` as a last line of defence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Severity = Literal["critical", "high", "medium", "low"]
Level = Severity
Transport = Literal["stdio", "streamable-http", "sse"]

#: mcp-seatbelt's weights: a server's score is the sum over its flags.
SEVERITY_SCORES: dict[str, int] = {"critical": 40, "high": 25, "medium": 10, "low": 5}
SEVERITY_ORDER: dict[str, int] = {"critical": 3, "high": 2, "medium": 1, "low": 0}


#: The levels from worst to least, the order every report lists and counts them in.
LEVELS: tuple[Level, ...] = ("critical", "high", "medium", "low")
#: The one label of each level: the table, the `check` footer, Markdown and the recommendations use it.
LEVEL_LABELS: dict[str, str] = {"critical": "CRITICAL", "high": "HIGH", "medium": "MEDIUM", "low": "LOW"}
#: The SARIF `level` of each severity (SARIF has three; critical and high are both errors).
SARIF_LEVELS: dict[str, str] = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}


def level_for(score: int) -> Level:
    """mcp-seatbelt's buckets: >=60 critical, >=30 high, >=10 medium, else low."""
    if score >= 60:
        return "critical"
    if score >= 30:
        return "high"
    if score >= 10:
        return "medium"
    return "low"


def level_of(score: int, severities: Iterable[str]) -> Level:
    """A server's level: the worse of its total's bucket and its worst flag.

    Seatbelt put `bash -c` (one critical flag, 40) in the "high" bucket and then listed it
    under CRITICAL RISKS and failed `check` on it: two labels for one server. Here a server is
    as risky as its riskiest flag, so the level the table shows is the one the gate acts on.
    The score stays seatbelt's sum.
    """
    worst = max((SEVERITY_ORDER[s] for s in severities), default=0)
    by_total = level_for(score)
    return LEVELS[len(LEVELS) - 1 - max(worst, SEVERITY_ORDER[by_total])]


def count_levels(levels: Iterable[str]) -> dict[str, int]:
    """How many servers are at each level, worst first (the one count every summary prints)."""
    counts: dict[str, int] = dict.fromkeys(LEVELS, 0)
    for level in levels:
        counts[level] += 1
    return counts


@dataclass(frozen=True)
class RiskFlag:
    """One risk rule that fired for a server. `evidence` never holds a secret value."""

    rule: str
    severity: Severity
    description: str
    owasp: tuple[str, ...] = ()
    evidence: str = ""
    #: What to do about it, in words a user can act on (never the rule's description again).
    advice: str = ""


@dataclass(frozen=True)
class Risk:
    score: int
    level: Level
    flags: tuple[RiskFlag, ...]

    @property
    def critical(self) -> bool:
        """True when `check` must fail: the level is critical (a critical flag or a critical total)."""
        return self.level == "critical"


@dataclass(frozen=True)
class WrapInfo:
    """An entry that already runs through `mcpwall wrap` (init's own rewrite)."""

    name: str
    home: str | None
    command: str
    args: tuple[str, ...]
    #: The wrapper is this machine's mcpwall. A config can claim to be wrapped with a look-alike
    #: `mcpwall` binary; such an entry is not counted as guarded.
    trusted: bool = False


@dataclass
class ServerEntry:
    """One server as one client configures it, normalised across formats.

    `command`/`args` are what the client launches; for an entry that is
    already wrapped, `wrap` holds the real server command and the risk rules
    look at that. `path` is the key path of the entry inside its file
    (e.g. `("projects", "/src/app", "mcpServers", "fs")`), used to edit it.
    """

    name: str
    client: str
    file: Path
    scope: str
    path: tuple[str | int, ...]
    line: int | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    transport: Transport = "stdio"
    headers: dict[str, str] = field(default_factory=dict)
    disabled: bool = False
    wrap: WrapInfo | None = None
    via_gateway: bool = False
    editable: bool = True
    project: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def effective_command(self) -> str | None:
        return self.wrap.command if self.wrap else self.command

    @property
    def effective_args(self) -> tuple[str, ...]:
        return self.wrap.args if self.wrap else self.args

    @property
    def guarded(self) -> bool:
        """Already routed through mcpwall (wrapped by this mcpwall, or pointed at the gateway)."""
        return (self.wrap is not None and self.wrap.trusted) or self.via_gateway


@dataclass
class Server:
    """A server after deduplication: every entry that launches the same thing."""

    name: str
    key: tuple[Any, ...]
    entries: list[ServerEntry]
    risk: Risk = field(default_factory=lambda: Risk(0, "low", ()))

    @property
    def first(self) -> ServerEntry:
        return self.entries[0]

    @property
    def clients(self) -> list[str]:
        return sorted({e.client for e in self.entries})

    @property
    def names(self) -> list[str]:
        seen: dict[str, None] = {}
        for e in self.entries:
            seen.setdefault(e.name)
        return list(seen)

    @property
    def guarded(self) -> bool:
        return all(e.guarded for e in self.entries)

    @property
    def env(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for e in self.entries:
            for k, v in e.env.items():
                merged.setdefault(k, v)
        return merged

    @property
    def headers(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for e in self.entries:
            for k, v in e.headers.items():
                merged.setdefault(k, v)
        return merged


FileStatus = Literal["ok", "empty", "malformed", "unreadable", "binary", "unsupported"]


@dataclass
class ConfigFile:
    """A client config file that exists, and what reading it gave."""

    client: str
    path: Path
    scope: str
    fmt: str
    status: FileStatus = "ok"
    error: str = ""
    entries: list[ServerEntry] = field(default_factory=list)
    project: str | None = None
    #: Project directories this file names (Claude Code's ~/.claude.json), scanned for project configs.
    known_projects: list[str] = field(default_factory=list)


@dataclass
class ScanResult:
    """Everything one scan found. `problems` are the files that could not be used."""

    home: Path
    platform: str
    projects: list[Path]
    files: list[ConfigFile]
    servers: list[Server]
    seconds: float = 0.0

    @property
    def problems(self) -> list[ConfigFile]:
        return [f for f in self.files if f.status not in ("ok", "empty")]

    @property
    def entries(self) -> list[ServerEntry]:
        return [e for f in self.files for e in f.entries]

    @property
    def critical(self) -> bool:
        return any(s.risk.critical for s in self.servers)


__all__ = [
    "LEVELS",
    "LEVEL_LABELS",
    "SARIF_LEVELS",
    "SEVERITY_ORDER",
    "SEVERITY_SCORES",
    "ConfigFile",
    "FileStatus",
    "Level",
    "Risk",
    "RiskFlag",
    "ScanResult",
    "Server",
    "ServerEntry",
    "Severity",
    "Transport",
    "WrapInfo",
    "count_levels",
    "level_for",
    "level_of",
]
