"""The files a command line touches: its redirections, its programs' operands, globs that name a file.

`cat /etc/passwd` touches `/etc/passwd` as `read_file /etc/passwd` does; `echo x >> ~/.bashrc`,
`tee -a`, `cp`/`mv` targets and `sed -i` write theirs. Paths keep their home as `~` (`$HOME/x`
is `~/x`), the form rules about dot files are written for. A glob operand that matches a file an
attacker names that way (`cat /e*c/pas*wd`) touches that file.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Final

from mcpwall.policy._calls_args import FILES, WRITES, Fact

#: Programs whose (non-option) operands they write: all of them, or only the last.
_WRITES_ALL = frozenset(
    {"tee", "touch", "mkdir", "rm", "rmdir", "unlink", "shred", "truncate", "chmod", "chown", "chgrp", "chattr",
     "vi", "vim", "nvim", "nano", "emacs", "ed", "crontab"}
)
_WRITES_LAST = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_PATHISH = re.compile(
    r"^(?:~|\.{1,2}/|/|\$\{?HOME\}?/|[A-Za-z]:\\)|/|^\.[A-Za-z0-9_][\w.-]*$|^[\w.-]+\.[A-Za-z]\w{0,9}$"
)
_BLANK: Final = re.compile(r"\s")
_NOWHERE: Final = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_REDIRECT = re.compile(r"^(.*?)(\d?&?>>?|<)(.*)$")


def basename(word: str) -> str:
    """A program's name as a command line names it: the last part of its path, lower-cased."""
    return word.rstrip("/").rpartition("/")[2].rpartition("\\")[2].lower()


def home(path: str) -> str:
    """`$HOME/x` and `${HOME}/x` as `~/x` (the form rules about dot files are written for)."""
    if path.startswith("$HOME"):
        return "~" + path[5:]
    if path.startswith("${HOME}"):
        return "~" + path[7:]
    return path


def single_path(text: str) -> bool:
    """Whether a (stripped) text is one path and nothing else: absolute, home, relative or a file: URL."""
    return (
        (text[:1] in ("/", "~", ".") or text.startswith(("$HOME", "${HOME}", "file:")))
        and len(text) <= 4096
        and _BLANK.search(text) is None
    )


def redirections(words: list[str], out: list[Fact]) -> list[str]:
    """The words without their redirections; each redirection's file is touched (and written, for `>`)."""
    kept: list[str] = []
    pending = ""
    for word in words:
        if pending:
            target = home(word)
            if not target.startswith("&") and target not in _NOWHERE:
                out.append((FILES, target))
                if pending == ">":
                    out.append((WRITES, target))
            pending = ""
            continue
        m = _REDIRECT.match(word) if (">" in word or word.startswith("<")) else None
        if m is None or word.startswith("<("):
            kept.append(word)
            continue
        before, op, after = m.groups()
        if before and not before.isdigit():
            kept.append(before)
        kind = "<" if op == "<" else ">"
        if after:
            target = home(after)
            if not target.startswith("&") and target not in _NOWHERE:
                out.append((FILES, target))
                if kind == ">":
                    out.append((WRITES, target))
        else:
            pending = kind
    return kept


def file_operands(program: str, args: list[str], out: list[Fact]) -> None:
    """The paths among a program's operands (and `--opt=path` values) are touched; some programs write them."""
    operands: list[str] = []
    for word in args:
        if word.startswith("-"):
            _, eq, value = word.partition("=")
            if eq and _PATHISH.search(value) and "://" not in value:
                operands.append(value)
            continue
        if "://" in word or "$(" in word:
            continue
        if program == "dd" and word.startswith(("if=", "of=")):
            out.append((FILES, home(word[3:])))
            if word.startswith("of="):
                out.append((WRITES, home(word[3:])))
            continue
        if _PATHISH.search(word) and "=" not in word:
            operands.append(word)
    for path in operands:
        out.append((FILES, home(path)))
        out.extend((FILES, target) for target in _globbed(home(path)))
    if program in _WRITES_ALL:
        out.extend((WRITES, home(p)) for p in operands)
    elif program in _WRITES_LAST and operands and len([a for a in args if not a.startswith("-")]) >= 2 \
            and args[-1] == operands[-1]:
        out.append((WRITES, home(operands[-1])))  # `cp payload /usr/local/bin/ls`: the source need not look a path
    elif program == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args):
        out.extend((WRITES, home(p)) for p in operands)


#: Places whose files something runs or reads as commands or configuration: shell start-up files, cron and
#: systemd, launch agents, git hooks, SSH's keys and rc, sudoers and the rest of /etc, the program
#: directories (`bin`, `sbin`, `~/.local/bin`), autostart entries. A file tool's content written there is run
#: (or decides who logs in); written elsewhere (`README.md`, `src/run.py`, `/workspace/build.sh`) it is data
#: until something runs it, and that call is judged then.
_RUN_PLACES: Final = re.compile(
    # case-blind: macOS and Windows file systems are (`~/.ZSHRC` is `~/.zshrc` there)
    r"(?i)(?:^|/)\.(?:bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin|zlogout|cshrc|"
    r"tcshrc|kshrc|xinitrc|xprofile|xsession|pam_environment|inputrc|envrc|npmrc|pypirc|netrc|gitconfig)$"
    r"|(?:^|/)\.(?:ssh|gnupg|config/(?:fish|systemd|autostart)|kube|docker|aws)(?:/|$)"
    r"|(?:^|/)(?:etc|var/spool|bin|sbin|usr/(?:local/)?s?bin|lib/systemd|usr/lib/systemd|boot|root)(?:/|$)"
    r"|(?:^|/)\.local/bin/|^~/bin/|(?:^|/)\.git/(?:hooks/|config$)|(?:^|/)\.husky/|(?:^|/)\.vscode/(?:tasks|settings|"
    r"launch)\.json$|(?:^|/)\.devcontainer/|(?:^|/)\.github/workflows/|(?:^|/)\.gitlab-ci\.ya?ml$|(?:^|/)Library/(?:LaunchAgents|LaunchDaemons|"
    r"StartupItems)/|\.(?:desktop|service|timer|plist)$|(?i:\\Start Menu\\|CurrentVersion\\Run)"
)


#: Files that are programs: scripts and sources by their extension, the build and task files a tool runs by
#: name, and any file whose content starts with `#!` (`staged_code`). Written by a file tool, their content
#: is data until something runs it; but that later call (`bash build.sh`, `make`, `npm test`) does not show
#: it, so what a program would do that no developer's code does (`_STAGED_HARM`) is judged when it is written.
_CODE_FILE: Final = re.compile(
    r"(?i)\.(?:sh|bash|zsh|ksh|fish|command|py|pyw|js|mjs|cjs|ts|mts|cts|jsx|tsx|rb|pl|pm|php|ps1|psm1|bat|cmd|"
    r"vbs|lua|tcl|go|rs|r|jl|groovy|gradle|kts|mk)$"
    r"|(?:^|[/\\])(?:Makefile|GNUmakefile|makefile|Dockerfile|Containerfile|Justfile|justfile|Rakefile|Vagrantfile|"
    r"Jenkinsfile|Procfile|Taskfile\.ya?ml|package\.json|setup\.py|conftest\.py|noxfile\.py|tox\.ini)$"
)
#: What a written program's content may not do, read as commands (`_facts._staged_harm`): send out data it
#: computes, a file or the environment (`post+file`, `+exec`...), open a socket, a listener or DNS-shaped names,
#: or read a credential store (SSH and cloud keys, keyrings, token files, the shadow file, a process's
#: environment) and reach the network. A project's own `.env` or certificate is not one here: scripts load and deploy those.
#: (a socket to a host and port: `nc -e /bin/sh` quoted in a list of patterns names none)
_STAGED_SINK: Final = re.compile(r"^[a-z]+\+(?:exec|file|pii|encoded|env) |^(?:dns|listen)(?:\+[a-z]+)? "
                                 r"|^socket(?:\+[a-z]+)? [^/\s]\S*:\d+$")
_STAGED_FILE: Final = re.compile(
    r"(?i)(?:^|[/\\~])\.(?:ssh|aws|azure|gnupg|kube|docker|password-store)(?:[/\\]|$)|(?:^|[/\\])\.config[/\\]gcloud"
    r"|(?:^|[/\\])id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?$|(?:^|[/\\])[._](?:netrc|git-credentials|npmrc|pypirc|pgpass|"
    r"vault-token)$|^/etc/(?:shadow|gshadow|sudoers)|/proc/(?:self|\d+)/environ|Library/Keychains|wallet\.dat$"
)

#: Programs that reach another machine (the first word of a command: `dig $x.example`, `nc host 80`).
_NET_PROGRAMS: Final = frozenset({
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "rsync", "ftp", "tftp", "dig",
    "nslookup", "host", "drill", "ping", "openssl", "http", "https", "xh", "aria2c", "lftp", "smbclient",
    "Invoke-WebRequest", "Invoke-RestMethod", "iwr", "irm"})


def network_program(command: str) -> bool:
    """Whether a command's program (its first word, by its base name) reaches another machine (`_NET_PROGRAMS`)."""
    first = command.split(None, 1)[0] if command.strip() else ""
    return first.rpartition("/")[2] in _NET_PROGRAMS


def code_file(path: str) -> bool:
    """Whether a file written at `path` is a program (`_CODE_FILE`)."""
    return _CODE_FILE.search(path) is not None


#: Decoded text run by a shell (`echo ... | base64 -d | sh`, `eval "$(... | base64 -d)"`, `sh -c "$(xxd -r ...)"`): an
#: installer pipes a download it can read into `bash`, no program hides what it runs this way.
_STAGED_DECODED_RUN: Final = re.compile(
    r"(?i)\b(?:base64|base32|xxd|openssl\s+(?:enc|base64))\b[^\n|]*\s(?:-d|-D|--decode|-r)\b[^\n]*\|\s*(?:sudo\s+)?"
    r"(?:env\s+)?(?:/\S*/)?(?:ba|z|da|k|fi)?sh\b"
    r"|\b(?:eval|(?:ba|z|da|k)?sh\s+-c|source|\.)\s+[\"']?\$+\([^)]*\b(?:base64|base32|xxd)\b[^)]*\s(?:-d|-D|--decode|-r)\b"
)


def decoded_run(text: str) -> bool:
    """Whether a program's text runs decoded text through a shell (`_STAGED_DECODED_RUN`)."""
    return _STAGED_DECODED_RUN.search(text) is not None


def staged_harm(sinks: list[str], files: list[str], net: bool) -> bool:
    """Whether a program's content, read as commands, sends out what it may not (`_STAGED_SINK`), or reads a
    credential store (`_STAGED_FILE`) and reaches the network too (`net`: a host or a URL; or a sink): a deploy script that loads
    `~/.ssh/id_rsa` for paramiko reaches no URL."""
    return any(_STAGED_SINK.search(s) for s in sinks) or (
        (net or bool(sinks)) and any(_STAGED_FILE.search(f) for f in files))


def runs_place(path: str) -> bool:
    """Whether a file written at `path` (`~` for the home) is one something runs (`_RUN_PLACES`)."""
    return _RUN_PLACES.search(home(path)) is not None


#: Files an attacker names by a glob (`cat /e*c/pas*wd`): a glob operand that matches one is that file.
_GLOB_TARGETS: Final = (
    "/etc/passwd", "/etc/shadow", "/etc/sudoers", "/etc/gshadow", "/etc/hosts", "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519", "~/.ssh/authorized_keys", "~/.aws/credentials", "~/.bash_history", "~/.bashrc",
    "~/.zshrc", "~/.git-credentials", "~/.netrc", "~/.kube/config", "~/.docker/config.json", ".env",
    "/proc/self/environ", "/root/.ssh/id_rsa",
)


def _globbed(path: str) -> list[str]:
    if not any(c in path for c in "*?["):
        return []
    return [
        t
        for t in _GLOB_TARGETS
        if fnmatch.fnmatchcase(t, path) or fnmatch.fnmatchcase(t, "~/" + path.lstrip("./"))
    ]


#: What a command reads or lists to learn about the machine's software, not its users or secrets: installed
#: programs and libraries (`ls /usr/local/bin`), the OS release, the names in /etc, application logs.
_PUBLIC_READS: Final = re.compile(
    r"^/(?:usr|opt|bin|sbin|lib|lib32|lib64)(?:/|$)"
    r"|^/etc/?$"
    r"|^/etc/(?:[\w.-]*[-_]release|issue(?:\.net)?|debian_version|hostname|hosts|timezone|localtime|shells|"
    r"resolv\.conf|nsswitch\.conf|apt/sources\.list(?:\.d/[\w.-]+)?|nginx/[\w./-]+|apache2/[\w./-]+)$"
    r"|^/var/?$|^/var/log/?$|^/var/log/(?!auth|secure|wtmp|btmp|lastlog|audit|faillog)[\w.-]+(?:/[\w.-]+)*$"
)


def spelled_paths(facts: tuple[Fact, ...]) -> list[str]:
    """The touched files that are spellings of their text (`_spelling.spell`): a `file` rule meets
    `cat /etc/passwd` as it meets `read_file /etc/passwd`. What a command only reads of the machine's
    software (`_PUBLIC_READS`: `ls /usr/local/bin`, `cat /etc/os-release`) is left to the `touches.files`
    rules: seatbelt's block-sensitive-paths refuses all of /etc, /usr and /var to a file tool, and a shell
    reads there all day. Anything written there stays a spelling (`echo x > /etc/hosts`)."""
    written = {t for k, t in facts if k == WRITES}
    out = []
    for k, t in facts:
        if k != FILES:
            continue
        if ".." in t and t[:1] not in "/~$\\" and _DOTS.search(t) is not None:
            t = climbed(t)
        if t in written or "/." in t or _PUBLIC_READS.match(t) is None:
            out.append(t)
    return out


_DOTS: Final = re.compile(r"(?:^|/)\.\.(?:/|$)")
_LEADING_DOTS: Final = re.compile(r"^(?:\.\./)+")


def climbed(path: str) -> str:
    """A relative path with `..` as the file it names when the dots climb to the root (`../../etc/passwd` is
    `/etc/passwd`, `../README.md` is `/README.md`): a command's cwd is not known, and what a climb can reach
    is what the file rules judge. A relative `..` is a shell's everyday `cd ..`, not a way out of a root (a
    file tool's path keeps its `..` for block-path-traversal: it is the text as sent)."""
    norm = posixpath.normpath(path)
    if norm == "..":
        return "/"
    if not norm.startswith("../"):
        return norm
    return "/" + _LEADING_DOTS.sub("", norm + ("/" if path.endswith("/") else ""))


__all__ = ["basename", "climbed", "code_file", "decoded_run", "file_operands", "home", "network_program", "redirections", "runs_place", "single_path",
           "spelled_paths", "staged_harm"]
