"""Reading a server's command line the way the operating system will run it.

Risk rules must see through launchers: `env FOO=1 bash -c ...`, `sudo node
x.js`, `/usr/bin/python3.12`, `C:\\Tools\\pwsh.exe`, `npx -y pkg` (seatbelt
looked at the first argument only, so `npx -y pkg` escaped its package
rules). This module names commands by their base name and walks such chains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUFFIXES = (".exe", ".cmd", ".bat", ".ps1", ".com")

#: Commands that run the next word as the real program.
WRAPPERS = frozenset({"env", "sudo", "doas", "nice", "nohup", "time", "timeout", "stdbuf", "ionice", "taskset",
                      "chrt", "setsid", "exec", "command", "runas", "gsudo", "pkexec", "su-exec", "gosu",
                      "caffeinate", "unbuffer", "firejail", "flatpak-spawn", "xvfb-run", "dbus-run-session"})
#: Options of those wrappers that take a value as the next word.
_WRAPPER_VALUE_OPTS = {"sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group"},
                       "doas": {"-u", "-C"}, "nice": {"-n", "--adjustment"}, "ionice": {"-c", "-n", "-p"},
                       "stdbuf": {"-i", "-o", "-e"}, "timeout": {"-s", "-k", "--signal", "--kill-after"},
                       "taskset": set(), "chrt": set(), "env": {"-u", "--unset", "-C", "--chdir", "-S"}}
#: Wrappers whose first positional argument is not the program (timeout DURATION cmd, taskset MASK cmd).
_WRAPPER_POSITIONALS = {"timeout": 1, "taskset": 1, "chrt": 1, "gosu": 1, "su-exec": 1}

SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh", "mksh", "csh", "tcsh", "ash", "pwsh",
                    "powershell", "cmd", "nu", "xonsh", "elvish", "busybox"})
_INTERPRETER = re.compile(r"^(?:python[0-9.]*|pythonw|pypy[0-9.]*|py|perl[0-9.]*|ruby[0-9.]*|php[0-9.]*|lua[0-9.]*"
                          r"|luajit|tclsh[0-9.]*|wish|osascript|rscript|julia|groovy|jshell|wscript|cscript)$")
#: JavaScript runtimes count as interpreters when told to evaluate code given on the command line.
_JS_RUNTIMES = frozenset({"node", "nodejs", "deno", "bun"})
_EVAL_FLAGS = frozenset({"-e", "--eval", "-p", "--print", "eval"})

PACKAGE_RUNNERS = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx"})


def base(command: str) -> str:
    """`/usr/bin/Python3.12` -> `python3.12`; `C:\\Tools\\pwsh.exe` -> `pwsh`."""
    name = re.split(r"[\\/]", command.strip().strip('"'))[-1].lower()
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass(frozen=True)
class Step:
    """One program in a launch chain, with the arguments it receives."""

    command: str
    args: tuple[str, ...]

    @property
    def name(self) -> str:
        return base(self.command)


def chain(command: str | None, args: tuple[str, ...] | list[str]) -> list[Step]:
    """The programs a command line runs: the command, then through every wrapper."""
    if not command:
        return []
    steps = [Step(command, tuple(args))]
    for _ in range(8):
        step = steps[-1]
        if step.name not in WRAPPERS:
            break
        rest = list(step.args)
        value_opts = _WRAPPER_VALUE_OPTS.get(step.name, set())
        positionals = _WRAPPER_POSITIONALS.get(step.name, 0)
        i = 0
        while i < len(rest):
            word = rest[i]
            if word == "--":
                i += 1
                break
            if word.startswith("-"):
                i += 2 if word in value_opts else 1
                continue
            if step.name == "env" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word, re.S):
                i += 1
                continue
            if positionals:
                positionals -= 1
                i += 1
                continue
            break
        if i >= len(rest):
            break
        steps.append(Step(rest[i], tuple(rest[i + 1:])))
    return steps


def is_shell_or_interpreter(step: Step) -> bool:
    name = step.name
    if name in SHELLS or _INTERPRETER.match(name):
        return True
    return name in _JS_RUNTIMES and any(a in _EVAL_FLAGS or a.startswith("--eval=") for a in step.args)


@dataclass(frozen=True)
class Package:
    """A package a runner fetches: `spec` as written, `name` without its version."""

    runner: str
    spec: str
    name: str
    pinned: bool


_NPM_VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_RUNNER_VALUE_OPTS = {"-p", "--package", "--from", "--with", "-w", "--python", "--index", "--index-url",
                      "--extra-index-url", "-c", "--call", "--registry", "--cache", "--spec", "--pip-args"}


def _npm_package(spec: str) -> tuple[str, bool]:
    if spec.startswith("@"):
        scope, _, rest = spec[1:].partition("/")
        name, at, version = rest.partition("@")
        full = f"@{scope}/{name}"
    else:
        full, at, version = spec.partition("@")
    return full, bool(at) and bool(_NPM_VERSION.match(version))


def _py_package(spec: str) -> tuple[str, bool]:
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)$", spec)
    if not m:
        return spec, False
    name, rest = m.group(1), m.group(2).strip()
    pinned = bool(re.fullmatch(r"(?:==|@)\s*[0-9][0-9A-Za-z.+!-]*", rest)) and "*" not in rest
    return name, pinned


def packages(step: Step) -> list[Package]:
    """Packages a runner step fetches (`npx -y pkg`, `uvx --from pkg cmd`, `npm exec pkg`, `uv tool run`)."""
    name, args = step.name, list(step.args)
    runner = name
    if (name in ("npm", "pnpm", "yarn") and args[:1] and args[0] in ("exec", "dlx", "x")) or (name == "bun" and args[:1] == ["x"]):
        args, runner = args[1:], "npx"
    elif name == "uv" and args[:2] == ["tool", "run"]:
        args, runner = args[2:], "uvx"
    elif name in ("bunx", "pnpx"):
        runner = "npx"
    elif name not in PACKAGE_RUNNERS:
        return []
    if runner == "pipx" and args[:1] == ["run"]:
        args = args[1:]
    python = runner in ("uvx", "pipx")
    found: list[str] = []
    explicit = False
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if word.startswith("-"):
            opt, eq, val = word.partition("=")
            if opt in ("-p", "--package", "--from", "--spec"):
                value = val if eq else (args[i + 1] if i + 1 < len(args) else "")
                if value:
                    found.append(value)
                    explicit = True
            if opt in _RUNNER_VALUE_OPTS and not eq:
                i += 2
                continue
            i += 1
            continue
        break
    if not explicit and i < len(args):
        found.append(args[i])
    out = []
    for spec in found:
        if spec.startswith((".", "/", "~")) or re.match(r"^[A-Za-z]:[\\/]", spec) or "://" in spec:
            continue  # a local path or URL, not a registry package
        pkg, pinned = _py_package(spec) if python else _npm_package(spec)
        out.append(Package(runner, spec, pkg, pinned))
    return out


def is_package_runner(step: Step) -> bool:
    name, args = step.name, step.args
    return (name in PACKAGE_RUNNERS or (name in ("npm", "pnpm", "yarn") and args[:1] in (("exec",), ("dlx",), ("x",)))
            or (name == "uv" and args[:2] == ("tool", "run")) or (name == "bun" and args[:1] == ("x",)))


__all__ = ["PACKAGE_RUNNERS", "SHELLS", "WRAPPERS", "Package", "Step", "base", "chain", "is_package_runner",
           "is_shell_or_interpreter", "packages"]
