"""The gateway's own files: a protected set no policy rule can open up (issue 22, SPEC 9).

An agent that can write `<home>/policy.yaml` through an allowed filesystem tool
switches the firewall off (`mode: audit`); one that reads `run/gateway.token`
approves its own held calls. `ProtectedSet` is every path of the gateway's
state: the home and everything under it, every policy file (`extends`, `corp`),
`--servers` files, the token and key files, the ledger with its `-wal`/`-shm`
and checkpoint, the RBAC files, and the mcpwall installation. `check()` finds
an argument value, at any depth, that names one of them in any spelling the
server or a shell could open:

- `~`, `$HOME`, `${HOME}` and other `$VAR`s (the gateway's environment and the server's own `env`:
  Node expands `~` with the server's $HOME),
  percent-encoding, `file:` URIs (`file:///`, `file://localhost/`, any host);
- `.`/`..` segments, duplicate and trailing separators, backslashes;
- relative paths, against every directory the upstream resolves them in
  (its working directory and the directories it was given, as
  server-filesystem resolves against its allowed directories);
- symlinks (the path and any parent), resolved both as the kernel does
  (`link/..` from the link's target) and as Node's `path.resolve` does first;
- case and Unicode composition: compared case-folded and NFC-composed everywhere (conservative on
  case-sensitive disks; server-filesystem opens `cafe\u0301` as `café`);
- words of command lines (`cat ~/.mcpwall/run/gateway.token`): shell word
  splitting with quotes removed, `VAR=path`, `--opt=path`, `-opath`, redirects.

Reads are refused as writes are: reading the token is as bad as writing the
policy. A hard link is another name for the same inode: an existing path with
a link count over 1 is compared by (device, inode) with the protected files
and the files of the home as they were when the set was built (a file created
in the home later, then hard-linked, is not). What a path check cannot see: a
link made or swapped between this check and the server's open, and paths a
program computes (`cat $(printf ...)`). The sandbox (bubblewrap) is the
answer to those.

Renaming an ancestor moves every protected path out from under its name
(`move_file ws/p ws/q` with the home at `ws/p/home`). Two layers: a call that
can mutate (`mutates`: its tool's verbs, its argument names, a command line
with a mutating program) may not name a protected root or any ancestor of one
in a path argument or a command word (reads and listings of `/` or `~` stay
allowed); and identity: the (device, inode) of the protected directories
(the home and the directories directly in it, the state and installation directories)
and files are kept, and an existing path whose file, or any existing ancestor,
has one of them is refused, so a home renamed by other means is still known.

The set is built once (at start and on each policy reload); `check` only
resolves strings that can be paths, with a short-lived realpath cache.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import stat
import sys
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from mcpwall.policy._facts import CachedRealpath
from mcpwall.policy._realpath import forget_all

RULE_ID = "mcpwall.self-protection"

#: Argument bounds beyond which the call is refused rather than half inspected.
MAX_VALUES = 20_000
MAX_DEPTH = 64
#: Longest string split into shell words with shlex (longer ones: on blanks and operators).
MAX_TEXT = 16 * 1024
#: Longest string parsed as embedded JSON.
MAX_JSON = 1024 * 1024
#: Longest single word considered as a path. Not PATH_MAX: Node's path.resolve shortens
#: `/././.../policy.yaml` before it opens it, so a padded path must be normalised, not skipped.
MAX_PATH = 4 * 1024 * 1024
_PATH_MAX = 4096

#: Argument names whose values are paths even without a separator (a bare `policy.yaml`).
PATH_KEYS = frozenset(k.casefold() for k in (
    "path", "paths", "file", "files", "filename", "filepath", "file_path", "dir", "dirname", "directory",
    "folder", "source", "destination", "dest", "dst", "src", "target", "cwd", "root", "location", "uri",
    "url", "from", "to", "output", "input", "old_path", "new_path", "oldPath", "newPath", "workdir",
    "working_directory", "workingDirectory", "repo_path", "repoPath", "notebook_path", "image_path",
))
#: Argument names whose values are command lines (split into shell words even over several lines).
COMMAND_KEYS = frozenset(k.casefold() for k in (
    "command", "cmd", "commands", "script", "shell", "code", "commandLine", "command_line", "line", "run",
    "exec", "args", "argv", "stdin", "input", "program", "bash", "sh",
))
#: Argument names of the directory a command runs in: not moved by the call, but where its relative
#: words and globs are resolved (`rm -rf .` or `rm -rf *` with `cwd: ~`).
CWD_KEYS = frozenset(k.casefold() for k in ("cwd", "workdir", "working_directory", "workingDirectory", "cwd_path"))
_GLOB = re.compile(r"[*?\[]")
#: Programs that write paths their command line does not name (an archive's members) into the
#: directory they run in: with one of them the call's cwd is itself checked as an ancestor.
_EXTRACTING = re.compile(r"(?:^|[\s/;&|(`])(?:tar|bsdtar|unzip|cpio|7z|7za|pax|rsync|ar)(?=$|[\s;&|)`])")
#: A string holding none of these cannot name a path, unless it is a bare protected name.
_PATHY = re.compile(r"[/\\~$%:]")
#: ... nor be a command line or anything but one plain word.
_SPECIAL = re.compile(r"[/\\~$%:<>|;&`\s]")
#: A string a shell would split into several words.
_SHELLY = re.compile(r"[<>|;&`\s]")
_JSON_OPENERS = ("{", "[")
#: Words of a tool name that say it can move, delete or replace what a path names.
MUTATING_VERBS = frozenset((
    "move", "mv", "rename", "delete", "del", "remove", "rm", "unlink", "rmdir", "write", "edit", "create",
    "mkdir", "copy", "cp", "ln", "link", "symlink", "chmod", "chown", "truncate", "replace", "put", "save",
    "upload", "patch", "append", "extract", "unzip", "untar", "overwrite", "set", "update", "modify", "apply",
    "restore", "mount", "install", "trash", "purge", "erase", "wipe", "clean", "mirror", "sync", "archive",
))
#: Argument names that say a call moves or copies something (the value of either end may be an ancestor).
MUTATING_KEYS = frozenset(k.casefold() for k in (
    "source", "destination", "from", "to", "src", "dest", "dst", "target", "newPath", "oldPath", "new_path",
    "old_path", "newName", "new_name", "destination_path", "source_path", "destinationPath", "sourcePath",
))
#: Programs of a command line that move, delete or replace what their arguments name.
MUTATING_PROGRAMS = frozenset((
    "mv", "rm", "rmdir", "cp", "ln", "rsync", "chmod", "chown", "chgrp", "tar", "unlink", "install",
    "truncate", "shred", "rename", "mkdir", "dd", "git", "unzip", "mount", "bsdtar", "cpio", "trash",
    "trash-put", "gio", "python", "python3", "node", "perl", "ruby", "deno", "bun",
))
#: find(1) actions that change what it finds.
_FIND_ACTIONS = frozenset(("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls"))
_TOOL_WORDS = re.compile(r"[a-z]+|[A-Z][a-z]*|[0-9]+")
#: A mutating program or find action as a word of a command line, once quotes and backslashes are
#: taken out (`r\\m`, `'rm'`, `"r"m`); by basename (`/bin/rm`). A cheap over-approximation: it only
#: decides whether the line's words are also checked as ancestors.
_MUTATING_WORD = re.compile(
    r"(?:^|[\s/;&|(`$={}])(?:" + "|".join(re.escape(p) for p in sorted({*MUTATING_PROGRAMS, *_FIND_ACTIONS},
                                                                        key=len, reverse=True))
    + r")(?=$|[\s;&|)`}])")
_UNQUOTE = str.maketrans("", "", "'\"\\")
_SPLIT = re.compile(r"[\s<>|;&`()'\"]+")
_STRIP = "\"'`()<>;|&{}"


@dataclass(frozen=True, slots=True)
class Finding:
    """An argument that names a protected path: what it said, where, and what it reaches."""

    where: str
    text: str
    resolved: str
    what: str

    @property
    def reason(self) -> str:
        return (f"argument {self.where or '(value)'} names {self.what} ({self.resolved}): the gateway's own "
                "files cannot be read or changed through a tool, whatever the policy allows")


#: A server's own environment variables, as (name, value) pairs: hashable, empty for most servers.
ServerEnv = tuple[tuple[str, str], ...]
_VAR = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")


def server_env(env: Mapping[str, Any] | None) -> ServerEnv:
    """The `env` of a server's spec as `check` takes it (string values only)."""
    return tuple(sorted((str(k), v) for k, v in (env or {}).items() if isinstance(v, str)))


def _expand(text: str, env: ServerEnv) -> str:
    """`$VAR` and `${VAR}` expanded as the server's shell would: its own variables first, then the
    environment it inherited (unknown names are left as written, as os.path.expandvars does)."""
    own = dict(env)

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        value = own.get(name, os.environ.get(name))
        return m.group(0) if value is None else value

    return _VAR.sub(one, text)


#: How long a path's resolution is trusted (a symlink swapped within it is a race no path check wins).
_TTL = 2.0


def _fold(path: str) -> str:
    """Case-folded and, past ASCII, Unicode-composed (NFC): server-filesystem opens a path that does
    not exist as written at the entry whose NFC form equals it (`cafe\u0301` opens `café`), and some
    disks compare names normalisation-insensitively (APFS), so every composition is one path."""
    if path.isascii():
        return path.casefold()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).casefold())


def _lexical(path: str) -> str:
    """`.`, `..`, `//` and a trailing `/` removed, as Node's path.resolve does (no file system)."""
    out = os.path.normpath(path)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out


class ProtectedSet:
    """The gateway's own paths, case-folded, in both their written and their resolved forms."""

    def __init__(self, dirs: Mapping[str, str], files: Mapping[str, str], user_home: str,
                 cwd: str | None = None) -> None:
        self.dirs: tuple[tuple[str, str], ...] = tuple(dirs.items())
        self.files: dict[str, str] = dict(files)
        self.user_home = user_home
        #: the gateway's process: its /proc entries hold its environment ($MCPWALL_TOKEN), memory, fds
        self.pid = os.getpid()
        self.cwd = cwd or os.getcwd()
        self._realpath = CachedRealpath(ttl=_TTL, size=8192, shared=False)  # see forget
        self._covered: dict[tuple[str, bool], tuple[float, tuple[str, str] | None]] = {}
        self._reached: dict[tuple[str, tuple[str, ...], bool, ServerEnv], tuple[float, tuple[str, str] | None]] = {}
        #: (st_dev, st_ino) of the protected files and of the files in the home when the set was built
        self.inodes: dict[tuple[int, int], str] = {}
        #: ... of the protected files themselves (found whatever their link count: a renamed directory)
        self.file_inodes: dict[tuple[int, int], str] = {}
        #: ... of the protected directories: the home and every directory in it, state, installation
        self.dir_inodes: dict[tuple[int, int], str] = {}
        #: every proper ancestor of a protected entry, case-folded: renaming one renames the entry
        self.ancestors = frozenset(a for p in (*self.files, *dict(self.dirs)) for a in _parents(p))
        #: the last one to three segments of each protected directory: where it would be found again
        #: under an ancestor renamed behind the gateway's back (`q/home` after `mv p q`)
        self.tails: tuple[str, ...] = ()
        #: stat results of this call's check (an ancestor is stat'ed once per call)
        self._stats: dict[str, tuple[int, int] | None] = {}
        #: the last path segment of every protected entry: a bare word worth resolving
        self.names = frozenset(p.rsplit("/", 1)[-1] for p in (*self.files, *dict(self.dirs)) if p.strip("/"))

    @classmethod
    def build(cls, home: Path | str, policy_paths: Iterable[Path | str] = (), *,
              servers_files: Iterable[Path | str] = (), token_files: Iterable[Path | str] = (),
              ledger_paths: Iterable[Path | str] = (), rbac_files: Iterable[Path | str] = (),
              installation: bool = True, extra_dirs: Iterable[Path | str] = (),
              programs: Iterable[tuple[Path | str, str]] = (),
              client_configs: Iterable[Path | str] = ()) -> ProtectedSet:
        """The set for a gateway whose home is `home` (called at start and on each policy reload).
        `programs`: (path, label) of the code of the servers it starts (see `server_programs`);
        `client_configs`: the clients' configs `init` pointed at the gateway (each holds its client's
        named token, and an edit of one would take that client around the gateway)."""
        dirs: dict[str, str] = {}
        files: dict[str, str] = {}
        written: list[Path] = []  # the files as named (the table holds them case-folded)

        def add(table: dict[str, str], path: Path | str, label: str) -> None:
            text = os.path.expanduser(str(path))
            if not text:
                return
            absolute = _lexical(os.path.abspath(text))
            if table is files:
                written.append(Path(absolute))
            for form in (absolute, _lexical(os.path.realpath(absolute))):
                table.setdefault(_fold(form), label)

        add(dirs, home, "the gateway's home")
        for p in extra_dirs:
            add(dirs, p, "the gateway's state")
        for p in policy_paths:
            add(files, p, "a policy file")
        for p in servers_files:
            add(files, p, "a server list of the gateway")
        for p in token_files:
            add(files, p, "a token or key file")
        for p in rbac_files:
            add(files, p, "an RBAC file")
        for p in client_configs:
            add(files, p, "a client's config that init pointed at the gateway")
        for p in ledger_paths:
            for suffix in ("", "-wal", "-shm", "-journal"):
                add(files, f"{p}{suffix}", "the ledger")
        if installation:
            for path, label in install_paths():
                add(dirs, path, label)
        for program, label in programs:
            add(dirs, program, label)
        inodes: dict[tuple[int, int], str] = {}
        file_inodes: dict[tuple[int, int], str] = {}
        dir_inodes: dict[tuple[int, int], str] = {}
        state_dirs = [Path(os.path.expanduser(str(home))), *(Path(os.path.expanduser(str(p))) for p in extra_dirs)]
        for file in _files_under(state_dirs, written):
            with contextlib.suppress(OSError):
                st = os.stat(file)
                if stat.S_ISREG(st.st_mode):
                    inodes.setdefault((st.st_dev, st.st_ino), str(file))
        for file in written:
            with contextlib.suppress(OSError):
                st = os.stat(file)
                if stat.S_ISREG(st.st_mode):
                    file_inodes.setdefault((st.st_dev, st.st_ino), str(file))
        roots = [*state_dirs, *(Path(p) for p, _ in (install_paths() if installation else ()))]
        for top in [*roots, *_dirs_under(state_dirs)]:
            with contextlib.suppress(OSError):
                st = os.stat(top)
                if stat.S_ISDIR(st.st_mode):
                    dir_inodes.setdefault((st.st_dev, st.st_ino), str(top))
        guard = cls(dirs, files, os.path.expanduser("~"))
        guard.inodes = inodes
        guard.file_inodes = file_inodes
        guard.dir_inodes = dir_inodes
        tails: dict[str, None] = {}
        for top in roots:
            parts = [p for p in str(top).split("/") if p]
            for k in range(1, min(3, len(parts)) + 1):
                tails.setdefault("/".join(parts[-k:]), None)
        guard.tails = tuple(tails)
        return guard

    # ------------------------------------------------------------------ one path

    def covers(self, path: str, ancestor: bool = False) -> tuple[str, str] | None:
        """(label, protected form) when the absolute `path`, in any resolution, is protected;
        `ancestor`: also when it is an ancestor of a protected path (a call that can move it)."""
        now = time.monotonic()
        key = (path, ancestor)
        cached = self._covered.get(key)
        if cached is not None and now - cached[0] < _TTL:
            return cached[1]
        if "\x00" in path:
            path = path.split("\x00", 1)[0]
        lexical = _lexical(path)
        if len(path) > _PATH_MAX:
            # The kernel refuses it (ENAMETOOLONG); only what Node's path.resolve shortens it to opens.
            # (Walking it as written would also cost one lstat per segment: megabytes of `x/..`.)
            forms = {lexical, self._realpath(lexical)}
        else:
            forms = {lexical, self._realpath(path)}  # as the kernel walks it: `link/..` from the target
            if ".." in path:
                forms.add(self._realpath(lexical))  # as Node's path.resolve does first
        result: tuple[str, str] | None = None
        # `/proc/self` written is the server's process: the gateway's realpath of it names the gateway's own
        theirs = _PROC_SELF.match(lexical) is not None
        for form in forms:
            folded = _fold(form)
            if folded.startswith("/proc/") and not (theirs and form != lexical) and self._own_process(folded):
                result = ("the gateway's own process (its environment, memory and open files)", form)
                break
            hit = self._covers_one(folded)
            if hit is not None:
                result = (hit, form)
                break
            if ancestor and folded in self.ancestors:
                result = ("a directory holding the gateway's own files (moving, deleting or replacing it "
                          "would move them)", form)
                break
        if result is None and len(path) <= _PATH_MAX:
            result = self._identity(path, forms, ancestor)
        if len(self._covered) >= 8192:
            self._covered.clear()
        self._covered[key] = (now, result)
        return result

    def forget(self) -> None:
        """Drop what was resolved: a call that can change the file system (a move of a directory
        holding a symlink to the home) has been let through, and a path that named nothing before
        it may name the gateway's files after it. Without this, a path checked (and cached) just
        before such a move was trusted for two seconds after it."""
        self._covered.clear()
        self._reached.clear()
        self._realpath.forget()
        forget_all()  # the policy engine's: its file rules resolve symlinks through the same kind of cache

    def _identity(self, path: str, forms: Iterable[str], ancestor: bool = False) -> tuple[str, str] | None:
        """By (device, inode): a protected file under another name (a hard link, a renamed parent), or
        a path inside a protected directory that was renamed (its ancestors are stat'ed once a call)."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            st = None
        if st is not None:
            ident = (st.st_dev, st.st_ino)
            if stat.S_ISREG(st.st_mode):
                other = self.file_inodes.get(ident)
                if other is None and st.st_nlink > 1:
                    other = self.inodes.get(ident)
                if other is not None and _still_ours(other, ident):
                    how = "a hard link to" if st.st_nlink > 1 else "under another name:"
                    return (f"{how} a file of the gateway's ({other})", other)
            elif stat.S_ISDIR(st.st_mode):
                other = self.dir_inodes.get(ident)
                if other is not None:
                    return (f"a directory of the gateway's under another name ({other})", other)
                for tail in self.tails if ancestor else ():
                    # a directory that holds a protected one moved here (its lower names kept)
                    with contextlib.suppress(OSError, ValueError):
                        inner = os.stat(os.path.join(path, tail))
                        other = self.dir_inodes.get((inner.st_dev, inner.st_ino))
                        if other is not None:
                            return (f"a directory holding a directory of the gateway's under another name "
                                    f"({other})", other)
        if not self.dir_inodes:
            return None
        stats = self._stats
        for form in forms:
            for parent in _parents(form):
                ident2 = stats.get(parent, ())
                if ident2 == ():
                    try:
                        pst = os.stat(parent)
                        ident2 = (pst.st_dev, pst.st_ino)
                    except (OSError, ValueError):
                        ident2 = None
                    stats[parent] = ident2
                if ident2 is not None and ident2 in self.dir_inodes:
                    other = self.dir_inodes[ident2]
                    return (f"a path inside a directory of the gateway's under another name ({other})", other)
        return None

    def _own_process(self, folded: str) -> bool:
        """`/proc/PID/...` of the gateway, or of one of its threads (`/proc/TID/environ` is the
        process's environment too, though TIDs are not listed in /proc)."""
        m = _PROC_PID.match(folded)
        if m is None:
            return False
        n = int(m.group(1))
        if n == self.pid:
            return True
        try:
            with open(f"/proc/{n}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Tgid:"):
                        return int(line.split()[1]) == self.pid
        except (OSError, ValueError, IndexError):
            return False
        return False

    def _covers_one(self, folded: str) -> str | None:
        label = self.files.get(folded)
        if label is not None:
            return label
        for d, label in self.dirs:
            if folded == d or folded.startswith(d + "/") or d == "/":
                return label
        return None

    def spellings(self, text: str, env: ServerEnv = ()) -> list[str]:
        """The absolute paths (before resolution) a path argument can mean; relative ones stay relative.
        `env`: the server's own environment (its `env` in the servers file), under which it expands
        `~` (Node's os.homedir() is its $HOME) and a shell expands `$VAR`, besides the gateway's."""
        out: list[str] = []
        pending = [text]
        current = text
        for _ in range(3):
            if "%" not in current:
                break
            decoded = unquote(current)
            if decoded == current:
                break
            pending.append(decoded)
            current = decoded
        for item in list(pending):
            low = item[:5].lower()
            if low == "file:":
                rest = item[5:]
                if rest.startswith("//"):
                    slash = rest.find("/", 2)
                    rest = rest[slash:] if slash >= 0 else "/"
                rest = rest.split("?", 1)[0].split("#", 1)[0]
                pending.append(rest)
                pending.append(unquote(rest))
        for item in list(pending):
            if item.startswith("~"):
                own = item == "~" or item.startswith(("~/", "~\\"))
                pending.append(self.user_home + item[1:] if own else os.path.expanduser(item))
                if own:
                    pending.extend(v + item[1:] for k, v in env if k == "HOME")
            if "$" in item or "%" in item:
                pending.append(os.path.expandvars(item))
                if env and "$" in item:
                    pending.append(_expand(item, env))
            if "\\" in item:
                pending.append(item.replace("\\", "/"))
        seen: dict[str, None] = {}
        for item in pending:
            if item and len(item) <= MAX_PATH:
                seen.setdefault(item, None)
        out.extend(seen)
        return out

    def reaches(self, text: str, bases: tuple[str, ...], ancestor: bool = False,
                env: ServerEnv = ()) -> tuple[str, str] | None:
        """Is `text` (one path-like word) a protected path, absolute or relative to any of `bases`?
        `ancestor`: or an ancestor of one (in a call that can move, delete or replace it)."""
        now = time.monotonic()
        key = (text, bases, ancestor, env)
        cached = self._reached.get(key)
        if cached is not None and now - cached[0] < _TTL:
            return cached[1]
        result = self._reaches(text, bases, ancestor, env)
        if len(self._reached) >= 8192:
            self._reached.clear()
        self._reached[key] = (now, result)
        return result

    def _reaches(self, text: str, bases: tuple[str, ...], ancestor: bool,
                 env: ServerEnv) -> tuple[str, str] | None:
        for spelling in self.spellings(text, env):
            if spelling.startswith("/"):
                candidates: Iterable[str] = (spelling,) if "proc" not in spelling else _proc_views(spelling, bases)
            elif spelling.startswith("~") or "://" in spelling:
                continue
            else:
                candidates = (os.path.join(b, spelling) for b in bases)
            for candidate in candidates:
                hit = self.covers(candidate, ancestor)
                if hit is not None:
                    return hit
        return None

    # ------------------------------------------------------------------ a call's arguments

    def check(self, args: Any, cwd_candidates: Iterable[str] = (), *, mutating: bool = False,
              env: ServerEnv = ()) -> Finding | None:
        """The first argument value that names a protected path, else None.

        `mutating`: the call can move, delete or replace what it names (see `mutates`): a path
        argument or command word naming an ancestor of a protected path is a finding too.

        `cwd_candidates`: the directories a relative path may be resolved in by the upstream
        (its working directory, its allowed directories). The gateway's own working directory
        is always one of them (a server started without `cwd` inherits it).

        `env`: the server's own environment variables (see `spellings`).
        """
        bases = cwd_candidates if isinstance(cwd_candidates, tuple) else tuple(cwd_candidates)
        if self.cwd not in bases:
            bases = (*bases, self.cwd)
        walker = _Walk(self, bases, mutating, env)
        if mutating and type(args) is dict:
            # The call's own working directory: where its relative words and globs move things.
            given = [os.path.expanduser(v) for k, v in args.items() if type(v) is str and k.casefold() in CWD_KEYS]
            given = [os.path.abspath(v) for v in given if v.startswith("/")]
            if given:
                walker.moved_in = tuple(given)
                walker.extracting = any(type(v) is str and k.casefold() in COMMAND_KEYS
                                        and _EXTRACTING.search(v.translate(_UNQUOTE).casefold()) is not None
                                        for k, v in args.items())
        self._stats = {}
        try:
            walker.walk(args, "", "", 0)
        except _Found as found:
            return found.finding
        return None


#: A process's view of the file system through procfs: `/proc/self/cwd`, `/proc/thread-self/root`,
#: `/proc/self/task/TID/cwd`, `/proc/PID/cwd`. `self` is the server, not the gateway, whose
#: realpath of it names the gateway's own cwd.
_PROC_SELF = re.compile(r"^/proc/(?:self|thread-self)(?=/|$)", re.IGNORECASE)
_PROC_PID = re.compile(r"^/proc/([0-9]{1,10})(?=/|$)")
_PROC_LINK = re.compile(r"^/+proc/+(?:self|thread-self|[0-9]+)(?:/+task/+[0-9]+)?/+(cwd|root)(?=/|$)")


def _proc_views(path: str, bases: tuple[str, ...]) -> list[str]:
    """`path`, and what it names for a server whose cwd is one of `bases` when it goes through a
    process's procfs links (as written, and with `.`/`//` removed first as Node does)."""
    out = [path]
    for form in (path, _lexical(path)):
        m = _PROC_LINK.match(form)
        if m is None:
            continue
        rest = form[m.end():]
        if m.group(1) == "root":
            out.append("/" + rest.lstrip("/"))
        else:
            out.extend(base + rest for base in bases)
    return out


def _parents(path: str) -> list[str]:
    """The proper ancestors of an absolute path, nearest first, ending with `/`."""
    out: list[str] = []
    while True:
        parent = path.rsplit("/", 1)[0] or "/"
        if parent == path or not path.startswith("/"):
            return out
        out.append(parent)
        path = parent


def _dirs_under(dirs: Iterable[Path], limit: int = 256) -> list[Path]:
    """The directories directly in the state directories (`run/`, `sessions/`...), bounded: long-lived
    ones (an inode of a deleted directory may be given to a new one elsewhere)."""
    out: list[Path] = []
    for top in dirs:
        with contextlib.suppress(OSError), os.scandir(top) as entries:
            out.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
        if len(out) >= limit:
            return out[:limit]
    return out


def mutates(tool: str, args: Any) -> bool:
    """Whether a tools/call can move, delete or replace what its arguments name: a verb of its tool's
    name, an argument naming both ends of a move, or a command line with a mutating program."""
    if _mutating_name(tool):
        return True
    return _mutating_args(args, 0)


def _mutating_name(tool: str) -> bool:
    cached = _NAME_CACHE.get(tool)
    if cached is None:
        words = {w.casefold() for w in _TOOL_WORDS.findall(tool)}
        cached = not words.isdisjoint(MUTATING_VERBS)
        if len(_NAME_CACHE) < 4096:
            _NAME_CACHE[tool] = cached
    return cached


_NAME_CACHE: dict[str, bool] = {}


def _mutating_args(value: Any, depth: int) -> bool:
    if depth > 8:
        return True  # too deep to tell: the cautious answer
    if type(value) is dict or (type(value) is not list and isinstance(value, Mapping)):
        for k, v in value.items():
            folded = str(k).casefold()
            if folded in MUTATING_KEYS:
                return True
            if folded in COMMAND_KEYS and isinstance(v, str) and _mutating_command(v):
                return True
            kind = type(v)
            if kind is str:
                continue
            if (kind is dict or kind is list or isinstance(v, Mapping)) and _mutating_args(v, depth + 1):
                return True
            if kind is list and folded in COMMAND_KEYS and _mutating_command(" ".join(str(x) for x in v[:256])):
                return True
    elif type(value) is list:
        return any(type(v) is not str and isinstance(v, Mapping | list) and _mutating_args(v, depth + 1)
                   for v in value[:1024])
    return False


def _mutating_command(text: str) -> bool:
    """A command line naming a mutating program (by its basename, at any nesting: `sh -c '...'`) or a
    find action, quotes and escapes disregarded."""
    return _MUTATING_WORD.search(text.translate(_UNQUOTE).casefold()) is not None


def _files_under(dirs: Iterable[Path], files: Iterable[Path], limit: int = 5000) -> list[Path]:
    """The protected files and the files in the state directories (bounded: `sessions/` may grow)."""
    out = list(files)
    for top in dirs:
        for root, subdirs, names in os.walk(top):
            subdirs.sort()
            out.extend(Path(root) / n for n in names)
            if len(out) >= limit:
                return out
    return out


def server_programs(name: str, command: str | None, args: Iterable[str], env: Mapping[str, str] | None = None,
                    cwd: str | None = None) -> list[tuple[str, str]]:
    """The code a stdio server runs, as (path, label): its program and the script files in its argv,
    each by its real path, and for one inside `node_modules` (or a Python `site-packages`) the whole
    package it belongs to. An agent that rewrites them runs its own code as the user the next time
    the gateway starts the server (a crash is enough), outside every tool the gateway guards.
    System programs (`/usr/bin/node`) are listed too; an agent cannot write them anyway."""
    import shutil

    if not command:
        return []
    label = f"the program of server {name!r} (the gateway runs it)"
    here = os.path.abspath(os.path.expanduser(cwd)) if cwd else os.getcwd()
    found: list[str] = []
    path = (env or {}).get("PATH") or os.environ.get("PATH")
    program = command if "/" in command else shutil.which(command, path=path)
    if program:
        found.append(os.path.join(here, os.path.expanduser(program)))
    for arg in args:
        text = str(arg)
        if text.startswith("-") or ("/" not in text and "." not in text):
            continue
        candidate = os.path.join(here, os.path.expanduser(text))
        if os.path.isfile(candidate):
            found.append(candidate)
    out: dict[str, None] = {}
    for file in found:
        real = os.path.realpath(file)
        if not os.path.isfile(real):
            continue
        out.setdefault(_package_of(real) or real, None)
        if os.path.islink(file):
            out.setdefault(os.path.abspath(file), None)  # node_modules/.bin/NAME: the link itself
    return [(p, label) for p in out]


def _package_of(real: str) -> str | None:
    """The package directory holding `real`: `.../node_modules/[@scope/]pkg`, `.../site-packages/pkg`."""
    parts = real.split("/")
    for marker in ("node_modules", "site-packages", "dist-packages"):
        if marker in parts[:-1]:
            at = len(parts) - 1 - parts[::-1].index(marker)  # the innermost
            end = at + 2 + (1 if at + 1 < len(parts) - 1 and parts[at + 1].startswith("@") else 0)
            if end < len(parts):
                return "/".join(parts[:end])
    return None


def install_paths() -> list[tuple[str, str]]:
    """The mcpwall installation: its package directory, its virtual environment and its entry point."""
    import mcpwall

    out: list[tuple[str, str]] = [(str(Path(mcpwall.__file__).resolve().parent), "the mcpwall installation")]
    if sys.prefix != sys.base_prefix:  # a venv: all of it is the installation; a system prefix is not ours
        out.append((sys.prefix, "the mcpwall installation (its environment)"))
    entry = sys.argv[0] if sys.argv and os.path.basename(sys.argv[0]).startswith("mcpwall") else ""
    if entry:
        out.append((entry, "the mcpwall installation (its entry point)"))
    return out


class _Found(Exception):
    """Control flow: the first finding ends the walk (never escapes this module)."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding


class _Walk:
    __slots__ = ("bases", "count", "env", "extracting", "guard", "moved_in", "mutating")

    def __init__(self, guard: ProtectedSet, bases: tuple[str, ...], mutating: bool = False,
                 env: ServerEnv = ()) -> None:
        self.guard = guard
        self.env = env
        self.bases = bases
        self.count = 0
        self.mutating = mutating
        #: where relative words are resolved for the ancestor check (a call's own cwd, else `bases`)
        self.moved_in = bases
        #: the command writes paths it does not name (an archive) into its cwd
        self.extracting = False

    def walk(self, value: Any, where: str, key: str, depth: int) -> None:
        self.count += 1
        if self.count > MAX_VALUES or depth > MAX_DEPTH:
            raise _Found(Finding(where, "", "(not inspected)", "arguments too large or too deep to inspect "
                                 "for the gateway's own files"))
        kind = type(value)
        if kind is str:
            self.text(value, where, key)
        elif kind is dict or (kind is not list and isinstance(value, Mapping)):
            names = self.guard.names
            for k, v in value.items():
                ks = str(k)
                # The where-text is built only for what is inspected (most values are plain words).
                if _SPECIAL.search(ks) is not None or _fold(ks) in names:
                    self.text(ks, f"{where}.{ks}#key" if where else f"{ks}#key", "")
                if type(v) is str and _skip(v, ks.casefold(), names):
                    self.count += 1
                    continue
                self.walk(v, f"{where}.{ks}" if where else ks, ks, depth + 1)
        elif kind is list or isinstance(value, tuple):
            folded = key.casefold()
            names = self.guard.names
            for i, v in enumerate(value):
                if type(v) is str and _skip(v, folded, names):
                    self.count += 1
                    continue
                self.walk(v, f"{where}[{i}]", key, depth + 1)

    def text(self, value: str, where: str, key: str) -> None:
        if not value:
            return
        folded_key = key.casefold()
        path_key = folded_key in PATH_KEYS
        if _SPECIAL.search(value) is None:
            # One plain word: a path only as a protected name or as a path argument (the fast path).
            if path_key or _fold(value) in self.guard.names:
                self.word(value, where, path_key=path_key)
            return
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= MAX_JSON:
            try:
                inner = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                inner = None
            if isinstance(inner, dict | list):
                self.walk(inner, f"{where}#json", key, 1)
        spaced = _SHELLY.search(stripped) is not None
        command = folded_key in COMMAND_KEYS
        if not spaced or path_key:
            self.word(stripped, where, path_key=path_key, command=command)  # an argv word is a command word
        if not spaced:
            return
        if command and len(value) <= MAX_TEXT:
            # A command line: each word, as the shell splits it (quotes and escapes removed); a quoted
            # word with spaces in it (`sh -c 'cat ...'`) is a command line of its own.
            for w in _words(value):
                if _SHELLY.search(w) is not None and len(w) < len(value):
                    self.text(w, where, key)
                else:
                    self.word(w, where, path_key=False, shell=True, command=True)
        elif (command or "\n" not in stripped) and _PATHY.search(stripped) is not None:
            # A one-line text a shell may run, or a command line too long for shlex (pure Python, about
            # a microsecond a character): its path-like words, by a cheap split (bare words are not paths).
            for w in _SPLIT.split(stripped):
                if _PATHY.search(w) is not None:
                    self.word(w, where, path_key=False, shell=True)

    def word(self, word: str, where: str, *, path_key: bool, shell: bool = False, command: bool = False) -> None:
        guard = self.guard
        ancestor = self.mutating and (path_key or command)
        if ancestor and path_key and not self.extracting and where.rsplit(".", 1)[-1].casefold() in CWD_KEYS:
            ancestor = False  # the directory a command runs in is not what it moves (its words are)
        word = word.strip(_STRIP) if shell else word
        if not word or len(word) > MAX_PATH:
            return
        pieces = [word]
        if shell or "=" in word:
            if "=" in word:  # VAR=path, --opt=path
                pieces.append(word.split("=", 1)[1])
            if word[:1] == "-" and len(word) > 2 and word[1] != "-":  # -opath
                pieces.append(word[2:])
            if word[:1] == "@":  # curl -d @file
                pieces.append(word[1:])
            if ":" in word and "://" not in word and not word.lower().startswith("file:"):  # host:path, a:b
                pieces.extend(word.split(":"))
        for piece in pieces:
            if not piece:
                continue
            # A bare word is worth resolving as a protected name in a directory the server resolves
            # in, as a path argument, or (in a command line) as a symlink there.
            if _PATHY.search(piece) is None and not piece.startswith(".") \
                    and _fold(piece) not in guard.names and not path_key \
                    and not (ancestor and _GLOB.search(piece) is not None) \
                    and not (shell and any(os.path.islink(os.path.join(b, piece)) for b in self.bases)):
                continue
            moved_in = self.moved_in
            hit = guard.reaches(piece, self.bases, ancestor and moved_in is self.bases, self.env)
            if hit is None and ancestor and moved_in is not self.bases:
                hit = guard.reaches(piece, moved_in, True, self.env)
            glob = _GLOB.search(piece) if hit is None and ancestor else None
            if glob is not None:
                # A glob moves what it matches: the directory it is expanded in (`*`, `~/*`, `p/h*`).
                head = piece[:glob.start()]
                hit = guard.reaches((head.rsplit("/", 1)[0] if "/" in head else ".") or "/", moved_in, True,
                                    self.env)
            if hit is not None:
                raise _Found(Finding(where, word, hit[1], hit[0]))


def _skip(value: str, folded_key: str, names: frozenset[str]) -> bool:
    """A string that `_Walk.text` would find nothing in, decided without building its where-text:
    no path character, not JSON, not a command line or a path argument, not a protected name."""
    return (_PATHY.search(value) is None and value[:1] not in _JSON_OPENERS and folded_key not in PATH_KEYS
            and folded_key not in COMMAND_KEYS and _fold(value) not in names)


def _words(text: str) -> list[str]:
    """Shell words with quotes and escapes removed; operators (`;`, `|`, `>`, `$(`) split off."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:  # an unbalanced quote: the plain words are what a lenient shell would see
        return text.split()


def _still_ours(protected: str, ident: tuple[int, int]) -> bool:
    """Is this inode still the protected file's? A file the gateway rewrites by rename
    (the checkpoint, a policy saved by an editor) frees its old inode, which a new file elsewhere may
    then get (a workspace move was refused so in CI): the recorded inode is stale once the protected
    path names another one. A protected path that is gone keeps its inode (moved away: fail closed).
    Directories are not asked: the gateway recreates its own (`run/`) in place when the home was
    renamed behind its back, and the renamed one must stay protected; directories are not rewritten
    by rename, so their inodes are not freed in normal operation."""
    try:
        st = os.stat(protected)
    except (OSError, ValueError):
        return True
    return (st.st_dev, st.st_ino) == ident


__all__ = ["COMMAND_KEYS", "MAX_VALUES", "MUTATING_KEYS", "MUTATING_PROGRAMS", "MUTATING_VERBS", "PATH_KEYS",
           "RULE_ID", "Finding", "ProtectedSet", "ServerEnv", "install_paths", "mutates", "server_env",
           "server_programs"]
