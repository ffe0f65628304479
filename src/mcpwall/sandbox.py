"""Bubblewrap confinement for stdio servers: `servers.NAME.sandbox` in policy.yaml.

    servers:
      fs:
        command: npx
        args: [-y, "@modelcontextprotocol/server-filesystem", /srv/data]
        sandbox: {read: [/srv/data], write: [/srv/data/out], network: false}

`sandbox_argv()` returns the `bwrap` command prefix the stdio transport puts
before the server's command. Inside, the server sees:

- the system's programs and libraries read-only (/usr and its /bin, /lib
  links) and a short list of /etc files (dynamic loader, users, TLS roots,
  DNS when it has network), never /etc as a whole;
- its own runtime read-only, found from the command: the `node_modules`
  tree of an npm server, the virtualenv (and the interpreter it was made
  from) of a Python server, or else the program file itself;
- the granted paths, read-only (`read`) or read-write (`write`);
- a private /tmp (also its HOME), its own /proc and a minimal /dev;
- no network unless `network: true` (a new network namespace has only its
  own loopback, so even the gateway on 127.0.0.1 is out of reach);
- no capabilities, new user, PID, IPC, UTS and cgroup namespaces, and it
  dies with the gateway.

Everything else, the user's home included, does not exist for it. This is
the second wall: a filesystem server whose own checks or whose policy would
allow reading /home/me/.ssh cannot, because the file is not there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcpwall.policy import ServerSpec
from mcpwall.policy._model import SandboxSpec
from mcpwall.transports.base import OnClosed, OnMessage, TransportError
from mcpwall.transports.stdio import StdioTransport

#: System directories bound read-only (or re-created as the symlinks they are).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: /etc entries a program needs to start, look up users and verify TLS.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf",
             "localtime", "ssl", "ca-certificates", "ca-certificates.conf", "mime.types", "os-release")
#: and the ones that only matter with network.
ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf")
SANDBOX_HOME = "/tmp"


class SandboxUnavailable(TransportError):
    """The server asks for a sandbox that cannot be built here (bubblewrap missing, a grant missing)."""


def bwrap_path() -> str | None:
    """The bubblewrap binary, or None when it is not installed."""
    return shutil.which("bwrap")


def sandbox_argv(sandbox: SandboxSpec, command: str, *, name: str = "", cwd: str | None = None,
                 bwrap: str | None = None, env_path: str | None = None) -> list[str]:
    """The `bwrap ... --` prefix that confines `command`; raises SandboxUnavailable."""
    label = f"server {name!r}" if name else "the server"
    binary = bwrap or bwrap_path()
    if binary is None:
        raise SandboxUnavailable(f"{label} asks for a sandbox (servers.{name or 'NAME'}.sandbox) but bubblewrap "
                                 "is not installed: install it (Debian: apt-get install bubblewrap) or remove "
                                 "the sandbox block; the server is not started unconfined")
    argv = [binary, "--die-with-parent", "--new-session", "--unshare-all"]
    if sandbox.network:
        argv.append("--share-net")
    argv += ["--cap-drop", "ALL", "--hostname", "mcpwall-sandbox"]
    argv += _system_mounts(network=sandbox.network)
    # The private /tmp first: a runtime or grant that lives under /tmp (a checkout in
    # /tmp/build, a node_modules there) is then bound on top of it, not hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in runtime_paths(command, env_path=env_path):
        argv += ["--ro-bind", path, path]
    for flag, paths in (("--ro-bind", sandbox.read), ("--bind", sandbox.write)):
        for given in paths:
            dest = os.path.abspath(os.path.expanduser(given))
            source = os.path.realpath(dest)
            if not os.path.exists(source):
                raise SandboxUnavailable(f"{label}: sandbox path {given!r} does not exist")
            argv += [flag, source, dest]
    workdir = os.path.abspath(cwd) if cwd and _granted(cwd, [*sandbox.read, *sandbox.write]) else SANDBOX_HOME
    argv += ["--chdir", workdir, "--setenv", "HOME", SANDBOX_HOME, "--setenv", "TMPDIR", SANDBOX_HOME,
             "--unsetenv", "XDG_RUNTIME_DIR", "--"]
    return argv


def wrapper_for(name: str, spec: ServerSpec) -> list[str]:
    """The transport wrapper for a server spec: the bwrap prefix when it has a sandbox, else []."""
    if spec.sandbox is None or not spec.command:
        return []
    return sandbox_argv(spec.sandbox, spec.command, name=name, cwd=spec.cwd, env_path=spec.env.get("PATH"))


class SandboxedTransport(StdioTransport):
    """A stdio server started under bubblewrap.

    The bwrap prefix is computed when connecting, not when the transport is
    made, so a missing bubblewrap or grant is a connection failure of this
    server (shown in /servers, retried with backoff), never an unconfined
    start and never a crash of the whole gateway.
    """

    def __init__(self, name: str, spec: ServerSpec, wrapper: Sequence[str] = ()) -> None:
        assert spec.command is not None
        super().__init__(spec.command, spec.args, spec.env, spec.cwd, name=name, wrapper=wrapper)
        self.spec = spec
        self._outer = list(wrapper)
        self.description = "sandboxed " + self.description

    async def connect(self, on_message: OnMessage, on_closed: OnClosed) -> None:
        prefix = wrapper_for(self.name, self.spec)
        self.wrapper = [*self._outer, *prefix]
        self.description = f"sandboxed stdio ({describe(prefix)}): " + " ".join([self.command, *self.args])
        await super().connect(on_message, on_closed)


def _system_mounts(*, network: bool) -> list[str]:
    argv: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for entry in (*ETC_FILES, *(ETC_NETWORK if network else ())):
        path = f"/etc/{entry}"
        if os.path.lexists(path):
            argv += ["--ro-bind-try", path, path]
    return argv


def _granted(path: str, grants: Iterable[str]) -> bool:
    target = os.path.abspath(path)
    return any(target == g or target.startswith(g.rstrip("/") + "/")
               for g in (os.path.abspath(os.path.expanduser(x)) for x in grants))


def _covered(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS if not os.path.islink(d))


def runtime_paths(command: str, *, env_path: str | None = None, depth: int = 3) -> list[str]:
    """Directories (or files) the command needs to run, outside the system directories.

    An npm bin script brings its whole `node_modules`; a script or interpreter
    in a virtualenv brings the virtualenv, the Python it was made from and the
    directories its `.pth` files add (an editable install's source); a script
    brings its interpreter (the `#!` line, through `/usr/bin/env`).
    """
    found: list[str] = []
    resolved = shutil.which(command, path=env_path or os.environ.get("PATH")) if "/" not in command else command
    if resolved is None:
        return found
    _collect(os.path.abspath(resolved), found, env_path, depth)
    # Mounting a directory covers what is below it; keep the outermost paths.
    outer = sorted(set(found), key=len)
    kept: list[str] = []
    for path in outer:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _collect(path: str, found: list[str], env_path: str | None, depth: int) -> None:
    if depth <= 0 or not os.path.exists(path):
        return
    for candidate in dict.fromkeys([path, os.path.realpath(path)]):
        root = _package_root(candidate)
        if root is not None:
            if not _covered(root):
                found.append(root)
            if os.path.exists(os.path.join(root, "pyvenv.cfg")):
                found.extend(p for p in _venv_extras(root) if not _covered(p))
        elif not _covered(candidate):
            found.append(candidate)
    interpreter = _shebang(os.path.realpath(path))
    if interpreter:
        program, _, arg = interpreter.partition(" ")
        if os.path.basename(program) == "env" and arg:
            located = shutil.which(arg.split()[0], path=env_path or os.environ.get("PATH"))
            if located:
                _collect(located, found, env_path, depth - 1)
        else:
            _collect(program, found, env_path, depth - 1)


def _package_root(path: str) -> str | None:
    """The outermost node_modules, or the virtualenv, that contains `path`."""
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part == "node_modules":
            return str(Path(*parts[:i + 1]))
    for parent in Path(path).parents:
        if (parent / "pyvenv.cfg").exists():
            return str(parent)
    return None


def _venv_extras(root: str) -> list[str]:
    extras: list[str] = []
    try:
        for line in Path(root, "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                extras.append(str(Path(value.strip()).parent))
    except OSError:
        pass
    for pth in Path(root).glob("lib/python*/site-packages/*.pth"):
        try:
            for line in pth.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if line.startswith("/") and os.path.isdir(line):
                    extras.append(line)
        except OSError:
            continue
    return extras


def _shebang(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip() or None


def describe(argv: Sequence[str]) -> str:
    """A one-line summary of a bwrap prefix for logs: the grants and whether it has network."""
    grants = [f"{'rw' if argv[i] == '--bind' else 'ro'}:{argv[i + 2]}" for i in range(len(argv) - 2)
              if argv[i] in ("--bind", "--ro-bind") and not _covered(argv[i + 2])]
    return f"bwrap ({'network' if '--share-net' in argv else 'no network'}; {', '.join(grants) or 'no grants'})"


__all__ = ["ETC_FILES", "ETC_NETWORK", "SANDBOX_HOME", "SYSTEM_DIRS", "SandboxUnavailable", "SandboxedTransport", "bwrap_path",
           "describe", "runtime_paths", "sandbox_argv", "wrapper_for"]
