"""The judge's zero-dependency heuristics: risk factors in a call's arguments, weighted.

mcp-seatbelt's evaluator counts factors (base64 blobs, command-injection
metacharacters, traversal, exfiltration endpoints, sensitive argument keys,
suspicious description words) and only ever steps a decision up to `warn`
unless three pile up. Its metacharacter test fires on ordinary prose (`a; b`).
Here each factor has a weight, and shell syntax counts for more when it shows
up where no shell command belongs (a file name, a query) than in a command
argument, where chaining is normal. The judge denies at a total of 3 (one
high-severity factor, or two medium ones) and warns below.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcpwall.security._classify import CallFacts, classify
from mcpwall.security._json import Flat, strings
from mcpwall.security._prefilter import Prefilter
from mcpwall.security.schema import path_violations

HIGH, MEDIUM, LOW = 3, 2, 1


@dataclass(frozen=True, slots=True)
class Factor:
    name: str
    weight: int
    evidence: str

    def describe(self) -> str:
        return f"{self.name}: {self.evidence}"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_CMD = (r"(?:sudo\s+)?(?:rm|curl|wget|nc|ncat|netcat|bash|sh|zsh|cat|chmod|chown|python[0-9.]*|perl|ruby|php|id|"
        r"whoami|uname|ls|echo|ping|nslookup|dig|base64|eval|exec|env|printenv|powershell|cmd|certutil|bitsadmin)\b")
REVERSE_SHELL = _rx(r"\b(?:nc|ncat|netcat)\b[^|;&\n]*\s-[a-z]*[ec]\s|\b(?:nc|ncat|netcat)\s+-[a-z]*l[a-z]*\s|/dev/(?:tcp|udp)/"
                    r"|\bbash\s+-i\b|\bsocat\b[^\n]*\bexec:|\bmkfifo\s+/tmp/|\bpty\.spawn\(|import\s+socket\s*[,;]"
                    r"|\bsh\s+-i\s*[<>]|\bNew-Object\s+System\.Net\.Sockets\.TCPClient")
DESTRUCTIVE = _rx(r"\brm\s+(?:-[a-z-]+\s+)*-[a-z]*[rf][a-z]*\s+(?:-[a-z-]+\s+)*(?:/\*?|~/?\*?|\*|\$HOME/?\*?|"
                  r"/(?:bin|boot|dev|etc|home|lib|opt|root|sbin|srv|sys|usr|var|tmp)/?\*?)(?=\s|$|;|&|\|)"
                  r"|\bmkfs(?:\.\w+)?\b|\bdd\s+[^\n]*\bof=/dev/|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"
                  r"|\bchmod\s+(?:-R\s+)?0?777\s+/(?:\s|$)|>\s*/dev/[sh]d[a-z]|\b(?:shred|wipefs)\b"
                  r"|\bformat\s+[a-z]:|\bdel\s+/[fsq]\b|--no-preserve-root")
PRIVILEGE = _rx(r"(?:^|[;&|]\s*|\$\(|`)sudo\s|\bsu\s+(?:-\s|-$|root\b|-c\b)|\bchmod\s+[ugoa]*\+s\b"
                r"|\bchmod\s+[0-7]?[4-7][0-7]{3}\s|\bchown\s+root\b|/etc/sudoers|\bpkexec\b|\bdoas\s|\bsetcap\s")
NETWORK_CMD = _rx(r"(?:^|[;&|(`]\s*|\s)(?:curl|wget|nc|ncat|netcat|scp|rsync|ftp|sftp|tftp|telnet|ssh|socat|"
                  r"Invoke-WebRequest|iwr|certutil)\b")
UPLOAD = _rx(r"\bcurl\b[^\n]*\s(?:-d|--data(?:-\w+)?|-F|--form|-T|--upload-file)\b|\bwget\b[^\n]*--post-(?:data|file)")
CHAINING = re.compile(r"&&|\|\||;\s*\S|\|\s*\w|\s&\s*$|\s&\s")
SUBSTITUTION = re.compile(r"\$\([^)\n]{1,200}\)|`[^`\n]{1,200}`|\$\{IFS\}")
#: outside command arguments, backticks are Markdown code spans: only $( ) and ${IFS} count there
SHELL_SUBST = re.compile(r"\$\([^)\n]{1,200}\)|\$\{IFS\}")
INJECTED = _rx(r"(?:;|&&|\|\||\||\$\(|`)\s*" + _CMD)
ENV_DISCLOSURE = re.compile(r"\$\{?(?:PATH|HOME|USER|SHELL|PWD|AWS_[A-Z_]+|[A-Z_]*(?:SECRET|TOKEN|KEY|PASSWORD|"
                            r"PASSWD|CREDENTIALS?)[A-Z_]*)\b\}?|(?:^|[;&|]\s*)(?:printenv|env|set|export\s+-p)\s*(?:$|[;&|])"
                            r"|/proc/self/environ")
JNDI = _rx(r"\$\{\s*(?:jndi|\$\{|lower:|upper:|env:|sys:|java:|::-)")
SQLI = _rx(r"'\s*;\s*(?:drop|delete|insert|update|select|exec|shutdown|truncate|alter|create)\b"
           r"|'\s*(?:or|and)\s+'?[\w]*'?\s*=\s*'?[\w]*|\bunion\s+(?:all\s+)?select\s+(?:null|\d|@@|user\(|version\(|"
           r"concat|char\(|table_name|password|username)|'\s*--|;\s*(?:drop|truncate)\s+table\b"
           r"|\b(?:sleep|benchmark|pg_sleep)\s*\(\s*\d|\bwaitfor\s+delay\b|\bxp_cmdshell\b")
EXFIL_HOST = _rx(r"(?:^|[/.@])(?:webhook\.site|requestbin\.(?:net|com)|[\w-]+\.pipedream\.net|[\w-]+\.ngrok(?:-free)?\."
                 r"(?:io|app|dev)|[\w-]+\.loca\.lt|serveo\.net|[\w-]+\.trycloudflare\.com|interact\.sh|"
                 r"[\w-]+\.oast\.(?:fun|live|me|site|online|pro)|burpcollaborator\.net|canarytokens\.(?:com|org)|"
                 r"pastebin\.com|paste\.ee|hastebin\.com|transfer\.sh|file\.io|0x0\.st|termbin\.com|ix\.io|"
                 r"discord(?:app)?\.com/api/webhooks|api\.telegram\.org/bot|hooks\.slack\.com|ipinfo\.io|"
                 r"ifconfig\.me|requestcatcher\.com|beeceptor\.com|hookbin\.com|mockbin\.org)")
METADATA = _rx(r"169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200|fd00:ec2::254|169\.254\.170\.2"
               r"|metadata\.azure\.com")
LOCAL_URL = _rx(r"^(?:https?|gopher|dict|ftp)://(?:[^/@]*@)?(?:localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[::1?\]|"
                r"10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+)(?:[:/]|$)")
ATTACK_HOST = _rx(r"^(?:[a-z]+://)?(?:[^/@]*@)?(?:[\w-]+\.)*[\w-]*(?:attacker|evil|malicious|malware|exfil|steal|"
                  r"phish|hacker|pwn(?:ed)?|botnet|c2server)[\w-]*\.")
EXFIL_PATH = _rx(r"/(?:collect|exfil\w*|steal\w*|leak\w*|dump|harvest|loot|beacon|grab\w*)(?:[/?#]|$)")
DATA_IN_URL = _rx(r"[?&](?:name|first_?name|last_?name|full_?name|e-?mail|phone|mobile|ssn|dob|birth\w*|address|"
                  r"card\w*|cc|cvv|passport|password|passwd|pwd|secret|token|api_?key|session|cookie|data|payload|"
                  r"creds?|credentials?|steal|stolen|exfil|leak|dump)=[^&#\s]+")
_URL_KEYS = frozenset({"url", "uri", "endpoint", "link", "href", "target_url", "webhook", "callback"})
_SENSITIVE_KEYS = frozenset({"password", "passwd", "secret", "token", "key", "credential", "credentials", "auth",
                             "private", "apikey"})
_DESC = re.compile(r"\b(?:run|exec|spawn|shell|eval|delete|rm|remove|format|wipe)\b", re.IGNORECASE)
_B64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=])")
_KEY_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _encoded_payload(text: str) -> tuple[bool, str] | None:
    """(is_payload, sample) for the first base64 blob; is_payload when it decodes to commands or URLs."""
    m = _B64.search(text)
    if m is None:
        return None
    blob = m.group(0)
    try:
        decoded = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False, blob[:40]
    payload = bool(INJECTED.search(";" + decoded) or NETWORK_CMD.search(decoded) or "://" in decoded
                   or REVERSE_SHELL.search(decoded))
    return payload, decoded[:60] if payload else blob[:40]


#: searched in every string argument, and in command arguments only (each kind counted once)
_ALWAYS = ((REVERSE_SHELL, "reverse-shell", HIGH), (DESTRUCTIVE, "destructive-command", HIGH),
           (PRIVILEGE, "privilege-escalation", HIGH), (JNDI, "jndi-lookup", HIGH),
           (SQLI, "sql-injection", HIGH), (METADATA, "cloud-metadata", HIGH))
_COMMAND = ((NETWORK_CMD, "network-command"), (UPLOAD, "data-upload"), (CHAINING, "command-chaining"),
            (SUBSTITUTION, "command-substitution"), (ENV_DISCLOSURE, "environment-disclosure"))
#: one RE2 pass per string says which of them can match at all (most: none)
_SCREEN = Prefilter([rx for rx, _, _ in _ALWAYS] + [EXFIL_HOST, INJECTED, SHELL_SUBST]
                    + [rx for rx, _ in _COMMAND] + [LOCAL_URL, ATTACK_HOST, EXFIL_PATH, DATA_IN_URL])


def _searcher(text: str, may: frozenset[re.Pattern[str]] | None) -> Callable[[re.Pattern[str]], re.Match[str] | None]:
    if may is None:
        return lambda rx: rx.search(text)
    return lambda rx: rx.search(text) if rx in may else None


def evaluate(tool: str, arguments: Mapping[str, Any], description: str = "", facts: CallFacts | None = None,
             flat: Flat | None = None) -> list[Factor]:
    """Every risk factor in one call (each kind counted once); `facts`: classify's, when known; `flat`: the
    arguments' strings, when the caller has them (`_json.flatten`)."""
    facts = facts or classify(tool, arguments, description, flat=flat)
    found: dict[str, Factor] = {}

    def add(name: str, weight: int, evidence: str) -> None:
        if name not in found or found[name].weight < weight:
            found[name] = Factor(name, weight, evidence[:120])

    command_keys = {"command", "cmd", "script", "shell", "code", "commandline", "command_line", "program"}
    for path, key, text in strings(arguments) if flat is None else flat:
        if len(text) < 2:
            continue
        text = text[:20_000]
        may = _SCREEN.screen(text)
        if may is not None and not may and len(text) < 32:
            continue  # no pattern can match, and too short for an encoded payload
        search = _searcher(text, may)
        is_command = key.lower() in command_keys or (facts.shell and key.lower() in ("args", "argv", "input"))
        for rx, name, weight in _ALWAYS:
            m = search(rx)
            if m:
                add(name, weight, f"{path}: {m.group(0)}")
        m = search(EXFIL_HOST)
        if m:
            add("exfiltration-endpoint", HIGH, f"{path}: {m.group(0)}")
        if is_command:
            for rx, name in _COMMAND:
                if search(rx):
                    add(name, MEDIUM, f"{path}: {text}")
        else:
            m = search(INJECTED)
            if m:
                add("command-injection", HIGH, f"{path}: {m.group(0)}")
            elif search(SHELL_SUBST):
                add("command-substitution", MEDIUM, f"{path}: {text}")
        is_url = "://" in text[:16] or key.lower() in _URL_KEYS
        if is_url:
            if search(LOCAL_URL):
                add("internal-address", MEDIUM, f"{path}: {text}")
            if search(ATTACK_HOST):
                add("attack-named-host", MEDIUM, f"{path}: {text}")
            if search(EXFIL_PATH):
                add("exfiltration-path", LOW, f"{path}: {text}")
            m = search(DATA_IN_URL)
            if m:
                add("data-in-url", MEDIUM, f"{path}: {m.group(0)}")
        encoded = _encoded_payload(text) if len(text) >= 32 else None
        if encoded is not None:
            add("encoded-payload" if encoded[0] else "base64-blob", HIGH if encoded[0] else LOW,
                f"{path}: {encoded[1]}")
    for v in path_violations(arguments, flat=flat):
        add({"nul-byte": "nul-byte", "traversal": "path-traversal", "encoded-traversal": "path-traversal",
             "sensitive-path": "sensitive-path"}[v.kind], HIGH, f"{v.path}: {v.detail}")
    for label, path in facts.sensitive:
        add("sensitive-path", HIGH, f"{label}: {path}")
    for path, key in _keys(arguments):
        if _sensitive_key(key):
            add("sensitive-key", LOW, path)
    if description and _risky_description(description):
        add("description-keyword", LOW, description[:60])
    return sorted(found.values(), key=lambda f: (-f.weight, f.name))


@functools.lru_cache(maxsize=4096)
def _sensitive_key(key: str) -> bool:
    """Whether an argument's name has a credential's word in it (names repeat: asked once each)."""
    return bool(({p.lower() for p in _KEY_PART.findall(key)} | {key.lower()}) & _SENSITIVE_KEYS)


@functools.lru_cache(maxsize=1024)
def _risky_description(description: str) -> bool:
    """Whether a tool's description names a risky verb (a tool's description is asked on every call)."""
    return _DESC.search(description) is not None


def _keys(value: Any, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if depth > 16:
        return out
    if isinstance(value, Mapping):
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            out.append((sub, str(k)))
            out.extend(_keys(v, sub, depth + 1))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_keys(v, f"{path}[{i}]", depth + 1))
    return out


def score(factors: list[Factor]) -> int:
    return sum(f.weight for f in factors)


__all__ = ["HIGH", "LOW", "MEDIUM", "Factor", "evaluate", "score"]
