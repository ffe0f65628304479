"""What to do about each risk flag: the recommendations of every report.

mcp-seatbelt's recommendations restated the flag ("[HIGH] Server uses a
package runner"), which tells a user what is wrong twice and what to do
never. Each rule here has one function that reads the same launch the rule
looked at and says the fix in the user's terms: the key to move and how to
reference it in their client, the pinned command line, the flag to drop, the
directory to grant. Advice names keys, packages and flags, never a secret
value (it is built from the launch, so it goes through the report's
scrubber like every other text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcpwall.discovery import _commands as cmds
from mcpwall.discovery._secrets import is_inline_secret, is_secret_name, secret_args

if TYPE_CHECKING:  # _risk calls advice(); the launch type is all this module needs of it
    from mcpwall.discovery._risk import Launch

#: How each client's config refers to a variable of the environment (its documented interpolation).
_REFERENCE_SYNTAX = {
    "vscode": "${env:%s}", "cursor": "${env:%s}", "windsurf": "${env:%s}",
    "claude-code": "${%s}", "gemini-cli": "${%s}", "copilot": "${%s}",
}
_GENERIC = "${env:%s}"


def _ref(x: Launch, key: str) -> str:
    """`${env:KEY}`, in the syntax of the clients that configure this server when they agree."""
    forms = {_REFERENCE_SYNTAX.get(c, _GENERIC) for c in x.clients} or {_GENERIC}
    return (forms.pop() if len(forms) == 1 else _GENERIC) % key


def _wrap_hint(x: Launch) -> str:
    name = x.name or "NAME"
    if x.guarded:
        return "keep it behind mcpwall (it already runs through it)"
    return f"run it only through mcpwall (`mcpwall init`, or `mcpwall wrap --name {name} -- ...`)"


def _env_name(flag_or_key: str) -> str:
    """An environment variable name for a credential passed as `--api-key`: `API_KEY`."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", flag_or_key.lstrip("-")).strip("_").upper()
    return name or "API_TOKEN"


def _shell(x: Launch, evidence: str) -> str:
    shell = evidence.removeprefix("command ")
    return (f"launch the server's own program instead of `{shell}` (a shell runs whatever its arguments say), "
            f"and {_wrap_hint(x)}")


def _docker(x: Launch, evidence: str) -> str:
    return (f"drop {evidence} from the `docker run` arguments and mount only the directory the server needs, "
            "read-only where it can (`-v DIR:/data:ro`)")


def _no_sandbox(x: Launch, evidence: str) -> str:
    return f"remove {evidence} from its arguments, so the sandbox and approvals it switches off apply again"


def _network_tool(x: Launch, evidence: str) -> str:
    tool = evidence.removeprefix("command ")
    return (f"replace `{tool}` with an MCP server that reaches only the hosts it needs, list them in "
            f"policy.yaml `allowlist.hosts`, and {_wrap_hint(x)}")


def _network_transport(x: Launch, evidence: str) -> str:
    host = urlsplit(x.url).hostname if x.url else None
    where = host or "the remote server"
    return (f"make sure you trust {where}: it receives every argument the agent sends; "
            + ("keep it behind the gateway" if x.guarded else
               "route it through the gateway (`mcpwall init`)") + " so its calls are logged and DLP applies")


def _process_spawn(x: Launch, evidence: str) -> str:
    return (f"check why its {evidence.replace('argument mentions', 'arguments mention')}; if it runs commands, "
            f"{_wrap_hint(x)} with `ask` on its command tools")


def _destructive(x: Launch, evidence: str) -> str:
    return f"remove the destructive step ({evidence}) from its launch: starting a server should not delete files"


def _remote_access(x: Launch, evidence: str) -> str:
    return ("check the URL or endpoint in its arguments is one you trust, and list that host in policy.yaml "
            "`allowlist.hosts` so the gateway refuses others")


def _sensitive_env(x: Launch, evidence: str) -> str:
    return (f"it receives {evidence}: give it a credential scoped to what its tools need (read-only where "
            "the provider allows) rather than your personal one")


def _pin(pkg: cmds.Package) -> str:
    return f"{pkg.name}==X.Y.Z" if pkg.runner in ("uvx", "pipx") else f"{pkg.name}@X.Y.Z"


def _command_with(x: Launch, pkg: cmds.Package, spec: str) -> str:
    """The runner's command line up to the package, with `spec` in its place: `npx -y pkg@X.Y.Z`."""
    for step in x.steps:
        if pkg.spec in step.args:
            args = list(step.args)
            cut = args.index(pkg.spec)
            return " ".join([step.name, *args[:cut], spec])
    return f"{pkg.runner} {spec}"


def _package_runner(x: Launch, evidence: str) -> str:
    pkgs = [p for s in x.steps for p in cmds.packages(s)]
    if pkgs and all(p.pinned for p in pkgs):
        p = pkgs[0]
        install = (f"uv tool install {p.spec}" if p.runner in ("uvx", "pipx") else f"npm install -g {p.spec}")
        return (f"the runner fetches {p.spec} at every start: install it once (`{install}`) and launch its "
                "program, so a registry outage or a republished version cannot change what runs")
    if pkgs:
        return f"pin the package version: `{_command_with(x, pkgs[0], _pin(pkgs[0]))}` (the version you reviewed)"
    return f"install the server once and launch its program instead of fetching it with {evidence}"


def _risky_package(x: Launch, evidence: str) -> str:
    return (f"check that {evidence} is the package you meant: it can run commands or open files and the "
            f"network; {_wrap_hint(x)} with `ask` on tools that write or execute")


def _privilege(x: Launch, evidence: str) -> str:
    word = evidence.split()[-1]
    return f"run the server as your own user, without `{word}`, and give it only the files it needs"


def _sensitive_paths(x: Launch, evidence: str) -> str:
    path = evidence.removeprefix("path ")
    return f"give it only the directory it works on (a project folder) instead of `{path}`"


def _inline_secret(x: Launch, evidence: str) -> str:
    env = sorted(k for k, v in x.env.items() if is_inline_secret(k, v))
    headers = sorted(k for k, v in x.headers.items() if is_inline_secret(k, v))
    parts = [f"move {k} into the environment and reference it as {_ref(x, k)}" for k in env[:2]]
    for h in headers[:2]:
        var = _env_name(h) if is_secret_name(h) else "MCP_TOKEN"
        scheme = "Bearer " if h.lower() == "authorization" else ""
        parts.append(f"put the {h} header's credential in the environment and write `{scheme}{_ref(x, var)}`")
    more = len(env) + len(headers) - len(env[:2]) - len(headers[:2])
    tail = f" (and {more} more)" if more > 0 else ""
    return "; ".join(parts) + tail + "; then rotate it, since it was written in a file"


def _secret_in_args(x: Launch, evidence: str) -> str:
    hidden = secret_args(x.args)
    var = "API_TOKEN"
    for i in hidden:
        flag = x.args[i - 1] if i > 0 and x.args[i - 1].startswith("-") else x.args[i].partition("=")[0]
        if flag.startswith("-") or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", flag):
            var = _env_name(flag)
            break
    where = "its URL" if evidence == "url" else evidence
    return (f"take the credential out of {where} (every local user can read a command line): give it to the "
            f"server in its env instead, `\"{var}\": \"{_ref(x, var)}\"`, if the server reads it there; rotate it")


def _plaintext_http(x: Launch, evidence: str) -> str:
    host = evidence.removeprefix("http:// to ")
    return f"use https:// for {host} (or reach it through a tunnel on loopback)"


def _unpinned(x: Launch, evidence: str) -> str:
    pkgs = [p for s in x.steps for p in cmds.packages(s) if not p.pinned]
    if not pkgs:
        return f"pin the version of {evidence}"
    return f"pin the package version: `{_command_with(x, pkgs[0], _pin(pkgs[0]))}` (the version you reviewed)"


def _world_writable(x: Launch, evidence: str) -> str:
    path = evidence.removesuffix(" is world-writable")
    return (f"`chmod o-w {path}` (any local user could have replaced what it runs: check it before the next "
            "start)")


def _broad_filesystem(x: Launch, evidence: str) -> str:
    arg = evidence.removeprefix("argument ")
    return f"grant the directory it needs (a project folder) instead of `{arg}`"


ADVICE: dict[str, Callable[[Launch, str], str]] = {
    "shell-interpreter": _shell,
    "docker-container": _docker,
    "no-sandbox": _no_sandbox,
    "network-tool": _network_tool,
    "network-transport": _network_transport,
    "process-spawn": _process_spawn,
    "destructive-fs": _destructive,
    "remote-access": _remote_access,
    "sensitive-env": _sensitive_env,
    "package-runner": _package_runner,
    "risky-package": _risky_package,
    "privilege-escalation": _privilege,
    "sensitive-paths": _sensitive_paths,
    "inline-secret": _inline_secret,
    "secret-in-args": _secret_in_args,
    "plaintext-http": _plaintext_http,
    "unpinned-package": _unpinned,
    "world-writable-command": _world_writable,
    "broad-filesystem": _broad_filesystem,
}


def advice(rule: str, launch: Launch, evidence: str) -> str:
    """The fix for one flag, or "" for a rule without advice."""
    fn = ADVICE.get(rule)
    return fn(launch, evidence) if fn else ""


__all__ = ["ADVICE", "advice"]
