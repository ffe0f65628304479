"""Risk rules: mcp-seatbelt's thirteen, fixed where they missed, plus ours.

Each rule looks at one server's launch (command, arguments, environment,
headers, URL, transport) and returns evidence when it fires. Severities and
scores are seatbelt's (critical 40, high 25, medium 10, low 5; a total of 60
is critical, 30 high, 10 medium), and a server's level is never below its
worst flag (`level_of`: seatbelt called `bash -c` "high" and then failed
`check` on it as critical). Evidence names keys and argument positions,
never a secret value; each flag's advice (`_advice.py`) says what to do.

Seatbelt's misses that these rules close (shared/seatbelt-differences.md #8):
`GITHUB_TOKEN` is a credential name (words, not `\\bTOKEN\\b`), `npx -y pkg`
is a package (the package argument is found, not the first), `python3`
and `/usr/bin/python3.12` are interpreters, launchers (`env`, `sudo`) are
seen through, and the command itself counts for privilege escalation.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from mcpwall.discovery import _commands as cmds
from mcpwall.discovery._model import SEVERITY_SCORES, Risk, RiskFlag, Severity, level_of
from mcpwall.discovery._owasp import owasp_tags
from mcpwall.discovery._secrets import is_inline_secret, is_secret_name, secret_args


@dataclass(frozen=True)
class Launch:
    """What the rules look at: one server's launch, with its context."""

    command: str | None
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    transport: str = "stdio"
    home: str | None = None
    local: bool = True  # the command would run on this machine (world-writable checks apply)
    #: Who configures it and whether it already runs through mcpwall: the advice depends on them.
    name: str | None = None
    clients: tuple[str, ...] = ()
    guarded: bool = False

    @cached_property
    def steps(self) -> list[cmds.Step]:
        return cmds.chain(self.command, self.args)

    @cached_property
    def joined_args(self) -> str:
        return " ".join(self.args)


Check = Callable[[Launch], str | None]


@dataclass(frozen=True)
class RiskRule:
    id: str
    severity: Severity
    description: str
    check: Check
    origin: str = "seatbelt"

    @property
    def owasp(self) -> tuple[str, ...]:
        return owasp_tags(self.id)


def _first(items: list[str]) -> str | None:
    return ", ".join(items) if items else None


# -- seatbelt's thirteen -----------------------------------------------------------------------

def _shell(x: Launch) -> str | None:
    return _first([f"command {s.name}" for s in x.steps if cmds.is_shell_or_interpreter(s)][:1])


_DOCKER = frozenset({"docker", "podman", "nerdctl"})
_HOST_NS = re.compile(r"^--(?:network|net|pid|ipc|uts|userns|cgroupns)(?:=|$)")
_CAPS = re.compile(r"^(?:all|sys_admin|sys_ptrace|sys_module|net_admin|dac_read_search)$", re.I)
_SENSITIVE_MOUNT = re.compile(r"^(?:/|/etc|/root|/home|/Users|/var/run/docker\.sock|/run/docker\.sock|~|\$HOME"
                              r"|\$\{HOME\}|%USERPROFILE%|[A-Za-z]:[\\/]?)$")


def _docker(x: Launch) -> str | None:
    for step in x.steps:
        if step.name not in _DOCKER:
            continue
        args, found = list(step.args), []
        for i, a in enumerate(args):
            nxt = args[i + 1] if i + 1 < len(args) else ""
            opt, eq, val = a.partition("=")
            value = val if eq else nxt
            if a == "--privileged":
                found.append(a)
            elif _HOST_NS.match(a) and value.lower() == "host":
                found.append(f"{opt}=host")
            elif opt == "--cap-add" and _CAPS.match(value):
                found.append(f"--cap-add={value}")
            elif opt == "--security-opt" and re.search(r"unconfined|label[=:]disable", value):
                found.append(f"--security-opt={value}")
            elif opt == "--device":
                found.append("--device")
            elif opt in ("-v", "--volume") and _mount_source(value, x.home):
                found.append(f"{opt} {value.split(':')[0]}")
            elif opt == "--mount" and (m := re.search(r"(?:source|src)=([^,]+)", value)) and _mount_source(m.group(1), x.home):
                found.append(f"--mount source={m.group(1)}")
        return _first(found)
    return None


def _mount_source(volume: str, home: str | None) -> bool:
    if re.match(r"^[A-Za-z]:[\\/]", volume):  # C:\Users\me:/data
        source = volume[:2] + volume[2:].split(":", 1)[0]
    else:
        source = volume.split(":", 1)[0]
    source = source.rstrip("/") or "/"
    return bool(_SENSITIVE_MOUNT.match(source)) or (home is not None and source == home.rstrip("/"))


_NO_SANDBOX = ("--no-sandbox", "--disable-web-security", "--allow-running-insecure-content",
               "--unsafely-treat-insecure-origin-as-secure", "--disable-setuid-sandbox",
               "--dangerously-skip-permissions", "--dangerously-bypass-approvals-and-sandbox", "--yolo")


def _no_sandbox(x: Launch) -> str | None:
    return _first(sorted({f for a in x.args for f in _NO_SANDBOX if f in a})[:3])


_NET_TOOLS = frozenset({"curl", "wget", "nc", "ncat", "netcat", "socat", "telnet"})


def _network_tool(x: Launch) -> str | None:
    return _first([f"command {s.name}" for s in x.steps if s.name in _NET_TOOLS][:1])


def _network_transport(x: Launch) -> str | None:
    return f"transport {x.transport}" if x.transport != "stdio" else None


_SPAWN = re.compile(r"\b(eval|exec|spawn|fork|child_process|subprocess)\b", re.I)


def _process_spawn(x: Launch) -> str | None:
    m = _SPAWN.search(x.joined_args)
    return f"argument mentions {m.group(1)}" if m else None


_DESTRUCTIVE = re.compile(
    r"\brm\s+(?:-[A-Za-z]*\s+)*(?:-[A-Za-z]*[rR][A-Za-z]*f|-[A-Za-z]*f[A-Za-z]*[rR]|-[rR]\s+-f|-f\s+-[rR]"
    r"|--recursive\s+--force|--force\s+--recursive)\b|\brmdir\b|\bdel\s+/[fsq]|\brd\s+/s\b|\bformat\s+[A-Za-z]:"
    r"|\bdd\s+if=|\bmkfs(?:\.\w+)?\b|\bshred\b|\bwipefs\b|\bRemove-Item\b[^\n]*-Recurse", re.I)
_DESTRUCTIVE_COMMANDS = frozenset({"rm", "rmdir", "dd", "mkfs", "shred", "wipefs", "format"})


def _destructive(x: Launch) -> str | None:
    named = [s.name for s in x.steps if s.name in _DESTRUCTIVE_COMMANDS or s.name.startswith("mkfs.")]
    if named:
        return f"command {named[0]}"
    m = _DESTRUCTIVE.search(x.joined_args)
    return f"argument pattern '{m.group().split()[0]}'" if m else None


_REMOTE = re.compile(r"(https?://|\bapi\b|\bendpoint\b|\burl\b)", re.I)


def _remote_access(x: Launch) -> str | None:
    m = _REMOTE.search(x.joined_args)
    return f"argument mentions {m.group(1).lower()}" if m else None


def _sensitive_env(x: Launch) -> str | None:
    return _first(sorted(k for k in x.env if is_secret_name(k)))


def _package_runner(x: Launch) -> str | None:
    return _first([f"runner {s.name}" for s in x.steps if cmds.is_package_runner(s)][:1])


_RISKY = ("shell", "bash", "exec", "spawn", "child_process", "fs-extra", "rimraf", "node-fetch", "axios",
          "puppeteer", "playwright", "electron", "vm2", "eval", "vm", "process")


def _risky_package(x: Launch) -> str | None:
    hits = [p.name for s in x.steps for p in cmds.packages(s) if any(r in p.name.lower() for r in _RISKY)]
    return _first(hits[:3])


_PRIV = re.compile(r"\b(chmod|chown|sudo|su\b|doas|pkexec|runas)", re.I)
_PRIV_COMMANDS = frozenset({"sudo", "su", "doas", "pkexec", "runas", "gsudo", "chmod", "chown"})


def _privilege(x: Launch) -> str | None:
    named = [s.name for s in x.steps if s.name in _PRIV_COMMANDS]
    if named:
        return f"command {named[0]}"
    m = _PRIV.search(x.joined_args)
    return f"argument mentions {m.group(1).lower()}" if m else None


_SENSITIVE_PATH = re.compile(
    r"(?:^|[\s=:\"',(])(~(?=/|\s|$)|\$\{?HOME\}?|%USERPROFILE%|%APPDATA%|/home(?=/|\s|$)|/Users/|/root(?=/|\s|$)"
    r"|/etc(?=/|\s|$)|/var/|/tmp(?=/|\s|$)|/private/|[A-Za-z]:[\\/]Users(?=[\\/]|\s|$))", re.I)


def _sensitive_paths(x: Launch) -> str | None:
    m = _SENSITIVE_PATH.search(f"{x.command or ''} {x.joined_args}")
    return f"path {m.group(1)}" if m else None


# -- ours --------------------------------------------------------------------------------------

def _inline_secret(x: Launch) -> str | None:
    env = sorted(k for k, v in x.env.items() if is_inline_secret(k, v))
    headers = sorted(k for k, v in x.headers.items() if is_inline_secret(k, v))
    parts = ([f"env {', '.join(env)}"] if env else []) + ([f"headers {', '.join(headers)}"] if headers else [])
    return "; ".join(parts) or None


def _secret_in_args(x: Launch) -> str | None:
    hidden = secret_args(x.args)
    found = [f"argument {i + 1}" for i in hidden]
    if x.url and secret_args([x.url]):
        found.append("url")
    return _first(found[:3])


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _plaintext_http(x: Launch) -> str | None:
    urls = ([x.url] if x.url else []) + re.findall(r"http://[^\s\"']+", x.joined_args)
    for url in urls:
        try:
            parts = urlsplit(url)
        except ValueError:
            continue
        if parts.scheme.lower() == "http" and parts.hostname and not _is_loopback(parts.hostname):
            return f"http:// to {parts.hostname}"
    return None


def _unpinned(x: Launch) -> str | None:
    return _first([p.name for s in x.steps for p in cmds.packages(s) if not p.pinned][:3])


def _world_writable(x: Launch) -> str | None:
    if not x.local or os.name != "posix" or not x.command:
        return None
    candidates: list[str] = []
    for step in x.steps:
        resolved = step.command if os.path.isabs(step.command) else _which(step.command)
        if resolved:
            candidates.append(resolved)
        candidates.extend(a for a in step.args[:3] if a.startswith("/") and not a.startswith("//"))
    for path in candidates:
        hit = _writable_by_others(Path(path))
        if hit:
            return hit
    return None


@lru_cache(maxsize=512)
def _which(command: str) -> str | None:
    return shutil.which(command)


def _writable_by_others(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_mode & stat.S_IWOTH:
        return f"{path} is world-writable"
    try:
        parent = path.parent.stat()
    except OSError:
        return None
    if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        return f"{path.parent} is world-writable"
    return None


def _broad_filesystem(x: Launch) -> str | None:
    broad = {"/", "~", "~/", "$HOME", "${HOME}", "%USERPROFILE%", "/home", "/Users", "/root"}
    home = (x.home or "").rstrip("/\\")
    for a in x.args:
        value = a.partition("=")[2] if a.startswith("-") and "=" in a else a
        v = value.strip().strip('"')
        if v in broad or re.fullmatch(r"[A-Za-z]:[\\/]?(?:Users[\\/]?)?", v) or (home and v.rstrip("/\\") == home):
            return f"argument {v}"
    return None


RULES: tuple[RiskRule, ...] = (
    RiskRule("shell-interpreter", "critical", "Server uses a shell interpreter as its command", _shell),
    RiskRule("docker-container", "high", "Docker container running with dangerous privileged flags", _docker),
    RiskRule("no-sandbox", "critical", "Server runs with security sandboxing disabled", _no_sandbox),
    RiskRule("network-tool", "high", "Server is a raw network tool capable of arbitrary connections", _network_tool),
    RiskRule("network-transport", "medium", "Server uses a non-stdio transport", _network_transport),
    RiskRule("process-spawn", "high", "Server arguments suggest process spawning capabilities", _process_spawn),
    RiskRule("destructive-fs", "critical", "Server has destructive filesystem operation patterns in arguments",
             _destructive),
    RiskRule("remote-access", "medium", "Server has remote URL patterns in arguments", _remote_access),
    RiskRule("sensitive-env", "high", "Server environment contains sensitive credential-like variable names",
             _sensitive_env),
    RiskRule("package-runner", "medium", "Server uses a package runner", _package_runner),
    RiskRule("risky-package", "high", "Package runner with a package known for shell/filesystem/network access",
             _risky_package),
    RiskRule("privilege-escalation", "critical", "Server has privilege escalation patterns in arguments",
             _privilege),
    RiskRule("sensitive-paths", "medium", "Server references sensitive filesystem paths", _sensitive_paths),
    RiskRule("inline-secret", "high", "A credential is written inline in the config's env or headers",
             _inline_secret, "mcpwall"),
    RiskRule("secret-in-args", "high", "A credential is passed on the command line or in the URL (readable by "
             "every local user via the process list)", _secret_in_args, "mcpwall"),
    RiskRule("plaintext-http", "high", "Plain http:// to a non-loopback host: traffic and credentials travel "
             "unencrypted", _plaintext_http, "mcpwall"),
    RiskRule("unpinned-package", "medium", "Package fetched without a pinned version (npx pkg without @version, "
             "uvx pkg without ==version): every start may run new code", _unpinned, "mcpwall"),
    RiskRule("world-writable-command", "critical", "The server's executable or script can be replaced by any "
             "local user", _world_writable, "mcpwall"),
    RiskRule("broad-filesystem", "high", "Server is granted the whole home directory or the filesystem root",
             _broad_filesystem, "mcpwall"),
)
RULES_BY_ID = {r.id: r for r in RULES}


def assess(launch: Launch, rules: tuple[RiskRule, ...] = RULES) -> Risk:
    """Score one launch: flags in rule order, seatbelt's sum, and the level of `level_of`
    (never below the worst flag), each flag with its advice."""
    from mcpwall.discovery._advice import advice

    flags = []
    for rule in rules:
        evidence = rule.check(launch)
        if evidence:
            flags.append(RiskFlag(rule.id, rule.severity, rule.description, rule.owasp, evidence,
                                  advice(rule.id, launch, evidence)))
    score = sum(SEVERITY_SCORES[f.severity] for f in flags)
    return Risk(score, level_of(score, (f.severity for f in flags)), tuple(flags))


__all__ = ["RULES", "RULES_BY_ID", "Launch", "RiskRule", "assess"]
